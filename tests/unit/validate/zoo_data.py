"""Where the Model Zoo test data is, and the clone of the Model Zoo when one is given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

MODELZOO = Path(__file__).parent / "data" / "modelzoo"
CLONE = os.environ.get("CSCONFORM_MODELZOO")
"""A clone of https://github.com/Cerebras/modelzoo (its git directory), for the checks that read it."""


def expected_fixtures() -> dict[str, dict[str, Any]]:
    return yaml.safe_load((MODELZOO / "expected.yaml").read_text(encoding="utf-8"))["fixtures"]


def sources() -> list[dict[str, Any]]:
    return yaml.safe_load((MODELZOO / "sources.yaml").read_text(encoding="utf-8"))["fixtures"]
