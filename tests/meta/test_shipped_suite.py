"""The conformance suite ships inside the package and judges an implementation from anywhere.

These runs start pytest in an empty folder — no ``specs/``, no ``tests/`` beside it, as after a
``pip install csconform`` — and reach the suite by its package name, the way a runtime builder would.
"""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

from csconform.conformance import SUITE_DIR, suite_test_id
from csconform.spec import default_specs_dir


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_the_suite_runs_by_package_name_against_the_reference_engine(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--pyargs", "csconform.conformance.test_metrics", "--conformance-json", "matrix.json")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["*: csconform.engine"])  # the header names the engine (wording: test_traceability)
    matrix = json.loads((pytester.path / "matrix.json").read_text(encoding="utf-8"))
    assert matrix["engine"] == "csconform.engine"
    passed = {rule for rule, entry in matrix["rules"].items() if entry["outcome"] == "passed"}
    assert passed and all(rule.startswith("METRICS-") for rule in passed)  # the module's rules, judged here


def test_the_gate_covers_the_whole_shipped_suite(pytester: pytest.Pytester) -> None:
    """A rule marked checked that no shipped test names stops a run of the whole suite by package name."""
    specs = pytester.path / "specs_copy"
    shutil.copytree(default_specs_dir(), specs)
    extra = textwrap.indent(
        textwrap.dedent(
            """\
            - id: METRICS-900
              title: Untested
              statement: A rule no test checks.
              source: "pytorch-limitations#Eval metrics"
              kind: behaviour
              level: reference
              scope: {target: both, mode: any}
              status: checked
            """
        ),
        "  ",
    )
    metrics = specs / "metrics.yaml"
    metrics.write_text(metrics.read_text(encoding="utf-8").rstrip("\n") + "\n" + extra, encoding="utf-8")
    result = run(pytester, "--pyargs", "csconform.conformance", "--specs-dir", str(specs), "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*metrics.yaml*METRICS-900*"])  # the file and rule (wording: test_traceability)


def test_expected_failures_name_tests_by_their_installation_independent_id(pytester: pytest.Pytester) -> None:
    """An entry written as in a source checkout matches the shipped test wherever the package lives."""
    test_id = "csconform/conformance/test_metrics.py::test_eval_run_returns_one_final_value"
    assert suite_test_id(SUITE_DIR / "test_metrics.py", "test_metrics.py::test_eval_run_returns_one_final_value") == (
        test_id
    )
    (pytester.path / "expected.txt").write_text(test_id + "\n", encoding="utf-8")
    result = run(
        pytester, "--pyargs", "csconform.conformance.test_metrics", "--expected-failures", "expected.txt", "-rX"
    )
    # the reference engine passes that test: the entry matched it (and is reported as no longer failing)
    assert "matches no collected test" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"*{test_id}*"])


def test_a_test_outside_the_suite_keeps_its_node_id(tmp_path) -> None:
    assert suite_test_id(tmp_path / "test_x.py", "tests/test_x.py::test_y") == "tests/test_x.py::test_y"


def test_a_run_of_one_shipped_module_judges_the_entries_it_could_meet(pytester: pytest.Pytester) -> None:
    """``pytest --pyargs csconform.conformance.test_metrics``: a rule of that module expected to fail whose
    tests pass is stale, so is an entry for a test of the module that is gone; another area's rule is not
    judged. Each is a line, and the run fails."""
    gone = "csconform/conformance/test_metrics.py::test_gone"
    (pytester.path / "expected.txt").write_text(f"METRICS-001\nGRADSCALER-016\n{gone}\n", encoding="utf-8")
    result = run(pytester, "--pyargs", "csconform.conformance.test_metrics", "--expected-failures", "expected.txt")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*expected.txt: 3 *9 stale*",  # the lines' wording is pinned in tests/meta/test_traceability.py
            "*STALE*expected.txt*csconform/conformance/test_metrics.py::test_several_values_refused_on_cs[[]dict[]]*"
            "(METRICS-001)*",
            f"*STALE*expected.txt*{gone}*",
        ]
    )
    assert "GRADSCALER-016" not in result.stdout.str()
