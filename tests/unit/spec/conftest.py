"""A tiny, valid spec directory to mutate in loader tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from demo_spec import VALID_AREA

from csconform.spec import default_specs_dir


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    shutil.copy(default_specs_dir() / "sources.yaml", tmp_path / "sources.yaml")
    (tmp_path / "demo.yaml").write_text(VALID_AREA, encoding="utf-8")
    return tmp_path
