"""The plotting IR: compiler's leakage rule, determinism, interpreter errors, F1."""

from __future__ import annotations

import inspect

import pytest

from icml26.geocode.ir import (
    compile_ir,
    element_f1,
    interpret,
    ir_tokens,
    parse_ir,
    parse_tokens,
    render_png,
    to_matplotlib_code,
)


def test_compiler_signature_cannot_receive_the_answer():
    params = set(inspect.signature(compile_ir).parameters)
    assert params == {"program", "coords", "givens"}
    assert not params & {"answer", "target", "steps", "trace", "question"}


def test_image_depends_only_on_the_ir(problems):
    p = problems[0]
    a = render_png(p.ir, size_px=64)
    b = render_png(parse_ir(p.ir), size_px=64)
    assert a == b == p.png  # byte-identical from the stored IR
    assert render_png(problems[1].ir, size_px=64) != a
    assert b"Software" not in a  # PNG metadata off


def test_malformed_ir_names_the_line(problems):
    lines = problems[0].ir.splitlines()
    bad = [*lines[:3], "SEG A Z9", *lines[3:]]
    with pytest.raises(ValueError, match="IR line 4: SEG refers to undefined point"):
        parse_ir("\n".join(bad))
    with pytest.raises(ValueError, match="IR line 1: unknown command 'CURVE'"):
        parse_ir("CURVE A B")
    with pytest.raises(ValueError, match="expected numbers"):
        parse_ir("VIEW 0 0 1 x1")
    with pytest.raises(TypeError):
        parse_ir(b"VIEW 0 0 1 1")


def test_interpreter_and_emitted_code_are_data_not_exec(problems):
    dl = interpret(problems[0].ir)
    assert dl.strokes and dl.texts
    code = to_matplotlib_code(problems[0].ir)
    assert "ax.plot" in code and "savefig" in code


def test_tokens_parse_back_and_f1(problems):
    toks = ir_tokens(parse_ir(problems[0].ir))
    gold = parse_tokens(toks)
    assert gold is not None
    assert element_f1(gold, gold)["all"] == 1.0
    assert parse_tokens(["SEG", "A", "Q", ";"]) is None  # undefined point
    dropped = [e for e in gold if e[0] != "CIRCLE"]
    f1 = element_f1(dropped, gold)
    assert f1["segment"] == 1.0
    if any(e[0] == "CIRCLE" for e in gold):
        assert f1["circle"] == 0.0 and f1["all"] < 1.0
