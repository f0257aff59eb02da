"""Values the reference engine refuses are not accepted by ``validate``: each is a finding at its key
or, for an option naming something that does not exist, a usage error before any file is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from csconform.cli import main as cli_main
from csconform.findings.finding import Finding
from csconform.spec import Catalogue, Spec
from csconform.userconfig.validate import Verdict, release_options, validate_file

GPT = {"vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2, "num_heads": 4, "max_position_embeddings": 128}


def trainer(schedulers: list[dict[str, Any]], precision: dict[str, Any] | None = None) -> dict[str, Any]:
    init = {
        "backend": {"backend_type": "CSX"},
        "model": {"name": "gpt3", **GPT},
        "optimizer": {"AdamW": {"lr": 0.001}},
        "schedulers": schedulers,
        "precision": {"enabled": True, "fp16_type": "float16", **(precision or {})},
        "loop": {"max_steps": 1000},
    }
    return {"trainer": {"init": init, "fit": {"train_dataloader": {"batch_size": 64}}}}


LINEAR = [{"LinearLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": 1000}}]


def judge(tmp_path: Path, data: dict[str, Any], spec: Spec, catalogue: Catalogue) -> Verdict:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return validate_file(path, spec, release_options(catalogue, "2.10", plan=False))


def found(verdict: Verdict, rule: str) -> list[Finding]:
    return [f for f in (*verdict.violations, *verdict.warnings) if f.rule == rule]


@pytest.mark.parametrize(("factor", "refused"), [(-4.0, True), (1e39, True), (0, False), (128.0, False)])
def test_a_static_loss_scale_is_judged_by_the_engine_grad_scaler(
    tmp_path: Path, spec: Spec, catalogue: Catalogue, factor: float, refused: bool
) -> None:
    """A negative scale, or one beyond float32, is refused by the engine's GradScaler; 0 means "no
    scaling" to it (a static scale of 1.0), so it is accepted."""
    verdict = judge(tmp_path, trainer(LINEAR, {"loss_scaling_factor": factor}), spec, catalogue)
    findings = found(verdict, "GRADSCALER-040")
    assert bool(findings) is refused
    if refused:
        assert findings[0].key == "trainer.init.precision.loss_scaling_factor"


def test_a_negative_loss_scaling_option_is_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 2}), encoding="utf-8")
    options = ["--batch-size", "8", "--max-steps", "10", "--no-plan", "--format", "json", "--loss-scaling=-4"]
    cli_main(["validate", str(config), *options])
    (file,) = json.loads(capsys.readouterr().out)["files"]
    assert [f["key"] for f in file["warnings"] if f["rule"] == "GRADSCALER-040"] == ["--loss-scaling"]


def test_a_schedule_that_diverges_within_the_run_is_a_finding_and_the_json_stays_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ExponentialLR growing tenfold every 10 steps passes float32's range near step 390 of 1000."""
    exponential = {"ExponentialLR": {"initial_learning_rate": 0.1, "total_iters": 10, "decay_rate": 10}}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(trainer([exponential])), encoding="utf-8")
    cli_main(["validate", str(path), "--release", "2.10", "--no-plan", "--format", "json"])

    def not_json(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    (file,) = json.loads(capsys.readouterr().out, parse_constant=not_json)["files"]
    (finding,) = [f for f in file["warnings"] if f["rule"] == "OPTIM-011"]
    assert finding["key"] == "trainer.init.schedulers[0]" and "from step 39" in finding["message"]


def test_a_schedule_within_float32_has_no_such_finding(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    exponential = {"ExponentialLR": {"initial_learning_rate": 0.1, "total_iters": 10, "decay_rate": 0.5}}
    assert not found(judge(tmp_path, trainer([exponential]), spec, catalogue), "OPTIM-011")


def test_phase_lengths_summing_past_int64_are_refused_with_the_sum_not_a_wrapped_number(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    long = 2**62
    phases = [{"ConstantLR": {"learning_rate": 0.1, "total_iters": long}} for _ in range(2)]
    sequence = {"SequentialLR": {"schedulers": [*phases, {"ConstantLR": {"learning_rate": 0.01}}]}}
    (finding,) = found(judge(tmp_path, trainer([sequence]), spec, catalogue), "LR-004")
    assert str(2**63) in finding.message and "-" + str(2**63) not in finding.message


@pytest.mark.parametrize(("option", "value"), [("--wafer", "wse9"), ("--model-family", "gpt5")])
def test_an_option_naming_what_does_not_exist_is_refused_before_any_file_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    assert cli_main(["validate", str(tmp_path / "absent.yaml"), option, value]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("csconform: error: unknown") and repr(value) in line
