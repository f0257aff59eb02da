"""Placement: one rectangle of cores per kernel on the wafer's fabric, sized and placed for throughput.

:mod:`~csconform.perf.placement.columns` places a model's kernels in columns (the pipelined
execution model's placer), with its continuous bound, and :mod:`~csconform.perf.placement.legalise`
rounds a column layout to whole cores; :mod:`~csconform.perf.placement.ispd` solves Cerebras' ISPD
2020 contest instances on :mod:`~csconform.perf.placement.shelves`.  The independent
:mod:`~csconform.perf.placement.checker` judges every placement of both, and
:mod:`~csconform.perf.placement.fabric_map` draws them.
"""
