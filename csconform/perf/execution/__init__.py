"""The execution models: how a model's kernels run on a wafer, and how fast.

:mod:`~csconform.perf.execution.pipelined` places every kernel on its own rectangle of one wafer
(a layer pipeline); :mod:`~csconform.perf.execution.streaming` brings one kernel at a time onto the
whole wafer while the weights stream in from MemoryX, on one system or a cluster. Both run at the
four calibrated figures of :mod:`~csconform.perf.execution.efficiency`. Each takes a model's layers,
or (``*_from_kernels``) its kernels already grouped, as a plan hands them on.
"""
