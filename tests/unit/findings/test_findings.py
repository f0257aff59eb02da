"""The one finding type and its forms: text, JSON (against its shipped schema), SARIF 2.1.0 (against the
published schema), GitHub annotations; silencing; the project's settings; mechanical fixes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from csconform.errors import OutputPathError, UnreadableDocumentError
from csconform.findings import render
from csconform.findings.collect import Findings
from csconform.findings.config import ConfigError, find_config, load_config
from csconform.findings.finding import Edit, FileReport, Finding, Location
from csconform.findings.fix import apply_fixes, unified_diff
from csconform.findings.suppress import ignored_on_lines, suppress
from csconform.output_guard import protect, replace_input
from csconform.spec import load_spec
from csconform.spec.loader import default_specs_dir
from csconform.spec.releases import load_catalogue

DATA = Path(__file__).parent / "data"
SCHEMA = Path(render.__file__).parent / "report.schema.json"


def finding(rule: str = "CONFIG-023", severity: str = "violation", **fields) -> Finding:
    values = {"level": "public", "path": "a dir/params.yaml", "message": "m", "line": 3, "column": 5}
    return Finding(rule=rule, severity=severity, **{**values, **fields})  # type: ignore[arg-type]


def reports() -> list[FileReport]:
    return [
        FileReport(
            "a dir/params.yaml",
            violations=[finding(fix="use fp16_type", edits=(Edit(3, 5, 3, 9, "x"),))],
            warnings=[finding("CONFIG-002", "warning", level="reference", line=None, column=None, key="model.x")],
        ),
        FileReport("b.json", error="b.json: line 1: invalid JSON: Expecting value (column 1)"),
        FileReport("c.yaml"),
    ]


# --- the collector --------------------------------------------------------------------------------------


def test_the_collector_judges_by_level_and_release_and_fills_the_documented_message() -> None:
    spec, catalogue = load_spec(), load_catalogue(default_specs_dir())
    found = Findings(spec, catalogue.get("2.10.0"), "p.yaml")
    found.refuse("CONFIG-023", Location("model.use_bfloat16", 90))  # public: a violation with its message
    found.refuse("CONFIG-002", Location("model.x", 2), "unknown key")  # reference: a warning
    found.refuse("GRAPH-005", Location("runconfig.mode", 4))  # holds before 1.8.0 only: dropped
    assert [(f.rule, f.severity, f.key, f.line) for f in found.violations] == [
        ("CONFIG-023", "violation", "model.use_bfloat16", 90)
    ]
    assert found.violations[0].message == spec.get("CONFIG-023").error.message  # type: ignore[union-attr]
    assert [(f.rule, f.severity) for f in found.warnings] == [("CONFIG-002", "warning")]
    old = Findings(spec, catalogue.get("1.7.1"), "p.yaml")
    old.refuse("GRAPH-005", Location("runconfig.mode", 4))
    assert [f.rule for f in old.violations] == ["GRAPH-005"]


# --- the forms -----------------------------------------------------------------------------------------


def test_text_is_one_line_per_finding_with_its_place_and_its_fix() -> None:
    printed = render.text(reports())
    assert "a dir/params.yaml:3:5: CONFIG-023 [public] m\n    fix: use fp16_type (--fix rewrites it)" in printed
    assert "a dir/params.yaml: CONFIG-002 [reference] model.x: m" in printed  # no line known: none printed
    assert "b.json: cannot read: " in printed
    assert printed.splitlines()[-1] == "3 files: 1 violation, 1 warning, 1 unreadable"


def test_the_json_form_follows_its_shipped_schema() -> None:
    document = json.loads(render.json_text(render.json_document(reports(), "lint")))
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert document["summary"] == {
        "files": 3,
        "conforms": 1,
        "violations": 1,
        "unreadable": 1,
        "findings": 2,
        "suppressed": 0,
    }
    assert document["files"][0]["violations"][0]["fixable"] is True


def test_json_output_is_strict_json_even_with_a_non_finite_number() -> None:
    text = render.json_text({"plan": {"samples_per_s": float("inf"), "ratio": [float("nan"), 1.0]}})
    assert json.loads(text) == {"plan": {"samples_per_s": None, "ratio": [None, 1.0]}}


def test_sarif_follows_the_published_schema_and_keeps_every_finding() -> None:
    """The OASIS SARIF 2.1.0 schema (tests/unit/findings/data, see sources.md there)."""
    log = render.sarif(reports(), load_spec())
    jsonschema.Draft4Validator(json.loads((DATA / "sarif-schema-2.1.0.json").read_text())).validate(log)
    run = log["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == ["CONFIG-002", "CONFIG-023"]
    results = {r["ruleId"]: r for r in run["results"]}
    assert results["CONFIG-023"]["level"] == "error" and results["CONFIG-002"]["level"] == "warning"
    location = results["CONFIG-023"]["locations"][0]["physicalLocation"]
    assert location == {
        "artifactLocation": {"uri": "a%20dir/params.yaml"},
        "region": {"startLine": 3, "startColumn": 5},
    }
    assert "region" not in results["CONFIG-002"]["locations"][0]["physicalLocation"]
    assert results["CONFIG-023"]["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"] == {
        "text": "x"
    }
    (notification,) = run["invocations"][0]["toolExecutionNotifications"]  # b.json could not be read
    assert run["invocations"][0]["executionSuccessful"] is False
    assert notification["message"]["text"].startswith("cannot read: ") and notification["level"] == "error"


def test_github_annotations_escape_what_the_runner_reads_as_separators() -> None:
    report = FileReport("dir,1/a:b.py", violations=[finding(path="dir,1/a:b.py", message="50% off\nnext line")])
    assert render.github([report]) == (
        "::error file=dir%2C1/a%3Ab.py,line=3,col=5,title=CONFIG-023 [public]::50%25 off%0Anext line"
    )


def test_a_file_that_could_not_be_read_is_an_error_annotation_that_says_so() -> None:
    report = FileReport("train.py", error="not UTF-8 text but UTF-16 (byte-order mark)")
    assert render.github([report]) == (
        "::error file=train.py,title=csconform::cannot read: not UTF-8 text but UTF-16 (byte-order mark)"
    )


# --- silencing -----------------------------------------------------------------------------------------


def test_an_inline_comment_silences_the_rules_it_names_on_its_line() -> None:
    text = "a = 1  # csconform: ignore[CONFIG-023, CODE-001]\nb = 2\nc = 3  # csconform: ignore\n"
    assert ignored_on_lines(text) == {1: frozenset({"CONFIG-023", "CODE-001"}), 3: None}
    report = FileReport(
        "p.py",
        violations=[finding(line=1), finding(line=2), finding("CONFIG-002", line=3), finding("CONFIG-002", line=1)],
    )
    suppress(report, text, lambda rule: False)
    assert [(f.rule, f.line) for f in report.violations] == [("CONFIG-023", 2), ("CONFIG-002", 1)]
    assert report.suppressed == 2
    suppress(report, None, lambda rule: rule == "CONFIG-002")
    assert [(f.rule, f.line) for f in report.violations] == [("CONFIG-023", 2)] and report.suppressed == 3


def test_the_project_settings_are_read_from_the_nearest_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.csconform]\nrelease = "2.10"\nignore = ["CONFIG-002"]\nexclude = ["build/*"]\n'
        '[tool.csconform.per-file-ignores]\n"tests/*" = ["CODE-001"]\n'
    )
    (tmp_path / "src" / "deep").mkdir(parents=True)
    settings = find_config(tmp_path / "src" / "deep")
    assert settings.path == tmp_path / "pyproject.toml" and settings.release == "2.10"
    assert settings.ignores(tmp_path / "tests" / "t.py") == {"CONFIG-002", "CODE-001"}
    assert settings.ignores(tmp_path / "src" / "a.py") == {"CONFIG-002"}
    assert settings.excluded(tmp_path / "build" / "x.py") and not settings.excluded(tmp_path / "src" / "x.py")


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('ignor = ["X-001"]', "ignor"),
        ("release = 2.10", "release"),
        ('ignore = "CONFIG-002"', "ignore"),
        ('per-file-ignores = ["x"]', "per-file-ignores"),
    ],
)
def test_a_wrong_setting_is_refused_naming_it(tmp_path: Path, table: str, named: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.csconform]\n{table}\n")
    with pytest.raises(ConfigError, match=named):
        load_config(tmp_path / "pyproject.toml")


def test_message_unknown_setting(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.csconform]\nignor = ["X-001"]\n')
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path / "pyproject.toml")
    assert (
        str(refused.value)
        == f"{tmp_path / 'pyproject.toml'}: [tool.csconform]: unknown key 'ignor'; did you mean 'ignore'?"
    )


def test_an_unreadable_pyproject_is_the_document_refusal(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.csconform\n")
    with pytest.raises(UnreadableDocumentError):
        find_config(tmp_path)


# --- fixes ---------------------------------------------------------------------------------------------


def test_fixes_are_made_from_the_end_and_an_overlapping_one_waits() -> None:
    text = "loader = DataLoader(ds, batch_size=4)\nother = DataLoader(ds)\n"
    first = finding(line=1, edits=(Edit(1, 37, 1, 37, ", drop_last=True"),))
    second = finding(line=2, edits=(Edit(2, 22, 2, 22, ", drop_last=True"),))
    clash = finding(line=1, edits=(Edit(1, 37, 1, 37, ", other=1"),))
    fixed = apply_fixes(text, [second, first, clash])
    assert (
        fixed.text == "loader = DataLoader(ds, batch_size=4, drop_last=True)\nother = DataLoader(ds, drop_last=True)\n"
    )
    assert fixed.applied == 2
    diff = unified_diff("t.py", text, fixed.text)
    assert diff.startswith("--- a/t.py\n+++ b/t.py\n") and "+other = DataLoader(ds, drop_last=True)" in diff


def test_a_file_changed_since_it_was_read_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(b"x = 1\n")
    with protect([("PATH", path)]):  # an input of the command: only replace_input may write it
        replace_input(path, b"x = 1\n", b"x = 2\n")
        assert path.read_bytes() == b"x = 2\n"
        with pytest.raises(OutputPathError, match="changed since it was read"):
            replace_input(path, b"x = 1\n", b"x = 3\n")
    assert path.read_bytes() == b"x = 2\n"
