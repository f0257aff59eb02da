"""Hypothesis examples that depend on the test alone, not on which modules happen to be loaded.

Besides the constants it ships with, Hypothesis' default provider returns, now and then (about one
draw in twenty), a constant it read from the source of a *local* module in ``sys.modules``: any
module outside site-packages and the standard library, which includes csconform itself under an
editable install. Which modules are loaded when a test draws depends on the test selection, the
import order and, under pytest-xdist, on which worker picked the test. So a derandomized run drew
other examples for the same test when it ran alone, beside the performance model, or with torch
importable, and a bug caught in one selection could slip through in another.

The seam is the registry of providers, ``AVAILABLE_PROVIDERS`` (described in Hypothesis'
"alternative backends" documentation): the default backend ``"hypothesis"`` is looked up there by
name for every test. We register under that name a subclass of Hypothesis' own provider whose pool
of module constants is always empty. Generation, the data tree, shrinking and the shipped constants
stay Hypothesis' own; only the pool that followed ``sys.modules`` is gone. (Naming a backend of our
own instead would not do: Hypothesis runs every backend other than ``"hypothesis"`` without its data
tree, so it would generate differently in other ways.)
"""

from __future__ import annotations

from functools import cached_property

from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants

from csconform.errors import CsConformError

__all__ = ["ModuleIndependentProvider", "draw_independently_of_loaded_modules"]


class ModuleIndependentProvider(providers.HypothesisProvider):
    """Hypothesis' default provider without the constants collected from loaded local modules."""

    @cached_property
    def _local_constants(self) -> Constants:
        return Constants()


def draw_independently_of_loaded_modules() -> None:
    """Make the default backend draw the same examples whatever modules are loaded (process-wide)."""
    if not hasattr(providers, "_get_local_constants"):
        return  # a Hypothesis from before module constants: examples already depend on the test alone
    if not isinstance(vars(providers.HypothesisProvider).get("_local_constants"), cached_property):
        raise CsConformError(
            "this Hypothesis version collects constants from loaded modules in a way csconform does not "
            "know; update csconform.testing.reproducible_examples, or examples will depend on the test selection"
        )
    providers.AVAILABLE_PROVIDERS["hypothesis"] = ModuleIndependentProvider
    # allowed constants are cached per draw kind; entries made before this point may hold module constants
    providers.CONSTANTS_CACHE.cache.clear()
