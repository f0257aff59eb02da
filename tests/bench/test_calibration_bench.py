"""Grouped cross-validation of the calibrated performance model (about a minute: too slow for the
default test run). Each fitted run is predicted by the fits that left out its model family, its source,
its release and its configuration; the band plans state must cover what the record says it covers."""

from __future__ import annotations

import numpy as np

from csconform.perf.calibration.band import BAND_GROUPINGS, bands, grouped_cross_validation
from csconform.perf.calibration.fit import fitted_runs
from csconform.perf.calibration.measured_runs import measured_csv, read_measured, runs
from csconform.perf.execution.efficiency import calibration_record


def test_grouped_cross_validation_gives_the_stated_band(benchmark):
    data = fitted_runs(runs(read_measured(measured_csv())))
    validation = benchmark.pedantic(grouped_cross_validation, args=(data,), rounds=1, iterations=1)
    band = bands(validation, data)
    banded = np.abs([h.log_ratio for h in validation.held_out if h.grouping in BAND_GROUPINGS])
    assert np.mean(banded <= np.log(band["factor"]) + 1e-12) >= band["coverage"]
    stored = calibration_record()["band"]  # what every plan states: this run reproduces it
    assert (band["error"], band["classes"]) == (stored["error"], stored["classes"])
