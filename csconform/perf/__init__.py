"""The performance model: how fast a model trains on a wafer or a cluster, and where every figure comes from.

:mod:`~csconform.perf.plan` puts the rooms together: it reads a model (:mod:`~csconform.perf.models`:
layers and their costs, fused into kernels, read from a Hugging Face config, a Model Zoo section or
the bundled zoo), takes a wafer from :mod:`~csconform.perf.hardware`, groups the kernels once and
runs them in an execution model (:mod:`~csconform.perf.execution`: pipelined, on rectangles that
:mod:`~csconform.perf.placement` sizes and places, or weight streaming), at the figures
:mod:`~csconform.perf.calibration` fits on measured runs.  :mod:`~csconform.perf.sweep` plans a
design space, :mod:`~csconform.perf.figures` draws a plan; the ``cli_*`` modules are the commands.
The data the package ships sits beside the code: ``configs/`` (the zoo), ``instances/`` (the ISPD
2020 contest), ``measured/`` (the calibration set).
"""
