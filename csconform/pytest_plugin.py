"""The csconform pytest plugin: engine selection, rule markers, the traceability gate, the matrix.

Registered through the ``pytest11`` entry point, so it is active wherever csconform is installed:

- ``--engine MODULE`` (or ``CSCONFORM_ENGINE``) chooses the implementation under test, handed to
  tests as the ``engine`` fixture; the default is the reference engine ``csconform.engine``. The
  module is validated against the implementation interface (:mod:`csconform.interface`) before any
  test runs, and tests reach it through the capability gate: a check that needs a capability or a
  target the implementation does not declare is reported ``unsupported`` (so is a test marked
  ``@pytest.mark.capability("name")`` for an undeclared capability).
- ``@pytest.mark.spec("ID", ...)`` binds a test to rules. The traceability gate refuses a run in
  which a test names an unknown, retired or pending rule, or (when the whole conformance suite is
  collected) a rule marked ``checked`` has no test — so a rule's ``status`` is always true.
- ``--conformance-json PATH`` writes the conformance matrix (:mod:`csconform.spec.matrix`); a rule
  passes only when all of its tests pass. A test that fails with a
  :class:`~csconform.testing.violations.RuleViolation` naming some of its rules fails those rules
  only; for its other rules it is ``inconclusive`` (it stopped before exercising them fully) and does
  not count towards their outcome.
- ``--expected-failures FILE`` (or ``CSCONFORM_EXPECTED_FAILURES``) lists rule ids or test ids an
  engine is known to fail (the ``rules`` of its triage, :mod:`csconform.triage`, or a text file of
  ids); they run as xfails. Expectations cannot go stale: a test expected to fail that passes (an
  unexpected pass), an entry that matches no test although the run collected every test it could
  match, or one whose tests were all skipped or unsupported fails the run; the terminal summary and
  the matrix name each one. A triage holds the verdicts for one implementation and one release of
  its package, and is refused for another.
- Hypothesis profiles ``dev``, ``ci`` (loaded when ``CI`` is set) and ``nightly``, chosen with
  ``HYPOTHESIS_PROFILE``. Under ``ci`` (derandomized) a test draws the same examples whatever else
  the run selects or imports (:mod:`csconform.testing.reproducible_examples`).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from csconform import __version__
from csconform.conformance import PACKAGE_NAME as SUITE_PACKAGE
from csconform.conformance import SUITE_DIR, suite_test_id
from csconform.errors import CsConformError, InterfaceError, Unsupported
from csconform.interface import CAPABILITY_NAMES
from csconform.interface.gate import ImplementationUnderTest
from csconform.interface.load import implementation_sources, import_implementation
from csconform.interface.validate import checked_declaration
from csconform.output_guard import check_output, write_text
from csconform.spec import LEVELS, load_spec, spec_digest
from csconform.spec.matrix import EMULATED_PROPERTY, RULES_PROPERTY, UNSUPPORTED_PROPERTY, VIOLATED_PROPERTY, Matrix
from csconform.spec.traceability import rules_by_test
from csconform.spec.verdict import BINDING_LEVELS, levels_summary
from csconform.testing.violations import violated_rules

DEFAULT_ENGINE = "csconform.engine"


def engine_name(option: str | None) -> str:
    """The implementation under test: the ``--engine`` option as given (an empty one is refused when
    imported), else ``$CSCONFORM_ENGINE`` when set and not empty, else the reference engine."""
    if option is not None:
        return option
    return os.environ.get("CSCONFORM_ENGINE") or DEFAULT_ENGINE


def register_hypothesis_profiles() -> str:
    """Register the three profiles and load the one the environment asks for; return its name."""
    from hypothesis import HealthCheck, settings

    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("dev", max_examples=50, deadline=2000, suppress_health_check=quiet)
    settings.register_profile(
        "ci",
        max_examples=50,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=quiet,
    )
    settings.register_profile(
        "nightly",
        max_examples=1000,
        deadline=None,
        stateful_step_count=100,
        suppress_health_check=quiet,
    )
    name = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
    settings.load_profile(name)
    if settings.get_profile(name).derandomize:
        # the same examples for a test whatever else the run selects or imports (see the module)
        from csconform.testing.reproducible_examples import draw_independently_of_loaded_modules

        draw_independently_of_loaded_modules()
    return name


@dataclass
class ExpectedFailures:
    """Rule ids or test ids an engine is known to fail: the expected-failure verdicts of a triage
    (csconform/triage.py), which holds for one implementation and one release of its package
    (``release``), or a text file of ids (one per line, ``#`` comments).

    An entry is a promise that every test it matches fails: a matched test that passes is an
    unexpected pass, so an entry for a rule suits only a rule all of whose tests fail (name the
    test ids otherwise). Stale too: an entry the run could have met (:meth:`CsConformPlugin.could_meet`)
    that matched no test, and one whose tests ran but were all skipped or unsupported (it failed
    nowhere: a verdict of ``not-observable`` says that). A ``not-observable`` verdict (``unobservable``)
    is stale when a test it matches passes: the implementation showed the behaviour after all.
    """

    path: Path
    entries: list[str]
    unobservable: list[str] = field(default_factory=list)
    release: str = ""
    matched: set[str] = field(default_factory=set)
    # test id -> the entries that expected it to fail, for every such test that passed
    unexpected_passes: dict[str, list[str]] = field(default_factory=dict)
    failed_as_expected: set[str] = field(default_factory=set)
    # entry -> the tests it matched that were skipped (unsupported among them)
    skipped: dict[str, set[str]] = field(default_factory=dict)
    # test id -> the not-observable entries it matched, for every such test that passed
    observed: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path, implementation: str) -> ExpectedFailures:
        """The expected failures of ``implementation`` in ``path``; a triage for another implementation
        or release is refused."""
        from csconform.triage import read_expected_failures

        try:
            return cls(path, *read_expected_failures(path, implementation))
        except CsConformError as exc:
            raise pytest.UsageError(f"csconform: expected failures: {exc}") from None

    def entries_for(self, nodeid: str, rule_ids: list[str], entries: list[str] | None = None) -> list[str]:
        """The entries (the expected failures unless ``entries`` is given) that name the test or its rules."""
        named = self.entries if entries is None else entries
        return [e for e in named if e in rule_ids or e == nodeid or nodeid.startswith(e + "[")]

    def record(self, report: pytest.TestReport) -> None:
        """Take one phase's report of a test the entries in its ``csconform_expected`` (or
        ``csconform_unobservable``) property matched (under xdist only the reports reach the
        controller: they carry which entries matched)."""
        properties = dict(report.user_properties)
        test_id = str(properties.get("csconform_test_id", report.nodeid))
        unobservable = properties.get("csconform_unobservable", ())
        if isinstance(unobservable, tuple) and unobservable and report.when == "call" and report.passed:
            self.observed[test_id] = [str(entry) for entry in unobservable]
        entries = properties.get("csconform_expected", ())
        if not isinstance(entries, tuple) or not entries:
            return
        names = [str(entry) for entry in entries]
        self.matched.update(names)
        if report.skipped and hasattr(report, "wasxfail"):
            self.failed_as_expected.update(names)
        elif report.skipped:
            for name in names:
                self.skipped.setdefault(name, set()).add(test_id)
        elif report.when == "call" and report.passed:
            self.unexpected_passes[test_id] = names

    def to_json(self, could_meet: Callable[[str], bool]) -> dict[str, object]:
        """The matrix's ``expected_failures``: the stale expectations are the unexpected passes, the
        entries that ``could_meet`` says the run could have met but that matched no test, those whose
        tests were all skipped or unsupported, and the tests that passed although a not-observable
        verdict matched them."""
        unmatched = [e for e in self.entries if e not in self.matched and could_meet(e)]
        passed = {entry for entries in self.unexpected_passes.values() for entry in entries}
        not_applied = {
            entry: len(tests)
            for entry, tests in sorted(self.skipped.items())
            if entry not in self.failed_as_expected and entry not in passed
        }
        return {
            "file": str(self.path),
            "release": self.release,
            "entries": len(self.entries),
            "unexpected_passes": {nodeid: entries for nodeid, entries in sorted(self.unexpected_passes.items())},
            "unmatched": unmatched,
            "not_applied": not_applied,
            "observed": {nodeid: entries for nodeid, entries in sorted(self.observed.items())},
            "stale": len(self.unexpected_passes) + len(unmatched) + len(not_applied) + len(self.observed),
        }


def expected_failure_lines(expected: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """What a run says about its expected failures (a matrix's ``expected_failures``), line by line,
    each with whether it reports a stale expectation (which fails the run): the plugin's terminal
    summary and ``csconform check`` print the same lines."""
    path, count = expected["file"], expected["entries"]
    release = f" (verdicts for {expected['release']})" if expected["release"] else ""
    stale = [
        f"{nodeid} passed although expected to fail ({', '.join(entries)})"
        for nodeid, entries in expected["unexpected_passes"].items()
    ] + [f"{entry} matches no collected test" for entry in expected["unmatched"]]
    stale += [
        f"{entry} failed in no test: the {tests} test(s) it matched were skipped or unsupported"
        for entry, tests in expected["not_applied"].items()
    ]
    stale += [
        f"{nodeid} passed although its verdict says it cannot be observed ({', '.join(entries)})"
        for nodeid, entries in expected.get("observed", {}).items()
    ]
    lines = [
        (
            f"expected failures from {path}{release}: {count} {'entry' if count == 1 else 'entries'}, "
            f"{len(stale)} stale",
            False,
        )
    ]
    lines += [(f"STALE expected failure in {path}: {line}", True) for line in stale]
    if stale:
        lines.append(
            (
                f"csconform: {len(stale)} stale expected failure(s): the run fails. Drop or narrow the entries "
                "(test ids where only some tests of a rule fail) once the reason is understood.",
                True,
            )
        )
    return lines


class CsConformPlugin:
    """Per-session state: the spec, the engine under test, the matrix and the expected failures."""

    def __init__(self, config: pytest.Config, specs_dir: str | None) -> None:
        self.config = config
        self.engine_name = engine_name(config.getoption("csconform_engine"))
        try:
            self.spec = load_spec(specs_dir)
        except CsConformError as exc:
            raise pytest.UsageError(f"csconform: {exc}") from None
        xfails = config.getoption("csconform_expected_failures") or os.environ.get("CSCONFORM_EXPECTED_FAILURES")
        self.expected = ExpectedFailures.read(Path(xfails), self.engine_name) if xfails else None
        path = config.getoption("csconform_json")
        if path:  # refused before any test runs
            try:
                check_output(path, "--conformance-json", extra_inputs=self._inputs())
            except CsConformError as exc:
                raise pytest.UsageError(f"csconform: {exc}") from None
        self.hypothesis_profile = register_hypothesis_profiles()
        self.engine = self._import_engine()
        declaration = self.engine.declaration
        self.matrix = Matrix(
            self.spec,
            self.engine_name,
            {
                "name": str(getattr(self.engine.module, "IMPLEMENTATION", self.engine_name)),
                "capabilities": sorted(declaration.capabilities),
                "targets": list(declaration.targets),
                "emulations": dict(declaration.emulations),
            },
            {"csconform": __version__, "spec_sha256": spec_digest(specs_dir)},
        )
        self.gate_problems: list[str] = []

    def _inputs(self) -> list[tuple[str, Path]]:
        """The files the run reads that the matrix must not be written over: the expected failures and
        the implementation's own source."""
        inputs = [("--expected-failures", self.expected.path)] if self.expected is not None else []
        return inputs + [("--engine", source) for source in implementation_sources(self.engine_name)]

    # -- the implementation under test -------------------------------------------------------------

    def _import_engine(self) -> ImplementationUnderTest:
        """Import and validate the engine up front, so a wrong one stops the run before any test does."""
        try:
            module = import_implementation(self.engine_name)
        except CsConformError as exc:
            raise pytest.UsageError(f"csconform: engine: {exc}") from None
        try:
            declaration = checked_declaration(module, self.engine_name)
        except InterfaceError as exc:
            raise pytest.UsageError(f"csconform: engine {exc}") from None
        return ImplementationUnderTest(module, declaration, self.engine_name)

    def required_target(self, item: pytest.Item) -> str | None:
        """Target cs when a rule the test checks is a CS-system limitation, else None (the default)."""
        for mark in item.iter_markers("spec"):
            for rule_id in mark.args:
                if rule_id in self.spec and self.spec.get(rule_id).scope.target == "cs":
                    return "cs"
        return None

    # -- pytest hooks ------------------------------------------------------------------------------

    def pytest_report_header(self) -> list[str]:
        counts = self.spec.counts()
        declaration = self.engine.declaration
        emulated = ", ".join(sorted(declaration.emulations)) or "none"
        levels = self.spec.level_counts()
        return [
            f"csconform engine: {self.engine_name}",
            f"csconform capabilities: {', '.join(sorted(declaration.capabilities)) or 'none'}; "
            f"targets: {', '.join(declaration.targets)}; emulated: {emulated}",
            f"csconform spec: {len(self.spec.active())} rules ({counts['checked']} checked, "
            f"{counts['pending']} pending, {counts['retired']} retired), by level: {levels['documented']} "
            f"documented, {levels['public']} public, {levels['reference']} reference; "
            f"hypothesis profile: {self.hypothesis_profile}",
        ]

    def _filtered(self) -> bool:
        """True when an option picks tests within the files collected (so not every test had its chance)."""
        option = self.config.option
        if getattr(option, "keyword", "") or getattr(option, "markexpr", "") or getattr(option, "deselect", None):
            return True
        return bool(getattr(option, "lf", False) or getattr(option, "failedfirst", False))

    @functools.cached_property
    def _argument_paths(self) -> list[Path]:
        """The files and folders the run's arguments name (a module or package with ``--pyargs``);
        arguments naming tests within a file (``::``) are left out."""
        paths = []
        for arg in self.config.args:
            if "::" in arg:
                continue
            if getattr(self.config.option, "pyargs", False):
                try:
                    module = importlib.util.find_spec(arg)
                except (ImportError, ValueError):
                    module = None
                if module is not None and module.origin:
                    origin = Path(module.origin)
                    paths.append(origin.parent if module.submodule_search_locations else origin)
                    continue
            paths.append((self.config.invocation_params.dir / arg).resolve())
        return paths

    def _full_suite_collected(self) -> bool:
        """True when the run covers the whole conformance suite, unfiltered (so every test had its chance)."""
        gate = self.config.getoption("csconform_gate")
        if gate != "auto":
            return gate == "on"
        if self._filtered():
            return False
        suites = suite_dirs(self.config)
        return any(path == suite or path in suite.parents for path in self._argument_paths for suite in suites)

    @functools.cached_property
    def _files_run_whole(self) -> frozenset[str]:
        """The test files this run collected whole, named as their tests' ids begin
        (``csconform/conformance/test_metrics.py``): those its arguments name or hold, unfiltered."""
        if self._filtered():
            return frozenset()
        files = set()
        for path in self._argument_paths:
            for file in sorted(path.rglob("test_*.py")) if path.is_dir() else [path]:
                try:
                    nodeid = file.relative_to(self.config.rootpath).as_posix()
                except ValueError:
                    nodeid = file.as_posix()
                files.add(suite_test_id(file, nodeid))
        return frozenset(files)

    @functools.cached_property
    def _files_checking(self) -> dict[str, set[str]]:
        """Rule id -> the suite's files whose tests name it (read from their source)."""
        files: dict[str, set[str]] = {}
        for suite in suite_dirs(self.config):
            for test_id, rule_ids in rules_by_test(suite).items():
                for rule_id in rule_ids:
                    files.setdefault(rule_id, set()).add(test_id.split("::", 1)[0])
        return files

    def could_meet(self, entry: str) -> bool:
        """Whether this run collected every test an expected-failure entry could match, so that an entry
        that matched none is stale: the whole suite ran, or the files that hold its tests ran whole (a
        test id: its file; a rule: every file with a test of it, or its area's file when none has one).
        An id that is neither a rule of the spec nor a test id can match no test in any run."""
        if self._full_suite_collected():
            return True
        if "::" in entry:
            return entry.split("::", 1)[0] in self._files_run_whole
        if entry not in self.spec:
            return True
        holding = self._files_checking.get(entry)
        if holding:
            return holding <= self._files_run_whole
        area_file = f"test_{self.spec.get(entry).area}.py"
        return any(file.rpartition("/")[2] == area_file for file in self._files_run_whole)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        problems: list[str] = []
        tested: set[str] = set()
        for item in items:
            ids = [rule_id for mark in item.iter_markers("spec") for rule_id in mark.args]
            if any(mark for mark in item.iter_markers("spec")) and not ids:
                problems.append(f"{item.nodeid}: @pytest.mark.spec() names no rule")
            for rule_id in ids:
                if rule_id not in self.spec:
                    problems.append(f"{item.nodeid}: names unknown rule {rule_id!r}")
                    continue
                status = self.spec.get(rule_id).status
                if status != "checked":
                    problems.append(f"{item.nodeid}: names {status} rule {rule_id} (mark it checked, or drop the test)")
                tested.add(rule_id)
            if ids:
                item.user_properties.append((RULES_PROPERTY, tuple(dict.fromkeys(ids))))
                self._apply_expected_failures(item, suite_test_id(item.path, item.nodeid), ids)
        if self._full_suite_collected():
            for rule in self.spec.by_status("checked"):
                if rule.id not in tested:
                    problems.append(f"{rule.file}: rule {rule.id} is marked checked but no test checks it")
        if problems:
            self.gate_problems = problems
            raise pytest.UsageError("csconform traceability gate failed:\n  " + "\n  ".join(sorted(set(problems))))

    def _apply_expected_failures(self, item: pytest.Item, test_id: str, ids: list[str]) -> None:
        if self.expected is None:
            return
        entries = self.expected.entries_for(test_id, ids)
        unobservable = self.expected.entries_for(test_id, ids, self.expected.unobservable)
        if entries:
            self.expected.matched.update(entries)
            item.add_marker(pytest.mark.xfail(reason=f"expected failure for {self.engine_name}: {', '.join(entries)}"))
            item.user_properties.append(("csconform_expected", tuple(entries)))
        if unobservable:
            item.user_properties.append(("csconform_unobservable", tuple(unobservable)))
        if entries or unobservable:
            item.user_properties.append(("csconform_test_id", test_id))

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A test marked with a capability the implementation does not declare is unsupported."""
        for mark in item.iter_markers("capability"):
            for name in mark.args:
                if name not in CAPABILITY_NAMES:
                    raise pytest.UsageError(f"{item.nodeid}: unknown capability {name!r}")
                if name not in self.engine.declaration.capabilities:
                    raise Unsupported(f"{self.engine_name} does not offer the capability {name!r}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Tag a report: a test stopped on :class:`Unsupported` (a skip to pytest), or a failure that
        named the rules it broke.

        Looked at before the report is made, because pytest turns a ``SkipTest`` into its own skip.
        """
        unsupported = call.excinfo is not None and call.excinfo.errisinstance(Unsupported)
        reason = str(call.excinfo.value) if unsupported and call.excinfo is not None else ""
        report = yield
        if unsupported:
            report.user_properties.append((UNSUPPORTED_PROPERTY, reason))
            path, line, _name = item.location
            report.longrepr = (path, (line or 0) + 1, f"unsupported: {reason}")
        elif report.failed and call.excinfo is not None:
            rules = violated_rules(call.excinfo.value)
            if rules:
                report.user_properties.append((VIOLATED_PROPERTY, tuple(sorted(rules))))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.matrix.record(report)
        if self.expected is not None:
            self.expected.record(report)

    def _expected_report(self) -> dict[str, Any] | None:
        """The matrix's ``expected_failures``; None without expected failures or when the gate refused the run."""
        if self.expected is None or self.gate_problems:
            return None
        return self.expected.to_json(self.could_meet)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):
            return  # a worker sees only its share of the tests; the controller decides
        expected = self._expected_report()
        if expected is not None and expected["stale"] and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # an expectation that went stale fails the run
        path = self.config.getoption("csconform_json")
        if path and not self.gate_problems:
            matrix = self.matrix.to_json()
            if expected is not None:
                matrix["expected_failures"] = expected
            document = json.dumps(matrix, indent=2, sort_keys=True) + "\n"
            write_text(path, document, "--conformance-json", extra_inputs=self._inputs())

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        counts = self.spec.counts()
        outcomes = Counter(entry["outcome"] for entry in self.matrix.rules().values())
        ran = {k: v for k, v in outcomes.items() if k != "pending"}
        terminalreporter.write_sep("-", "csconform")
        terminalreporter.write_line(
            f"engine {self.engine_name}: {counts['checked']} rules checked, {counts['pending']} pending, "
            f"{counts['retired']} retired"
        )
        if self.matrix.test_outcomes:
            terminalreporter.write_line(
                "rule outcomes this run: " + ", ".join(f"{v} {k}" for k, v in sorted(ran.items()))
            )
            levels = levels_summary(self.spec, self.matrix.rules())
            for level in LEVELS:
                terminalreporter.write_line(
                    f"  {level}: {levels[level]['passed']} of {levels[level]['applicable']} applicable rules pass"
                    + ("" if level in BINDING_LEVELS else " (informative)")
                )
            if outcomes["unsupported"]:
                terminalreporter.write_line(
                    f"{outcomes['unsupported']} rules could not be exercised on {self.engine_name} (unsupported: "
                    "a capability or target it does not offer); see the matrix for the reasons"
                )
        expected = self._expected_report()
        for line, stale in expected_failure_lines(expected) if expected is not None else ():
            terminalreporter.write_line(line, red=stale)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("csconform", "csconform conformance harness")
    group.addoption(
        "--engine",
        dest="csconform_engine",
        default=None,
        metavar="MODULE",
        help="implementation under test (default: $CSCONFORM_ENGINE or csconform.engine)",
    )
    group.addoption(
        "--conformance-json",
        dest="csconform_json",
        default=None,
        metavar="PATH",
        help="write the conformance matrix (rule -> outcome) as JSON",
    )
    group.addoption(
        "--expected-failures",
        dest="csconform_expected_failures",
        default=None,
        metavar="FILE",
        help="rule ids or test ids this engine is expected to fail (non-strict xfail)",
    )
    group.addoption(
        "--specs-dir",
        dest="csconform_specs",
        default=None,
        metavar="DIR",
        help="spec directory (default: $CSCONFORM_SPECS or the bundled specs)",
    )
    group.addoption(
        "--spec-gate",
        dest="csconform_gate",
        default="auto",
        choices=("auto", "on", "off"),
        help="require a test for every checked rule: auto = when the whole conformance suite runs",
    )


def suite_dirs(config: pytest.Config) -> list[Path]:
    """The conformance suites a run may collect: the one shipped in the package, and a project's
    own ``tests/conformance`` beside its ``specs/`` (a runtime builder may keep extra checks there)."""
    own = (config.rootpath / "tests" / "conformance").resolve()
    return [SUITE_DIR, own] if own.is_dir() else [SUITE_DIR]


def _asked_for(config: pytest.Config) -> bool:
    """The harness switches on for a csconform run, not in every project that has it installed:
    a csconform option, ``CSCONFORM_ENGINE``, a project with the spec beside it, or a run of the
    shipped suite (``pytest --pyargs csconform.conformance``, or its folder)."""
    options = ("csconform_engine", "csconform_json", "csconform_expected_failures", "csconform_specs")
    if any(config.getoption(name) for name in options) or os.environ.get("CSCONFORM_ENGINE"):
        return True
    if (config.rootpath / "specs" / "sources.yaml").is_file():
        return True
    for arg in config.args:
        target = arg.split("::", 1)[0]
        if target == SUITE_PACKAGE or target.startswith(SUITE_PACKAGE + "."):
            return True
        path = (config.invocation_params.dir / target).resolve()
        if path == SUITE_DIR or SUITE_DIR in path.parents:
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spec(*rule_ids): the spec rules this test checks")
    config.addinivalue_line(
        "markers", "capability(*names): capabilities of the implementation interface this test needs"
    )
    if _asked_for(config):
        plugin = CsConformPlugin(config, config.getoption("csconform_specs"))
        config.pluginmanager.register(plugin, "csconform-session")


def _session_plugin(config: pytest.Config) -> CsConformPlugin:
    plugin = config.pluginmanager.get_plugin("csconform-session")
    if plugin is None:
        raise pytest.UsageError(
            "csconform: the engine fixture needs a csconform run: pass --engine MODULE or --specs-dir DIR"
        )
    assert isinstance(plugin, CsConformPlugin)
    return plugin


@pytest.fixture(scope="session")
def engine(pytestconfig: pytest.Config) -> ImplementationUnderTest:
    """The implementation under test, behind the capability gate (see csconform.interface.gate)."""
    return _session_plugin(pytestconfig).engine


@pytest.fixture(autouse=True)
def _reset_engine(request: pytest.FixtureRequest) -> Iterator[None]:
    """Give every test that uses the engine a fresh engine: default target, float16, no leftover state.

    A test of a CS-system limitation starts on target cs (unsupported where the implementation has
    no cs target). The engine fixture itself is session-scoped (a module does not change), so
    hypothesis tests may take it; this autouse fixture does the per-test reset around them, and
    notes which capabilities the test touched that the implementation emulates.
    """
    if "engine" not in request.fixturenames:
        yield
        return
    plugin = _session_plugin(request.config)
    gate = request.getfixturevalue("engine")
    gate.reset()
    gate.take_touched()
    target = plugin.required_target(request.node)
    if target is not None:
        gate.set_target(target)
    yield
    emulated = gate.take_touched() & set(gate.declaration.emulations)
    if emulated:
        request.node.user_properties.append((EMULATED_PROPERTY, tuple(sorted(emulated))))
    gate.reset()
