"""Cerebras' ISPD 2020 kernel-placement contest: its instances, cost model, bounds and our solver.

:mod:`~csconform.perf.placement.ispd.instance` parses a ``.kgraph`` file;
:mod:`~csconform.perf.placement.ispd.cost` is the README's cost model and the shapes worth trying;
:mod:`~csconform.perf.placement.ispd.bounds` bounds the best possible solution;
:mod:`~csconform.perf.placement.ispd.solver` finds one (through
:mod:`~csconform.perf.placement.ispd.layout` and :mod:`~csconform.perf.placement.ispd.time_limit`);
:mod:`~csconform.perf.placement.ispd.solution` holds it and writes its JSON.  The independent
checker (:mod:`csconform.perf.placement.checker`) recomputes every figure of a solution.
"""
