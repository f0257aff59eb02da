"""The judge judged: synthetic test outcomes in, rule outcomes and level verdicts out.

Three layers, each fed outcomes whose verdict is known in advance:

* :class:`csconform.spec.matrix.Matrix` gets the phase reports pytest would make (built here), for
  every combination of outcomes within a test and within a rule;
* :func:`csconform.spec.verdict.levels_summary` gets rule outcomes per level;
* a small project runs in this process (``pytester.runpytest_inprocess``) with one test per kind of
  outcome pytest can produce, so the reports are pytest's own and the plugin's hooks take part.

Everything runs in-process, so a mutation run (``tox -e mutation``) reaches the mutated judge.
"""

from __future__ import annotations

import itertools
import json
import shutil

import pytest

from csconform.spec import LEVELS, default_specs_dir
from csconform.spec.matrix import (
    EMULATED_PROPERTY,
    INCONCLUSIVE,
    OUTCOME_ORDER,
    RULES_PROPERTY,
    UNSUPPORTED_PROPERTY,
    VIOLATED_PROPERTY,
    Matrix,
    phase_outcome,
)
from csconform.spec.model import Area, Rule, Scope, Source, Spec
from csconform.spec.verdict import BINDING_LEVELS, conforms, levels_summary


def _rule(rule_id: str, level: str = "documented", status: str = "checked") -> Rule:
    return Rule(
        id=rule_id,
        title=f"rule {rule_id}",
        statement="A statement.",
        sources=(Source("pytorch-limitations", "Eval metrics"),),
        kind="behaviour",
        scope=Scope(),
        status=status,
        level=level,
        area="demo",
        file="demo.yaml",
    )


def _spec(*rules: Rule) -> Spec:
    return Spec((Area("demo", "Demo", "demo.yaml", rules),))


def _report(
    nodeid: str,
    when: str,
    outcome: str,
    rules: tuple[str, ...],
    wasxfail: str | None = None,
    **properties: object,
) -> pytest.TestReport:
    props = [(RULES_PROPERTY, rules), *((f"csconform_{k}", v) for k, v in properties.items())]
    report = pytest.TestReport(nodeid, ("test_demo.py", 1, nodeid), {}, outcome, None, when, user_properties=props)  # type: ignore[arg-type]
    if wasxfail is not None:
        report.wasxfail = wasxfail
    return report


# the reports pytest makes for one test, per kind of test outcome (setup, call, teardown)
PHASES: dict[str, list[tuple[str, str, dict[str, object]]]] = {
    "passed": [("setup", "passed", {}), ("call", "passed", {}), ("teardown", "passed", {})],
    "failed": [("setup", "passed", {}), ("call", "failed", {}), ("teardown", "passed", {})],
    "error in setup": [("setup", "failed", {}), ("teardown", "passed", {})],
    "error in teardown": [("setup", "passed", {}), ("call", "passed", {}), ("teardown", "failed", {})],
    "xfailed": [("setup", "passed", {}), ("call", "skipped", {"wasxfail": "known"}), ("teardown", "passed", {})],
    "xpassed": [("setup", "passed", {}), ("call", "passed", {"wasxfail": "known"}), ("teardown", "passed", {})],
    # a strict expectation that passed: pytest makes the call report failed, without wasxfail
    "xpassed strict": [("setup", "passed", {}), ("call", "failed", {}), ("teardown", "passed", {})],
    "skipped": [("setup", "skipped", {}), ("teardown", "passed", {})],
    "skipped in call": [("setup", "passed", {}), ("call", "skipped", {}), ("teardown", "passed", {})],
    "unsupported": [
        ("setup", "passed", {}),
        ("call", "skipped", {"unsupported": "no amp"}),
        ("teardown", "passed", {}),
    ],
    "unsupported in setup": [("setup", "skipped", {"unsupported": "no amp"}), ("teardown", "passed", {})],
}
TEST_OUTCOME = {
    "passed": "passed",
    "failed": "failed",
    "error in setup": "failed",
    "error in teardown": "failed",
    "xfailed": "xfailed",
    "xpassed": "passed",
    "xpassed strict": "failed",
    "skipped": "skipped",
    "skipped in call": "skipped",
    "unsupported": "unsupported",
    "unsupported in setup": "unsupported",
}
# the kind of test that gives each test outcome, for combining tests within a rule
KIND_OF = {
    "failed": "failed",
    "xfailed": "xfailed",
    "unsupported": "unsupported",
    "skipped": "skipped",
    "passed": "passed",
}


def _feed(matrix: Matrix, nodeid: str, kind: str, rules: tuple[str, ...], **extra: object) -> None:
    """Hand ``matrix`` the reports of one test of ``kind``; ``extra`` properties go on failed phases
    (violations) or on every phase (emulated)."""
    for when, outcome, properties in PHASES[kind]:
        properties = dict(properties)
        wasxfail = properties.pop("wasxfail", None)
        if outcome == "failed" and "violated_rules" in extra:
            properties["violated_rules"] = extra["violated_rules"]
        if "emulated" in extra:
            properties["emulated"] = extra["emulated"]
        matrix.record(_report(nodeid, when, outcome, rules, wasxfail=str(wasxfail) if wasxfail else None, **properties))


def test_the_property_names_are_those_the_plugin_attaches() -> None:
    assert (RULES_PROPERTY, UNSUPPORTED_PROPERTY, EMULATED_PROPERTY, VIOLATED_PROPERTY) == (
        "csconform_rules",
        "csconform_unsupported",
        "csconform_emulated",
        "csconform_violated_rules",
    )
    assert OUTCOME_ORDER == ("failed", "xfailed", "unsupported", "skipped", "passed")


# --- one test: its phases ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(PHASES))
def test_a_test_outcome_is_the_worst_of_its_phases(kind: str) -> None:
    matrix = Matrix(_spec(_rule("R-001")), "engine")
    _feed(matrix, "t", kind, ("R-001",))
    assert matrix.test_outcomes == {"t": TEST_OUTCOME[kind]}
    entry = matrix.rules()["R-001"]
    assert entry == {
        "outcome": TEST_OUTCOME[kind],
        "tests": 1,
        TEST_OUTCOME[kind]: 1,
        **({"unsupported_reasons": ["no amp"]} if TEST_OUTCOME[kind] == "unsupported" else {}),
    }


@pytest.mark.parametrize(
    ("when", "outcome", "wasxfail", "properties", "expected"),
    [
        ("setup", "passed", None, {}, None),
        ("teardown", "passed", None, {}, None),
        ("call", "passed", None, {}, "passed"),
        ("call", "failed", None, {}, "failed"),
        ("setup", "failed", None, {}, "failed"),
        ("teardown", "failed", None, {}, "failed"),
        ("call", "skipped", None, {}, "skipped"),
        ("setup", "skipped", None, {}, "skipped"),
        ("call", "skipped", "known", {}, "xfailed"),
        ("call", "passed", "known", {}, "passed"),
        ("call", "skipped", None, {"unsupported": "why"}, "unsupported"),
        ("setup", "skipped", None, {"unsupported": "why"}, "unsupported"),
        ("call", "failed", None, {"unsupported": "why"}, "failed"),
        ("call", "skipped", "known", {"unsupported": "why"}, "unsupported"),
    ],
)
def test_what_one_phase_report_says(when, outcome, wasxfail, properties, expected) -> None:
    assert phase_outcome(_report("t", when, outcome, ("R-001",), wasxfail, **properties)) == expected


@pytest.mark.parametrize("order", list(itertools.permutations(["setup", "call", "teardown"])))
def test_the_order_phases_arrive_in_does_not_matter(order: tuple[str, ...]) -> None:
    outcomes = {"setup": "skipped", "call": "passed", "teardown": "failed"}
    matrix = Matrix(_spec(_rule("R-001")), "engine")
    for when in order:
        matrix.record(_report("t", when, outcomes[when], ("R-001",)))
    assert matrix.test_outcomes["t"] == "failed"


def test_a_test_that_never_reached_its_call_counts_for_nothing() -> None:
    """An interrupted run: only the setup of the first test was reported. It does not count, and it does
    not hide the tests after it."""
    matrix = Matrix(_spec(_rule("R-001"), _rule("R-002")), "engine")
    matrix.record(_report("interrupted", "setup", "passed", ("R-001", "R-002")))
    _feed(matrix, "later", "failed", ("R-002",))
    _feed(matrix, "other", "passed", ("R-001",))
    assert matrix.rules() == {
        "R-001": {"outcome": "passed", "tests": 1, "passed": 1},
        "R-002": {"outcome": "failed", "tests": 1, "failed": 1},
    }


def test_a_test_without_rules_is_not_in_the_matrix() -> None:
    matrix = Matrix(_spec(_rule("R-001")), "engine")
    for rules in ((), None, ["R-001"]):
        report = pytest.TestReport("t", ("t.py", 1, "t"), {}, "failed", None, "call", user_properties=[])
        if rules is not None:
            report.user_properties.append((RULES_PROPERTY, rules))
        matrix.record(report)
    assert matrix.test_rules == {} and matrix.test_outcomes == {}
    assert matrix.rules()["R-001"] == {"outcome": "skipped", "tests": 0}


# --- one rule: its tests ----------------------------------------------------------------------------


SUBSETS = [s for n in range(1, len(OUTCOME_ORDER) + 1) for s in itertools.combinations(OUTCOME_ORDER, n)]


@pytest.mark.parametrize("outcomes", SUBSETS, ids=["+".join(s) for s in SUBSETS])
@pytest.mark.parametrize("reverse", [False, True], ids=["worst first", "worst last"])
def test_a_rule_takes_the_worst_outcome_of_its_tests(outcomes: tuple[str, ...], reverse: bool) -> None:
    """failed > xfailed > unsupported > skipped > passed, whatever the order the tests ran in; every
    test counts once under its own outcome."""
    matrix = Matrix(_spec(_rule("R-001")), "engine")
    tests = list(reversed(outcomes)) if reverse else list(outcomes)
    for index, outcome in enumerate(tests):
        _feed(matrix, f"t{index}", KIND_OF[outcome], ("R-001",))
        _feed(matrix, f"u{index}", KIND_OF[outcome], ("R-001",))  # two of each: counts are counts
    entry = matrix.rules()["R-001"]
    assert entry["outcome"] == outcomes[0]
    assert entry["tests"] == 2 * len(outcomes)
    assert {k: v for k, v in entry.items() if k in OUTCOME_ORDER} == {o: 2 for o in outcomes}


def test_failed_outranks_xfailed_and_skipped() -> None:
    matrix = Matrix(_spec(_rule("R-001"), _rule("R-002")), "engine")
    for index, kind in enumerate(("xfailed", "skipped", "failed", "passed")):
        _feed(matrix, f"a{index}", kind, ("R-001",))
    for index, kind in enumerate(("xfailed", "skipped", "passed")):
        _feed(matrix, f"b{index}", kind, ("R-002",))
    rules = matrix.rules()
    assert rules["R-001"]["outcome"] == "failed" and rules["R-002"]["outcome"] == "xfailed"


def test_a_test_of_several_rules_counts_for_each() -> None:
    matrix = Matrix(_spec(_rule("R-001"), _rule("R-002"), _rule("R-003")), "engine")
    _feed(matrix, "both", "failed", ("R-001", "R-002"))
    _feed(matrix, "one", "passed", ("R-001",))
    rules = matrix.rules()
    assert rules["R-001"] == {"outcome": "failed", "tests": 2, "failed": 1, "passed": 1}
    assert rules["R-002"] == {"outcome": "failed", "tests": 1, "failed": 1}
    assert rules["R-003"] == {"outcome": "skipped", "tests": 0}


def test_pending_rules_are_pending_and_retired_rules_are_left_out() -> None:
    spec = _spec(_rule("R-001"), _rule("R-002", status="pending"), _rule("R-003", status="retired"))
    matrix = Matrix(spec, "engine", {"capabilities": ["amp"]})
    _feed(matrix, "t", "passed", ("R-001",))
    rules = matrix.rules()
    assert rules == {
        "R-001": {"outcome": "passed", "tests": 1, "passed": 1},
        "R-002": {"outcome": "pending", "tests": 0},
    }
    as_json = matrix.to_json()
    assert as_json["engine"] == "engine" and as_json["implementation"] == {"capabilities": ["amp"]}
    assert as_json["spec_rules"] == 2 and as_json["rules"] == rules
    assert as_json["levels"] == levels_summary(spec, rules)


def test_unsupported_reasons_and_emulations_are_kept_per_rule() -> None:
    matrix = Matrix(_spec(_rule("R-001"), _rule("R-002")), "engine")
    _feed(matrix, "a", "unsupported", ("R-001",), emulated=("amp",))
    _feed(matrix, "b", "unsupported in setup", ("R-001", "R-002"))
    _feed(matrix, "c", "passed", ("R-002",), emulated=("optim", "amp"))
    _feed(matrix, "d", "failed", ("R-002",), emulated=("data",))
    rules = matrix.rules()
    # an unsupported test touched nothing it could vouch for: its emulations are not the rule's
    assert rules["R-001"] == {"outcome": "unsupported", "tests": 2, "unsupported": 2, "unsupported_reasons": ["no amp"]}
    assert rules["R-002"]["unsupported_reasons"] == ["no amp"]
    assert rules["R-002"]["emulated"] == ["amp", "data", "optim"]


# --- a failure that names its rules (the state machine) ----------------------------------------------


def test_a_failure_naming_some_rules_fails_those_and_is_inconclusive_for_the_others() -> None:
    matrix = Matrix(_spec(_rule("R-001"), _rule("R-002"), _rule("R-003")), "engine")
    _feed(matrix, "machine", "failed", ("R-001", "R-002", "R-003"), violated_rules=("R-002",), emulated=("amp",))
    _feed(matrix, "fixed", "passed", ("R-001",))
    rules = matrix.rules()
    assert rules["R-002"] == {"outcome": "failed", "tests": 1, "failed": 1, "emulated": ["amp"]}
    assert rules["R-001"] == {"outcome": "passed", "tests": 2, "passed": 1, INCONCLUSIVE: 1}
    # a rule whose only test stopped before exercising it is not passed
    assert rules["R-003"] == {"outcome": "skipped", "tests": 1, INCONCLUSIVE: 1}
    _feed(matrix, "machine again", "failed", ("R-001", "R-003"), violated_rules=("R-001",))
    assert matrix.rules()["R-003"] == {"outcome": "skipped", "tests": 2, INCONCLUSIVE: 2}


def test_inconclusive_only_applies_to_a_failed_test() -> None:
    matrix = Matrix(_spec(_rule("R-001"), _rule("R-002")), "engine")
    report = _report("t", "call", "passed", ("R-001", "R-002"), violated_rules=("R-001",))
    matrix.record(report)
    assert matrix.test_violations == {}
    assert matrix.rules()["R-002"] == {"outcome": "passed", "tests": 1, "passed": 1}


@pytest.mark.parametrize(
    "violated",
    [("R-009",), ("R-001", "R-009"), (), None, "R-001", ["R-001"]],
    ids=[
        "a rule the test does not name",
        "one it names and one it does not",
        "none",
        "no property",
        "a string",
        "a list",
    ],
)
def test_a_failure_that_names_no_rule_of_its_test_fails_them_all(violated: object) -> None:
    matrix = Matrix(_spec(_rule("R-001"), _rule("R-002")), "engine")
    properties = {} if violated is None else {"violated_rules": violated}
    matrix.record(_report("t", "call", "failed", ("R-001", "R-002"), **properties))
    rules = matrix.rules()
    assert rules["R-001"]["outcome"] == rules["R-002"]["outcome"] == "failed"


def test_every_failed_phase_of_a_test_adds_the_rules_it_names() -> None:
    matrix = Matrix(_spec(_rule("R-001"), _rule("R-002"), _rule("R-003")), "engine")
    rules = ("R-001", "R-002", "R-003")
    matrix.record(_report("t", "call", "failed", rules, violated_rules=("R-001",)))
    matrix.record(_report("t", "teardown", "failed", rules, violated_rules=("R-002",)))
    outcomes = {rule_id: entry["outcome"] for rule_id, entry in matrix.rules().items()}
    assert outcomes == {"R-001": "failed", "R-002": "failed", "R-003": "skipped"}
    # then a phase whose failure names no rule: every rule of the test fails
    matrix.record(_report("t", "teardown", "failed", rules))
    matrix.record(_report("t", "teardown", "failed", rules, violated_rules=("R-001",)))
    assert {entry["outcome"] for entry in matrix.rules().values()} == {"failed"}


# --- the level verdict ------------------------------------------------------------------------------

APPLICABLE = {"passed": True, "failed": True, "xfailed": True, "unsupported": False, "skipped": False, "pending": False}


@pytest.mark.parametrize("outcome", sorted(APPLICABLE))
@pytest.mark.parametrize("level", LEVELS)
def test_the_level_verdict_counts_exactly_the_applicable_rules(level: str, outcome: str) -> None:
    """One rule of each outcome at every level, and one more of ``outcome`` at ``level``."""
    rules_of = [_rule(f"{lv[0].upper()}-{o}", level=lv) for lv in LEVELS for o in APPLICABLE]
    extra = _rule("X-001", level=level)
    spec = _spec(*rules_of, extra, _rule("Y-001", level=level))  # Y-001: not in this run
    rules = {rule.id: {"outcome": rule.id.split("-", 1)[1]} for rule in rules_of} | {"X-001": {"outcome": outcome}}
    summary = levels_summary(spec, rules)
    for lv in LEVELS:
        mine = lv == level
        outcomes = {o: 1 + (mine and o == outcome) for o in APPLICABLE}
        assert summary[lv]["outcomes"] == dict(sorted(outcomes.items()))
        assert summary[lv]["applicable"] == 3 + (mine and APPLICABLE[outcome])
        assert summary[lv]["passed"] == 1 + (mine and outcome == "passed")
        assert summary[lv]["all_applicable_pass"] is False  # each level has a failed rule


@pytest.mark.parametrize("outcome", sorted(APPLICABLE))
@pytest.mark.parametrize("level", LEVELS)
def test_an_implementation_conforms_when_every_applicable_binding_rule_passes(level: str, outcome: str) -> None:
    spec = _spec(*(_rule(f"{lv}-1", level=lv) for lv in LEVELS), _rule("X-001", level=level))
    rules = {f"{lv}-1": {"outcome": "passed"} for lv in LEVELS} | {"X-001": {"outcome": outcome}}
    summary = levels_summary(spec, rules)
    passes = outcome == "passed" or not APPLICABLE[outcome]
    assert summary[level]["all_applicable_pass"] is passes
    assert conforms(summary) is (passes or level not in BINDING_LEVELS)


def test_a_level_with_no_applicable_rule_passes_vacuously() -> None:
    spec = _spec(_rule("D-001", level="documented"), _rule("P-001", level="public"))
    summary = levels_summary(spec, {"D-001": {"outcome": "unsupported"}})
    assert summary["documented"] == {
        "outcomes": {"unsupported": 1},
        "applicable": 0,
        "passed": 0,
        "all_applicable_pass": True,
    }
    assert summary["public"] == {"outcomes": {}, "applicable": 0, "passed": 0, "all_applicable_pass": True}
    assert conforms(summary)
    assert BINDING_LEVELS == ("documented", "public")


# --- pytest's own reports, through the plugin, in this process ---------------------------------------

AREA = """\
area: verdicts
title: Verdicts
rules:
""" + "".join(
    f"""\
  - id: V-{number:03d}
    title: Rule {number}
    statement: Rule {number} holds.
    source: "pytorch-limitations#Eval metrics"
    kind: behaviour
    level: {level}
    scope: {{target: both, mode: any}}
    status: {status}
{"    reason: not yet" + chr(10) if status == "pending" else ""}"""
    for number, level, status in [
        (1, "documented", "checked"),
        (2, "documented", "checked"),
        (3, "documented", "checked"),
        (4, "public", "checked"),
        (5, "public", "checked"),
        (6, "public", "checked"),
        (7, "reference", "checked"),
        (8, "reference", "checked"),
        (9, "documented", "checked"),
        (10, "public", "checked"),
        (11, "public", "pending"),
    ]
)

ENGINE = """\
CAPABILITIES = frozenset()
TARGETS = ("cs", "cpu")
state = {"target": "cs"}
def reset():
    state["target"] = "cs"
def set_target(name):
    state["target"] = name
def current_target():
    return state["target"]
def use_target(name):
    raise NotImplementedError
"""

TESTS = """\
import pytest
from csconform.errors import Unsupported
from csconform.testing.violations import RuleViolation

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")

# V-001: passed + skipped -> skipped (a rule passes only when all of its tests pass)
@pytest.mark.spec("V-001")
def test_v1_passes(engine):
    pass

@pytest.mark.spec("V-001")
def test_v1_skipped(engine):
    pytest.skip("not today")

# V-002: failed + xfailed + skipped -> failed
@pytest.mark.spec("V-002")
def test_v2_fails(engine):
    assert 1 == 2

@pytest.mark.spec("V-002")
@pytest.mark.xfail(reason="known")
def test_v2_xfails(engine):
    assert 1 == 2

@pytest.mark.spec("V-002")
@pytest.mark.skip(reason="skipped by mark")
def test_v2_skipped(engine):
    pass

# V-003: xfailed + passed + a non-strict unexpected pass -> xfailed
@pytest.mark.spec("V-003")
@pytest.mark.xfail(reason="known")
def test_v3_xfails(engine):
    assert 1 == 2

@pytest.mark.spec("V-003")
@pytest.mark.xfail(reason="known", strict=False)
def test_v3_xpasses(engine):
    pass

# V-004: an unexpected pass under a strict expectation fails
@pytest.mark.spec("V-004")
@pytest.mark.xfail(reason="known", strict=True)
def test_v4_strict_xpass(engine):
    pass

# V-005: unsupported + passed -> unsupported: never applicable
@pytest.mark.spec("V-005")
def test_v5_unsupported(engine):
    raise Unsupported("the engine cannot show it")

@pytest.mark.spec("V-005")
def test_v5_passes(engine):
    pass

# V-006: a capability the engine does not declare -> unsupported
@pytest.mark.spec("V-006")
@pytest.mark.capability("amp")
def test_v6_needs_amp(engine):
    pass

# V-007: an error in teardown fails the rule
@pytest.mark.spec("V-007")
def test_v7_teardown_breaks(engine, broken_teardown):
    pass

# V-008, V-009, V-010: a state machine fails naming V-009 only
@pytest.mark.spec("V-008", "V-009", "V-010")
def test_machine(engine):
    raise RuleViolation("V-009", "the invariant of V-009 broke")

@pytest.mark.spec("V-010")
def test_v10_fixed_input(engine):
    pass
"""

# (outcome, tests, counts) per rule, as the module docstring of csconform.spec.matrix says
EXPECTED = {
    "V-001": ("skipped", {"passed": 1, "skipped": 1}),
    "V-002": ("failed", {"failed": 1, "xfailed": 1, "skipped": 1}),
    "V-003": ("xfailed", {"xfailed": 1, "passed": 1}),
    "V-004": ("failed", {"failed": 1}),
    "V-005": ("unsupported", {"unsupported": 1, "passed": 1}),
    "V-006": ("unsupported", {"unsupported": 1}),
    "V-007": ("failed", {"failed": 1}),
    "V-008": ("skipped", {INCONCLUSIVE: 1}),
    "V-009": ("failed", {"failed": 1}),
    "V-010": ("passed", {"passed": 1, INCONCLUSIVE: 1}),
    "V-011": ("pending", {}),
}


@pytest.fixture
def verdict_project(pytester: pytest.Pytester) -> pytest.Pytester:
    specs = pytester.path / "specs"
    specs.mkdir()
    shutil.copy(default_specs_dir() / "sources.yaml", specs / "sources.yaml")
    (specs / "verdicts.yaml").write_text(AREA, encoding="utf-8")
    pytester.makepyfile(verdict_engine=ENGINE, test_rule_outcomes=TESTS)
    pytester.syspathinsert()
    return pytester


def test_pytest_outcomes_become_the_rule_outcomes_and_level_verdicts(verdict_project: pytest.Pytester) -> None:
    result = verdict_project.runpytest_inprocess(
        "--specs-dir",
        str(verdict_project.path / "specs"),
        "--engine",
        "verdict_engine",
        "--conformance-json",
        "matrix.json",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
    )
    result.assert_outcomes(passed=4, failed=3, skipped=4, xfailed=2, xpassed=1, errors=1)
    matrix = json.loads((verdict_project.path / "matrix.json").read_text(encoding="utf-8"))
    rules = matrix["rules"]
    assert set(rules) == set(EXPECTED)
    for rule_id, (outcome, counts) in EXPECTED.items():
        entry = {k: v for k, v in rules[rule_id].items() if k != "unsupported_reasons"}
        assert entry == {"outcome": outcome, "tests": sum(counts.values()), **counts}, rule_id
    assert rules["V-005"].get("unsupported_reasons") == ["the engine cannot show it"]
    assert rules["V-006"].get("unsupported_reasons") == ["verdict_engine does not offer the capability 'amp'"]
    # documented V-001 skipped, V-002 failed, V-003 xfailed, V-009 failed: 3 applicable, none passes;
    # public V-004 failed, V-005 and V-006 unsupported, V-010 passed, V-011 pending: 2 applicable;
    # reference V-007 failed, V-008 skipped (inconclusive only): 1 applicable
    levels = matrix["levels"]
    assert levels["documented"] == {
        "outcomes": {"failed": 2, "skipped": 1, "xfailed": 1},
        "applicable": 3,
        "passed": 0,
        "all_applicable_pass": False,
    }
    assert levels["public"] == {
        "outcomes": {"failed": 1, "passed": 1, "pending": 1, "unsupported": 2},
        "applicable": 2,
        "passed": 1,
        "all_applicable_pass": False,
    }
    assert levels["reference"] == {
        "outcomes": {"failed": 1, "skipped": 1},
        "applicable": 1,
        "passed": 0,
        "all_applicable_pass": False,
    }
    result.stdout.fnmatch_lines(
        [
            "*rule outcomes this run: 4 failed, 1 passed, 2 skipped, 2 unsupported, 1 xfailed",
            "  documented: 0 of 3 applicable rules pass",
            "  public: 1 of 2 applicable rules pass",
            "  reference: 0 of 1 applicable rules pass (informative)",
            "2 rules could not be exercised on verdict_engine (unsupported*",
        ]
    )
