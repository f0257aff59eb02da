"""How many bugs the tests catch: the mutation-testing page and tables (``tox -e mutation``).

Tooling of this project, not of csconform's users (it needs a checkout and mutmut's results)::

    python tests/mutation/report.py --out reports                    # export the engine's results, write the page
    python tests/mutation/report.py --project mutation-judge --suite judge --out reports
    python tests/mutation/report.py --no-export --out reports        # redraw the page from the results files
    python tests/mutation/report.py --project mutation-judge --suite judge --sample 40 --seed 7 --list-sample
    python tests/mutation/report.py --project mutation-judge --suite judge --sample 40 --seed 7 --out reports

When a full run takes too long, a suite can be measured on a seeded stratified random sample of its
mutants instead: ``--sample N --seed S`` draws up to N mutants of each module (``draw_sample``), after
mutmut has generated them (``python tests/mutation/judge.py generate`` for the judge), ``--list-sample``
prints their names for ``mutmut run NAMES``, and the export then holds only those mutants with each
module's number of mutants; the page gives each module's kill rate with a 95% Wilson interval, and the
total weighted by each module's estimated judged mutants (``module_table``). ``--earlier CSV ABOUT``
keeps an earlier run's table beside it for comparison.

Two suites of mutants, each with a mutmut configuration of its own:

* ``engine``: the reference engine's numerics and runtime modules (``[tool.mutmut]`` in
  pyproject.toml), killed by the conformance suite, the tests a runtime builder runs;
* ``judge``: the code that turns test outcomes into verdicts and pages — the matrix, the level
  verdicts, the report tables, the calibration (``tests/mutation/judge.toml``, run in
  ``mutation-judge/`` by ``tests/mutation/judge.py``), killed by the harness's unit and meta tests.

For every mutant mutmut runs the selected tests that call the mutated function. Two steps turn its
results into the published tables:

* ``export_results`` (needs mutmut; run by the tox env after ``mutmut run``) reads mutmut's
  per-module result files under ``mutants/`` and writes the suite's results file
  (``reports/mutation.json``, ``reports/mutation_judge.json``): every mutant's status, the tests
  that were selected, and for each survivor (or mutant no test reached) the lines it changes;
* ``write_mutation_report`` (no mutmut needed) joins those files with the triage list
  ``tests/mutation/equivalent.yaml`` and writes ``mutation.md`` and one CSV per suite
  (``mutation.csv``, ``mutation_judge.csv``): per module, mutants, killed, timed out, survived,
  equivalent and the kill rate over the non-equivalent mutants. ``csconform report`` links the page
  it finds in its folder and renders it with the rest (its mutation section).

A triage entry names a mutant by mutmut's stable id (``module.x_function__mutmut_7``) and repeats the
change it makes; an entry whose change no longer matches (the function was edited, so the numbering
moved) or whose mutant no longer survives is reported as stale instead of being applied.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from csconform.documents import read_document
from csconform.errors import InputFileError, InvalidInputError
from csconform.output_guard import write_csv, write_text
from csconform.report.sections import MUTATION_PAGE_TITLE


@dataclass(frozen=True)
class Suite:
    """One mutmut configuration: what it mutates, which tests kill it, where its results go."""

    name: str
    results_file: str
    csv_file: str
    title: str
    mutated: str  # what the mutants are mutants of
    tests: str  # which tests mutmut selects (the page quotes the configuration when the results do)
    kill_rate_goal: float
    clean_run: str  # what `tox -e mutation` does for this suite (its results in one clean run)


ENGINE = Suite(
    "engine",
    "mutation.json",
    "mutation.csv",
    "The reference engine, against the conformance suite",
    "the reference engine's numerics and runtime modules",
    "the conformance tests (csconform/conformance, ci hypothesis profile)",
    0.90,
    "it deletes mutants/, runs every mutant with one worker and exports reports/mutation.json",
)
JUDGE = Suite(
    "judge",
    "mutation_judge.json",
    "mutation_judge.csv",
    "The judge, against the harness's unit and meta tests",
    "the judge: the matrix and the level verdicts, the report tables and pages, the calibration and the "
    "model-config and Model Zoo section readers",
    "the unit and meta tests of tests/mutation/judge.toml (ci hypothesis profile)",
    0.95,
    "after the engine, python tests/mutation/judge.py --clean deletes mutation-judge/mutants/, runs every mutant "
    "with one worker, and the judge's results are exported to reports/mutation_judge.json",
)
SUITES = (ENGINE, JUDGE)
# mutmut statuses folded into the table's columns (timeouts count as caught: the mutant hung)
STATUS_COLUMNS = {"killed": "killed", "timeout": "timed_out", "survived": "survived", "no tests": "no_tests"}
UNTRIAGED = ("survived", "no tests", "suspicious", "segfault")
COLUMNS = [
    "module",
    "mutants",
    "killed",
    "timed_out",
    "survived",
    "no_tests",
    "equivalent",
    "unspecified",
    "out_of_reach",
    "other",
    "not_run",
    "kill_rate",
    "kill_rate_strict",
]
# a sampled suite's table: each module's number of generated mutants and 95% intervals of both rates
SAMPLE_COLUMNS = [
    "module",
    "population",
    *COLUMNS[1:],
    "kill_rate_low",
    "kill_rate_high",
    "kill_rate_strict_low",
    "kill_rate_strict_high",
]
Z_95 = 1.959963984540054  # the standard normal quantile of 0.975
# kind -> (class, meaning). "equivalent": no observable difference. "unspecified": an observable
# difference that no rule of the spec states, so no conformance check may demand it. "out_of_reach":
# a difference a rule does state, but no test can provoke; it stays a survivor in both rates.
TRIAGE_KINDS = {
    "identical": ("equivalent", "the mutant computes exactly what the original computes"),
    "performance": ("equivalent", "results stay the same; only the work done or the memory used changes"),
    "message": (
        "unspecified",
        "only the wording of an error message changes (same error type, same state, same results) and no rule "
        "fixes that wording",
    ),
    "warning": (
        "unspecified",
        "same results, but NumPy also emits a RuntimeWarning; no rule says whether the engine warns",
    ),
    "state": ("unspecified", "an observable difference that no rule states (each entry names it)"),
    "internal": ("unspecified", "code no conformance test can reach through the engine interface the spec defines"),
    "prose": (
        "unspecified",
        "only the wording or letter case of a page's explanatory prose or a command's help changes; every number, "
        "table, heading and link stays (the judge's pages)",
    ),
    "scale": (
        "out_of_reach",
        "a difference a rule states, but visible only for models of tens of GB, more than the NumPy reference "
        "engine can hold in a test; counted as not killed in both rates",
    ),
}
NOT_RUN_NOTE = (
    "Not run yet: run `tox -e mutation` (one worker; hours on a shared two-core machine) to produce "
    "`reports/mutation.json` (the engine) and `reports/mutation_judge.json` (the judge)."
)


def default_triage_path() -> Path:
    """``tests/mutation/equivalent.yaml``, beside this file."""
    return Path(__file__).resolve().with_name("equivalent.yaml")


# --- step 1: mutmut's results as reports/mutation.json ---------------------------------------------


def _change_lines(diff: str) -> str:
    """The removed and added lines of a unified diff, stripped: a mutant's change in one string."""
    lines = [line for line in diff.splitlines() if line[:1] in "-+" and not line.startswith(("---", "+++"))]
    return " / ".join(line[0] + " " + line[1:].strip() for line in lines)


def mutant_changes(mutated_file: Path) -> dict[str, str]:
    """Each mutant's change in a file mutmut mutated, keyed by the name mutmut gave its function
    (``x_f__mutmut_3``, ``xǁCǁm__mutmut_3``): the lines it removes and adds relative to the function's
    unmutated copy (``..._mutmut_orig``), both named as in the source, as ``mutmut show`` prints them.
    One parse of the file for all its mutants (mutmut's own lookup parses the whole file per mutant
    when its line index is missing: minutes for the survivors of one module)."""
    source = mutated_file.read_text(encoding="utf-8")
    lines = source.splitlines()
    functions = {
        node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno]).strip()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name
    }
    changes = {}
    for name, text in functions.items():
        base, _, number = name.rpartition("__mutmut_")
        original = functions.get(f"{base}__mutmut_orig")
        if number == "orig" or original is None:
            continue
        plain = base.rsplit("ǁ", 1)[-1] if "ǁ" in base else base.removeprefix("x_")
        diff = difflib.unified_diff(
            original.replace(f"{base}__mutmut_orig", plain).split("\n"),
            text.replace(name, plain).split("\n"),
            lineterm="",
        )
        changes[name] = _change_lines("\n".join(diff))
    return changes


def _read_mutmut_results(project_dir: Path, untriaged_changes: bool = True) -> tuple[list[str], list[dict[str, str]]]:
    """mutmut's configured test selection and every generated mutant's id, module and status (and, when
    ``untriaged_changes``, the change of each survivor or mutant no test reached) under ``project_dir``."""
    import os

    from mutmut.configuration import config, reset_config
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.file_utils import walk_mutatable_files

    previous = Path.cwd()
    os.chdir(project_dir)  # mutmut reads its configuration and mutants/ relative to the project
    reset_config()
    try:
        selection = list(config().pytest_add_cli_args_test_selection)
        mutants = []
        for path in sorted(walk_mutatable_files()):
            data = SourceFileMutationData(path=path)
            data.load()
            changes: dict[str, str] | None = None
            for mutant_id, exit_code in sorted(data.exit_code_by_key.items()):
                status = status_by_exit_code[exit_code]
                module = _module_of(mutant_id)
                entry = {"id": mutant_id, "module": module, "status": status}
                if untriaged_changes and status in UNTRIAGED:
                    changes = changes if changes is not None else mutant_changes(Path("mutants") / path)
                    entry["change"] = changes[mutant_id.removeprefix(module + ".")]
                mutants.append(entry)
    finally:
        os.chdir(previous)
        reset_config()
    if not mutants:
        raise InvalidInputError(f"no mutmut results under {project_dir / 'mutants'}: run `mutmut run` first")
    return selection, mutants


def export_results(
    project_dir: Path,
    out: Path,
    run: str | None = None,
    suite: Suite = ENGINE,
    sample: tuple[int, int] | None = None,
    earlier: tuple[Path, str] | None = None,
) -> Path:
    """Write the suite's results file in ``out`` from mutmut's results under ``project_dir/mutants``.

    ``run`` says how those results were produced when it was not one clean ``tox -e mutation`` (for
    example a resumed run of some modules); the page quotes it instead of claiming a clean run.
    ``sample`` (mutants per module, seed) exports only the mutants ``draw_sample`` draws, with each
    module's number of generated mutants; ``earlier`` (a table this tool wrote, what run it is of) is
    kept in the results for the page to show beside them.
    """
    import mutmut

    selection, mutants = _read_mutmut_results(project_dir)
    results: dict[str, Any] = {
        "tool": f"mutmut {mutmut.__version__}",
        "suite": suite.name,
        "tests": selection,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    if sample:
        per_module, seed = sample
        drawn = set(draw_sample([mutant["id"] for mutant in mutants], per_module, seed))
        population = Counter(mutant["module"] for mutant in mutants)
        results["sample"] = {"per_module": per_module, "seed": seed, "population": dict(sorted(population.items()))}
        mutants = [mutant for mutant in mutants if mutant["id"] in drawn]
    if earlier:
        table, about = earlier
        rows = pd.read_csv(table).to_dict(orient="records")
        results["earlier"] = {"about": about, "table": rows}
    if run:
        results["run"] = run
    results["mutants"] = mutants
    out.mkdir(parents=True, exist_ok=True)
    target = out / suite.results_file
    write_text(target, json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return target


def _module_of(mutant_id: str) -> str:
    """``csconform.engine.amp.xǁGradScalerǁupdate__mutmut_3`` -> ``csconform.engine.amp``."""
    return mutant_id.rsplit(".", 1)[0]


def draw_sample(mutant_ids: list[str], per_module: int, seed: int) -> list[str]:
    """A stratified random sample: up to ``per_module`` mutants of each module (every mutant of a smaller
    one), drawn from the module's sorted ids by a generator seeded with ``seed`` and the module's name,
    so the same seed and the same mutants give the same sample on any machine, and a module added to
    the configuration (or left out) leaves every other module's sample, and its results, as they were."""
    if per_module < 1:
        raise InvalidInputError(f"a sample needs at least one mutant per module, got {per_module}")
    by_module: dict[str, list[str]] = defaultdict(list)
    for mutant_id in sorted(set(mutant_ids)):
        by_module[_module_of(mutant_id)].append(mutant_id)
    drawn: list[str] = []
    for module in sorted(by_module):
        rng = random.Random(f"{seed}:{module}")
        drawn += sorted(rng.sample(by_module[module], min(per_module, len(by_module[module]))))
    return drawn


def generated_mutants(project_dir: Path) -> list[str]:
    """The ids of every mutant mutmut generated under ``project_dir/mutants`` (run or not)."""
    return [mutant["id"] for mutant in _read_mutmut_results(project_dir, untriaged_changes=False)[1]]


# --- step 2: the table --------------------------------------------------------------------------


def load_results(path: Path) -> dict[str, Any] | None:
    """The exported results, or None when there are none yet."""
    if not Path(path).exists():
        return None
    data = read_document(path, what="mutation result file (JSON)", top="any").data
    if not isinstance(data, dict) or not isinstance(data.get("mutants"), list):
        raise InvalidInputError(f"{path}: not a csconform mutation result file (no 'mutants' list)")
    for index, mutant in enumerate(data["mutants"]):
        if not isinstance(mutant, dict) or not all(
            isinstance(mutant.get(key), str) for key in ("id", "status", "module")
        ):
            raise InputFileError(f"{path}: mutants[{index}]: expected a mutant with id, status and module")
    return data


def load_triage(path: Path) -> dict[str, dict[str, str]]:
    """The triage list: mutant id -> {kind, change, reason}; an absent file is an empty list."""
    if not path.is_file():
        return {}
    data = read_document(path, what="mutation triage file", top="any").data or {}
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path}: expected a mapping of mutant id -> triage entry")
    for mutant_id, entry in data.items():
        if not isinstance(entry, dict) or not {"kind", "change", "reason"} <= set(entry):
            raise InvalidInputError(f"{path}: {mutant_id}: an entry needs kind, change and reason")
        if entry.get("kind") not in TRIAGE_KINDS:
            known = ", ".join(TRIAGE_KINDS)
            raise InvalidInputError(f"{path}: {mutant_id}: unknown kind {entry['kind']!r}; known: {known}")
    return data


def classify(results: dict[str, Any], triage: dict[str, dict[str, str]]) -> tuple[list[dict[str, Any]], list[str], int]:
    """Every mutant with its final class, the stale triage entries, and how many entries name mutants a
    sample did not draw.

    A survivor (or a mutant no test reached) becomes ``equivalent`` or ``unspecified`` (by the kind of
    its entry) when the triage list names it with the same change; otherwise it stays what mutmut found.
    An entry whose mutant was not run in these results is neither applied nor stale: it waits for a run;
    so does, in sampled results, an entry whose mutant the sample did not draw (the results cannot say
    whether it still makes the recorded change).
    """
    classified, used = [], set()
    for mutant in results["mutants"]:
        entry = triage.get(mutant["id"])
        final, kind = mutant["status"], ""
        if mutant["status"] in UNTRIAGED and entry is not None and entry["change"] == mutant.get("change"):
            kind = entry["kind"]
            final = TRIAGE_KINDS[kind][0]
            used.add(mutant["id"])
        classified.append({**mutant, "class": final, "kind": kind, "triage_waits": waits_for_run(mutant, triage)})
    not_run = {mutant["id"] for mutant in classified if mutant["triage_waits"]}
    not_drawn = set(triage) - {mutant["id"] for mutant in classified} if results.get("sample") else set()
    stale = sorted(set(triage) - used - not_run - not_drawn)
    return classified, stale, len(not_drawn)


def waits_for_run(mutant: dict[str, Any], triage: dict[str, dict[str, str]]) -> bool:
    """Whether a triage entry names this mutant, which these results did not run."""
    return mutant["status"] == "not checked" and mutant["id"] in triage


def module_table(classified: list[dict[str, Any]], population: dict[str, int] | None = None) -> pd.DataFrame:
    """One row per module and a total: counts per class and the two kill rates.

    ``kill_rate`` leaves out the equivalent mutants and those that change only what no rule states;
    ``kill_rate_strict`` leaves out only the equivalent ones. With ``population`` (each module's number of
    generated mutants, of which ``classified`` is a sample) every rate gets a 95% Wilson interval, and the
    total's rates weight each module's by its estimated judged mutants (population / sampled x judged), its
    interval the same weighting of the modules' bounds (conservative: at least 95%).
    """
    rows = []
    modules = sorted({m["module"] for m in classified})
    for module in [*modules, "total"]:
        members = [m for m in classified if module in ("total", m["module"])]
        counts = Counter(m["class"] for m in members)
        row: dict[str, Any] = {"module": module, "mutants": len(members)}
        for status, column in STATUS_COLUMNS.items():
            row[column] = counts.pop(status, 0)
        row["equivalent"] = counts.pop("equivalent", 0)
        row["unspecified"] = counts.pop("unspecified", 0)
        row["out_of_reach"] = counts.pop("out_of_reach", 0)  # stays in both denominators: not killed
        row["not_run"] = counts.pop("not checked", 0)
        row["other"] = sum(counts.values())  # suspicious, segfault
        caught = row["killed"] + row["timed_out"]
        judged_strictly = row["mutants"] - row["not_run"] - row["equivalent"]
        judged = judged_strictly - row["unspecified"]
        row["kill_rate"] = caught / judged if judged else float("nan")
        row["kill_rate_strict"] = caught / judged_strictly if judged_strictly else float("nan")
        if population is not None:
            row["population"] = population[module] if module != "total" else sum(population.values())
            for rate, trials in (("kill_rate", judged), ("kill_rate_strict", judged_strictly)):
                row[f"{rate}_low"], row[f"{rate}_high"] = wilson_interval(caught, trials)
        rows.append(row)
    if population is None:
        return pd.DataFrame(rows, columns=COLUMNS)
    _weight_total_by_population(rows)
    return pd.DataFrame(rows, columns=SAMPLE_COLUMNS)


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (NaN for no trials): unlike the normal approximation it
    stays inside [0, 1] and is not empty when every trial succeeded."""
    if not trials:
        return float("nan"), float("nan")
    rate = successes / trials
    centre = (rate + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def _weight_total_by_population(rows: list[dict[str, Any]]) -> None:
    """The total row's rates and bounds as the modules' weighted by their estimated judged mutants (a
    module sampled at a tenth counts ten times its sampled mutants), not the pooled sample's."""
    *modules, total = rows
    for rate, excluded in (("kill_rate", ("equivalent", "unspecified")), ("kill_rate_strict", ("equivalent",))):
        weights = {}
        for row in modules:
            judged = row["mutants"] - row["not_run"] - sum(row[column] for column in excluded)
            if judged:
                weights[row["module"]] = row["population"] / row["mutants"] * judged
        if not weights:
            continue
        share = sum(weights.values())
        for key in (rate, f"{rate}_low", f"{rate}_high"):
            total[key] = sum(row[key] * weights[row["module"]] for row in modules if row["module"] in weights) / share


def _suite_section(suite: Suite, results: dict[str, Any] | None, table: pd.DataFrame | None) -> list[str]:
    """The suite's heading, what was mutated and run, its table against its goal, how it was produced."""
    lines = [f"## {suite.title}", ""]
    if results is None or table is None:
        return [
            *lines,
            f"Not run yet: run `tox -e mutation` to produce reports/{suite.results_file}.",
            "",
        ]
    modules = table[table["module"] != "total"]
    below = modules[modules["kill_rate"] < suite.kill_rate_goal]["module"].tolist()
    incomplete = modules[modules["not_run"] > 0]["module"].tolist()
    goal = (
        f"Every module meets the goal of {suite.kill_rate_goal:.0%} of judged mutants killed."
        if not below
        else f"Below the goal of {suite.kill_rate_goal:.0%}: {', '.join(below)}."
    )
    if incomplete:
        goal += f" Not every mutant was run in: {', '.join(incomplete)} (not_run); their rates cover the run ones."
    tests = (
        f"the tests of {', '.join(results['tests'])} (ci hypothesis profile)" if results.get("tests") else suite.tests
    )
    sample = results.get("sample")
    produced = (
        f"How these results were produced: {results['run']}"
        if results.get("run")
        else "Not one clean `tox -e mutation` run: a sample."
        if sample
        else f"Produced by `tox -e mutation` in one clean run: {suite.clean_run}."
    )
    which = "each mutant" if not sample else "each mutant of a sample (" + _sample_description(sample, table) + ")"
    lines += [
        f"{results['tool']} mutated {suite.mutated} and ran, for {which}, {tests} that call the mutated "
        f"function; results of {results['generated']}. " + ("On the sample: " if sample else "") + goal,
        "",
        table.to_markdown(index=False, floatfmt=".3f"),
        "",
        produced,
        "",
    ]
    if results.get("earlier"):
        earlier = pd.DataFrame(results["earlier"]["table"])
        lines += [
            f"For comparison, {results['earlier']['about']}:",
            "",
            earlier.to_markdown(index=False, floatfmt=".3f"),
            "",
        ]
    return lines


def _sample_description(sample: dict[str, Any], table: pd.DataFrame) -> str:
    """What a sampled table covers: how many of how many mutants, how they were drawn, what the bounds are."""
    total = table[table["module"] == "total"].iloc[0]
    return (
        f"a seeded stratified random sample: {total['mutants']} of the {total['population']} mutants, up to "
        f"{sample['per_module']} of each module drawn with seed {sample['seed']} by `python tests/mutation/report.py "
        f"--sample {sample['per_module']} --seed {sample['seed']}`; mutants: the sampled ones, population: all of "
        "the module's; kill_rate_low and kill_rate_high (and the strict ones): the 95% Wilson interval of the rate; "
        "the total's rates weight each module's by its estimated judged mutants, its bounds the same weighting of "
        "the modules' bounds"
    )


def _markdown(
    sections: list[tuple[Suite, dict[str, Any] | None, pd.DataFrame | None]],
    classified: list[dict[str, Any]],
    stale: list[str],
    waiting: int,
) -> str:
    lines = [
        f"# {MUTATION_PAGE_TITLE}",
        "",
        "mutmut plants one small bug (a mutant) at a time and runs, for each, the selected tests that call the "
        "mutated function. Columns: killed: a test failed; timed_out: the tests hung (counted as caught); survived: "
        "every test passed; no_tests: no selected test calls the function; equivalent: a survivor triaged in "
        "tests/mutation/equivalent.yaml as computing exactly what the original computes; unspecified: a survivor "
        "triaged there as changing only behaviour that no rule of the spec states (error-message wording, NumPy "
        "warnings, code outside the engine interface), which a check must not demand; out_of_reach: a survivor "
        "triaged there as changing what a rule states, but only for models larger than a test can hold (counted as "
        "not killed); other: suspicious or crashed; not_run: not tested in this run (left out of both rates). "
        "kill_rate = (killed + timed_out) / (mutants - not_run - equivalent - unspecified), the rate the goal is "
        "judged on; kill_rate_strict counts the unspecified ones as survivors too.",
        "",
    ]
    for suite, results, table in sections:
        lines += _suite_section(suite, results, table)
    lines += [
        "After editing the triage list, `python tests/mutation/report.py --no-export --out reports` redraws "
        "this page from the results files.",
        "",
        "## Triaged survivors by kind",
        "",
    ]
    kinds = Counter(m["kind"] for m in classified if m["kind"])
    lines += [f"- {kind} ({kinds[kind]}, {group}): {meaning}" for kind, (group, meaning) in TRIAGE_KINDS.items()]
    open_mutants = [m for m in classified if m["class"] in UNTRIAGED]
    lines += ["", f"## Not killed and not triaged ({len(open_mutants)})", ""]
    lines += [f"- `{m['id']}` ({m['class']}): `{m['change']}`" for m in open_mutants] or ["None."]
    lines += ["", f"## Stale triage entries ({len(stale)})", ""]
    if waiting:
        lines += [f"{waiting} more triage entries name mutants not run here; they apply again once those run.", ""]
    lines += [
        f"- `{mutant_id}`: no longer a survivor with the recorded change; re-triage it" for mutant_id in stale
    ] or ["None."]
    return "\n".join(lines) + "\n"


def write_mutation_report(
    out: Path, results_paths: dict[str, Path] | None = None, triage_path: Path | None = None
) -> list[Path]:
    """Write ``mutation.md`` and one CSV per suite with results (a page saying how to produce them without).

    ``results_paths`` maps a suite's name to its results file (default: the suite's file in ``out``).
    A triage entry applies to the suite whose results hold its module; one whose module is in no
    results file waits for a run.
    """
    out.mkdir(parents=True, exist_ok=True)
    md_path = out / "mutation.md"
    triage = load_triage(triage_path or default_triage_path())
    sections: list[tuple[Suite, dict[str, Any] | None, pd.DataFrame | None]] = []
    classified: list[dict[str, Any]] = []
    stale: list[str] = []
    judged_modules: set[str] = set()
    not_drawn = 0
    written = [md_path]
    for suite in SUITES:
        csv_path = out / suite.csv_file
        results = load_results((results_paths or {}).get(suite.name) or out / suite.results_file)
        if results is None:
            csv_path.unlink(missing_ok=True)
            sections.append((suite, None, None))
            continue
        modules = {m["module"] for m in results["mutants"]}
        judged_modules |= modules
        suite_triage = {k: v for k, v in triage.items() if _module_of(k) in modules}
        suite_classified, suite_stale, suite_not_drawn = classify(results, suite_triage)
        not_drawn += suite_not_drawn
        sample = results.get("sample")
        table = module_table(suite_classified, sample["population"] if sample else None)
        write_csv(table, csv_path, index=False, float_format="%.3f")
        written.append(csv_path)
        sections.append((suite, results, table))
        classified += suite_classified
        stale += suite_stale
    if all(results is None for _, results, _ in sections):
        write_text(md_path, f"# {MUTATION_PAGE_TITLE}\n\n{NOT_RUN_NOTE}\n", encoding="utf-8")
        return written
    waiting = (
        sum(m["triage_waits"] for m in classified)
        + not_drawn
        + sum(_module_of(k) not in judged_modules for k in triage)
    )
    write_text(md_path, _markdown(sections, classified, stale, waiting), encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tests/mutation/report.py",
        description="export mutmut's results of a suite to OUT/mutation[_judge].json and write OUT/mutation.md",
    )
    parser.add_argument("--project", default=".", help="the directory mutmut ran in (holds mutants/)")
    parser.add_argument(
        "--suite", choices=[suite.name for suite in SUITES], default=ENGINE.name, help="whose results --project holds"
    )
    parser.add_argument("--out", default="reports", help="report folder (default reports/)")
    parser.add_argument("--no-export", action="store_true", help="only rewrite the table from OUT/mutation.json")
    parser.add_argument(
        "--run", metavar="TEXT", help="how mutmut's results were produced, if not by one clean `tox -e mutation`"
    )
    parser.add_argument("--sample", type=int, metavar="N", help="export only a sample of up to N mutants per module")
    parser.add_argument("--seed", type=int, default=0, help="the seed that draws the sample (default 0)")
    parser.add_argument(
        "--list-sample", action="store_true", help="only print the sample's mutant names (for `mutmut run NAMES`)"
    )
    parser.add_argument(
        "--earlier",
        nargs=2,
        metavar=("CSV", "ABOUT"),
        help="an earlier run's table this tool wrote, and what run it is of, to show beside the results",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    sample = (args.sample, args.seed) if args.sample is not None else None
    if args.list_sample:
        if sample is None:
            parser.error("--list-sample needs --sample N")
        print("\n".join(draw_sample(generated_mutants(Path(args.project)), *sample)))
        return 0
    if not args.no_export:
        suite = next(suite for suite in SUITES if suite.name == args.suite)
        earlier = (Path(args.earlier[0]), args.earlier[1]) if args.earlier else None
        export_results(Path(args.project), out, run=args.run, suite=suite, sample=sample, earlier=earlier)
    for path in write_mutation_report(out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
