"""import_quietly keeps import-time banners off the terminal; structlog is filtered too."""

from __future__ import annotations

import logging
import sys

import pytest

from icml26.shared import import_quietly, quiet_dependencies


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_banners_printed_at_import_are_captured(tmp_path, monkeypatch, capsys):
    name = _module(
        tmp_path, monkeypatch, "icml26_banner_mod",
        "import sys\nprint('to stdout')\nprint('unmaintained', file=sys.stderr)\nVALUE = 3\n",
    )  # fmt: skip
    module = import_quietly(name)
    assert module.VALUE == 3
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_import_errors_keep_their_type_and_carry_the_banner(tmp_path, monkeypatch):
    name = _module(
        tmp_path, monkeypatch, "icml26_broken_mod",
        "import sys\nprint('needs gpu', file=sys.stderr)\nimport icml26_no_such_module\n",
    )  # fmt: skip
    with pytest.raises(ImportError, match="needs gpu"):
        import_quietly(name)


def test_bad_names_are_refused():
    with pytest.raises(TypeError, match="module name"):
        import_quietly("")


def test_structlog_info_lines_are_filtered(capsys):
    structlog = pytest.importorskip("structlog")
    structlog.reset_defaults()
    try:
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
        with quiet_dependencies():
            log = structlog.get_logger("icml26-test")
            log.info("epoch finished", loss=0.1)
            log.warning("kept")
        out = capsys.readouterr()
        text = out.out + out.err
        assert "epoch finished" not in text
        assert "kept" in text
    finally:
        structlog.reset_defaults()


def test_loggers_are_only_raised_and_children_keep_inheriting():
    lib = logging.getLogger("thirdparty_test_lib")
    lib_child = logging.getLogger("thirdparty_test_lib.modeling")
    noisy = logging.getLogger("thirdparty_test_noisy")
    transformers = logging.getLogger("transformers")
    before = transformers.level
    lib.setLevel(logging.ERROR)  # a library's own verbosity switch
    noisy.setLevel(logging.DEBUG)
    transformers.setLevel(logging.ERROR)  # transformers' set_verbosity_error
    try:
        with quiet_dependencies():
            assert lib.level == logging.ERROR  # not lowered back to WARNING
            assert lib_child.level == logging.NOTSET  # still follows its library
            assert lib_child.getEffectiveLevel() == logging.ERROR
            assert noisy.level == logging.WARNING  # raised
            assert transformers.level == logging.ERROR
    finally:
        for logger in (lib, lib_child, noisy):
            logger.setLevel(logging.NOTSET)
        transformers.setLevel(before)
