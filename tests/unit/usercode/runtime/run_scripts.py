"""The training scripts of the lint --run tests and the lines their planted bugs are on."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
ALL_RUNS = os.environ.get("CSCONFORM_LINT_RUN_ALL") == "1"
"""Every model and planted bug, on both models and (where installed) the vendor's package: a few
minutes of CPU. The default run keeps one run of FC-MNIST with its bugs, a clean one and one refusal."""
every_run = pytest.mark.skipif(not ALL_RUNS, reason="set CSCONFORM_LINT_RUN_ALL=1 for every lint --run variant")


def planted_line(script: Path, plant: str) -> int:
    """The line of ``script`` that ends with ``# planted: PLANT``."""
    for number, line in enumerate(script.read_text(encoding="utf-8").splitlines(), start=1):
        if re.search(rf"# planted: {re.escape(plant)}$", line):
            return number
    raise AssertionError(f"{script.name} has no line planted with {plant}")
