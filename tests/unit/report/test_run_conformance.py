"""What ``run_conformance`` does around its one subprocess, checked without running the suite: the
files it collects, its command line and ini, its environment, and how it reads back (or refuses) what
the run left behind. (``test_check_cli.py`` runs the suite itself through ``csconform check``.)"""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
from pathlib import Path

import pytest

from csconform.conformance import SUITE_DIR, suite_test_id
from csconform.errors import CsConformError, InvalidInputError
from csconform.report.conformance import (
    BLAS_THREAD_VARIABLES,
    STOPPED_EXIT_CODES,
    SUITE_INI,
    matrix_of_run,
    suite_command,
    suite_environment,
    suite_targets,
)

AREAS = sorted(p.stem.removeprefix("test_") for p in SUITE_DIR.glob("test_*.py"))


# --- what pytest collects ---------------------------------------------------------------------------


def test_without_areas_the_whole_suite_is_collected() -> None:
    assert suite_targets() == [str(SUITE_DIR)]
    assert suite_targets(()) == [str(SUITE_DIR)]


def test_each_area_named_is_its_test_file_in_the_order_given() -> None:
    assert {"precision", "grad_scaler", "performance"} <= set(AREAS)
    targets = suite_targets(["performance", "grad_scaler"])
    assert targets == [str(SUITE_DIR / "test_performance.py"), str(SUITE_DIR / "test_grad_scaler.py")]
    assert all(Path(target).is_file() for target in targets)


def test_an_unknown_area_is_refused_with_the_known_ones() -> None:
    with pytest.raises(InvalidInputError) as refused:
        suite_targets(["grad_scaler", "nowhere", "elsewhere"])
    assert str(refused.value) == f"unknown area(s) nowhere, elsewhere; known: {', '.join(AREAS)}"


# --- the command line and the ini -------------------------------------------------------------------


def _value_after(command: list[str], flag: str) -> str:
    assert command.count(flag) == 1, flag
    return command[command.index(flag) + 1]


def test_the_command_runs_this_python_s_pytest_on_the_targets_with_our_settings(tmp_path: Path) -> None:
    ini, matrix = tmp_path / "pytest.ini", tmp_path / "matrix.json"
    targets = suite_targets(["grad_scaler", "precision"])
    command = suite_command("their.engine", targets, ini, matrix, ("-k", "loss", "-x"))
    assert command[:3] == [sys.executable, "-m", "pytest"]
    assert command[3:5] == targets
    assert _value_after(command, "-c") == str(ini)  # our ini, not a configuration found above the caller
    assert _value_after(command, "--engine") == "their.engine"
    assert _value_after(command, "--conformance-json") == str(matrix)
    assert _value_after(command, "-p") == "no:cacheprovider"  # nothing written beside the caller
    assert "-q" in command
    assert command[-3:] == ["-k", "loss", "-x"]  # the caller's arguments last, so they can override ours
    rootdir = Path(_value_after(command, "--rootdir"))
    # test ids are rooted at the folder holding the package: the same ids as expected-failure files use
    assert (rootdir / "csconform" / "conformance").resolve() == SUITE_DIR
    test_file = SUITE_DIR / "test_precision.py"
    assert test_file.relative_to(rootdir).as_posix() + "::t" == suite_test_id(test_file, "anything::t")
    assert suite_command("e", targets, ini, matrix)[-2:] == ["-p", "no:cacheprovider"]


def test_the_ini_does_not_make_expected_failures_strict_and_refuses_unknown_marks() -> None:
    ini = configparser.ConfigParser()
    ini.read_string(SUITE_INI)
    assert ini.sections() == ["pytest"]
    assert dict(ini["pytest"]) == {
        "xfail_strict": "false",  # a stale expectation is the plugin's to report, as a rule's outcome
        "filterwarnings": "error::pytest.PytestUnknownMarkWarning",  # a mistyped spec mark fails the run
    }


# --- the environment --------------------------------------------------------------------------------


def test_the_run_uses_the_ci_profile_unless_the_caller_names_one() -> None:
    caller = {"PATH": "/bin", "HOME": "/home/x"}
    environment = suite_environment(caller)
    assert environment == {**caller, "HYPOTHESIS_PROFILE": "ci"}
    assert caller == {"PATH": "/bin", "HOME": "/home/x"}  # the caller's mapping is left alone
    assert suite_environment({**caller, "HYPOTHESIS_PROFILE": "nightly"})["HYPOTHESIS_PROFILE"] == "nightly"
    assert suite_environment({**caller, "HYPOTHESIS_PROFILE": ""})["HYPOTHESIS_PROFILE"] == "ci"


def test_blas_threads_cap_every_blas_and_openmp_variable() -> None:
    caller = {"PATH": "/bin", "OMP_NUM_THREADS": "8"}
    assert set(BLAS_THREAD_VARIABLES) == {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"}
    capped = suite_environment(caller, blas_threads=1)
    assert {variable: capped[variable] for variable in BLAS_THREAD_VARIABLES} == dict.fromkeys(
        BLAS_THREAD_VARIABLES, "1"
    )
    assert suite_environment(caller, blas_threads=3)["MKL_NUM_THREADS"] == "3"
    uncapped = suite_environment(caller)
    assert uncapped["OMP_NUM_THREADS"] == "8" and "MKL_NUM_THREADS" not in uncapped
    assert "OPENBLAS_NUM_THREADS" not in uncapped


# --- reading back what the run left -----------------------------------------------------------------


def _finished(returncode: int, stdout: str | None = "", stderr: str | None = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["pytest"], returncode, stdout, stderr)


@pytest.mark.parametrize("returncode", [0, 1, 5])
def test_a_run_that_ran_returns_its_matrix_whatever_its_tests_did(tmp_path: Path, returncode: int) -> None:
    """Exit 1 (tests failed) and 5 (nothing selected) are verdicts, not errors: the matrix says which."""
    matrix = {"engine": "e", "rules": {"R-1": {"outcome": "failed", "tests": 1}}}
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(matrix), encoding="utf-8")
    assert matrix_of_run("e", _finished(returncode, "1 failed", "noise"), path) == matrix


@pytest.mark.parametrize("returncode", STOPPED_EXIT_CODES)
def test_a_run_that_stopped_before_its_tests_is_refused_even_with_a_matrix(tmp_path: Path, returncode: int) -> None:
    assert set(STOPPED_EXIT_CODES) == {2, 3, 4}  # interrupted (collection errors too), internal, usage error
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps({"engine": "e", "rules": {}}), encoding="utf-8")
    with pytest.raises(CsConformError) as refused:
        matrix_of_run("their.engine", _finished(returncode, "out\n", "ERROR: not found: x.py\n"), path)
    assert str(refused.value) == (
        f"the conformance run against 'their.engine' stopped before running its tests (pytest exit {returncode}):\n"
        "out\nERROR: not found: x.py\n"
    )
    with pytest.raises(CsConformError) as echoed:  # output echoed to the terminal is not repeated
        matrix_of_run("their.engine", _finished(returncode, None, None), path)
    assert str(echoed.value) == (
        f"the conformance run against 'their.engine' stopped before running its tests (pytest exit {returncode})"
    )


def test_no_matrix_is_an_error_quoting_the_end_of_what_pytest_said(tmp_path: Path) -> None:
    stdout, stderr = "o" * 1500 + "O" * 2000, "e" * 10 + "E" * 2000
    with pytest.raises(CsConformError) as refused:
        matrix_of_run("their.engine", _finished(1, stdout, stderr), tmp_path / "matrix.json")
    assert str(refused.value) == (
        "the conformance run against 'their.engine' produced no matrix (pytest exit 1):\n" + "O" * 2000 + "E" * 2000
    )
    with pytest.raises(CsConformError) as echoed:
        matrix_of_run("their.engine", _finished(2, None, None), tmp_path / "matrix.json")
    assert str(echoed.value) == "the conformance run against 'their.engine' produced no matrix (pytest exit 2)"
    with pytest.raises(CsConformError) as only_stderr:
        matrix_of_run("their.engine", _finished(3, None, "Traceback\n"), tmp_path / "matrix.json")
    assert str(only_stderr.value).endswith("(pytest exit 3):\nTraceback\n")


def test_the_plugin_s_refusal_is_the_error_in_one_line(tmp_path: Path) -> None:
    """The plugin refuses an engine or an expected-failures file with ``ERROR: csconform: ...`` and up to
    three indented continuation lines; that is the whole error, without the rest of pytest's output."""
    stderr = (
        "some warning\n"
        "ERROR: csconform: engine: cannot import the implementation 'x'\n"
        "  first detail\n"
        "  second detail\n"
        "  third detail\n"
        "  fourth detail, not quoted\n"
    )
    with pytest.raises(CsConformError) as refused:
        matrix_of_run("x", _finished(4, "usage", stderr), tmp_path / "matrix.json")
    assert str(refused.value) == (
        "engine: cannot import the implementation 'x' first detail second detail third detail"
    )
    followed_by_other_output = "ERROR: csconform: expected failures: bad file\n  why\nother output\n"
    with pytest.raises(CsConformError) as short:
        matrix_of_run("x", _finished(4, "", followed_by_other_output), tmp_path / "matrix.json")
    assert str(short.value) == "expected failures: bad file why"
    with pytest.raises(CsConformError, match="^engine: broken$"):
        matrix_of_run("x", _finished(4, "", "ERROR: csconform: engine: broken"), tmp_path / "matrix.json")
