"""The vendor's ``cerebras.pytorch`` 2.10 on its CPU backend, behind the implementation interface.

Run the conformance suite against it with ``--engine csconform.adapters.cstorch`` in an environment
where the package is installed (``pip install -e ".[test,cstorch]"``, or ``tox -e cstorch``).

It runs one target, ``cpu``: the package's CS backend needs a Cerebras cluster, so every rule about a
limitation of the CS system is ``unsupported`` here. ``EMULATIONS`` lists the places where the
adapter does around a package component what the CS backend would do, so that the component can be
checked on a CPU (see backend.py); the matrix marks every rule checked through them.
"""

from __future__ import annotations

try:
    import cerebras.pytorch as cstorch
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the cstorch adapter needs the vendor's package: pip install -e '.[cstorch]' in an environment of its "
        f"own (it pins torch 2.4.0 and numpy 1.25), or run tox -e cstorch ({exc})"
    ) from exc

from csconform.adapters.cstorch import backend
from csconform.interface.kit.package import TargetSwitch, submodules_on_first_use

PACKAGE = f"cerebras.pytorch {cstorch.__version__}"
IMPLEMENTATION = PACKAGE

CAPABILITIES = frozenset(
    {"precision", "amp", "nn", "optim", "lr_schedule", "data", "graph", "runner", "metrics", "executor"}
)
TARGETS = ("cpu",)
EMULATIONS = {
    "amp": (
        "the package's GradScaler is constructed while the backend reports CSX and driven with the CS backend's "
        "per-batch duties (amp handle, dls_update_manager enter/exit, step closures); off CS it scales nothing"
    ),
    "optim": (
        "the CS backend's optimizer pre-step hook that recomputes the learning rate from the schedule's step "
        "is registered (it matters only after a skipped step)"
    ),
}

SUBMODULES = (
    "precision",
    "amp",
    "nn",
    "optim",
    "data",
    "graph",
    "compiler",
    "runner",
    "checkpoint",
    "metrics",
    "executor",
)

_target = TargetSwitch(TARGETS, "cpu", PACKAGE)
current_target = _target.current
set_target = _target.set
use_target = _target.use
__getattr__ = submodules_on_first_use(__name__, SUBMODULES)


def reset() -> None:
    """The package's defaults: float16 half dtype, mixed precision off on the CPU, no leftover scalers,
    no run left open, no metrics kept."""
    backend.cpu_backend()
    if "runner" in globals():
        globals()["runner"].close_open_runs()
    if "metrics" in globals():
        globals()["metrics"].forget()
    cstorch.amp.set_half_dtype("float16")
    cstorch.amp.enable_mixed_precision(False)
    backend.forget_components()
    _target.reset()
