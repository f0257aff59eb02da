"""Grouped cross-validation and the error band a plan states: how far off the model is on what it never saw.

Leaving one run out would predict each run from a fit on all the others, which share its source, its
release and its model family: it measures interpolation, and costs one fit per run. Here whole groups
are left out instead (:data:`GROUPINGS`): every run of one model family, of one source, of one release
generation, of one configuration is predicted by a fit on the runs outside that group, so a run is
predicted as a new family, a new site or a new release would be. The fits never see the group they
predict, and there is one per group (at most :data:`MAX_FOLDS` per grouping), whatever the number of
runs (tests spy on them).

The band a plan states is :data:`COVERAGE` of the held-out predictions of :data:`BAND_GROUPINGS`
(family, source, release: what a new user's run differs by; the configuration grouping only when
those give none): the factor ``b`` such that that share of ``|log(predicted / measured)|`` lies within
``log b``; one band per execution mode and family class (:func:`family_class`) that has at least
:data:`MIN_BAND_RUNS` held-out predictions, else the band of every run.

The band comes from fitted runs only, so it cannot measure a wafer generation the calibration barely
covers (fewer than :data:`MIN_BAND_RUNS` fitted runs on it). Where that wafer's preset rests on an
estimated peak, the band's slow side widens by the range the public facts leave that estimate
(:attr:`~csconform.perf.hardware.Wafer.peak_estimate_range`): a plan may run that many times slower
than the band says, never faster. The runs kept to judge (never fitted) measure such a wafer:
:func:`judged_evidence` records, per wafer generation, how far they were from their predictions, and a
plan on a barely covered wafer quotes it (:func:`wafer_caveat`); nothing of theirs widens the band.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from csconform.errors import CsConformError, InvalidInputError
from csconform.perf.calibration.fit import START, Predictable, error, fit, worst
from csconform.perf.execution.efficiency import Calibration, calibration_record
from csconform.perf.hardware import WAFERS, get_wafer
from csconform.perf.models.zoo_section import ZOO_FAMILIES
from csconform.perf.releases import generation

COVERAGE = 0.9
"""The share of held-out predictions a band covers."""
MIN_BAND_RUNS = 8
"""Fewest held-out predictions of a mode and family class for a band of its own."""
ENCODER_FAMILIES = ("bert", "roberta")
ENCODER_ZOO_CLASSES = ("bert", "dpr", "vit", "dit")


def family_class(family: str) -> str:
    """``encoder`` (BERT-like: every token attends to every other, a masked-LM or classifier head; a
    Model Zoo family by the class that builds it, a vision transformer's patches included),
    ``decoder`` (GPT-like language models) or ``other`` (convolutional and fully connected models)."""
    zoo_class = ZOO_FAMILIES.get(family)
    if family in ENCODER_FAMILIES or zoo_class in ENCODER_ZOO_CLASSES:
        return "encoder"
    if family in ("resnet", "mlp", "described") or zoo_class == "fc_mnist":
        return "other"
    return "decoder"


def _family(run: Any) -> str:
    return str(run.model.family)


def _source(run: Any) -> str:
    return str(run.source) or "not stated"


def _release(run: Any) -> str:
    return generation(run.release)


def _configuration(run: Any) -> str:
    return f"{run.model.name}, sequence {run.model.seq_len}, {run.systems} x {run.wafer}, {run.mode}"


GROUPINGS: dict[str, Callable[[Any], str]] = {
    "family": _family,
    "source": _source,
    "release": _release,
    "configuration": _configuration,
}
"""Each grouping names the group of a run: its model family, its source, its release generation, its
configuration (model, sequence, cluster and mode: every batch of it), so that a table of one family,
source and release is cross-validated too."""
BAND_GROUPINGS = ("family", "source", "release")
"""The groupings the band is taken from: what a run a user plans differs by from the calibration set."""
MAX_FOLDS = 10
"""Most fits per grouping: a grouping of more groups leaves them out in this many folds (group i in
fold i mod 10), each fold whole groups, so a table of any length costs at most 40 fits and a fit."""


def folds(data: Sequence[Any], grouping: str) -> dict[str, list[str]]:
    """The folds of a grouping: a label -> the groups it leaves out together (one group per fold when
    there are at most :data:`MAX_FOLDS`)."""
    groups = sorted({GROUPINGS[grouping](run) for run in data})
    if len(groups) <= MAX_FOLDS:
        return {group: [group] for group in groups}
    return {f"fold {i + 1} of {MAX_FOLDS}": groups[i::MAX_FOLDS] for i in range(MAX_FOLDS)}


@dataclass(frozen=True)
class HeldOut:
    """One run predicted by a fit that left out its group: ``log_ratio`` is log(predicted / measured)."""

    run_id: str
    grouping: str
    group: str
    fold: str  # the fold whose fit predicted it (the group itself when a grouping has few groups)
    mode: str
    family_class: str
    log_ratio: float


@dataclass(frozen=True)
class GroupedValidation:
    """Every run predicted once per grouping, by the fit without its group, and those fits."""

    held_out: tuple[HeldOut, ...]
    fits: dict[tuple[str, str], Calibration]  # (grouping, fold) -> the fit that left the fold out
    unfitted: dict[tuple[str, str], str]  # (grouping, fold) -> why no fit could leave it out

    def log_ratios(self, grouping: str) -> np.ndarray:
        return np.array([h.log_ratio for h in self.held_out if h.grouping == grouping])


def grouped_cross_validation(
    data: Sequence[Predictable],
    start: Calibration = START,
    progress: Callable[[int, int], None] | None = None,
) -> GroupedValidation:
    """Predict every run of each fold of each grouping (:func:`folds`) from a fit on the runs outside it.

    A fold whose outside runs are too few for a fit of the figures they inform is recorded in
    ``unfitted`` with the reason, and its runs get no held-out prediction from that grouping."""
    held, fits, unfitted = [], {}, {}
    work = [(name, label, groups) for name in GROUPINGS for label, groups in folds(data, name).items()]
    for done, (name, label, groups) in enumerate(work, 1):
        key = GROUPINGS[name]
        inside = [run for run in data if key(run) in groups]
        outside = [run for run in data if key(run) not in groups]
        try:
            calibration = fit(outside, start).calibration
        except InvalidInputError as exc:
            unfitted[(name, label)] = str(exc)
        else:
            fits[(name, label)] = calibration
            for run in inside:
                ratio = run.predict(calibration) / run.measured_samples_per_s
                if not (0 < ratio < math.inf):
                    raise InvalidInputError(f"run {run.id}: the fit without its {name} predicts no finite throughput")
                held.append(
                    HeldOut(run.id, name, key(run), label, run.mode, family_class(_family(run)), math.log(ratio))
                )
        if progress:
            progress(done, len(work))
    if not held:
        raise InvalidInputError(
            "no group of these runs can be left out of a fit: every fit of the rest has too few runs "
            f"({next(iter(unfitted.values()), 'no runs')})"
        )
    return GroupedValidation(tuple(held), fits, unfitted)


def band_factor(log_ratios: Sequence[float] | np.ndarray, coverage: float = COVERAGE) -> float:
    """The factor ``b`` such that ``coverage`` of the predictions lie within [measured / b, measured x b]."""
    values = np.abs(np.asarray(log_ratios, dtype=float))
    if values.size == 0:
        raise InvalidInputError("no held-out predictions to take a band from")
    return float(math.exp(np.quantile(values, coverage, method="higher")))


def band_key(mode: str, family: str) -> str:
    """The key of a band in the calibration record: ``weight_streaming/decoder``."""
    return f"{mode}/{family_class(family)}"


def bands(validation: GroupedValidation, data: Sequence[Any], coverage: float = COVERAGE) -> dict[str, Any]:
    """The bands of the calibration record: every run's, and one per mode and family class with enough
    held-out predictions (those with fewer use every run's, and say so); and how many of the fitted runs
    ``data`` ran on each wafer preset (what decides whether a plan on it widens the band)."""
    banded = [h for h in validation.held_out if h.grouping in BAND_GROUPINGS] or list(validation.held_out)
    everything = band_factor([h.log_ratio for h in banded], coverage)
    classes: dict[str, Any] = {}
    for key in sorted({f"{h.mode}/{h.family_class}" for h in banded}):
        logs = [h.log_ratio for h in banded if f"{h.mode}/{h.family_class}" == key]
        own = len(logs) >= MIN_BAND_RUNS
        classes[key] = {
            "factor": round(band_factor(logs, coverage) if own else everything, 4),
            "worst": round(worst(logs), 4),
            "held_out_predictions": len(logs),
            "from": "this class" if own else f"every run (fewer than {MIN_BAND_RUNS} held-out predictions)",
        }
    groupings = {
        name: {
            "error": round(error(validation.log_ratios(name)), 4),
            "worst": round(worst(validation.log_ratios(name)), 4),
            "groups": {
                group: {
                    "runs": len(logs),
                    "error": round(error(logs), 4),
                    "worst": round(worst(logs), 4),
                }
                for group in sorted({h.group for h in validation.held_out if h.grouping == name})
                if (logs := [h.log_ratio for h in validation.held_out if (h.grouping, h.group) == (name, group)])
            },
            "not_fitted": {group: reason for (g, group), reason in validation.unfitted.items() if g == name},
        }
        for name in GROUPINGS
        if validation.log_ratios(name).size
    }
    return {
        "error": round(error([h.log_ratio for h in banded]), 4),
        "worst": round(worst([h.log_ratio for h in banded]), 4),
        "groupings_in_band": sorted({h.grouping for h in banded}),
        "coverage": coverage,
        "method": "grouped cross-validation: each model family, source, release generation and configuration left "
        "out in turn, its runs predicted by a fit on the rest; the band covers this share of the held-out predictions",
        "factor": round(everything, 4),
        "classes": classes,
        "groupings": groupings,
        "fitted_runs_by_wafer": {name: sum(1 for run in data if run.wafer == name) for name in WAFERS},
    }


def judged_ratios(data: Sequence[Any], cal: Calibration) -> dict[str, float]:
    """Each run kept to judge (``use`` is ``judge``) by id: predicted / measured samples/s under ``cal``.
    A run the model cannot plan is refused naming it (before any cross-validation is spent)."""
    ratios = {}
    for run in data:
        if run.use != "judge":
            continue
        try:
            ratios[run.id] = run.predict(cal) / run.measured_samples_per_s
        except CsConformError as exc:
            raise type(exc)(f"run {run.id!r}, kept to judge: {exc}") from None
    return ratios


def judged_evidence(data: Sequence[Any], ratios: dict[str, float], band: dict[str, Any]) -> dict[str, Any]:
    """Per wafer generation of the runs kept to judge (``ratios``: :func:`judged_ratios`): how many there
    are, their median and worst ratio and how many lie inside the band (``band``: :func:`bands`) a plan
    states for them. Nothing here feeds a prediction or the band."""
    judged = [run for run in data if run.id in ratios]
    wafers: dict[str, Any] = {}
    for wafer in sorted({str(run.wafer) for run in judged}):
        on_wafer = [run for run in judged if run.wafer == wafer]
        logs = np.array([math.log(ratios[run.id]) for run in on_wafer])
        inside = [inside_band(ratios[run.id], band_limits(band, run.mode, _family(run), wafer)) for run in on_wafer]
        wafers[wafer] = {
            "judged_runs": len(on_wafer),
            "median_ratio": round(math.exp(float(np.median(logs))), 4),
            "worst": round(worst(logs), 4),
            "inside_band": sum(inside),
        }
    return {
        "method": "the runs whose use is 'judge', predicted by this fit (which never saw them), by wafer generation; "
        "ratio = predicted / measured samples/s",
        "wafers": wafers,
    }


def band_limits(band: dict[str, Any], mode: str, family: str, wafer: str) -> tuple[float, float]:
    """How many times faster and slower than predicted a run of this mode, family and wafer may run,
    by the record's ``band``: the class's factor both ways, the slow side times the wafer's
    :func:`slower_by`."""
    factor = float(_class_band(band, mode, family)["factor"])
    return factor, factor * slower_by(band, wafer)


def _class_band(band: dict[str, Any], mode: str, family: str) -> dict[str, Any]:
    """The entry of the record's ``band`` a mode and model family's class takes its factor and worst from:
    its class's, or every run's (``band`` itself) where there is no band of that class."""
    entry = band["classes"].get(band_key(mode, family))
    return entry if isinstance(entry, dict) else band


def inside_band(ratio: float, limits: tuple[float, float]) -> bool:
    """Whether a run measured at ``predicted / ratio`` lies inside ``limits`` (:func:`band_limits`)."""
    faster, slower = limits
    return 1 / faster <= ratio <= slower


def fits_too_few_runs(band: dict[str, Any], wafer: str) -> bool:
    """Whether the calibration fits fewer than :data:`MIN_BAND_RUNS` runs on ``wafer``: its band is then
    the other wafers' (one test of this, for the widening and the plan's caveat alike)."""
    return band["fitted_runs_by_wafer"].get(wafer, 0) < MIN_BAND_RUNS


def slower_by(band: dict[str, Any], wafer: str) -> float:
    """The band's slow side on ``wafer``: its preset's peak estimate range where the calibration fits
    too few runs on it (:func:`fits_too_few_runs`), else 1."""
    return get_wafer(wafer).peak_estimate_range if fits_too_few_runs(band, wafer) else 1.0


def widened_wafers(band: dict[str, Any]) -> dict[str, float]:
    """The wafer presets whose band a plan widens (:func:`slower_by` above 1), with the widening."""
    return {name: widening for name in WAFERS if (widening := slower_by(band, name)) > 1}


def wafer_caveat(wafer: str, record: dict[str, Any] | None = None) -> str | None:
    """A plan's note on a wafer generation the calibration fits fewer than :data:`MIN_BAND_RUNS` runs of
    (None on any other): the band is the other wafers', and what the runs kept to judge on it say."""
    stored = record if record is not None else calibration_record()
    if not fits_too_few_runs(stored["band"], wafer):
        return None
    system = get_wafer(wafer).system
    fitted_runs = stored["band"]["fitted_runs_by_wafer"].get(wafer, 0)
    note = f"the calibration fits {fitted_runs} run(s) on a {system}, so the band is that of the other systems"
    entry = stored.get("judged", {"wafers": {}})["wafers"].get(wafer)  # a record may have no judged runs
    if not isinstance(entry, dict):
        return note + f"; no public {system} run was kept to judge it"
    median = entry["median_ratio"]
    pace = f"{median:.2f} times as fast as measured" if median >= 1 else f"{1 / median:.2f} times slower than measured"
    return (
        f"{note}: the {entry['judged_runs']} public {system} runs kept to judge the model were predicted at a "
        f"median of {pace} (worst x{entry['worst']:.2f}), {entry['inside_band']} of them inside their band"
    )


def stated_band(mode: str, family: str, wafer: str, record: dict[str, Any] | None = None) -> dict[str, Any]:
    """The band a plan of this mode, model family and wafer states, from the calibration record (the
    shipped one by default): its factor, the worst held-out prediction, the share of held-out predictions
    it covers, what it was taken from, and ``slower_by``, the widening of its slow side on this wafer
    (:func:`slower_by`, with ``widened`` saying why; 1 and None where it is not widened)."""
    stored = (record if record is not None else calibration_record())["band"]
    key, entry = band_key(mode, family), _class_band(stored, mode, family)
    taken_from = f"every run (no measured {key} run)" if entry is stored else f"{key}: {entry['from']}"
    widening = slower_by(stored, wafer)
    system = get_wafer(wafer).system
    widened = (
        f"the {system}'s dense peak is an estimate the public facts allow to be {widening:.3g} times too high"
        if widening > 1
        else None
    )
    return {
        "factor": float(entry["factor"]),
        "worst": float(entry["worst"]),
        "coverage": float(stored["coverage"]),
        "class": key,
        "from": taken_from,
        "slower_by": widening,
        "widened": widened,
        "method": "grouped cross-validation (model family, source and release left out in turn)",
    }
