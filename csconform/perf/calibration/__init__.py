"""Calibration: the four figures of the execution models fitted on measured training runs.

:mod:`~csconform.perf.calibration.measured_runs` reads a measured-runs table and turns each row
into a :class:`~csconform.perf.calibration.measured_runs.Run`; :mod:`~csconform.perf.calibration.fit`
fits the figures on them and cross-validates the fit. ``calibration.json`` here is the fit of the
shipped calibration set (``csconform/perf/measured/``), the figures every plan runs at.
"""
