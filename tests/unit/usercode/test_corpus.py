"""The corpus (tests/unit/usercode/corpus): every finding the checker reports is marked on its line,
and every mark is found; every static rule has at least one bad example."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest
from corpus_marks import CORPUS, corpus_files, marks, release_of

from csconform.findings.config import ProjectConfig
from csconform.spec import Catalogue, Spec
from csconform.usercode.lint import lint_paths


def _found_by_file(spec: Spec, catalogue: Catalogue) -> dict[Path, Counter[tuple[int, str]]]:
    """Lint the corpus, each release's files as one run (helpers are imported across files)."""
    groups: dict[str | None, list[Path]] = defaultdict(list)
    for path in corpus_files():
        groups[release_of(path)].append(path)
    found: dict[Path, Counter[tuple[int, str]]] = {}
    for release, files in groups.items():
        chosen = catalogue.newest if release is None else catalogue.get(release)
        for path, report in zip(files, lint_paths([str(f) for f in files], spec, chosen, ProjectConfig()), strict=True):
            assert report.error is None, report.error
            found[path] = Counter((f.line or 0, f.rule) for f in report.findings)
    return found


@pytest.fixture(scope="module")
def found(spec: Spec, catalogue: Catalogue) -> dict[Path, Counter[tuple[int, str]]]:
    return _found_by_file(spec, catalogue)


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.relative_to(CORPUS).as_posix())
def test_the_findings_are_exactly_the_marks(path: Path, found: dict[Path, Counter[tuple[int, str]]]) -> None:
    expected = marks(path)
    missing, extra = expected - found[path], found[path] - expected
    assert not missing and not extra, f"missing {sorted(missing)}, not marked {sorted(extra)}"


def test_every_static_rule_has_a_bad_example(spec: Spec) -> None:
    marked = {rule for path in corpus_files() for _, rule in marks(path)}
    static = {
        rule.id for rule in spec.by_area("user_code") if int(rule.id.split("-")[1]) < 90 and rule.status == "checked"
    }
    assert static - marked == set()
    assert len(static) >= 27


def test_a_missing_finding_or_an_extra_one_fails_the_comparison(tmp_path: Path) -> None:
    """The marks are read as written: a mark on another line, or a second rule, is a difference."""
    path = tmp_path / "marked.py"
    path.write_text("x = 1  # expect: CODE-020, CODE-021\ny = 2  # expect: CODE-001\n", encoding="utf-8")
    assert marks(path) == Counter({(1, "CODE-020"): 1, (1, "CODE-021"): 1, (2, "CODE-001"): 1})
