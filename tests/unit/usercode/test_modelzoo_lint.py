"""The Model Zoo's own training code through `csconform lint` (reports/modelzoo_lint.{json,md}).

Without a clone, the fixtures (real files of five releases, tests/unit/usercode/data/modelzoo) draw
exactly the findings the committed record lists for them, and every finding of the record carries a
verdict from tests/unit/usercode/modelzoo_verdicts.yaml (none stale). With a clone named by
``CSCONFORM_MODELZOO``, the whole sweep (seven releases, about 2,700 files) reruns and must reproduce
the record exactly, and each fixture must equal its file in the clone.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from csconform.findings.config import ProjectConfig
from csconform.spec import Catalogue, Spec
from csconform.usercode.lint import lint_paths
from csconform.usercode.sweep import DEFAULT_RELEASES, load_verdicts, record, sweep, verdict_key

HERE = Path(__file__).parent
FIXTURES = HERE / "data" / "modelzoo"
VERDICTS = HERE / "modelzoo_verdicts.yaml"
RECORD = Path(__file__).resolve().parents[3] / "reports" / "modelzoo_lint.json"
CLONE = os.environ.get("CSCONFORM_MODELZOO")


def _record() -> dict[str, Any]:
    return {entry["release"]: entry for entry in json.loads(RECORD.read_text(encoding="utf-8"))["releases"]}


def _sources() -> list[dict[str, str]]:
    return yaml.safe_load((FIXTURES / "sources.yaml").read_text(encoding="utf-8"))["fixtures"]


def test_the_fixtures_draw_the_findings_the_record_judges(spec: Spec, catalogue: Catalogue) -> None:
    by_release: dict[str, list[dict[str, str]]] = {}
    for source in _sources():
        by_release.setdefault(source["release"], []).append(source)
    recorded = _record()
    for release, sources in by_release.items():
        files = [FIXTURES / s["fixture"] for s in sources]
        reports = lint_paths([str(f) for f in files], spec, catalogue.get(release), ProjectConfig())
        for source, report in zip(sources, reports, strict=True):
            assert report.error is None
            found = Counter((f.line, f.rule) for f in report.findings)
            expected = Counter(
                (f["line"], f["rule"]) for f in recorded[release]["findings_judged"] if f["file"] == source["path"]
            )
            assert found == expected, source["fixture"]


def test_the_fixtures_include_findings_and_silent_files() -> None:
    recorded = _record()
    judged = {(s["release"], s["path"]) for s in _sources()}
    with_findings = {
        (release, f["file"]) for release, entry in recorded.items() for f in entry["findings_judged"]
    } & judged
    assert 2 <= len(with_findings) < len(judged)


def test_every_finding_of_the_record_has_a_verdict_and_no_verdict_is_stale() -> None:
    verdicts = load_verdicts(VERDICTS)
    findings = [f for entry in _record().values() for f in entry["findings_judged"]]
    assert findings and all(f["verdict"] == verdicts[verdict_key(f)] for f in findings)
    assert set(verdicts) == {verdict_key(f) for f in findings}
    assert [entry["release"] for entry in json.loads(RECORD.read_text(encoding="utf-8"))["releases"]] == list(
        DEFAULT_RELEASES
    )


@pytest.mark.skipif(CLONE is None, reason="CSCONFORM_MODELZOO names no Model Zoo clone")
def test_the_whole_sweep_matches_the_committed_record(tmp_path: Path) -> None:
    sweeps = [sweep(Path(str(CLONE)), release, tmp_path) for release in DEFAULT_RELEASES]
    fresh = record(sweeps, load_verdicts(VERDICTS))
    for entry in fresh["releases"]:
        assert entry["read"] == entry["files"] and not entry["unreadable"]
    assert fresh == json.loads(RECORD.read_text(encoding="utf-8"))


@pytest.mark.skipif(CLONE is None, reason="CSCONFORM_MODELZOO names no Model Zoo clone")
def test_each_fixture_is_its_file_in_the_clone() -> None:
    for source in _sources():
        shown = subprocess.run(
            ["git", "-C", str(CLONE), "show", f"{source['commit']}:{source['path']}"], capture_output=True, check=True
        )
        assert shown.stdout == (FIXTURES / source["fixture"]).read_bytes(), source["fixture"]
