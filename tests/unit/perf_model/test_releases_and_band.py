"""What a release changes in a plan (csconform/perf/releases.py) and the band a plan states
(csconform/perf/calibration/band.py), written from the modules' documentation: before 1.9.0 a batch is
per system and pipelined mode exists, a release takes its generation's fitted efficiency or the next
later one's, and a plan prints the band of its mode and model class and the limit that binds."""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import pytest

from csconform.cli import main as cli_main
from csconform.errors import CapacityError, InputFileError, InvalidInputError
from csconform.perf.calibration.band import (
    MAX_FOLDS,
    MIN_BAND_RUNS,
    GroupedValidation,
    HeldOut,
    band_factor,
    band_limits,
    bands,
    family_class,
    folds,
    inside_band,
    judged_evidence,
    judged_ratios,
    stated_band,
    wafer_caveat,
    widened_wafers,
)
from csconform.perf.calibration.fit import free_figures, release_runs
from csconform.perf.execution.efficiency import Calibration, calibration_record, check_calibration_record, fitted
from csconform.perf.plan import plan
from csconform.perf.releases import (
    REFERENCE_GENERATION,
    batch_is_per_system,
    generation,
    pipelined_supported,
    stand_in,
)

# --- releases ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("release", "expected"), [("1.8.0", "1.8"), ("v2.0.3", "2.0"), ("2.5", "2.5"), (None, REFERENCE_GENERATION)]
)
def test_a_release_is_known_by_its_minor_release(release: str | None, expected: str) -> None:
    assert generation(release) == expected


@pytest.mark.parametrize("release", ["latest", "1.x", "two"])
def test_a_release_that_is_no_number_is_refused_naming_it(release: str) -> None:
    with pytest.raises(InvalidInputError, match=repr(release)):
        generation(release)


def test_a_release_takes_its_own_figure_else_the_next_later_one_else_the_reference() -> None:
    known = ["1.7", "2.0", "2.5"]
    assert stand_in("2.0.3", known) == "2.0"
    assert stand_in("1.9.2", known) == "2.0"  # no 1.9 figure: the next later generation's
    assert stand_in("2.1.1", known) == "2.5"
    assert stand_in("2.6.0", known) is None  # later than every fitted release: the reference
    assert stand_in(None, known) is None


class _Run:
    def __init__(self, release: str | None, mode: str = "weight_streaming") -> None:
        self.release, self.mode = release, mode


def test_a_release_generation_gets_a_figure_only_from_two_runs_or_more() -> None:
    """One run would fix its generation's figure to reproduce it exactly: such a generation is not determined
    and takes a later generation's figure (or the reference's), like a release no run has."""
    data = [_Run("2.0.3"), _Run("2.0.1"), _Run("2.5.0"), _Run("1.8.0", "pipelined"), _Run("1.8.0"), _Run(None)]
    assert release_runs(data) == {"1.8": 1, "2.0": 2, "2.5": 1}  # pipelined and release-less runs not counted
    figures = free_figures(data)
    assert "release_efficiency[2.0]" in figures
    assert not {"release_efficiency[2.5]", "release_efficiency[1.8]"} & set(figures)
    assert "release_efficiency[2.5]" in free_figures([*data, _Run("2.5.1")])


def test_the_calibration_record_says_which_release_generations_the_data_determine() -> None:
    generations = calibration_record()["release_generations"]
    assert generations["2.0"]["weight_streaming_runs"] >= 2 and generations["2.0"]["figure"] == "fitted"
    undetermined = [g for g, entry in generations.items() if entry["weight_streaming_runs"] < 2]
    assert undetermined and all(generations[g]["figure"].startswith("not determined") for g in undetermined)
    assert not {g for g in undetermined} & set(fitted().release_efficiency)


@pytest.mark.parametrize(
    ("release", "per_system", "pipelined"),
    [("1.7.1", True, True), ("1.8.0", True, True), ("1.9.0", False, False), ("2.4", False, False), (None, False, True)],
)
def test_before_1_9_the_batch_is_per_system_and_pipelined_mode_exists(release, per_system, pipelined) -> None:
    assert batch_is_per_system(release) is per_system
    assert pipelined_supported(release) is pipelined


def test_a_release_scales_the_efficiencies_of_weight_streaming_only() -> None:
    cal = Calibration(0.5, 0.25, 1e-3, 1e6, release_efficiency={"2.0": 0.8}, pipelined_efficiency=0.6)
    assert cal.compute_scale("weight_streaming", "2.0.3") == 0.8
    assert cal.compute_scale("weight_streaming", "1.9.2") == 0.8
    assert cal.compute_scale("weight_streaming", "2.5.0") == 1.0
    assert cal.compute_scale("pipelined", "2.0.3") == 0.6
    applied = cal.applied("weight_streaming", "2.0.3")
    assert (applied.matmul_efficiency, applied.attention_efficiency) == (pytest.approx(0.4), pytest.approx(0.2))


# --- plans in a release ------------------------------------------------------------------------------


def test_a_plan_in_a_release_uses_its_fitted_efficiency_and_says_so() -> None:
    cal = fitted()
    assert "2.0" in cal.release_efficiency
    reference = plan("gpt3_xl", systems=2, batch=64)
    released = plan("gpt3_xl", systems=2, batch=64, release="2.0.3")
    assert released.release == "2.0.3" and reference.release is None
    assert released.samples_per_s < reference.samples_per_s
    scale = cal.release_efficiency["2.0"]
    assert any(f"weight streaming at {scale:.3g} of the reference efficiencies, its own" in n for n in released.notes)
    later = plan("gpt3_xl", systems=2, batch=64, release="9.0")
    assert any("no measured run of it or of a later release was fitted" in n for n in later.notes)
    assert later.samples_per_s == pytest.approx(reference.samples_per_s)


def test_pipelined_mode_is_refused_from_1_9_and_chosen_before_it_for_a_model_that_fits() -> None:
    with pytest.raises(InvalidInputError, match=r"release 2\.0\.3 has no pipelined mode"):
        plan("bert_base", mode="pipelined", release="2.0.3")
    assert plan("bert_base", release="1.8.0").mode == "pipelined"
    assert plan("bert_base", release="2.0.3").mode == "weight_streaming"


def test_plan_cli_reads_the_batch_per_system_before_1_9_and_prints_band_and_limit(capsys) -> None:
    assert cli_main(["plan", "--model", "gpt3_xl", "--systems", "2", "--batch", "32", "--release", "1.8.0"]) == 0
    out = capsys.readouterr().out
    assert "--batch 32 is per system" in out and "global batch 64" in out
    stated = stated_band("weight_streaming", "gpt2", "wse2")
    assert f"(x/ {stated['factor']:.3g}: 90 % of the predictions of runs left out" in out
    assert "binds)" in out and "release 1.8.0" in out
    assert cli_main(["plan", "--model", "gpt3_xl", "--systems", "2", "--batch", "32", "--release", "2.0.3"]) == 0
    assert "is per system" not in capsys.readouterr().out


def test_a_plan_the_input_workers_bind_names_them() -> None:
    """BERT-Base at batch 16,384 is capped by one system's input workers (the calibration's input rate)."""
    result = plan("bert_base", mode="weight_streaming", batch=16384)
    assert result.binding_limit == "input"
    assert any(note.startswith("the input binds") for note in result.notes)
    assert plan("gpt3_xl", systems=2, batch=64).binding_limit != "input"


# --- the stated band -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("family", "expected"),
    [
        ("bert", "encoder"),
        ("roberta", "encoder"),
        ("llama", "decoder"),
        # zoo families, by the model class that builds them
        ("bert/qa", "encoder"),
        ("esm2", "encoder"),
        ("dpr", "encoder"),
        ("vision_transformer", "encoder"),
        ("dit", "encoder"),  # every patch attends to every other
        ("gpt3", "decoder"),
        ("gemma2", "decoder"),
        ("fc_mnist", "other"),
        ("resnet", "other"),
        ("mlp", "other"),
        ("described", "other"),  # a list of layers: no family to go by
    ],
)
def test_families_fall_into_classes(family: str, expected: str) -> None:
    assert family_class(family) == expected


def test_the_band_covers_its_share_of_the_held_out_predictions() -> None:
    logs = [0.01, -0.02, 0.05, -0.1, 0.2, 0.3, -0.4, 0.5, 0.6, 1.0]
    # numpy's "higher" quantile of the ten |log| values: the 10th (1.0) for 90 %, the 6th (0.3) for 50 %
    assert band_factor(logs, 0.9) == pytest.approx(2.718281828459045)
    assert band_factor(logs, 0.5) == pytest.approx(1.3498588075760032)
    with pytest.raises(InvalidInputError, match="^no held-out predictions to take a band from$"):
        band_factor([])


def test_up_to_max_folds_groups_are_left_out_one_by_one_and_a_run_without_a_source_is_not_stated() -> None:
    runs = [SimpleNamespace(source=f"s{i}") for i in range(MAX_FOLDS)] + [SimpleNamespace(source="")]
    assert folds(runs[:MAX_FOLDS], "source") == {f"s{i}": [f"s{i}"] for i in range(MAX_FOLDS)}
    eleven = folds(runs, "source")  # one group more than MAX_FOLDS: folds of groups
    assert len(eleven) == MAX_FOLDS and sum(eleven.values(), []).count("not stated") == 1


def test_the_band_is_taken_from_family_source_and_release_and_from_configuration_only_without_them() -> None:
    """What a new user's run differs by (family, source, release) sets the band; the configuration grouping,
    a nearer neighbour, only when no other grouping gave a held-out prediction."""
    held = [
        HeldOut(f"run{i}", grouping, "g", "g", "weight_streaming", "decoder", log_ratio)
        for i, (grouping, log_ratio) in enumerate(
            [("family", 0.1), ("source", -0.1), ("release", 0.1), ("configuration", 2.0)]
        )
    ]
    band = bands(GroupedValidation(tuple(held), {}, {}), [])
    assert band["factor"] == round(math.exp(0.1), 4) and band["groupings_in_band"] == ["family", "release", "source"]
    alone = bands(GroupedValidation((held[-1],), {}, {}), [])
    assert alone["factor"] == round(math.exp(2.0), 4) and alone["groupings_in_band"] == ["configuration"]


def test_the_band_record_of_known_held_out_predictions() -> None:
    """Every figure bands() records, from held-out predictions whose numbers are worked out by hand (coverage
    0.5, numpy's "higher" quantile): 8 decoder predictions (exactly MIN_BAND_RUNS: a band of their own),
    2 encoder ones (every run's band), one of the configuration grouping (kept out of the band), and the
    groups no fit could leave out (a grouping with none held out is not listed)."""
    decoder = [0.01, -0.02, 0.03, -0.04, 0.05, -0.06, 0.07, 0.123456]
    encoder = [0.2345678, -0.3456789]
    held = [HeldOut(f"d{i}", "family", "gpt2", "gpt2", "weight_streaming", "decoder", v) for i, v in enumerate(decoder)]
    held += [HeldOut(f"e{i}", "source", "S", "S", "weight_streaming", "encoder", v) for i, v in enumerate(encoder)]
    held += [HeldOut("c0", "configuration", "c", "c", "weight_streaming", "decoder", 1.5)]
    unfitted = {("family", "llama"): "too few runs", ("source", "X"): "r", ("release", "2.0"): "none"}
    wafers = [SimpleNamespace(wafer="wse2")] * 3 + [SimpleNamespace(wafer="wse3")]
    band = bands(GroupedValidation(tuple(held), {}, unfitted), wafers, coverage=0.5)
    assert band.pop("method").startswith("grouped cross-validation: each model family, source, release")
    # |log|s sorted: decoder 0.01 ... 0.07, 0.123456; the 0.5 "higher" quantile of its 8 is the 5th (0.05),
    # of all 10 banded the 6th (0.06); worst = exp(max |log|); error = exp(mean |log|)
    assert band == {
        "error": 1.1034,  # exp((0.403456 + 0.5802467) / 10)
        "worst": 1.4129,  # exp(0.3456789)
        "groupings_in_band": ["family", "source"],
        "coverage": 0.5,
        "factor": 1.0618,  # exp(0.06)
        "classes": {
            "weight_streaming/decoder": {
                "factor": 1.0513,  # exp(0.05)
                "worst": 1.1314,  # exp(0.123456)
                "held_out_predictions": 8,
                "from": "this class",
            },
            "weight_streaming/encoder": {
                "factor": 1.0618,
                "worst": 1.4129,
                "held_out_predictions": 2,
                "from": "every run (fewer than 8 held-out predictions)",
            },
        },
        "groupings": {
            "family": {
                "error": 1.0517,  # exp(0.403456 / 8)
                "worst": 1.1314,
                "groups": {"gpt2": {"runs": 8, "error": 1.0517, "worst": 1.1314}},
                "not_fitted": {"llama": "too few runs"},
            },
            "source": {
                "error": 1.3366,  # exp(0.5802467 / 2)
                "worst": 1.4129,
                "groups": {"S": {"runs": 2, "error": 1.3366, "worst": 1.4129}},
                "not_fitted": {"X": "r"},
            },
            "configuration": {
                "error": 4.4817,  # exp(1.5)
                "worst": 4.4817,
                "groups": {"c": {"runs": 1, "error": 4.4817, "worst": 4.4817}},
                "not_fitted": {},
            },
        },
        "fitted_runs_by_wafer": {"wse1": 0, "wse2": 3, "wse3": 1},
    }


def test_a_plan_states_the_band_of_its_mode_and_class_from_the_calibration_record() -> None:
    record = calibration_record()["band"]
    streamed = plan("gpt3_xl", systems=2, batch=64)
    entry = record["classes"]["weight_streaming/decoder"]
    assert streamed.band["factor"] == entry["factor"] and streamed.band["class"] == "weight_streaming/decoder"
    assert streamed.band["worst"] == entry["worst"] >= entry["factor"]
    encoder = stated_band("weight_streaming", "bert", "wse2")
    assert (
        encoder["class"] == "weight_streaming/encoder"
        and encoder["factor"] == record["classes"][encoder["class"]]["factor"]
    )
    assert encoder["method"].startswith("grouped cross-validation")
    assert encoder["from"] == f"weight_streaming/encoder: {record['classes']['weight_streaming/encoder']['from']}"
    unmeasured = stated_band("pipelined", "llama", "wse2")  # no pipelined decoder was measured: every run's band
    assert unmeasured["factor"] == record["factor"] and "no measured pipelined/decoder run" in unmeasured["from"]
    assert (streamed.band["slower_by"], streamed.band["widened"]) == (1.0, None)  # 33 fitted CS-2 runs


def test_on_a_wafer_of_few_fitted_runs_and_an_estimated_peak_the_slow_side_widens_by_its_range() -> None:
    """The CS-3 (one fitted run, a dense peak the public facts place between a WSE-2 core's rate and twice
    it): its band's slow side, and only that side, widens by the estimate's range; the CS-1 (no fitted
    run, no estimate range) and a CS-3 of enough fitted runs keep the band as it is."""
    record = calibration_record()
    cs3 = stated_band("weight_streaming", "gpt2", "wse3", record)
    cs2 = stated_band("weight_streaming", "gpt2", "wse2", record)
    assert cs3["factor"] == cs2["factor"] and cs3["slower_by"] == pytest.approx(16 * 1.0417e9 / 8.8e9, rel=1e-3)
    assert "CS-3's dense peak is an estimate" in cs3["widened"]
    assert band_limits(record["band"], "weight_streaming", "gpt2", "wse3") == (
        cs3["factor"],
        pytest.approx(cs3["factor"] * cs3["slower_by"]),
    )
    assert stated_band("weight_streaming", "gpt2", "wse1", record)["slower_by"] == 1.0
    covered = {**record, "band": {**record["band"], "fitted_runs_by_wafer": {"wse3": MIN_BAND_RUNS}}}
    assert stated_band("weight_streaming", "gpt2", "wse3", covered)["slower_by"] == 1.0
    assert widened_wafers(record["band"]) == {"wse3": cs3["slower_by"]}


# --- what the runs kept to judge say, by wafer generation ------------------------------------------------


_IDS = itertools.count()


@dataclasses.dataclass
class _Judged:
    """A run as judged_evidence reads it: its wafer, use, mode, family and a prediction."""

    wafer: str
    use: str
    predicted: float
    measured_samples_per_s: float
    mode: str = "weight_streaming"
    family: str = "gpt2"
    id: str = dataclasses.field(default_factory=lambda: f"run{next(_IDS)}")

    @property
    def model(self) -> SimpleNamespace:
        return SimpleNamespace(family=self.family)

    def predict(self, cal: Calibration) -> float:
        return self.predicted


def test_a_judged_run_the_model_cannot_plan_is_refused_naming_it() -> None:
    class Unplannable(_Judged):
        def predict(self, cal: Calibration) -> float:
            raise CapacityError("one sample's activations do not fit the wse2 wafer")

    with pytest.raises(CapacityError, match="run 'huge', kept to judge: one sample's activations"):
        judged_ratios([_Judged("wse2", "judge", 1.0, 1.0), Unplannable("wse2", "judge", 1.0, 1.0, id="huge")], fitted())


BAND = {
    "factor": 3.0,
    "classes": {"weight_streaming/decoder": {"factor": 1.5}},
    "fitted_runs_by_wafer": {"wse1": 0, "wse2": MIN_BAND_RUNS, "wse3": 1},
}


def test_the_judged_runs_are_summed_up_per_wafer_with_the_band_of_their_class_and_wafer() -> None:
    data = [
        _Judged("wse2", "fit", 1.0, 1.0),
        _Judged("wse2", "judge", 2.0, 1.0),  # x2: outside the decoder band (1.5)
        _Judged("wse2", "judge", 1.0, 1.0),
        _Judged("wse2", "judge", 1.0, 2.5, family="bert"),  # /2.5: inside every run's band (3.0)
        _Judged("wse1", "judge", 1.5, 1.0),  # on the band's edge: inside
        _Judged("wse3", "judge", 2.0, 1.0),  # x2: inside the CS-3's widened slow side (1.5 x 1.89)
        _Judged("wse3", "judge", 1.0, 2.0),  # /2: outside, the fast side is not widened
    ]
    evidence = judged_evidence(data, judged_ratios(data, fitted()), BAND)["wafers"]
    assert evidence["wse2"] == {"judged_runs": 3, "median_ratio": 1.0, "worst": 2.5, "inside_band": 2}
    assert evidence["wse1"]["inside_band"] == 1
    assert evidence["wse3"] == {"judged_runs": 2, "median_ratio": 1.0, "worst": 2.0, "inside_band": 1}


def test_the_judged_runs_are_predicted_with_the_calibration_given_and_summed_up_to_four_digits() -> None:
    class ByLatency(_Judged):
        def predict(self, cal: Calibration) -> float:
            return 1000 * cal.layer_latency_s

    cal = fitted().with_values(layer_latency_s=0.00123456)
    data = [ByLatency("wse2", "judge", 0.0, 1.0), ByLatency("wse2", "judge", 0.0, 1.0)]
    ratios = judged_ratios(data, cal)
    assert list(ratios.values()) == [pytest.approx(1.23456)] * 2
    evidence = judged_evidence(data, ratios, BAND)
    assert evidence["method"].startswith("the runs whose use is 'judge', predicted by this fit")
    assert (evidence["wafers"]["wse2"]["median_ratio"], evidence["wafers"]["wse2"]["worst"]) == (1.2346, 1.2346)


def test_a_band_whose_limits_are_met_exactly_holds_the_run() -> None:
    assert inside_band(1.5, (1.5, 3.0)) and inside_band(1 / 1.5, (1.5, 3.0)) and inside_band(3.0, (1.5, 3.0))
    assert not inside_band(3.01, (1.5, 3.0)) and not inside_band(0.66, (1.5, 3.0))


def _record_with(wafers: dict, fitted_runs_by_wafer: dict | None = None) -> dict:
    record = calibration_record()
    if fitted_runs_by_wafer is not None:
        record["band"]["fitted_runs_by_wafer"] = fitted_runs_by_wafer
    return {**record, "judged": {"method": "test", "wafers": wafers}}


ENTRY = {"judged_runs": 6, "median_ratio": 1.88, "worst": 2.28, "inside_band": 3}


def test_a_wafer_the_calibration_barely_fits_gets_the_judged_runs_quoted() -> None:
    caveat = wafer_caveat("wse3", _record_with({"wse3": ENTRY}, {"wse2": 33, "wse3": 1}))
    assert caveat == (
        "the calibration fits 1 run(s) on a CS-3, so the band is that of the other systems: the 6 public CS-3 runs "
        "kept to judge the model were predicted at a median of 1.88 times as fast as measured (worst x2.28), "
        "3 of them inside their band"
    )


def test_a_wafer_the_calibration_barely_fits_and_no_run_judges_says_so() -> None:
    caveat = wafer_caveat("wse1", _record_with({}, {"wse1": 0, "wse2": 33}))
    assert caveat == (
        "the calibration fits 0 run(s) on a CS-1, so the band is that of the other systems; "
        "no public CS-1 run was kept to judge it"
    )


def test_a_wafer_the_record_does_not_count_has_no_fitted_run() -> None:
    caveat = wafer_caveat("wse1", _record_with({}, {"wse2": 33}))
    assert caveat is not None and caveat.startswith("the calibration fits 0 run(s) on a CS-1")
    assert stated_band("weight_streaming", "gpt2", "wse3", _record_with({}, {"wse2": 33}))["slower_by"] > 1


def test_a_record_without_judged_runs_quotes_none_and_an_even_median_reads_as_fast() -> None:
    record = _record_with({}, {"wse3": 1})
    del record["judged"]
    assert wafer_caveat("wse3", record) == (
        "the calibration fits 1 run(s) on a CS-3, so the band is that of the other systems; "
        "no public CS-3 run was kept to judge it"
    )
    even = wafer_caveat("wse3", _record_with({"wse3": {**ENTRY, "median_ratio": 1.0}}, {"wse3": 1}))
    assert even is not None and "a median of 1.00 times as fast as measured" in even


def test_a_wafer_of_enough_fitted_runs_gets_no_caveat() -> None:
    assert wafer_caveat("wse2", _record_with({"wse2": ENTRY}, {"wse2": MIN_BAND_RUNS})) is None
    slow = wafer_caveat("wse3", _record_with({"wse3": {**ENTRY, "median_ratio": 0.5}}, {"wse3": 1}))
    assert slow is not None and "2.00 times slower than measured" in slow


def test_a_plan_on_a_wafer_the_shipped_calibration_barely_fits_quotes_its_judged_runs() -> None:
    fitted_by_wafer = calibration_record()["band"]["fitted_runs_by_wafer"]
    assert fitted_by_wafer["wse3"] < MIN_BAND_RUNS <= fitted_by_wafer["wse2"]
    on_cs3 = plan("gpt3_xl", wafer="wse3", batch=64)
    assert [note for note in on_cs3.notes if "kept to judge" in note] == [wafer_caveat("wse3")]
    assert not any("kept to judge" in note for note in plan("gpt3_xl", wafer="wse2", batch=64).notes)
    given = fitted().with_values(layer_latency_s=0.001)  # figures the caller gives: not the record's runs
    assert not any("kept to judge" in note for note in plan("gpt3_xl", wafer="wse3", batch=64, calibration=given).notes)


def test_a_record_whose_judged_entry_is_not_counts_and_ratios_is_refused() -> None:
    bad_entries = (
        {**ENTRY, "worst": 0},
        {**ENTRY, "judged_runs": True},
        {**ENTRY, "inside_band": -1},
        {**ENTRY, "median_ratio": "x"},
        "wse3",
    )
    for bad in bad_entries:
        with pytest.raises(InputFileError, match="'judged'"):
            check_calibration_record(_record_with({"wse3": bad}), "calibration.json")


def test_a_record_without_fitted_runs_by_wafer_is_refused() -> None:
    for bad in (None, {"wse3": -1}, {"wse3": 1.5}, {"wse3": True}):
        record = calibration_record()
        record["band"]["fitted_runs_by_wafer"] = bad
        with pytest.raises(InputFileError, match="fitted_runs_by_wafer"):
            check_calibration_record(record, "calibration.json")


def test_plan_cli_on_a_cs3_prints_the_widened_slow_end_and_why(capsys) -> None:
    assert cli_main(["plan", "--model", "gpt3_xl", "--wafer", "wse3", "--batch", "64"]) == 0
    (line,) = [text for text in capsys.readouterr().out.splitlines() if text.startswith("  band: ")]
    result = plan("gpt3_xl", wafer="wse3", batch=64)
    factor, slower_by = result.band["factor"], result.band["slower_by"]
    assert line.startswith(
        f"  band: {result.samples_per_s / (factor * slower_by):.4g} to {result.samples_per_s * factor:.4g} samples/s "
    )
    assert line.endswith(
        f"; its slow side x{slower_by:.3g} wider: the CS-3's dense peak is an estimate the public facts allow to be "
        f"{slower_by:.3g} times too high)"
    )
