"""The lockstep differential fuzzer: two implementations, the same call sequences, every difference a verdict.

``csconform diff --against MODULE`` (:mod:`csconform.commands.diff`) drives the reference engine (A) and another
implementation (B) through the same random programs of interface calls, area by area
(:mod:`~csconform.testing.differential.areas`), compares every observable after every call
(lockstep.py, observables.py, compare.py), groups the differences into classes by a stable signature
(signature.py), shrinks each class to a minimal repro a person can paste (explore.py, shrink.py,
program.py), judges each class against B's triage for its release (csconform/triage.py, verdicts.py) and
writes ``reports/differential_<B>.{json,md}`` (report.py). campaign.py spreads the work over seeds,
local processes or a Dask cluster.
"""
