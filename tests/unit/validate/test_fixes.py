"""validate --fix: the mechanical fixes of its findings as a diff, made in the file only when asked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
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
