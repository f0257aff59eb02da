"""The harness tested against itself: the traceability gate, the matrix, expected failures, engines.

Each test builds a small project with pytester — a spec directory, a fake engine and a conformance
test module — and runs pytest on it with the csconform plugin, as a user would.
"""

from __future__ import annotations

import inspect
import json
import shutil
import textwrap
from importlib import metadata

import pytest

from csconform.spec import default_specs_dir

AREA = """\
area: demo
title: Demo
rules:
  - id: DEMO-001
    title: One
    statement: The engine says one.
    source: "pytorch-limitations#Eval metrics"
    kind: behaviour
    level: documented
    scope: {target: both, mode: any}
    status: checked
  - id: DEMO-002
    title: Two
    statement: The engine says two.
    source: "pytorch-limitations#Eval metrics"
    kind: behaviour
    level: public
    scope: {target: both, mode: any}
    status: checked
  - id: DEMO-003
    title: Three
    statement: Not checkable yet.
    source: "pytorch-limitations#Eval metrics"
    kind: behaviour
    level: reference
    scope: {target: both, mode: any}
    status: pending
    reason: waiting for the engine
  - id: DEMO-004
    title: Four
    statement: An old behaviour.
    source: "pytorch-limitations#Eval metrics"
    kind: behaviour
    level: documented
    scope: {target: both, mode: any}
    status: retired
    reason: replaced by DEMO-002
"""

FAKE_ENGINE = """\
CAPABILITIES = frozenset()
TARGETS = ("cs", "cpu")
state = {"target": "cs", "resets": 0}
def reset():
    state["target"] = "cs"; state["resets"] += 1
def set_target(name):
    state["target"] = name
def current_target():
    return state["target"]
def use_target(name):
    raise NotImplementedError
def one():
    return 1
def two():
    return 2
"""

TESTS = """\
import pytest

@pytest.mark.spec("DEMO-001")
def test_one(engine):
    assert engine.one() == 1

@pytest.mark.spec("DEMO-002")
def test_two(engine):
    assert engine.two() == 2

@pytest.mark.spec("DEMO-002")
def test_two_again(engine):
    assert engine.two() + 0 == 2

def test_reset_before_each_test(engine):
    engine.set_target("cpu")

def test_target_was_reset(engine):
    assert engine.current_target() == "cs"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    specs = pytester.path / "specs"
    specs.mkdir()
    shutil.copy(default_specs_dir() / "sources.yaml", specs / "sources.yaml")
    (specs / "demo.yaml").write_text(AREA, encoding="utf-8")
    pytester.makepyfile(fake_engine=FAKE_ENGINE, broken_engine=FAKE_ENGINE.replace("return 2", "return 3"))
    conformance = pytester.path / "tests" / "conformance"
    conformance.mkdir(parents=True)
    (conformance / "test_demo.py").write_text(TESTS, encoding="utf-8")
    pytester.syspathinsert()
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("--specs-dir", str(project.path / "specs"), "-p", "no:cacheprovider", *args)


def test_conforming_engine_passes_and_writes_the_matrix(project: pytest.Pytester) -> None:
    result = run(project, "--engine", "fake_engine", "--conformance-json", "matrix.json")
    result.assert_outcomes(passed=5)
    # the wording of the header's engine and spec lines and of the summary's first line, pinned here once
    # (the capabilities line: the unsupported test; the profile: the profile test)
    result.stdout.fnmatch_lines(
        [
            "csconform engine: fake_engine",
            "csconform spec: 3 rules (2 checked, 1 pending, 1 retired), by level: 1 documented, 1 public, "
            "1 reference; hypothesis profile: *",
        ]
    )
    result.stdout.fnmatch_lines(["engine fake_engine: 2 rules checked, 1 pending, 1 retired"])
    matrix = json.loads((project.path / "matrix.json").read_text())
    assert matrix["engine"] == "fake_engine" and matrix["spec_rules"] == 3
    assert matrix["rules"]["DEMO-001"] == {"outcome": "passed", "tests": 1, "passed": 1}
    assert matrix["rules"]["DEMO-002"]["outcome"] == "passed" and matrix["rules"]["DEMO-002"]["tests"] == 2
    assert matrix["rules"]["DEMO-003"]["outcome"] == "pending"
    assert "DEMO-004" not in matrix["rules"]


def test_the_matrix_is_never_written_over_the_engine_s_source(project: pytest.Pytester) -> None:
    source = project.path / "fake_engine.py"
    before = source.read_bytes()
    result = run(project, "--engine", "fake_engine", "--conformance-json", "fake_engine.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and source.read_bytes() == before
    result.stderr.fnmatch_lines(["*--conformance-json fake_engine.py is the input --engine*"])


def test_a_rule_fails_when_any_of_its_tests_fails(project: pytest.Pytester) -> None:
    result = run(project, "--engine", "broken_engine", "--conformance-json", "matrix.json")
    result.assert_outcomes(passed=3, failed=2)
    rules = json.loads((project.path / "matrix.json").read_text())["rules"]
    assert rules["DEMO-001"]["outcome"] == "passed"
    assert rules["DEMO-002"] == {"outcome": "failed", "tests": 2, "failed": 2}


def test_environment_variable_selects_the_engine(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CSCONFORM_ENGINE", "broken_engine")
    run(project).assert_outcomes(passed=3, failed=2)


def test_gate_fails_on_a_checked_rule_without_a_test(project: pytest.Pytester) -> None:
    tests = project.path / "tests" / "conformance" / "test_demo.py"
    tests.write_text(TESTS.replace('@pytest.mark.spec("DEMO-001")\n', ""), encoding="utf-8")
    result = run(project, "--engine", "fake_engine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(  # the gate's wording, pinned here once
        [
            "ERROR: csconform traceability gate failed:",
            "  demo.yaml: rule DEMO-001 is marked checked but no test checks it",
        ]
    )


def test_gate_is_off_for_a_partial_run(project: pytest.Pytester) -> None:
    tests = project.path / "tests" / "conformance" / "test_demo.py"
    tests.write_text(TESTS.replace('@pytest.mark.spec("DEMO-001")\n', ""), encoding="utf-8")
    run(project, "--engine", "fake_engine", "-k", "two").assert_outcomes(passed=2, deselected=3)
    result = run(project, "--engine", "fake_engine", "--spec-gate", "on", "-k", "two")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('"DEMO-999"', "names unknown rule 'DEMO-999'"),
        ('"DEMO-003"', "names pending rule DEMO-003"),
        ('"DEMO-004"', "names retired rule DEMO-004"),
        ("", "@pytest.mark.spec() names no rule"),
    ],
)
def test_gate_fails_on_a_bad_marker(project: pytest.Pytester, marker: str, message: str) -> None:
    extra = f"\n@pytest.mark.spec({marker})\ndef test_extra(engine):\n    pass\n"
    tests = project.path / "tests" / "conformance" / "test_demo.py"
    tests.write_text(TESTS + extra, encoding="utf-8")
    result = run(project, "--engine", "fake_engine", "tests/conformance/test_demo.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_expected_failures_turn_into_xfails_and_stale_entries_fail_the_run(project: pytest.Pytester) -> None:
    (project.path / "xfails.txt").write_text(
        textwrap.dedent(
            """\
            # broken_engine says three
            DEMO-002
            DEMO-001   # this one passes: stale
            tests/conformance/test_demo.py::test_gone
            """
        ),
        encoding="utf-8",
    )
    result = run(
        project, "--engine", "broken_engine", "--expected-failures", "xfails.txt", "--conformance-json", "m.json"
    )
    result.assert_outcomes(passed=2, xfailed=2, xpassed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*expected failures from xfails.txt: 3 entries, 2 stale*",
            "*STALE expected failure in xfails.txt: tests/conformance/test_demo.py::test_one passed although "
            "expected to fail (DEMO-001)*",
            "*STALE expected failure in xfails.txt: tests/conformance/test_demo.py::test_gone matches no "
            "collected test*",
            "*2 stale expected failure(s): the run fails*",
        ]
    )
    assert "test_two passed although" not in result.stdout.str()  # its tests still fail as expected
    matrix = json.loads((project.path / "m.json").read_text())
    assert matrix["rules"]["DEMO-002"]["outcome"] == "xfailed"
    assert matrix["rules"]["DEMO-001"]["outcome"] == "passed"  # the rule's truth, whatever was expected
    assert matrix["expected_failures"] == {
        "file": "xfails.txt",
        "release": "",
        "entries": 3,
        "unexpected_passes": {"tests/conformance/test_demo.py::test_one": ["DEMO-001"]},
        "unmatched": ["tests/conformance/test_demo.py::test_gone"],
        "not_applied": {},
        "observed": {},
        "stale": 2,
    }


def test_an_entry_for_a_rule_whose_tests_partly_pass_is_stale(project: pytest.Pytester) -> None:
    """The wart of rule-level entries: a rule entry promises that every test of the rule fails."""
    conformance = project.path / "tests" / "conformance" / "test_demo.py"
    conformance.write_text(
        TESTS + "\n@pytest.mark.spec('DEMO-002')\ndef test_two_is_an_int(engine):\n"
        "    assert isinstance(engine.two(), int)\n",
        encoding="utf-8",
    )
    (project.path / "xfails.txt").write_text("DEMO-002\n", encoding="utf-8")
    result = run(project, "--engine", "broken_engine", "--expected-failures", "xfails.txt")
    result.assert_outcomes(passed=3, xfailed=2, xpassed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*STALE*test_demo.py::test_two_is_an_int*(DEMO-002)*"])  # wording: the stale test
    # naming the failing tests instead keeps the run green
    (project.path / "xfails.txt").write_text(
        "tests/conformance/test_demo.py::test_two\ntests/conformance/test_demo.py::test_two_again\n", encoding="utf-8"
    )
    result = run(project, "--engine", "broken_engine", "--expected-failures", "xfails.txt")
    result.assert_outcomes(passed=4, xfailed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*xfails.txt: 2 *0 stale*"])


def test_an_unmatched_entry_is_stale_only_when_the_whole_suite_ran(project: pytest.Pytester) -> None:
    (project.path / "xfails.txt").write_text("DEMO-002\ntests/conformance/test_demo.py::test_gone\n")
    partial = run(project, "--engine", "broken_engine", "--expected-failures", "xfails.txt", "-k", "two")
    partial.assert_outcomes(xfailed=2)
    assert partial.ret == pytest.ExitCode.OK  # test_gone may exist among the tests not selected
    whole = run(project, "--engine", "broken_engine", "--expected-failures", "xfails.txt")
    assert whole.ret == pytest.ExitCode.TESTS_FAILED
    whole.stdout.fnmatch_lines(["*STALE*test_demo.py::test_gone*"])


def test_stale_expectations_fail_a_run_spread_over_workers(project: pytest.Pytester) -> None:
    """Under xdist each worker sees only its tests: the controller judges every expectation."""
    pytest.importorskip("xdist")
    (project.path / "xfails.txt").write_text("DEMO-002\nDEMO-001\n")
    result = run(project, "--engine", "broken_engine", "--expected-failures", "xfails.txt", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*STALE*test_demo.py::test_one*(DEMO-001)*"])
    assert "test_two passed although" not in result.stdout.str()


def test_unknown_engine_is_a_clear_usage_error(project: pytest.Pytester) -> None:
    result = run(project, "--engine", "no_such_engine_module")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'no_such_engine_module'*"])  # wording: tests/unit/report/test_check_cli.py


@pytest.mark.parametrize(
    "source",
    ["raise ValueError('broken at import')\n", "raise SystemExit(3)\n", "def f(:\n"],
    ids=["value-error", "system-exit", "syntax-error"],
)
def test_an_engine_failing_while_imported_is_a_usage_error_not_an_internal_error(
    project: pytest.Pytester, source: str
) -> None:
    project.makepyfile(failing_engine=source)
    result = run(project, "--engine", "failing_engine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the implementation 'failing_engine' failed to import*failing_engine.py:1*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_an_empty_engine_name_is_refused(project: pytest.Pytester) -> None:
    result = run(project, "--engine", "")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*dotted module path*"])


def test_engine_without_the_interface_is_refused(project: pytest.Pytester) -> None:
    project.makepyfile(half_engine="def reset():\n    pass\n")
    result = run(project, "--engine", "half_engine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*engine 'half_engine' does not implement the interface it declares*",
            "*half_engine: CAPABILITIES must be a set of capability names*",
            "*half_engine.set_target is missing*",
        ]
    )


def test_invalid_spec_stops_the_run_with_the_file_and_rule(project: pytest.Pytester) -> None:
    (project.path / "specs" / "demo.yaml").write_text(
        AREA.replace("kind: behaviour", "kind: wish", 1), encoding="utf-8"
    )
    result = run(project, "--engine", "fake_engine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*demo.yaml: rule DEMO-001: kind 'wish'*"])


@pytest.mark.parametrize(
    ("env", "expected"), [({}, "dev"), ({"CI": "true"}, "ci"), ({"HYPOTHESIS_PROFILE": "nightly"}, "nightly")]
)
def test_hypothesis_profile_follows_the_environment(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    for name in ("CI", "HYPOTHESIS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    project.makepyfile(
        test_profile="""
        from hypothesis import settings
        def test_profile():
            print("examples", settings.default.max_examples, "db", settings.default.database)
        """
    )
    result = run(project, "--engine", "fake_engine", "-s", "test_profile.py")
    result.stdout.fnmatch_lines([f"*hypothesis profile: {expected}*"])
    examples = {"dev": 50, "ci": 50, "nightly": 1000}[expected]
    result.stdout.fnmatch_lines([f"*examples {examples} db *"])
    if expected == "ci":
        result.stdout.fnmatch_lines(["*examples 50 db None"])


# --- the implementation interface: validation, unsupported checks, emulations -----------------------

GATED_AREA = """\
area: gated
title: Gated
rules:
  - id: GATED-001
    title: Metrics answer
    statement: The engine's metrics answer.
    source: "pytorch-limitations#Eval metrics"
    kind: behaviour
    level: documented
    scope: {target: both, mode: any}
    status: checked
  - id: GATED-002
    title: A CS limitation
    statement: Something is refused on the CS system.
    source: "pytorch-limitations#Eval metrics"
    kind: limitation
    level: documented
    scope: {target: cs, mode: any}
    status: checked
  - id: GATED-003
    title: Needs more
    statement: Needs capabilities the engine lacks.
    source: "pytorch-limitations#Eval metrics"
    kind: behaviour
    level: documented
    scope: {target: both, mode: any}
    status: checked
"""

CPU_ENGINE = """\
import contextlib
import types

CAPABILITIES = frozenset({"metrics"})
TARGETS = ("cpu",)
EMULATIONS = {"metrics": "the metrics run beside a stand-in backend"}
state = {"target": "cpu"}

def reset():
    state["target"] = "cpu"
def set_target(name):
    state["target"] = name
def current_target():
    return state["target"]
@contextlib.contextmanager
def use_target(name):
    yield name

class _Metric:
    def update(self, *args):
        pass
    def compute(self):
        return 1.0
    def state(self):
        return {}

metrics = types.SimpleNamespace(Metric=_Metric, Accuracy=_Metric, Mean=_Metric, evaluate=lambda metric, batches: 1.0)
amp = types.SimpleNamespace(GradScaler=object)
"""

GATED_TESTS = """\
import pytest

@pytest.mark.spec("GATED-001")
def test_metrics(engine):
    assert engine.metrics.evaluate(engine.metrics.Mean(), []) == 1.0

@pytest.mark.spec("GATED-002")
def test_cs_limitation(engine):
    assert engine.current_target() == "cs"

@pytest.mark.spec("GATED-003")
def test_needs_amp(engine):
    assert engine.amp.GradScaler is not None

@pytest.mark.spec("GATED-003")
@pytest.mark.capability("performance")
def test_needs_the_performance_model():
    pass
"""


def test_undeclared_capabilities_and_targets_are_unsupported_and_emulations_marked(project: pytest.Pytester) -> None:
    (project.path / "specs" / "gated.yaml").write_text(GATED_AREA, encoding="utf-8")
    (project.path / "tests" / "conformance" / "test_gated.py").write_text(GATED_TESTS, encoding="utf-8")
    project.makepyfile(cpu_engine=CPU_ENGINE)
    result = run(project, "--engine", "cpu_engine", "--conformance-json", "m.json", "tests/conformance/test_gated.py")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "csconform capabilities: metrics; targets: cpu; emulated: metrics",  # its wording, pinned here once
            "2 * cpu_engine *",  # the unsupported rules' count and the engine (wording: tests/meta/test_verdicts.py)
        ]
    )
    matrix = json.loads((project.path / "m.json").read_text())
    assert matrix["implementation"] == {
        "name": "cpu_engine",
        "capabilities": ["metrics"],
        "targets": ["cpu"],
        "emulations": {"metrics": "the metrics run beside a stand-in backend"},
    }
    rules = matrix["rules"]
    assert rules["GATED-001"] == {"outcome": "passed", "tests": 1, "passed": 1, "emulated": ["metrics"]}
    assert rules["GATED-002"]["outcome"] == "unsupported"
    assert rules["GATED-002"]["unsupported_reasons"] == ["cpu_engine does not run on target 'cs' (it runs cpu)"]
    assert rules["GATED-003"] == {
        "outcome": "unsupported",
        "tests": 2,
        "unsupported": 2,
        "unsupported_reasons": [
            "cpu_engine does not offer the capability 'amp'",
            "cpu_engine does not offer the capability 'performance'",
        ],
    }


@pytest.mark.parametrize(
    ("amp", "message"),
    [
        ("types.SimpleNamespace(set_half_dtype=f, optimizer_step=f)", "*half_amp.amp.GradScaler is missing*"),
        (
            "types.SimpleNamespace(GradScaler=Scaler, set_half_dtype=f, optimizer_step=f)",
            "*half_amp.amp.GradScaler.step_if_finite is missing*",
        ),
        (
            "types.SimpleNamespace(GradScaler=Scaler, set_half_dtype=f, optimizer_step=lambda loss: None)",
            "*half_amp.amp.optimizer_step does not accept parameter(s) optimizer, grad_scaler, max_gradient_norm*",
        ),
    ],
)
def test_a_declared_capability_must_offer_every_name(project: pytest.Pytester, amp: str, message: str) -> None:
    scaler = (
        "class Scaler:\n"
        "    def __init__(self, loss_scale=None, init_scale=None, steps_per_increase=None, min_loss_scale=None,\n"
        "                 max_loss_scale=None, overflow_tolerance=0.0, max_gradient_norm=None): pass\n"
        + "".join(
            f"    def {name}(self, *args, **kwargs): pass\n"
            for name in ("scale", "get_scale", "unscale_", "step", "clip_gradients_and_return_isfinite", "update")
            + ("state_dict", "load_state_dict")
        )
    )
    engine = CPU_ENGINE.replace('CAPABILITIES = frozenset({"metrics"})', 'CAPABILITIES = frozenset({"metrics", "amp"})')
    engine = engine.replace(
        "amp = types.SimpleNamespace(GradScaler=object)", f"def f(*a, **k): pass\n{scaler}amp = {amp}"
    )
    project.makepyfile(half_amp=engine)
    result = run(project, "--engine", "half_amp")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


ATTRIBUTED_TESTS = """\
import pytest
from csconform.testing.violations import RuleViolation

@pytest.mark.spec("DEMO-001")
def test_one(engine):
    assert engine.one() == 1

@pytest.mark.spec("DEMO-001", "DEMO-002")
def test_both(engine):
    if engine.two() != 2:
        raise RuleViolation("DEMO-002", "the engine does not say two")

@pytest.mark.spec("DEMO-002")
def test_two_plainly(engine):
    assert engine.one() == 1
"""


def test_a_failure_naming_its_rule_fails_that_rule_only(project: pytest.Pytester) -> None:
    tests = project.path / "tests" / "conformance" / "test_demo.py"
    tests.write_text(ATTRIBUTED_TESTS, encoding="utf-8")
    run(project, "--engine", "broken_engine", "--conformance-json", "matrix.json").assert_outcomes(passed=2, failed=1)
    rules = json.loads((project.path / "matrix.json").read_text())["rules"]
    assert rules["DEMO-002"] == {"outcome": "failed", "tests": 2, "failed": 1, "passed": 1}
    # the stopped test vouches for nothing else: DEMO-001 rests on its other test
    assert rules["DEMO-001"] == {"outcome": "passed", "tests": 2, "passed": 1, "inconclusive": 1}


def test_a_rule_with_only_inconclusive_tests_is_not_passed(project: pytest.Pytester) -> None:
    tests = project.path / "tests" / "conformance" / "test_demo.py"
    tests.write_text(ATTRIBUTED_TESTS.replace('@pytest.mark.spec("DEMO-001")\n', "", 1), encoding="utf-8")
    run(project, "--engine", "broken_engine", "--conformance-json", "matrix.json").assert_outcomes(passed=2, failed=1)
    rules = json.loads((project.path / "matrix.json").read_text())["rules"]
    assert rules["DEMO-001"] == {"outcome": "skipped", "tests": 1, "inconclusive": 1}


def test_a_failure_naming_no_rule_fails_every_rule_of_the_test(project: pytest.Pytester) -> None:
    tests = project.path / "tests" / "conformance" / "test_demo.py"
    tests.write_text(
        ATTRIBUTED_TESTS.replace('raise RuleViolation("DEMO-002", ', "raise AssertionError("), encoding="utf-8"
    )
    run(project, "--engine", "broken_engine", "--conformance-json", "matrix.json").assert_outcomes(passed=2, failed=1)
    rules = json.loads((project.path / "matrix.json").read_text())["rules"]
    assert rules["DEMO-001"]["outcome"] == "failed" and rules["DEMO-002"]["outcome"] == "failed"


def _is_fixed_input(test: object) -> bool:
    """A check that runs the same inputs every time: not a Hypothesis test, not a state machine."""
    return not getattr(test, "is_hypothesis_test", False) and "run_state_machine_as_test" not in inspect.getsource(
        inspect.unwrap(test)  # type: ignore[arg-type]
    )


def test_no_rule_of_the_grad_scaler_state_machine_rests_on_randomised_checks_alone() -> None:
    from csconform.conformance import test_grad_scaler
    from csconform.testing.grad_scaler import RULES

    fixed: dict[str, list[str]] = {rule: [] for rule in RULES}
    for name, test in vars(test_grad_scaler).items():
        if not name.startswith("test_") or not callable(test):
            continue
        marked = [rule for mark in getattr(test, "pytestmark", []) if mark.name == "spec" for rule in mark.args]
        if _is_fixed_input(test):
            for rule in marked:
                fixed.setdefault(rule, []).append(name)
    assert [rule for rule in RULES if not fixed[rule]] == []


TRIAGE_HEAD = f"""\
implementation: broken_engine
package: pytest
version: "{metadata.version("pytest")}"
"""


def test_a_triage_file_gives_the_expected_failures(project: pytest.Pytester) -> None:
    (project.path / "triage.yaml").write_text(
        TRIAGE_HEAD
        + textwrap.dedent(
            """\
            rules:
              - ids: [DEMO-002]
                verdict: departs-from-docs
                finding: It says three.
                evidence: broken_engine.two() returns 3
                resolution: kept the rule; expected failure
              - ids: [DEMO-001]
                verdict: spec-claims-too-much
                finding: Nothing to expect.
                evidence: none needed
                resolution: the rule was fixed
            """
        ),
        encoding="utf-8",
    )
    result = run(
        project, "--engine", "broken_engine", "--expected-failures", "triage.yaml", "--conformance-json", "m.json"
    )
    result.assert_outcomes(passed=3, xfailed=2)
    rules = json.loads((project.path / "m.json").read_text())["rules"]
    assert rules["DEMO-002"]["outcome"] == "xfailed" and rules["DEMO-001"]["outcome"] == "passed"
    matrix = json.loads((project.path / "m.json").read_text())
    assert matrix["expected_failures"]["release"] == f"pytest {metadata.version('pytest')}"
    result.stdout.fnmatch_lines([f"*triage.yaml*pytest {metadata.version('pytest')}*: 1 *0 stale*"])
    (project.path / "triage.yaml").write_text(TRIAGE_HEAD + "rules:\n  - ids: [DEMO-002]\n    verdict: maybe\n")
    result = run(project, "--engine", "broken_engine", "--expected-failures", "triage.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*triage.yaml: rules entry 1: unknown keys [], missing keys ['finding', 'evidence', 'resolution']*"]
    )


ONE_ENTRY = """\
rules:
  - ids: [DEMO-002]
    verdict: departs-from-docs
    finding: It says three.
    evidence: broken_engine.two() returns 3
    resolution: kept the rule; expected failure
"""
HEAD = "implementation: broken_engine\npackage: pytest\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            HEAD + "version: '0.0.1'\n" + ONE_ENTRY,
            "*triage.yaml holds the verdicts for pytest 0.0.1, but pytest * is installed: a release gets its own "
            "triage, none is inherited*",
        ),
        (
            TRIAGE_HEAD.replace("implementation: broken_engine", "implementation: fake_engine") + ONE_ENTRY,
            "*triage.yaml holds the verdicts for fake_engine, not for broken_engine*",
        ),
        (
            "implementation: broken_engine\npackage: no-such-distribution\nversion: '1.0'\n" + ONE_ENTRY,
            "*no-such-distribution 1.0, which is not installed*",
        ),
        (HEAD + ONE_ENTRY, "*'version' must be text naming the release*"),
        (HEAD + "version: 9.2\n" + ONE_ENTRY, "*triage.yaml*'version'*9.2*"),
        ("implementation: broken_engine\nversion: '1.0'\n" + ONE_ENTRY, "*'package' must name the distribution*"),
        (
            TRIAGE_HEAD + ONE_ENTRY + ONE_ENTRY.replace("rules:\n", "").replace("departs-from-docs", "not-observable"),
            "*rules entry 1*rules entry 2*DEMO-002*departs-from-docs*not-observable*",
        ),
    ],
    ids=[
        "other-release",
        "other-implementation",
        "not-installed",
        "no-version",
        "unquoted-version",
        "no-package",
        "two-verdicts",
    ],
)
def test_a_triage_that_is_not_this_runs_is_refused(project: pytest.Pytester, text: str, message: str) -> None:
    (project.path / "triage.yaml").write_text(text, encoding="utf-8")
    result = run(project, "--engine", "broken_engine", "--expected-failures", "triage.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


OTHER_TESTS = """\
import pytest

@pytest.mark.spec("DEMO-001")
def test_one_elsewhere(engine):
    assert engine.one() == 1
"""


def test_a_partial_run_judges_the_entries_it_could_meet(project: pytest.Pytester) -> None:
    """A run of some files judges the entries whose tests all live in them: one that matched no test is
    stale; entries whose tests are in files not run (or whose rule's area file did not run) are not."""
    (project.path / "tests" / "conformance" / "test_other.py").write_text(OTHER_TESTS, encoding="utf-8")
    (project.path / "xfails.txt").write_text(
        "DEMO-002\nDEMO-003\ntests/conformance/test_demo.py::test_gone\ntests/conformance/test_other.py::test_gone\n",
        encoding="utf-8",
    )
    demo = run(
        project, "--engine", "broken_engine", "--expected-failures", "xfails.txt", "tests/conformance/test_demo.py"
    )
    demo.assert_outcomes(passed=3, xfailed=2)
    assert demo.ret == pytest.ExitCode.TESTS_FAILED
    demo.stdout.fnmatch_lines(
        [
            "*xfails.txt: 4 *2 stale*",
            "*STALE*xfails.txt*DEMO-003*",  # its area's file ran
            "*STALE*xfails.txt*tests/conformance/test_demo.py::test_gone*",
        ]
    )
    assert "test_other.py::test_gone" not in demo.stdout.str()
    other = run(
        project, "--engine", "broken_engine", "--expected-failures", "xfails.txt", "tests/conformance/test_other.py"
    )
    other.assert_outcomes(passed=1)
    assert other.ret == pytest.ExitCode.TESTS_FAILED
    other.stdout.fnmatch_lines(
        [
            "*xfails.txt: 4 *1 stale*",
            "*STALE*xfails.txt*tests/conformance/test_other.py::test_gone*",
        ]
    )
    filtered = run(
        project,
        "--engine",
        "broken_engine",
        "--expected-failures",
        "xfails.txt",
        "tests/conformance/test_demo.py",
        "-k",
        "two",
    )
    assert filtered.ret == pytest.ExitCode.OK  # -k picks tests within the file: no entry could be judged unmet


def test_a_not_observable_verdict_whose_test_passes_is_stale(project: pytest.Pytester) -> None:
    """``not-observable`` says the implementation cannot show the behaviour: a test of it that passes
    (the implementation showed it) makes the verdict stale; one that is unsupported keeps it."""
    tests = project.path / "tests" / "conformance" / "test_demo.py"
    tests.write_text(
        TESTS + '\n@pytest.mark.spec("DEMO-001")\n@pytest.mark.capability("amp")\ndef test_one_with_amp(engine):\n'
        "    assert engine.one() == 1\n",
        encoding="utf-8",
    )
    entry = "  - ids: [{}]\n    verdict: not-observable\n    finding: f\n    evidence: e\n    resolution: r\n"
    with_amp = "tests/conformance/test_demo.py::test_one_with_amp"
    (project.path / "triage.yaml").write_text(TRIAGE_HEAD + "rules:\n" + entry.format(with_amp), encoding="utf-8")
    kept = run(project, "--engine", "broken_engine", "--expected-failures", "triage.yaml")
    assert "STALE" not in kept.stdout.str()
    kept.stdout.fnmatch_lines(["*triage.yaml*: 0 *0 stale*"])
    (project.path / "triage.yaml").write_text(TRIAGE_HEAD + "rules:\n" + entry.format("DEMO-001"), encoding="utf-8")
    result = run(
        project, "--engine", "broken_engine", "--expected-failures", "triage.yaml", "--conformance-json", "m.json"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*STALE expected failure in triage.yaml: tests/conformance/test_demo.py::test_one passed although its "
            "verdict says it cannot be observed (DEMO-001)*"
        ]
    )
    observed = json.loads((project.path / "m.json").read_text())["expected_failures"]["observed"]
    assert observed == {"tests/conformance/test_demo.py::test_one": ["DEMO-001"]}


def test_an_entry_whose_tests_were_all_unsupported_is_stale(project: pytest.Pytester) -> None:
    """An expected failure that failed nowhere because its tests could not run here is no verdict the
    run can keep: the implementation does not observe that behaviour (``not-observable``)."""
    tests = project.path / "tests" / "conformance" / "test_demo.py"
    tests.write_text(
        TESTS + '\n@pytest.mark.spec("DEMO-001")\n@pytest.mark.capability("amp")\ndef test_one_with_amp(engine):\n'
        "    assert engine.one() == 1\n",
        encoding="utf-8",
    )
    (project.path / "xfails.txt").write_text("DEMO-002\ntests/conformance/test_demo.py::test_one_with_amp\n")
    result = run(
        project, "--engine", "broken_engine", "--expected-failures", "xfails.txt", "--conformance-json", "m.json"
    )
    result.assert_outcomes(passed=3, xfailed=2, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*xfails.txt: 2 *1 stale*",
            "*STALE expected failure in xfails.txt: tests/conformance/test_demo.py::test_one_with_amp failed in no "
            "test: the 1 test(s) it matched were skipped or unsupported*",
        ]
    )
    expected = json.loads((project.path / "m.json").read_text())["expected_failures"]
    assert expected["not_applied"] == {"tests/conformance/test_demo.py::test_one_with_amp": 1}
