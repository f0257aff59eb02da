"""``csconform report`` works anywhere: what it cannot render it marks, with the command that would."""

from __future__ import annotations

from pathlib import Path

import pytest

from csconform.cli import main
from csconform.errors import CsConformError
from csconform.report import sections
from csconform.report.sections import Input, ReportOptions, Section, render_report


def test_report_into_an_empty_folder_renders_what_it_can_and_marks_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    no_instances = tmp_path / "no_instances"
    no_instances.mkdir()
    monkeypatch.setenv("CSCONFORM_ISPD_DIR", str(no_instances))  # as if the instances were not there
    out = tmp_path / "fresh" / "report"
    # the expensive sections are skipped here; the full report runs in tox -e report
    assert main(["report", "--out", str(out), "--skip", "conformance,performance"]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line]
    assert warnings == [
        "csconform: warning: not generated, inputs missing: cstorch, differential, placement, benchmarks, mutation "
        "(each one's page says how to produce them)"
    ]
    assert "tox -e mutation" in (out / "mutation.md").read_text()
    assert "tox -e cstorch" in (out / "conformance_cstorch.md").read_text()
    assert "csconform diff --against csconform.adapters.cstorch" in (out / "differential_cstorch.md").read_text()
    benchmarks = (out / "benchmarks.md").read_text()
    assert benchmarks.startswith("# Benchmarks\n") and "Not generated" in benchmarks
    assert f"pytest tests/bench --benchmark-only -p no:xdist --benchmark-json {out / 'benchmarks.json'}" in benchmarks
    placement = (out / "ispd2020.md").read_text()
    assert "Not generated" in placement and "CSCONFORM_ISPD_DIR" in placement and str(no_instances) in placement
    index = (out / "index.md").read_text()
    assert "(benchmarks.md)" in index and "(ispd2020.md)" in index
    assert "Not generated" in (out / "index.html").read_text()
    assert "conformance: skipped" in captured.out and "benchmarks: not generated" in captured.out


def _section(name: str, present: bool = True, fails: bool = False, background: bool = False) -> Section:
    def inputs(options: ReportOptions) -> list[Input]:
        return [Input(f"{name} data", str(options.out / f"{name}.json"), f"make {name}", present)]

    def render(options: ReportOptions) -> list[Path]:
        if fails:
            raise CsConformError(f"{name} broke")
        page = options.out / f"{name}.md"
        page.write_text(f"# {name}\n\nrendered\n")
        return [page]

    return Section(name, name.capitalize(), name, inputs, render, background=background)


def test_each_section_is_rendered_marked_or_reported_failed(tmp_path: Path) -> None:
    chosen = [
        _section("suite", background=True),
        _section("tables"),
        _section("missing", present=False),
        _section("broken", fails=True),
        _section("unwanted"),
    ]
    results = render_report(ReportOptions(out=tmp_path, engine="e"), chosen, skip=["unwanted"])
    assert [(r.section.name, r.status) for r in results] == [
        ("suite", "rendered"),
        ("tables", "rendered"),
        ("missing", "missing"),
        ("broken", "failed"),
        ("unwanted", "skipped"),
    ]
    assert (tmp_path / "suite.md").read_text().endswith("rendered\n")
    missing = (tmp_path / "missing.md").read_text()
    assert missing.startswith("# Missing\n") and "make missing" in missing and str(tmp_path / "missing.json") in missing
    assert "broke" in (tmp_path / "broken.md").read_text() and results[3].detail == "broken broke"
    assert not (tmp_path / "unwanted.md").exists()


def test_a_failed_section_makes_the_report_exit_1_after_writing_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sections, "SECTIONS", (_section("tables"), _section("broken", fails=True)))
    assert main(["report", "--out", str(tmp_path)]) == 1
    assert "sections failed: broken" in capsys.readouterr().err
    assert "(broken.md)" in (tmp_path / "index.md").read_text()


MUTATION = next(section for section in sections.SECTIONS if section.name == "mutation")


def test_the_mutation_section_links_the_page_the_mutation_run_wrote_and_never_rewrites_it(tmp_path: Path) -> None:
    page = tmp_path / "mutation.md"
    record = f"# {sections.MUTATION_PAGE_TITLE}\n\nthe record of one run\n"
    page.write_text(record)
    (tmp_path / "mutation_judge.csv").write_text("module,kill_rate\nm,1.0\n")
    (result,) = render_report(ReportOptions(out=tmp_path, engine="e"), [MUTATION])
    assert result.status == "rendered"
    assert result.files == (page, tmp_path / "mutation_judge.csv")
    assert page.read_text() == record


def test_without_the_mutation_page_its_notice_is_never_taken_for_it(tmp_path: Path) -> None:
    for _ in range(2):
        (result,) = render_report(ReportOptions(out=tmp_path, engine="e"), [MUTATION])
        assert result.status == "missing"
    notice = (tmp_path / "mutation.md").read_text()
    assert "Not generated" in notice and "tox -e mutation" in notice
