"""The process one implementation runs in during ``csconform diff``.

``python -m csconform.testing.differential.child FD MODULE`` imports MODULE and answers requests on
the pipe end FD: ``start`` (reset it to its defaults on a target, in a fresh namespace) and ``run``
(one statement, then the state of every live interface object). Each answer is plain data
(compare.comparable), so nothing an implementation returns can break the comparison or reach the
other implementation, and nothing it does to its modules (patching the engine in place, exiting,
hanging) can reach the other one or the harness: the parent only waits, with a time limit.
"""

from __future__ import annotations

import gc
import math
import sys
import warnings
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from csconform.errors import CsConformError
from csconform.interface.load import import_implementation, module_attribute
from csconform.interface.validate import checked_declaration
from csconform.testing.differential.compare import comparable
from csconform.testing.differential.observables import observe_state
from csconform.testing.differential.outcome import Outcome, execute


def implementation_version(module: ModuleType) -> str:
    """The release the report names for an implementation: ``VERSION`` or an adapter's ``PACKAGE``,
    else the module's ``__version__``; csconform's own modules carry csconform's version. (Which triage
    applies is decided by the installed distribution the triage names: csconform/triage.py.)"""
    for attribute in ("VERSION", "PACKAGE"):
        value = module_attribute(module, attribute)
        if isinstance(value, str) and value.strip():
            return value.strip()
    if module.__name__.split(".")[0] == "csconform":
        from csconform import __version__

        return f"csconform {__version__}"
    version = module_attribute(module, "__version__")
    return f"{module.__name__} {version}" if isinstance(version, str) else f"{module.__name__} (unversioned)"


def _load(name: str) -> tuple[ModuleType | None, tuple[Any, ...]]:
    """The module and the answer that describes it, or None and the refusal."""
    try:
        module = import_implementation(name)
        declaration = checked_declaration(module, name)  # imports every submodule it declares, too
    except CsConformError as error:
        return None, ("refused", type(error).__name__, str(error))
    folders = module_attribute(module, "__path__")
    folder = str(next(iter(folders))) if folders else None
    return module, ("loaded", declaration, implementation_version(module), folder)


def _start(module: ModuleType, target: str, workdir: Path) -> tuple[Outcome, dict[str, Any]]:
    """Reset the implementation on ``target``: the outcome, and the namespace a program runs in."""
    gc.collect()  # the previous program's garbage, then freeze what survives: an implementation that
    gc.freeze()  # collects garbage itself (the cstorch adapter does) then scans only this program's objects
    namespace = {"impl": module, "np": np, "math": math, "workdir": workdir}
    outcome, _ = execute("impl.reset()", namespace)
    if outcome.status == "returned":
        outcome, _ = execute(f"impl.set_target({target!r})", namespace)
    return outcome, namespace


def _run(
    namespace: dict[str, Any],
    request: tuple[Any, ...],
) -> tuple[Outcome, dict[str, dict[str, Any]]]:
    """One statement: its outcome (the value as plain data) and the state of the live objects."""
    _, statement, kinds, compare_result = request
    outcome, value = execute(statement.source, namespace)
    if outcome.status == "returned" and compare_result:
        outcome = Outcome("returned", comparable(value, namespace["workdir"]), shown=outcome.shown)
    live = statement.kinds_after(kinds, outcome.status == "returned")
    return outcome, observe_state(namespace, live, namespace["workdir"])


def serve(connection: Connection, name: str) -> None:
    """Load ``name`` and answer requests until the parent closes the pipe."""
    warnings.simplefilter("ignore")  # an implementation's warnings are not observations
    module, answer = _load(name)
    connection.send(answer)
    if module is None:
        return
    namespace: dict[str, Any] = {}
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        if request[0] == "start":
            outcome, namespace = _start(module, request[1], Path(request[2]))
            connection.send(outcome)
        else:
            reply = _run(namespace, request)
            try:
                connection.send(reply)
            except Exception as error:  # noqa: BLE001 - comparable data always pickles; say so if it did not
                connection.send((Outcome("crashed", error=type(error).__name__, message="answer not sent"), {}))


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])), sys.argv[2])
