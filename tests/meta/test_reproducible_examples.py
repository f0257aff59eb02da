"""Under the ci profile a test draws the same examples whatever else the run selects or imports.

Each run is a pytest subprocess with the ci profile that records every test case Hypothesis
generates (tests/meta/plugins/record_examples.py). The GradScaler conformance module run alone must
generate exactly what it generates inside the whole suite's collection with every csconform module
and torch imported. The control shows that the comparison can fail: with Hypothesis' stock provider
the same state machine explores other cases once more modules are loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.meta.plugins.record_examples import RECORD_VARIABLE

ROOT = Path(__file__).resolve().parents[2]
MODULE = "csconform/conformance/test_grad_scaler.py"
STATE_MACHINE = f"{MODULE}::test_grad_scaler_state_machine"
WHOLE_SUITE = ("tests/unit", "csconform/conformance", "-k", "test_grad_scaler.py")


def generated(record: Path, targets: tuple[str, ...], *plugins: str) -> dict[str, list[tuple[str, str]]]:
    """Run ``targets`` under the ci profile; the test cases each test generated, in order."""
    loaded = [option for plugin in plugins for option in ("-p", f"tests.meta.plugins.{plugin}")]
    command = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    command += ["-p", "tests.meta.plugins.record_examples", *loaded]
    environment = {**os.environ, "CI": "1", "HYPOTHESIS_PROFILE": "ci", RECORD_VARIABLE: str(record)}
    completed = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    cases: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for line in record.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        cases[case["test"]].append((case["representation"], case["status"]))
    return dict(cases)


def test_a_module_alone_and_in_the_whole_suite_draws_the_same_examples(tmp_path):
    alone = generated(tmp_path / "alone.jsonl", (MODULE,))
    in_suite = generated(tmp_path / "suite.jsonl", WHOLE_SUITE, "import_everything")
    assert STATE_MACHINE in alone and len(alone) >= 10  # the state machine and the @given tests
    assert sorted(in_suite) == sorted(alone)
    for test, cases in alone.items():
        assert in_suite[test] == cases, f"{test} drew other examples inside the whole suite"


def test_with_the_stock_provider_loaded_modules_change_the_examples(tmp_path):
    alone = generated(tmp_path / "alone.jsonl", (STATE_MACHINE,), "stock_provider")
    beside = generated(tmp_path / "beside.jsonl", (STATE_MACHINE,), "stock_provider", "import_everything")
    assert alone[STATE_MACHINE] != beside[STATE_MACHINE]
