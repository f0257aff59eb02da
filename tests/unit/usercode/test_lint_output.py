"""What lint prints: the shared forms (text like ruff's, JSON against its schema, SARIF 2.1.0 against
the published schema, GitHub annotations), the release from the project's settings, the arguments
after ``--`` for the run on CPU, and the run's findings silenced as the static ones are."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from csconform.cli import main as cli_main
from csconform.findings import render
from csconform.findings.finding import FileReport, Finding

FINDINGS_DATA = Path(__file__).resolve().parents[1] / "findings" / "data"
SCHEMA = Path(render.__file__).parent / "report.schema.json"
SOURCE = (
    "import cerebras.pytorch as cstorch\nimport torch\n"
    "model = cstorch.compile(torch.nn.Linear(2, 2))\n\n"
    "@cstorch.trace\ndef step(batch):\n    loss = model(batch).sum()\n    print(loss)\n    return loss\n"
)


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def test_text_is_one_line_per_finding_like_ruffs(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["lint", str(script), "--isolated"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{script}:8:5: CODE-002 [public] print(loss)")
    assert lines[1].startswith("    fix: Pass the tensor to a function decorated with @cstorch.step_closure")
    assert re.findall(r"\d+", lines[-1]) == ["1", "1", "0"]  # files, violations, warnings (wording: test_findings)


def test_json_follows_the_shipped_schema(script: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert cli_main(["lint", str(script), "--isolated", "--json", str(out)]) == 1
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(document)
    (entry,) = document["files"]
    (finding,) = entry["violations"]
    assert {k: finding[k] for k in ("rule", "level", "path", "line", "column")} == {
        "rule": "CODE-002",
        "level": "public",
        "path": str(script),
        "line": 8,
        "column": 5,
    }
    assert finding["fix"] and entry["warnings"] == []


def test_sarif_follows_the_published_schema(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["lint", str(script), "--isolated", "--format", "sarif"]) == 1
    log = json.loads(capsys.readouterr().out)
    schema = json.loads((FINDINGS_DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "CODE-002"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 8, "startColumn": 5}
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "CODE-002" and "step_closure" in rule["properties"]["source"]


def test_github_annotations(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["lint", str(script), "--isolated", "--format", "github"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"::error file={script},line=8,col=5,title=CODE-002 [public]::print(loss)")


def test_the_release_comes_from_the_option_or_the_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.py"
    path.write_text('mode = "train_and_eval"\n', encoding="utf-8")
    assert cli_main(["lint", str(path), "--isolated"]) == 0
    assert cli_main(["lint", str(path), "--isolated", "--release", "1.7.1"]) == 1
    (tmp_path / "pyproject.toml").write_text('[tool.csconform]\nrelease = "1.6.0"\n', encoding="utf-8")
    assert cli_main(["lint", str(path), "--config", str(tmp_path / "pyproject.toml")]) == 1
    assert "CODE-004" in capsys.readouterr().out


def test_arguments_after_the_double_dash_go_to_the_script(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def fake_run(arguments, spec, release, settings):  # type: ignore[no-untyped-def]
        seen.update(script=arguments.run, args=arguments.script_args, steps=arguments.steps)
        return []

    monkeypatch.setattr("csconform.commands.lint._run", fake_run)
    status = cli_main(["lint", "--run", str(script), "--steps", "2", "--isolated", "--", "--lr", "0.1", "--", "x"])
    assert status == 1  # the static findings of the script itself
    assert seen == {"script": str(script), "args": ["--lr", "0.1", "--", "x"], "steps": 2}


@pytest.mark.parametrize(
    ("option", "value"), [("--steps", "0"), ("--steps", "2.5"), ("--timeout", "0"), ("--timeout", "nan")]
)
def test_a_count_or_a_timeout_that_is_not_positive_is_refused_before_the_script_runs(
    script: Path, option: str, value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("csconform.commands.lint._run", lambda *a: pytest.fail("the script ran"))
    with pytest.raises(SystemExit) as exited:
        cli_main(["lint", "--run", str(script), option, value, "--isolated"])
    assert exited.value.code == 2
    assert option in capsys.readouterr().err


def test_an_output_over_the_script_of_run_is_refused_beside_other_paths(
    script: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.py"
    other.write_text("y = 2\n", encoding="utf-8")
    monkeypatch.setattr("csconform.commands.lint._run", lambda *a: pytest.fail("the script ran"))
    assert cli_main(["lint", str(other), "--run", str(script), "--json", str(script), "--isolated"]) == 2
    assert str(script) in capsys.readouterr().err
    assert script.read_text(encoding="utf-8") == SOURCE


def test_the_runs_findings_are_silenced_by_the_same_comments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "train.py"
    path.write_text("x = 1\ny = 2  # csconform: ignore[CODE-104]\n", encoding="utf-8")

    def ran(script, script_args, **options):  # type: ignore[no-untyped-def]
        report = FileReport(str(script))
        for line in (1, 2):
            report.violations.append(Finding("CODE-104", "documented", "violation", str(script), "lr written", line))
        return [report]

    monkeypatch.setattr("csconform.usercode.runtime.lint_run", ran)
    assert cli_main(["lint", "--run", str(path), "--isolated", "--format", "json"]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert [(v["rule"], v["line"]) for v in entry["violations"]] == [("CODE-104", 1)]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["lint", "--isolated"], "needs a PATH"),
        (["lint", "x.py", "--isolated", "--", "--lr"], "give --run SCRIPT"),
        (["lint", "x.py", "--in-place"], "--in-place makes the fixes of --fix"),
    ],
)
def test_a_wrong_command_line_is_refused_naming_the_mistake(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(argv) == 2
    assert named in capsys.readouterr().err
