"""Capability ``graph`` (compiling): kernel mapping, artifacts and systems, none of which a CPU run has.

cerebras.pytorch maps a graph to kernels, places it and programs a system only through its CS
backend: ``cstorch.backend("CSX", compile_only=..., validate_only=...)`` talks to a Cerebras
cluster (backend/ltc_backend.py). The CPU backend compiles nothing, so there is no validation report,
no artifact bound to a system and no system to program: every name here reports ``Unsupported``.
"""

from __future__ import annotations

from typing import Any, NoReturn

from csconform.errors import Unsupported

NO_COMPILER = (
    "cerebras.pytorch compiles (validate_only, compile_only, kernel mapping) and programs systems only through "
    "its CSX backend, which needs a Cerebras cluster (backend/ltc_backend.py); its CPU backend compiles nothing"
)


class System:
    """A CS system: there is none to program from the CPU backend."""

    system_id: str
    program: Any
    programs_loaded: int

    def __init__(self, *_arguments: Any, **_options: Any) -> None:
        raise Unsupported(NO_COMPILER)

    def load(self, artifact: Any) -> NoReturn:
        raise Unsupported(NO_COMPILER)


def compile_graph(*_arguments: Any, **_options: Any) -> NoReturn:
    """Whatever graph and options it is given: there is no compiler to run."""
    raise Unsupported(NO_COMPILER)
