"""Scripts written for the vendor's ``cerebras.pytorch`` (run in the child process, where installed).

When the script imports ``cerebras.pytorch``, the package is prepared before the script sees it:

* ``cstorch.trace(step_fn)`` still returns the vendor's traced step, but of ``step_fn`` compiled by
  TorchDynamo with the recording backend (:mod:`.capture`), and each call is one iteration;
* TorchDynamo does not trace into the package (its hooks and optimizers are the vendor's, run as
  they are between the user's graphs);
* ``cerebras.pytorch.amp.GradScaler``'s calls are recorded like torch's (:mod:`.calls`);
* the CS backend's duties that its GradScaler and conditional updates need around each step (the
  amp handle, entering and leaving each optimizer's update manager) are done by the adapter's
  :mod:`csconform.adapters.cstorch.backend`, as for the conformance suite: the vendor's CPU backend
  does not do them, and without them a step with a GradScaler stops on CPU.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from csconform.usercode.runtime.calls import AmpObserver
from csconform.usercode.runtime.capture import (
    GraphRecorder,
    Iterations,
    compile_for_observation,
    replace,
    skip_in_capture,
)

PACKAGE = "cerebras.pytorch"


class _PatchAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``name`` with the usual finders, then calls ``patch(module)``."""

    def __init__(self, name: str, patch: Callable[[ModuleType], None]) -> None:
        self.name, self.patch = name, patch
        self._loader: importlib.abc.Loader | None = None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                self._loader, spec.loader = spec.loader, self
                return spec
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        assert self._loader is not None
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        assert self._loader is not None
        self._loader.exec_module(module)
        sys.meta_path.remove(self)
        self.patch(module)


def install(record: GraphRecorder, iterations: Iterations, amp: AmpObserver, torch_compile: Callable[..., Any]) -> None:
    """Prepare ``cerebras.pytorch`` when the script imports it (see the module docstring)."""

    def prepare(cstorch: ModuleType) -> None:
        skip_in_capture(PACKAGE)
        amp.watch_scaler_class(cstorch.amp.GradScaler, "cerebras.pytorch.amp.GradScaler")
        vendor_trace = cstorch.trace

        def trace(step_fn: Callable[..., Any]) -> Callable[..., Any]:
            traced = vendor_trace(compile_for_observation(step_fn, record, torch_compile))
            return iterations.wrap(traced, around=_cs_backend_duties)

        trace.__doc__ = vendor_trace.__doc__
        replace(cstorch, "trace", trace)

    if PACKAGE in sys.modules:
        prepare(sys.modules[PACKAGE])
    else:
        sys.meta_path.insert(0, _PatchAfterImport(PACKAGE, prepare))


@contextmanager
def _cs_backend_duties() -> Iterator[None]:
    from cerebras.pytorch.backend import current_backend_impl

    if current_backend_impl(raise_exception=False) is None:
        yield
        return
    from csconform.adapters.cstorch import backend

    with backend.iteration():
        yield
