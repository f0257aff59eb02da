"""Run the conformance suite against an implementation and turn its matrix into tables.

The suite is ordinary pytest; this module runs it in a subprocess (so the implementation under
test is imported fresh, as a user's run would) and reads back the JSON matrix the plugin writes.
The run uses the derandomized ``ci`` Hypothesis profile unless ``HYPOTHESIS_PROFILE`` says
otherwise, so the report and ``csconform check`` give the same verdict every time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from csconform.conformance import SUITE_DIR
from csconform.errors import CsConformError, InputFileError, InvalidInputError
from csconform.output_guard import write_csv, write_text
from csconform.spec import LEVELS, Spec, load_spec
from csconform.spec.verdict import BINDING_LEVELS, conforms, levels_summary

OUTCOMES = ("passed", "failed", "xfailed", "unsupported", "skipped", "pending")
STOPPED_EXIT_CODES = (2, 3, 4)  # pytest: interrupted (a collection error too), internal error, usage error
SUITE_INI = """\
[pytest]
xfail_strict = false
filterwarnings = error::pytest.PytestUnknownMarkWarning
"""


def run_conformance(
    engine: str,
    areas: Sequence[str] = (),
    pytest_args: Sequence[str] = (),
    echo: bool = True,
    blas_threads: int | None = None,
) -> dict:
    """Run the suite (or the files of some areas) against ``engine``; return the matrix.

    ``blas_threads`` caps the subprocess's BLAS/OpenMP threads (the report runs the suite beside
    its other sections and gives it one core). Everything but the subprocess itself is built and
    read back by the functions below, which are tested without running the suite.
    """
    targets = suite_targets(areas)
    with tempfile.TemporaryDirectory() as folder:
        matrix_path = Path(folder) / "matrix.json"
        ini_path = Path(folder) / "pytest.ini"
        ini_path.write_text(SUITE_INI, encoding="utf-8")
        completed = subprocess.run(
            suite_command(engine, targets, ini_path, matrix_path, pytest_args),
            env=suite_environment(os.environ, blas_threads),
            capture_output=not echo,
            text=True,
            check=False,
        )
        return matrix_of_run(engine, completed, matrix_path)


def suite_targets(areas: Sequence[str] = ()) -> list[str]:
    """What pytest collects: the whole suite, or the test file of each area named (an unknown area
    is refused, listing the known ones)."""
    if not areas:
        return [str(SUITE_DIR)]
    known = sorted(p.stem.removeprefix("test_") for p in SUITE_DIR.glob("test_*.py"))
    unknown = [a for a in areas if a not in known]
    if unknown:
        raise InvalidInputError(f"unknown area(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [str(SUITE_DIR / f"test_{area}.py") for area in areas]


def suite_command(
    engine: str, targets: Sequence[str], ini_path: Path, matrix_path: Path, pytest_args: Sequence[str] = ()
) -> list[str]:
    """The pytest command line of a run: this Python, our own ini (not a pyproject.toml that happens to
    sit above the environment) and test ids rooted at the folder holding the package, so the settings
    and ids are the same wherever csconform is installed. The caller's working directory stays the
    subprocess's, so a module beside them (their implementation) imports as it would with python -m.
    The caller's ``pytest_args`` come last."""
    return [
        sys.executable,
        "-m",
        "pytest",
        *targets,
        "-c",
        str(ini_path),
        "--rootdir",
        str(SUITE_DIR.parents[1]),
        "--engine",
        engine,
        "--conformance-json",
        str(matrix_path),
        "-q",
        "-p",
        "no:cacheprovider",
        *pytest_args,
    ]


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def suite_environment(environ: Mapping[str, str], blas_threads: int | None = None) -> dict[str, str]:
    """The run's environment: the caller's, with the derandomized ``ci`` Hypothesis profile unless
    ``HYPOTHESIS_PROFILE`` names another, and the BLAS thread variables set when ``blas_threads`` is given."""
    environment = {**environ, "HYPOTHESIS_PROFILE": environ.get("HYPOTHESIS_PROFILE") or "ci"}
    if blas_threads is not None:
        for variable in BLAS_THREAD_VARIABLES:
            environment[variable] = str(blas_threads)
    return environment


def matrix_of_run(engine: str, completed: subprocess.CompletedProcess[str], matrix_path: Path) -> dict:
    """The matrix a finished run wrote, or a CsConformError saying why there is none to trust: the
    plugin's own refusal (of the engine, of the expected failures) in one line; no matrix written; or a
    run that stopped before its tests (a collection or usage error), whose matrix says nothing ran.
    Output pytest did not echo (``capture_output``) is quoted, its last 2,000 characters of each stream."""
    detail = (completed.stdout or "")[-2000:] + (completed.stderr or "")[-2000:]
    if not matrix_path.is_file():
        refusal = _csconform_refusal(completed.stderr or "")
        if refusal:
            raise CsConformError(refusal)
        raise CsConformError(
            f"the conformance run against {engine!r} produced no matrix (pytest exit {completed.returncode})"
            + (f":\n{detail}" if detail else "")
        )
    if completed.returncode in STOPPED_EXIT_CODES:
        raise CsConformError(
            f"the conformance run against {engine!r} stopped before running its tests (pytest exit "
            f"{completed.returncode})" + (f":\n{detail}" if detail else "")
        )
    return json.loads(matrix_path.read_text(encoding="utf-8"))


def check_matrix(matrix: Any, source: str, hint: str = "") -> dict:
    """``matrix`` if it has the shape the plugin writes (what the tables read), else InputFileError."""
    where = f"{source}: not a conformance matrix with per-level results" + (f" ({hint})" if hint else "")
    if not isinstance(matrix, dict) or not isinstance(matrix.get("rules"), dict):
        raise InputFileError(f"{where}: no 'rules' mapping")
    if not isinstance(matrix.get("engine"), str) or not isinstance(matrix.get("levels"), dict):
        raise InputFileError(f"{where}: no 'engine' or 'levels'")
    for rule_id, entry in matrix["rules"].items():
        if not isinstance(entry, dict) or entry.get("outcome") not in (*OUTCOMES, "inconclusive"):
            raise InputFileError(f"{where}: rules.{rule_id}: expected an outcome of {', '.join(OUTCOMES)}")
        if isinstance(entry.get("tests"), bool) or not isinstance(entry.get("tests"), int):
            raise InputFileError(f"{where}: rules.{rule_id}.tests: expected a number of tests")
    for level in LEVELS:
        entry = matrix["levels"].get(level)
        if (
            not isinstance(entry, dict)
            or not all(
                isinstance(entry.get(key), int) and not isinstance(entry.get(key), bool)
                for key in ("applicable", "passed")
            )
            or not isinstance(entry.get("outcomes"), dict)
        ):
            raise InputFileError(f"{where}: levels.{level}: expected applicable, passed and outcomes")
    return matrix


def _csconform_refusal(stderr: str) -> str | None:
    """The plugin's own refusal (``ERROR: csconform: ...``) in pytest's stderr, joined into one line."""
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("ERROR: csconform"):
            rest = [text.strip() for text in lines[index + 1 : index + 4] if text.startswith("  ")]
            return " ".join([line.removeprefix("ERROR: csconform: "), *rest])
    return None


def selected(matrix: dict, areas: Sequence[str], spec: Spec | None = None) -> dict:
    """The matrix of a run over some areas' test files, restricted to what that run selected.

    The plugin lists every rule of the spec, and a rule no selected test named shows as skipped; in
    a partial run that rule was not skipped, it was not asked about. The selection is every rule a
    selected test named, plus the pending rules of the selected areas. Checked rules of those areas
    whose tests live in other files are listed under ``"checked_elsewhere"``.
    """
    if not areas:
        return matrix
    spec = spec or load_spec()
    rules, elsewhere = {}, []
    for rule_id, entry in matrix["rules"].items():
        if entry["tests"] or (entry["outcome"] == "pending" and spec.get(rule_id).area in areas):
            rules[rule_id] = entry
        elif spec.get(rule_id).area in areas:
            elsewhere.append(rule_id)
    levels = levels_summary(spec, rules)
    return {**matrix, "rules": rules, "levels": levels, "areas": sorted(areas), "checked_elsewhere": sorted(elsewhere)}


MATRIX_COLUMNS = ["rule", "area", "level", "title", "outcome", "tests", "emulated"]


def matrix_frame(matrix: dict, spec: Spec | None = None) -> pd.DataFrame:
    """One row per rule: id, area, level, title, outcome, number of tests, emulated capabilities touched."""
    spec = spec or load_spec()
    rows = []
    for rule_id, entry in sorted(matrix["rules"].items()):
        rule = spec.get(rule_id)
        rows.append(
            {
                "rule": rule_id,
                "area": rule.area,
                "level": rule.level,
                "title": rule.title,
                "outcome": entry["outcome"],
                "tests": entry["tests"],
                "emulated": ", ".join(entry.get("emulated", ())),
            }
        )
    return pd.DataFrame(rows, columns=MATRIX_COLUMNS)


STAMP_DIGITS = 16  # of the spec's sha256 shown on a page (the JSON keeps all 64)


def provenance(matrix: dict) -> str:
    """What the matrix describes: the implementation and its version, the csconform version that judged
    it and the spec (its sha256 and how many rules are in force)."""
    implementation = matrix.get("implementation", {}).get("name") or matrix["engine"]
    if "spec_sha256" not in matrix:
        return f"`{matrix['engine']}` ({implementation}); no csconform version or spec recorded (an older matrix)"
    return (
        f"`{matrix['engine']}` ({implementation}), judged by csconform {matrix['csconform']} against the spec "
        f"with sha256 {matrix['spec_sha256'][:STAMP_DIGITS]} ({matrix['spec_rules']} rules in force)"
    )


def summary_line(matrix: dict) -> str:
    counts = Counter(entry["outcome"] for entry in matrix["rules"].values())
    parts = [f"{counts[o]} {o}" for o in OUTCOMES if counts[o]]
    return f"{matrix['engine']}: {len(matrix['rules'])} rules — " + ", ".join(parts)


def level_lines(matrix: dict) -> list[str]:
    """Per level: how many applicable rules pass; then the verdict on the binding levels."""
    levels = matrix.get("levels")
    if not levels:
        return []
    lines = []
    for level in LEVELS:
        entry = levels[level]
        role = "binding" if level in BINDING_LEVELS else "informative"
        if not entry["outcomes"]:  # a run of some areas may hold no rule of a level
            lines.append(f"  {level} ({role}): no {level} rule in this run")
            continue
        outcomes = ", ".join(f"{n} {o}" for o, n in entry["outcomes"].items())
        lines.append(
            f"  {level} ({role}): {entry['passed']} of {entry['applicable']} applicable rules pass ({outcomes})"
        )
    verdict = "conforms" if conforms(levels) else "does not conform"
    lines.append(f"{matrix['engine']} {verdict}: every applicable documented and public rule must pass")
    return lines


def area_frame(matrix: dict, spec: Spec | None = None) -> pd.DataFrame:
    """Outcome counts per area, for the report's overview."""
    frame = matrix_frame(matrix, spec)
    table = pd.crosstab(frame["area"], frame["outcome"]).reindex(columns=list(OUTCOMES), fill_value=0)
    table["rules"] = table.sum(axis=1)
    return table.reset_index()


def write_conformance_report(out_dir: Path, matrix: dict) -> list[Path]:
    """The matrix as JSON, CSV and markdown, with a per-area overview."""
    from tabulate import tabulate

    out_dir.mkdir(parents=True, exist_ok=True)
    spec = load_spec()
    frame = matrix_frame(matrix, spec)
    areas = area_frame(matrix, spec)
    json_path, csv_path, md_path = (out_dir / f"conformance.{ext}" for ext in ("json", "csv", "md"))
    write_text(json_path, json.dumps(matrix, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    write_csv(frame, csv_path, index=False)
    write_csv(areas, out_dir / "conformance_by_area.csv", index=False)
    write_text(
        md_path,
        "# Conformance matrix\n\n"
        f"Implementation under test: {provenance(matrix)}. {summary_line(matrix)}.\n\n"
        "A rule passes only when all of its tests pass; `pending` rules are not checkable yet.\n\n"
        "## By area\n\n"
        + tabulate(areas.values.tolist(), headers=list(areas.columns), tablefmt="github")
        + "\n\n## By rule\n\n"
        + tabulate(frame.values.tolist(), headers=list(frame.columns), tablefmt="github")
        + "\n",
        encoding="utf-8",
    )
    return [json_path, csv_path, out_dir / "conformance_by_area.csv", md_path]
