"""The report's sections: what each one reads, the command that produces it, and how it is rendered.

A :class:`Section` declares its inputs (files or folders it reads, each with the command that
produces it) and a ``render`` function that writes its pages. :func:`render_report` renders every
section whose inputs are present; a section with a missing input gets a page of its own saying what
is missing and how to produce it, so a report made on a fresh clone is complete and honest about
its gaps. A section that fails while rendering gets such a page too, with the error. Adding a
section (a mutation score, another implementation's conformance matrix) is one more entry in
:data:`SECTIONS`.

A section that runs in a subprocess (the conformance suite) is marked ``background``: it is started
first, in a thread that waits for the subprocess, while the other sections render in this process,
so on two cores the two halves of the report run side by side. Background sections run one after the
other, in order (the vendor's matrix after ours, whose column it shows).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from csconform.errors import CsConformError
from csconform.output_guard import write_text

SOURCE_CHECKOUT = "a source checkout of csconform (git clone, then python -m pip install -e '.[test]')"


@dataclass(frozen=True)
class ReportOptions:
    """What the user asked ``csconform report`` for."""

    out: Path
    engine: str
    benchmark_json: Path | None = None
    ispd_time_limit_s: float = 60.0

    @property
    def benchmark_path(self) -> Path:
        return self.benchmark_json if self.benchmark_json is not None else self.out / "benchmarks.json"


@dataclass(frozen=True)
class Input:
    """One thing a section reads: what it is, where it was looked for, what produces it, whether it is there."""

    description: str
    location: str
    produced_by: str
    present: bool


@dataclass(frozen=True)
class Section:
    name: str  # what --skip takes
    title: str  # the heading of its page when it is not generated
    page: str  # the stem of its main page (name.md), replaced by the notice when it is not generated
    inputs: Callable[[ReportOptions], list[Input]]
    render: Callable[[ReportOptions], list[Path]]
    background: bool = False


@dataclass(frozen=True)
class SectionResult:
    section: Section
    status: str  # "rendered" | "missing" | "failed" | "skipped"
    files: tuple[Path, ...] = ()
    seconds: float = 0.0
    detail: str = ""


# --- the sections ------------------------------------------------------------------------------------


def _conformance_inputs(options: ReportOptions) -> list[Input]:
    from csconform.conformance import SUITE_DIR

    present = any(SUITE_DIR.glob("test_*.py"))
    return [Input("the conformance suite", str(SUITE_DIR), "pip install csconform", present)]


def _conformance(options: ReportOptions) -> list[Path]:
    from csconform.report.conformance import run_conformance, write_conformance_report

    # one core for the suite, the other for the sections rendered meanwhile in this process
    return write_conformance_report(options.out, run_conformance(options.engine, echo=False, blas_threads=1))


def _performance(options: ReportOptions) -> list[Path]:
    from csconform.report.performance_page import write_performance_reports

    return write_performance_reports(options.out)


def _placement_inputs(options: ReportOptions) -> list[Input]:
    from csconform.report.ispd import INSTANCE_DIR_VARIABLE, instance_dir

    try:
        location, present = str(instance_dir()), True
    except CsConformError:
        location = os.environ.get(INSTANCE_DIR_VARIABLE) or "csconform/perf/instances/ispd2020"
        present = False
    produced_by = f"set {INSTANCE_DIR_VARIABLE} to a folder of the contest's .kgraph files, or use {SOURCE_CHECKOUT}"
    return [Input("the ISPD 2020 instances (.kgraph)", location, produced_by, present)]


def _placement(options: ReportOptions) -> list[Path]:
    from csconform.report.ispd import write_ispd_report

    return write_ispd_report(options.out, time_limit_s=options.ispd_time_limit_s)


def _benchmark_inputs(options: ReportOptions) -> list[Input]:
    path = options.benchmark_path
    command = (
        f"pytest tests/bench --benchmark-only -p no:xdist --benchmark-json {path} "
        "(tox -e bench does this for reports/benchmarks.json)"
    )
    return [Input("pytest-benchmark results", str(path), command, path.is_file())]


def _benchmarks(options: ReportOptions) -> list[Path]:
    from csconform.report.benchmarks import write_benchmark_report

    return write_benchmark_report(options.out, options.benchmark_path)


MUTATION_PAGE_TITLE = "Mutation testing: how many bugs the tests catch"
"""The heading of the page the project's mutation run writes (``mutation.md``, by
``tests/mutation/report.py``): the mutation section links a page that has it, never its own notice."""


def _mutation_page(options: ReportOptions) -> Path:
    return options.out / "mutation.md"


def _mutation_inputs(options: ReportOptions) -> list[Input]:
    page = _mutation_page(options)
    written = False
    if page.is_file():
        with page.open(encoding="utf-8", errors="replace") as text:
            written = text.readline().rstrip("\n") == f"# {MUTATION_PAGE_TITLE}"
    command = f"tox -e mutation in {SOURCE_CHECKOUT} (hours on two cores)"
    return [Input("the mutation-testing page", str(page), command, written)]


def _mutation(options: ReportOptions) -> list[Path]:
    """The page and its tables as the mutation run wrote them: they are the record, never rewritten here."""
    page = _mutation_page(options)
    return [page, *sorted(options.out.glob(f"{page.stem}*.csv"))]


def _cstorch_inputs(options: ReportOptions) -> list[Input]:
    from csconform.report.cstorch import MATRIX_FILE, PRODUCED_BY

    path = options.out / MATRIX_FILE
    return [Input("the conformance matrix of cerebras.pytorch 2.10", str(path), PRODUCED_BY, path.is_file())]


def _cstorch(options: ReportOptions) -> list[Path]:
    from csconform.report.cstorch import write_cstorch_report

    return write_cstorch_report(options.out)


DIFFERENTIAL_PRODUCED_BY = (
    "tox -e cstorch, or csconform diff --against csconform.adapters.cstorch --out DIR in an environment with "
    "cerebras-pytorch 2.10.0"
)


def _differential_path(options: ReportOptions) -> Path:
    from csconform.testing.differential.report import report_stem

    return options.out / f"{report_stem('csconform.adapters.cstorch')}.json"


def _differential_inputs(options: ReportOptions) -> list[Input]:
    path = _differential_path(options)
    description = "the differential run of cerebras.pytorch 2.10 against the reference engine"
    return [Input(description, str(path), DIFFERENTIAL_PRODUCED_BY, path.is_file())]


def _differential(options: ReportOptions) -> list[Path]:
    from csconform.testing.differential.report import read_report, write_report_files

    return write_report_files(options.out, read_report(_differential_path(options)))


def _no_inputs(options: ReportOptions) -> list[Input]:
    return []


SECTIONS: tuple[Section, ...] = (
    Section("conformance", "Conformance matrix", "conformance", _conformance_inputs, _conformance, background=True),
    # a background section: it runs after the conformance run, so its side-by-side table has our matrix
    Section(
        "cstorch", "Conformance of cerebras.pytorch 2.10.0", "conformance_cstorch", _cstorch_inputs, _cstorch, True
    ),
    Section(
        "differential",
        "Differential: cerebras.pytorch 2.10.0 against the reference engine",
        "differential_cstorch",
        _differential_inputs,
        _differential,
    ),
    Section("performance", "Performance model", "performance", _no_inputs, _performance),
    Section("placement", "Cerebras ISPD 2020 kernel placement", "ispd2020", _placement_inputs, _placement),
    Section("benchmarks", "Benchmarks", "benchmarks", _benchmark_inputs, _benchmarks),
    Section("mutation", "Mutation testing", "mutation", _mutation_inputs, _mutation),
)
"""Every section, in the order the front page shows them."""


# --- rendering ---------------------------------------------------------------------------------------


def notice_page(section: Section, out: Path, text: str) -> Path:
    """The page that stands in for a section that was not generated."""
    page = out / f"{section.page}.md"
    write_text(page, f"# {section.title}\n\n{text}\n", encoding="utf-8")
    return page


def missing_notice(missing: Sequence[Input]) -> str:
    lines = ["Not generated: this section's inputs are missing."]
    for item in missing:
        lines.append(f"It reads {item.description}, looked for at {item.location}. To produce it: {item.produced_by}.")
    lines.append("Then run csconform report again.")
    return "\n\n".join(lines)


def _timed(section: Section, options: ReportOptions) -> SectionResult:
    started = time.perf_counter()
    try:
        files = section.render(options)
    except CsConformError as error:
        page = notice_page(section, options.out, f"Not generated: the section failed. {error}")
        return SectionResult(section, "failed", (page,), time.perf_counter() - started, str(error))
    return SectionResult(section, "rendered", tuple(files), time.perf_counter() - started)


def render_report(
    options: ReportOptions,
    sections: Sequence[Section] | None = None,
    skip: Sequence[str] = (),
    progress: Callable[[SectionResult], None] = lambda result: None,
) -> list[SectionResult]:
    """Render every section (default :data:`SECTIONS`) whose inputs are present, mark the others."""
    sections = SECTIONS if sections is None else sections
    options.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, SectionResult] = {}
    ready: list[Section] = []
    for section in sections:
        if section.name in skip:
            results[section.name] = SectionResult(section, "skipped")
            continue
        missing = [item for item in section.inputs(options) if not item.present]
        if missing:
            page = notice_page(section, options.out, missing_notice(missing))
            detail = "; ".join(f"{item.description}: {item.produced_by}" for item in missing)
            results[section.name] = SectionResult(section, "missing", (page,), detail=detail)
        else:
            ready.append(section)
    for result in results.values():
        progress(result)
    with ThreadPoolExecutor(max_workers=1) as pool:
        background: list[tuple[Section, Future[SectionResult]]] = [
            (section, pool.submit(_timed, section, options)) for section in ready if section.background
        ]
        for section in ready:
            if not section.background:
                results[section.name] = _timed(section, options)
                progress(results[section.name])
        for section, future in background:
            results[section.name] = future.result()
            progress(results[section.name])
    return [results[section.name] for section in sections]
