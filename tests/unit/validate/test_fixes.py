"""validate --fix: the mechanical fixes of its findings as a diff, made in the file only when asked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from zoo_data import MODELZOO

from csconform.cli import main as cli_main
from csconform.spec import Catalogue, Spec
from csconform.userconfig.validate import release_options, validate_file

GPT3_XL = MODELZOO / "1.9.1/modelzoo/transformers/pytorch/gpt3/configs/params_gpt3_xl.yaml"
SST2 = (
    MODELZOO / "1.9.1/modelzoo/transformers/pytorch/bert/fine_tuning/classifier/configs/bert_base_classifier_sst2.yaml"
)


def test_use_bfloat16_becomes_fp16_type_for_a_2x_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: Spec, catalogue: Catalogue
) -> None:
    copy = tmp_path / GPT3_XL.name
    shutil.copy(GPT3_XL, copy)
    assert cli_main(["validate", str(copy), "--release", "2.10.0", "--no-plan", "--fix"]) == 1  # CONFIG-023 as found
    diff = capsys.readouterr().out
    assert "\n-    use_bfloat16: True\n+    fp16_type: bfloat16\n" in diff
    assert copy.read_bytes() == GPT3_XL.read_bytes()  # --fix alone writes nothing
    assert cli_main(["validate", str(copy), "--release", "2.10.0", "--no-plan", "--fix", "--in-place"]) == 1
    fixed = validate_file(copy, spec, release_options(catalogue, "2.10.0", plan=False))
    assert "CONFIG-023" not in {f.rule for f in fixed.violations}
    assert "fp16_type: bfloat16" in copy.read_text(encoding="utf-8")


def test_use_bfloat16_false_becomes_float16(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(GPT3_XL.read_text(encoding="utf-8").replace("use_bfloat16: True", "use_bfloat16: false"))
    (finding,) = [f for f in validate_file(path, spec, release_options(catalogue, "2.10.0", plan=False)).violations]
    assert finding.rule == "CONFIG-023" and [edit.text for edit in finding.edits] == ["fp16_type: float16"]


def test_a_text_float_gets_its_decimal_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: Spec, catalogue: Catalogue
) -> None:
    assert cli_main(["validate", str(SST2), "--release", "1.9.1", "--no-plan", "--fix"]) == 0
    assert "\n-    epsilon: 1e-6\n+    epsilon: 1.0e-6\n" in capsys.readouterr().out
    assert cli_main(["validate", str(SST2), "--release", "1.9.1", "--no-plan", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert [f["fixable"] for f in entry["warnings"] if f["rule"] == "CONFIG-007"] == [True]
    # two text floats on one line: which one the finding is about is not on the line, so no edit
    two = tmp_path / "two.yaml"
    two.write_text(SST2.read_text(encoding="utf-8").replace("epsilon: 1e-6", "betas: [1e-1, 1e-3]"))
    verdict = validate_file(two, spec, release_options(catalogue, "1.9.1", plan=False))
    texts = [f for f in verdict.warnings if f.rule == "CONFIG-007"]
    assert len(texts) == 2 and not any(f.edits for f in texts)


BERT_MSL128 = MODELZOO / "1.9.1/modelzoo/transformers/pytorch/bert/configs/bert_base_MSL128.yaml"


def _cut_schedule(tmp_path: Path, max_steps: int, milestones: list[int] | None) -> Path:
    """A trainer-layout file: a 100-step warm-up, then a 900-step cosine decay, training ``max_steps``."""
    sequence: dict[str, object] = {
        "schedulers": [
            {"LinearLR": {"initial_learning_rate": 0.0, "end_learning_rate": 1.0e-3, "total_iters": 100}},
            {"CosineDecayLR": {"initial_learning_rate": 1.0e-3, "end_learning_rate": 1.0e-4, "total_iters": 900}},
        ]
    }
    if milestones is not None:
        sequence["milestones"] = milestones
    init = {
        "backend": {"backend_type": "CSX"},
        "model": {"name": "gpt3", "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 2, "num_heads": 4},
        "optimizer": {"AdamW": {"weight_decay": 0.1}},
        "schedulers": [{"SequentialLR": sequence}],
        "precision": {"enabled": True, "fp16_type": "cbfloat16", "loss_scaling_factor": "dynamic"},
        "loop": {"max_steps": max_steps},
    }
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"trainer": {"init": init, "fit": {}}}, sort_keys=False), encoding="utf-8")
    return path


def test_a_decay_training_stops_in_is_shortened_to_end_with_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: Spec, catalogue: Catalogue
) -> None:
    """BERT's MSL128 file decays over 3200 + 77600 steps and trains 72000: the fix ends the decay at
    72000 (77600 -> 68800), so the rate reaches its end value on the last step."""
    copy = tmp_path / BERT_MSL128.name
    shutil.copy(BERT_MSL128, copy)
    options = release_options(catalogue, "1.9.1", plan=False, lr_at=(71999,))
    before = validate_file(copy, spec, options)
    (cut,) = [f for f in before.warnings if f.rule == "CONFIG-054"]
    assert cut.line == 79 and cut.key is not None and cut.key.endswith("steps") and cut.edits
    assert cli_main(["validate", str(copy), "--release", "1.9.1", "--no-plan", "--fix"]) == 0
    assert "\n-          steps: 77600\n+          steps: 68800\n" in capsys.readouterr().out
    assert copy.read_bytes() == BERT_MSL128.read_bytes()
    assert cli_main(["validate", str(copy), "--release", "1.9.1", "--no-plan", "--fix", "--in-place"]) == 0
    after = validate_file(copy, spec, options)
    assert "CONFIG-054" not in {f.rule for f in after.warnings}
    assert after.learning_rate[71999] == pytest.approx(0.0 + 1.767766952966369e-4 / 68800, rel=1e-6)
    assert before.learning_rate[71999] > 100 * after.learning_rate[71999]


@pytest.mark.parametrize(
    ("max_steps", "milestones", "edited"),
    [(500, [100], ["400"]), (500, None, ["400"]), (50, None, ["50"]), (50, [100], [])],
    ids=["last-phase", "last-phase-no-milestones", "warm-up-no-milestones", "warm-up-before-a-milestone"],
)
def test_a_phase_is_shortened_only_where_no_milestone_would_move(
    tmp_path: Path, spec: Spec, catalogue: Catalogue, max_steps: int, milestones: list[int] | None, edited: list[str]
) -> None:
    path = _cut_schedule(tmp_path, max_steps, milestones)
    verdict = validate_file(path, spec, release_options(catalogue, "2.10.0", plan=False))
    cut = [f for f in verdict.warnings if f.rule == "CONFIG-054" and "mid-phase" in f.message]
    assert len(cut) == 1 and cut[0].key is not None and cut[0].key.endswith("total_iters")
    assert [edit.text for edit in cut[0].edits] == edited
    assert cut[0].fix is not None and str(max_steps) in cut[0].fix
