"""A pytest plugin for the meta-tests: import every csconform module and torch before any test runs.

It stands for a run in which everything that could be loaded is loaded (the whole suite on one
worker, with torch installed), the opposite of a single module run alone.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

import csconform


def pytest_configure() -> None:
    has_cstorch = importlib.util.find_spec("cerebras") is not None
    for module in pkgutil.walk_packages(csconform.__path__, "csconform.", onerror=lambda _name: None):
        if module.name.startswith("csconform.adapters.cstorch") and not has_cstorch:
            continue  # the adapter of a package this environment does not have
        importlib.import_module(module.name)
    if importlib.util.find_spec("torch") is not None:
        importlib.import_module("torch")
