"""A verdict explains itself: the limit that binds the plan and where its number of systems came from (text
and JSON), the layers muP trains at other rates, a learning rate asked for past the end of training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from zoo_data import MODELZOO

from csconform.cli import main as cli_main
from csconform.spec import Catalogue, Spec
from csconform.userconfig.validate import release_options, validate_file

BERT_BASE = MODELZOO / "1.9.1/modelzoo/transformers/pytorch/bert/configs/bert_base_MSL128.yaml"
LLAMA2_7B = MODELZOO / "2.10.0/src/cerebras/modelzoo/models/nlp/llama/configs/params_llama2_7b.yaml"


def test_an_input_bound_bert_says_so_on_every_wafer(spec: Spec, catalogue: Catalogue) -> None:
    """BERT-base at sequence 128 is fed slower than a WSE-2 or WSE-3 computes in weight streaming: the same
    samples/s on both. A WSE-1 runs it pipelined, at the pipelined efficiency fitted on the measured pipelined
    runs (csconform/perf/calibration/calibration.json), which its compute binds below that input rate. Judged
    for 2.10.0, planned at the reference efficiencies (no later release generation has a figure; judged for
    1.9.1 it takes 2.0's lower one, and on a WSE-2 its compute binds just below the input rate)."""
    plans = [
        validate_file(BERT_BASE, spec, release_options(catalogue, "2.10.0", wafer=wafer)).plan
        for wafer in ("wse1", "wse2", "wse3")
    ]
    assert all(plan is not None for plan in plans)
    wse1, wse2, wse3 = plans
    assert wse2.binding_limit == wse3.binding_limit == "input pipeline" and wse2.samples_per_s == wse3.samples_per_s
    assert wse1.mode == "pipelined" and wse1.binding_limit == "compute" and wse1.samples_per_s < wse2.samples_per_s


def test_a_large_model_is_bound_by_compute_with_the_shares_shown(spec: Spec, catalogue: Catalogue) -> None:
    plan = validate_file(LLAMA2_7B, spec, release_options(catalogue, "2.10.0")).plan
    assert plan is not None and plan.binding_limit == "compute"
    assert "compute" in plan.binding_detail and "weight streaming I/O" in plan.binding_detail


def test_the_number_of_systems_says_where_it_came_from(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    def source(path: Path, **options: object) -> tuple[int, str]:
        plan = validate_file(path, spec, release_options(catalogue, "1.9.1", **options)).plan
        assert plan is not None
        return plan.systems, plan.systems_source

    assert source(BERT_BASE) == (1, "assumed: the file sets no num_csx")
    assert source(BERT_BASE, num_csx=4) == (4, "from --num-csx")
    text = BERT_BASE.read_text(encoding="utf-8")
    assert "\nrunconfig:\n" in text
    with_key = tmp_path / "two.yaml"
    with_key.write_text(text.replace("\nrunconfig:\n", "\nrunconfig:\n    num_csx: 2\n", 1), encoding="utf-8")
    systems, where = source(with_key)
    assert systems == 2 and where.startswith("from runconfig.num_csx (line ")
    zero = tmp_path / "zero.yaml"
    zero.write_text(text.replace("\nrunconfig:\n", "\nrunconfig:\n    num_csx: 0\n", 1), encoding="utf-8")
    assert source(zero) == (1, "assumed 1: runconfig.num_csx 0 is not a positive integer")


def test_text_and_json_both_name_the_limit_and_the_systems(capsys: pytest.CaptureFixture[str]) -> None:
    # on a WSE-3 the input binds BERT-Base at 1.9.1's efficiency too (on a WSE-2 compute binds just below it)
    assert cli_main(["validate", str(BERT_BASE), "--release", "1.9.1", "--wafer", "wse3"]) == 0
    text = capsys.readouterr().out
    assert "bound by: input pipeline (" in text and "systems: 1 (assumed: the file sets no num_csx)" in text
    assert cli_main(["validate", str(BERT_BASE), "--release", "1.9.1", "--wafer", "wse3", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert entry["plan"]["binding_limit"] == "input pipeline" and entry["plan"]["binding_detail"]
    assert entry["plan"]["systems_source"] == "assumed: the file sets no num_csx"


BTLM = MODELZOO / "2.10.0/src/cerebras/modelzoo/models/nlp/btlm/configs/params_btlm_2p7b_8k.yaml"
GPT3_XL = MODELZOO / "1.9.1/modelzoo/transformers/pytorch/gpt3/configs/params_gpt3_xl.yaml"


def test_mup_s_per_layer_rates_are_shown_beside_the_schedule(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    """BTLM's muP widths (base 256 of 2560, base 682.6 of 6826) scale its hidden layers' rates by 0.1;
    a 1.x file's adjust_learning_rate names its factors (neither is an optimizer argument)."""
    btlm = validate_file(BTLM, spec, release_options(catalogue, "2.10.0", plan=False))
    mup = [note for note in btlm.notes if note.startswith("muP:")]
    assert len(mup) == 2 and all(note.split("=")[-1].startswith(" 0.1;") for note in mup)
    text = GPT3_XL.read_text(encoding="utf-8").replace(
        "\noptimizer:\n", "\noptimizer:\n    adjust_learning_rate:\n        decoder_kernel: 0.125\n", 1
    )
    adjusted = tmp_path / "xl_mup.yaml"
    adjusted.write_text(text, encoding="utf-8")
    verdict = validate_file(adjusted, spec, release_options(catalogue, "1.9.1", plan=False))
    assert any("adjust_learning_rate" in note and "decoder_kernel x0.125" in note for note in verdict.notes)
    assert not [f for f in verdict.warnings if f.key and "adjust_learning_rate" in f.key]
    plain = validate_file(GPT3_XL, spec, release_options(catalogue, "1.9.1", plan=False))
    assert not [note for note in plain.notes if "adjust_learning_rate" in note or note.startswith("muP")]


def test_a_learning_rate_asked_past_the_last_step_says_so(spec: Spec, catalogue: Catalogue) -> None:
    verdict = validate_file(BTLM, spec, release_options(catalogue, "2.10.0", plan=False, lr_at=(95, 159635, 159636)))
    (note,) = [note for note in verdict.notes if note.startswith("--lr-at")]
    assert note.startswith("--lr-at 159636:") and "max_steps 159636" in note
