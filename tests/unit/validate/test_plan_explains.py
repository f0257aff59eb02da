"""A verdict explains itself: the limit that binds the plan and where its number of systems came from (text
and JSON), the layers muP trains at other rates, a learning rate asked for past the end of training."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def test_mup_s_per_layer_rates_are_shown_beside_the_schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: Spec, catalogue: Catalogue
) -> None:
    """BTLM's muP widths (base 256 of 2560, base 682.6 of 6826) scale its hidden layers' rates by 0.1;
    a 1.x file's adjust_learning_rate names its factors (neither is an optimizer argument). Each group
    is shown with the rates it trains at: in text, in JSON and on the plot."""
    btlm = validate_file(BTLM, spec, release_options(catalogue, "2.10.0", plan=False, lr_at=(5000,)))
    assert [rate.factor for rate in btlm.layer_rates] == pytest.approx([0.1, 0.1])
    assert all(rate.source.startswith("muP: mup_base_") for rate in btlm.layer_rates)
    assert cli_main(["validate", str(BTLM), "--release", "2.10.0", "--no-plan", "--lr-at", "5000", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    (attention, _ffn) = entry["layer_rates"]
    assert attention["max"] == pytest.approx(entry["schedule"]["max"] * 0.1)
    assert attention["last"] == pytest.approx(entry["schedule"]["last"]["lr"] * 0.1)
    assert attention["learning_rate"]["5000"] == pytest.approx(entry["learning_rate"]["5000"] * 0.1)

    text = GPT3_XL.read_text(encoding="utf-8").replace(
        "\noptimizer:\n", "\noptimizer:\n    adjust_learning_rate:\n        decoder_kernel: 0.125\n", 1
    )
    adjusted = tmp_path / "xl_mup.yaml"
    adjusted.write_text(text, encoding="utf-8")
    verdict = validate_file(adjusted, spec, release_options(catalogue, "1.9.1", plan=False))
    (kernel,) = verdict.layer_rates
    assert (kernel.layers, kernel.factor) == ("decoder_kernel", 0.125) and "adjust_learning_rate" in kernel.source
    assert not [f for f in verdict.warnings if f.key and "adjust_learning_rate" in f.key]
    assert cli_main(["validate", str(adjusted), "--release", "1.9.1", "--no-plan"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("decoder_kernel:")]
    assert f"last {verdict.schedule.last * 0.125:.6g}" in line  # type: ignore[union-attr]
    plain = validate_file(GPT3_XL, spec, release_options(catalogue, "1.9.1", plan=False))
    assert plain.layer_rates == []


def test_the_plot_draws_each_group_of_layers_at_its_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: Spec, catalogue: Catalogue
) -> None:
    import matplotlib.axes

    drawn: list[tuple[str, float]] = []
    original = matplotlib.axes.Axes.plot

    def recording(axes, x, y, *args, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append((kwargs.get("label", ""), float(max(y))))
        return original(axes, x, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", recording)
    verdict = validate_file(BTLM, spec, release_options(catalogue, "2.10.0", plan=False, plot_path=tmp_path / "lr.png"))
    assert (tmp_path / "lr.png").stat().st_size > 0
    base, *groups = drawn
    assert len(groups) == 2 and all(peak == pytest.approx(base[1] * 0.1) for _label, peak in groups)
    assert verdict.schedule is not None and base[1] == pytest.approx(verdict.schedule.maximum)


def test_a_learning_rate_asked_past_the_last_step_says_so(spec: Spec, catalogue: Catalogue) -> None:
    verdict = validate_file(BTLM, spec, release_options(catalogue, "2.10.0", plan=False, lr_at=(95, 159635, 159636)))
    (note,) = [note for note in verdict.notes if note.startswith("--lr-at")]
    assert note.startswith("--lr-at 159636:") and "max_steps 159636" in note


BERT_MSL128 = MODELZOO / "1.9.1/modelzoo/transformers/pytorch/bert/configs/bert_base_MSL128.yaml"


@pytest.mark.parametrize(
    ("strategy", "mode", "source"),
    [
        (None, "pipelined", "chosen: "),
        ("weight_streaming", "weight_streaming", "the file's runconfig.execution_strategy"),
    ],
)
def test_the_plan_runs_in_the_mode_the_file_asks_for(
    tmp_path: Path, spec: Spec, catalogue: Catalogue, strategy: str | None, mode: str, source: str
) -> None:
    """Before 1.9.0 a model that fits one system is planned pipelined unless its runconfig asks for
    weight streaming (Cerebras-GPT's 1.8.0 files do); the plan says which decided."""
    text = BERT_MSL128.read_text(encoding="utf-8")
    if strategy is not None:
        text = text.replace("\nrunconfig:\n", f"\nrunconfig:\n    execution_strategy: {strategy}\n", 1)
    path = tmp_path / "bert" / "configs" / "params.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    verdict = validate_file(path, spec, release_options(catalogue, "1.8.0"))
    assert verdict.plan is not None and verdict.plan.mode == mode
    assert verdict.plan.mode_source.startswith(source)


def test_every_note_of_the_plan_is_printed_once(capsys: pytest.CaptureFixture[str]) -> None:
    """What the plan assumed (heads counted, the pipelined efficiency, the input limit, the release's
    mode) stands in the text as in the JSON, each note once (the plan repeats some of the model's)."""
    assert cli_main(["validate", str(BERT_MSL128), "--release", "1.8.0", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    notes = entry["plan"]["notes"]
    assert len(notes) == len(set(notes)) and any(note.startswith("heads counted") for note in notes)
    assert cli_main(["validate", str(BERT_MSL128), "--release", "1.8.0"]) == 0
    printed = [line.strip().removeprefix("plan note: ") for line in capsys.readouterr().out.splitlines()]
    assert [line for line in printed if line in notes] == notes


def test_a_layer_factor_that_is_not_a_number_is_named(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    text = GPT3_XL.read_text(encoding="utf-8").replace(
        "\noptimizer:\n",
        "\noptimizer:\n    adjust_learning_rate:\n        decoder_kernel: fast\n        embedding: 2\n",
        1,
    )
    path = tmp_path / "xl_mup.yaml"
    path.write_text(text, encoding="utf-8")
    verdict = validate_file(path, spec, release_options(catalogue, "1.9.1", plan=False))
    assert [(rate.layers, rate.factor) for rate in verdict.layer_rates] == [("embedding", 2.0)]
    (note,) = [note for note in verdict.notes if "decoder_kernel" in note]
    assert "adjust_learning_rate" in note and "fast" in note


def test_the_time_to_train_line_states_the_band_and_its_wider_slow_end_on_a_cs3(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The verdict's time to train (one template, two forms): the band's ends and the worst held-out run's;
    on a WSE-3 (one fitted run, an estimated peak) the slow ends lie x1.89 further out, and the line says so."""
    for wafer, widened in (("wse2", False), ("wse3", True)):
        assert cli_main(["validate", str(LLAMA2_7B), "--release", "2.10.0", "--wafer", wafer, "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)["files"][0]["plan"]
        band, worst, seconds = plan["band"], plan["worst_band"], plan["time_to_train_s"]
        slower_by = 1.8939 if widened else 1.0
        assert band["low_s"] == pytest.approx(seconds / band["factor"])
        assert band["high_s"] == pytest.approx(seconds * band["factor"] * slower_by, rel=1e-4)
        assert worst["high_s"] == pytest.approx(seconds * worst["factor"] * slower_by, rel=1e-4)
        assert cli_main(["validate", str(LLAMA2_7B), "--release", "2.10.0", "--wafer", wafer]) == 0
        (line,) = [text for text in capsys.readouterr().out.splitlines() if "time to train:" in text]
        assert f"model error band x{band['factor']:g}: " in line
        assert f"worst held-out run x{worst['factor']:g}: " in line
        assert line.endswith(f"; the slow ends x1.89 further out on a {wafer})") == widened


LLAMA3P1_8B = MODELZOO / "2.10.0/src/cerebras/modelzoo/models/nlp/llama/configs/params_llama3p1_8b_msl_8k.yaml"


def test_the_plan_follows_the_files_micro_batch_size(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    """Llama 3.1 8B at 8k tokens, batch 960 in micro-batches of 20 (its ScopedTrainFlags): 48 micro-batches a
    step, each paying the per-layer latency again; with the flag set to "auto" or "explore" the fitted
    lanes decide (a micro-batch of 480 is more than they hold: the same plan)."""
    text = LLAMA3P1_8B.read_text(encoding="utf-8")
    assert text.count("csx.performance.micro_batch_size: 20") == 2

    def planned(name: str, value: str) -> Any:
        path = tmp_path / name
        path.write_text(text.replace("micro_batch_size: 20", f"micro_batch_size: {value}"), encoding="utf-8")
        verdict = validate_file(path, spec, release_options(catalogue, "2.10.0"))
        assert verdict.plan is not None
        return verdict

    asked = planned("asked.yaml", "20").plan
    assert any(note.startswith("micro-batch 20 asked for: 48 micro-batch(es) a step") for note in asked.notes)
    auto, explore, large = planned("auto.yaml", "auto"), planned("explore.yaml", "explore"), planned("l.yaml", "480")
    assert not any(note.startswith("micro-batch") for note in auto.plan.notes + explore.plan.notes)
    assert any(note.startswith("micro-batch 480 asked for; the lanes hold") for note in large.plan.notes)
    assert auto.plan.samples_per_s == explore.plan.samples_per_s == large.plan.samples_per_s > asked.samples_per_s
    assert auto.violations == explore.violations == large.violations == []
