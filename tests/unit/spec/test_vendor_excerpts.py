"""The vendor excerpts the executor rules cite are verbatim: each `file:first-last` block equals
those lines of the installed cerebras-pytorch 2.10.0 (run where the package is installed, e.g. the
cstorch environment; skipped elsewhere)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from pathlib import Path

import pytest

EXCERPTS = Path(__file__).resolve().parents[3] / "specs" / "vendor" / "cerebras-pytorch-2.10.0.md"
BLOCK = re.compile(
    r"^`(?P<file>[\w/]+\.py):(?P<first>\d+)-(?P<last>\d+)`\n\n```python\n(?P<code>.*?)\n```$", re.M | re.S
)


def _package_root() -> Path | None:
    try:
        version = importlib.metadata.version("cerebras-pytorch")
        spec = importlib.util.find_spec("cerebras.pytorch")
    except (importlib.metadata.PackageNotFoundError, ModuleNotFoundError):
        return None
    if version != "2.10.0" or spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def test_every_excerpt_has_a_place() -> None:
    text = EXCERPTS.read_text(encoding="utf-8")
    blocks = list(BLOCK.finditer(text))
    assert len(blocks) == text.count("```python")
    for block in blocks:
        first, last = int(block["first"]), int(block["last"])
        assert block["code"].count("\n") == last - first, block["file"]


@pytest.mark.skipif(_package_root() is None, reason="cerebras-pytorch 2.10.0 is not installed here")
def test_excerpts_are_verbatim() -> None:
    root = _package_root()
    assert root is not None
    for block in BLOCK.finditer(EXCERPTS.read_text(encoding="utf-8")):
        lines = (root / block["file"]).read_text(encoding="utf-8").splitlines()
        expected = "\n".join(lines[int(block["first"]) - 1 : int(block["last"])])
        assert block["code"] == expected, f"{block['file']}:{block['first']}-{block['last']}"
