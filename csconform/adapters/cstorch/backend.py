"""The one ``cerebras.pytorch`` CPU backend, and the CS-backend duties the adapter takes over.

The package allows one backend per process, so the adapter creates the CPU backend once (with its
artifacts in a temporary directory, not the working directory) and every check shares it.

Some components only work as designed under the package's CS backend (``backend/ltc_backend.py``):
the GradScaler scales nothing and keeps no state unless its backend reports CSX, and its
conditional (skip-on-overflow) update relies on per-batch hooks of that backend. For those the
adapter does around the component what the CS backend does, and nothing more:

* :func:`csx_view`: the component is constructed while the current backend reports
  ``BackendType.CSX`` (a view of the CPU backend; every other attribute is the CPU backend's own);
* :func:`amp_handle`: the CS backend runs ``amp.init()`` at run start, which sets the amp handle the
  GradScaler uses (``disable_casts``, ``_clear_cache``) and also patches torch functions to cast to
  the half dtype; the adapter sets only the handle (the package's own ``AmpHandle``), so CPU
  arithmetic is not cast behind the checks' backs;
* :func:`begin_iteration` / :func:`end_iteration`: the CS backend's ``on_batch_start`` clears the
  amp cache and enters each amp-processed optimizer's ``dls_update_manager``; its ``on_batch_end``
  exits it, which is when a skipped step's schedule step is restored. The adapter opens an
  iteration at the first GradScaler or optimizer call of a step and closes it at ``update()``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import cerebras.pytorch as cstorch
from cerebras.pytorch.amp._amp_state import _amp_state
from cerebras.pytorch.amp.handle import AmpHandle
from cerebras.pytorch.backend import BackendType, current_backend_impl

_backend_module = sys.modules["cerebras.pytorch.backend"]


def cpu_backend() -> Any:
    """The process's CPU backend, created on first use."""
    backend = _backend_module.current_backend(raise_exception=False, raise_warning=False)
    if backend is None:
        backend = cstorch.backend("CPU", artifact_dir=tempfile.mkdtemp(prefix="csconform-cstorch-"))
    if not backend.is_cpu:
        raise RuntimeError(f"the csconform cstorch adapter runs on the CPU backend, found {backend.backend_type}")
    return backend


class _CsxBackendView:
    """The CPU backend as a CS-backend component sees it: it reports CSX; all else is unchanged."""

    backend_type = BackendType.CSX

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    def __getattr__(self, name: str) -> Any:
        return getattr(self._impl, name)


@contextmanager
def csx_view() -> Iterator[None]:
    """Construct a component under a backend that reports CSX (see the module docstring)."""
    backend = cpu_backend()
    real = backend._impl
    backend._impl = _CsxBackendView(real)
    try:
        yield
    finally:
        backend._impl = real


def amp_handle() -> None:
    """Give the amp state the handle the CS backend's ``amp.init()`` would (without patching torch)."""
    if getattr(_amp_state, "handle", None) is None:
        _amp_state.handle = AmpHandle()


def _amp_optimizers() -> list[Any]:
    return [opt for opt in current_backend_impl().optimizer_registry if hasattr(opt, "_amp_stash")]


_entered: list[Any] = []
"""The amp-processed optimizers whose update manager the open iteration entered (empty: none open)."""
_open = [False]


def begin_iteration() -> None:
    """The CS backend's ``on_batch_start`` duties for the amp; inside an open iteration it only
    enters optimizers that joined since (e.g. a GradScaler built meanwhile processed them)."""
    optimizers = [optimizer for optimizer in _amp_optimizers() if not any(optimizer is e for e in _entered)]
    if optimizers or not _open[0]:
        amp_handle()
        _amp_state.handle._clear_cache()
    for optimizer in optimizers:
        optimizer._amp_stash.dls_update_manager.__enter__()
        _entered.append(optimizer)
    _open[0] = True


def end_iteration() -> None:
    """The CS backend's ``on_batch_end`` duties: a skipped step's marked tensors are restored, and
    the step closures queued during the step run (inside a DataExecutor, the executor runs them)."""
    if not _open[0]:
        return
    for optimizer in _entered:
        optimizer._amp_stash.dls_update_manager.__exit__()
    _entered.clear()
    _open[0] = False
    impl = current_backend_impl()
    if not impl.in_run_context:
        impl.run_step_closures()


@contextmanager
def iteration() -> Iterator[None]:
    """A block that is one iteration, unless it runs inside an iteration already open."""
    opened = not _open[0]
    begin_iteration()
    try:
        yield
    finally:
        if opened:
            end_iteration()


def forget_components() -> None:
    """Between checks, as between two runs: the backend forgets the previous check's optimizers,
    grad scalers and queued step closures (it would otherwise unscale and step them too)."""
    impl = current_backend_impl(raise_exception=False)
    if impl is not None:
        impl.grad_scaler_registry.clear()
        impl.optimizer_registry.clear()
        impl.step_closures = []
    _entered.clear()
    _open[0] = False
