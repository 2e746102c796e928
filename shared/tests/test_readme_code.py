"""quickstart_code: the first python block under ## Quickstart, or a clear error."""

from __future__ import annotations

import pytest

from icml26.shared.readme import quickstart_code


def test_first_python_block_under_the_heading(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "# x\n\n```python\nbefore = 1\n```\n\n## Install\n\n```bash\npip install x\n```\n\n"
        "## Quickstart\n\n```bash\nnot this\n```\n\n```python\nprint(2)\n```\n\n"
        "```python\nprint(3)\n```\n"
    )
    assert quickstart_code(readme) == "print(2)\n"


@pytest.mark.parametrize(
    ("text", "why"),
    [("# x\n```python\nprint(1)\n```\n", "no '## Quickstart'"),
     ("## Quickstart\n\n```bash\nls\n```\n", "no python block")],
)  # fmt: skip
def test_missing_section_or_block_is_a_clear_error(tmp_path, text, why):
    readme = tmp_path / "README.md"
    readme.write_text(text)
    with pytest.raises(ValueError, match=why):
        quickstart_code(readme)
