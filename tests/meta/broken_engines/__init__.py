"""Deliberately broken engines: each one breaks exactly one documented rule of the reference engine.

Every module here offers the full engine interface by delegating to ``csconform.engine`` (a
module-level ``__getattr__``), after replacing one function or method of the reference engine
with a version that skips one check. The replacement happens when the module is imported, so a
broken engine must only ever be imported in its own process: tests/meta/test_broken_engines.py
runs the conformance suite with ``--engine tests.meta.broken_engines.<name>`` in a subprocess and
checks that the suite fails on exactly the rule that engine breaks.
"""
