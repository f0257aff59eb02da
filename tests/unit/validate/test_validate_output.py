"""validate through the shared findings layer: the forms a CI reads, silencing, the project's settings."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from csconform.cli import main as cli_main
from csconform.findings import render

SARIF_SCHEMA = Path(__file__).parents[1] / "findings" / "data" / "sarif-schema-2.1.0.json"
REPORT_SCHEMA = Path(render.__file__).parent / "report.schema.json"
# use_bfloat16 is refused from 2.1.0 (CONFIG-023, public: a violation); frobnicate is unknown (CONFIG-002: a warning)
PARAMS = """\
train_input: {batch_size: 8}
model: {use_bfloat16: True}
optimizer: {optimizer_type: AdamW, learning_rate: 0.001, beta2: 0.9}
runconfig: {max_steps: 10, frobnicate: 1}
"""


@pytest.fixture
def params(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml above: no project settings
    path = tmp_path / "params.yaml"
    path.write_text(PARAMS, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str]:
    code = cli_main(["validate", *arguments, "--no-plan", "--release", "2.10"])
    return code, capsys.readouterr().out


def test_every_form_reports_the_same_findings(params: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run(capsys, str(params))
    assert code == 1 and f"{params}:2: CONFIG-023 [public] model.use_bfloat16: " in text
    code, printed = run(capsys, str(params), "--format", "json")
    document = json.loads(printed)
    jsonschema.Draft202012Validator(json.loads(REPORT_SCHEMA.read_text())).validate(document)
    (file,) = document["files"]
    assert [f["rule"] for f in file["violations"]] == ["CONFIG-023"] and file["violations"][0]["line"] == 2
    assert "CONFIG-002" in [f["rule"] for f in file["warnings"]]
    code, printed = run(capsys, str(params), "--format", "sarif")
    log = json.loads(printed)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {
        f["rule"] for f in [*file["violations"], *file["warnings"]]
    }
    code, printed = run(capsys, str(params), "--format", "github")
    assert code == 1 and f"::error file={params},line=2,title=CONFIG-023 [public]::" in printed


def test_the_output_goes_to_a_file_and_never_over_an_input(params: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = params.parent / "report.sarif"
    code, printed = run(capsys, str(params), "--format", "sarif", "--output", str(out))
    assert code == 1 and printed == "" and json.loads(out.read_text())["version"] == "2.1.0"
    before = params.read_bytes()
    assert cli_main(["validate", str(params), "--output", str(params)]) == 2
    assert cli_main(["validate", str(params), "--json", str(params)]) == 2
    assert params.read_bytes() == before


def test_an_inline_comment_silences_a_finding_on_its_line(params: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params.write_text(PARAMS.replace("{use_bfloat16: True}", "{use_bfloat16: True}  # csconform: ignore[CONFIG-023]"))
    code, printed = run(capsys, str(params), "--json")
    (file,) = json.loads(printed)["files"]
    assert code == 0 and file["violations"] == [] and file["suppressed"] == 1


def test_the_project_settings_choose_the_release_and_silence_rules(
    params: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (params.parent / "pyproject.toml").write_text('[tool.csconform]\nrelease = "1.9.1"\nignore = ["CONFIG-002"]\n')
    code = cli_main(["validate", str(params), "--no-plan", "--json"])
    document = json.loads(capsys.readouterr().out)
    (file,) = document["files"]
    assert code == 0 and document["release"] == "1.9.1"  # use_bfloat16 is accepted before 2.1.0
    assert "CONFIG-002" not in [f["rule"] for f in file["warnings"]] and file["suppressed"] >= 1
    assert cli_main(["validate", str(params), "--no-plan", "--isolated", "--release", "2.10"]) == 1
    (params.parent / "pyproject.toml").write_text('[tool.csconform]\nignor = ["CONFIG-002"]\n')
    assert cli_main(["validate", str(params), "--no-plan"]) == 2
    assert "unknown key 'ignor'" in capsys.readouterr().err
