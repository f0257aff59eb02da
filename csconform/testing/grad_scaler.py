"""A reference model of dynamic loss scaling and a state machine that checks a GradScaler against it.

Shipped inside the package so that any implementation of the engine interface can reuse it::

    from hypothesis.stateful import run_state_machine_as_test
    from csconform.testing.grad_scaler import make_grad_scaler_machine

    def test_grad_scaler_protocol(engine):
        run_state_machine_as_test(make_grad_scaler_machine(engine))

:class:`LossScaleModel` is written from the published rule (csconform's FACTS.md, "GradScaler") in
plain Python and shares no code with the reference engine. The machine drives the implementation's
``amp.GradScaler`` through whole training iterations (gradients in, optional ``unscale_``, ``step``,
``update``) with finite and with overflowing gradients, misuses the protocol on purpose, and round-trips
``state_dict``. After every step it compares the scale and counters with the model and checks that a
skipped step left the parameters and the optimizer state bit-identical.

What the machine needs from the engine: ``amp.GradScaler``, ``nn.Parameter`` (``data``, ``grad``) and
``optim.SGD(params, lr=..., momentum=...)`` with ``global_step`` and ``state_dict()``. Rules that need
more (``state_dict``/``load_state_dict``) are skipped by precondition when the scaler lacks them.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from csconform.errors import GradScalerError, GradScalerUsageError, NonRecoverableNaNError
from csconform.testing.strategies import (
    dynamic_grad_scaler_configs,
    finite_gradients,
    gradients_with_nonfinite,
    static_grad_scaler_configs,
)

__all__ = ["LossScaleModel", "make_grad_scaler_machine", "bitwise_equal", "PARAMETER_SHAPES"]

PARAMETER_SHAPES: tuple[tuple[int, ...], ...] = ((3, 2), (4,))
LEARNING_RATE = 0.125
MOMENTUM = 0.5
# Clean iterations three times in four (True first: it is also what hypothesis shrinks towards), so
# runs reach growth as well as back-off.
MOSTLY_FINITE = st.sampled_from([True, True, True, False])


@dataclass
class LossScaleModel:
    """The documented loss-scale bookkeeping, one ``update(finite)`` per training iteration.

    Dynamic mode: count the step (and the overflow); back off by 2 when the overflow fraction since
    the last rescale exceeds the tolerance; grow by 2 once more than ``steps_per_increase`` steps have
    passed since the last rescale; clamp into ``[min_scale, max_scale]``. Static mode never changes.
    """

    dynamic: bool
    scale: float
    min_scale: float = 2.0**-14
    max_scale: float = 2.0**15
    steps_per_increase: int = 2000
    overflow_tolerance: float = 0.0
    steps: int = 0
    overflows: int = 0
    skipped: int = 0
    history: list[float] = field(default_factory=list)

    def skip_expected(self, finite: bool) -> bool:
        """Whether ``step`` must skip the optimizer: only in dynamic mode, only for non-finite grads."""
        return self.dynamic and not finite

    def step(self, finite: bool) -> None:
        """One optimizer step through the scaler; a skipped one is counted."""
        if self.skip_expected(finite):
            self.skipped += 1

    def update(self, finite: bool) -> bool:
        """Apply one iteration's update; return True if training is unrecoverable (overflow at min)."""
        if not self.dynamic:
            return False
        was_at_minimum = self.scale <= self.min_scale
        self.steps += 1
        if not finite:
            self.overflows += 1
        if self.overflows / self.steps > self.overflow_tolerance:
            self.scale = self.scale / 2
            self.steps = 0
            self.overflows = 0
        if self.steps > self.steps_per_increase:
            self.scale = self.scale * 2
            self.steps = 0
            self.overflows = 0
        if self.scale > self.max_scale:
            self.scale = self.max_scale
        if self.scale < self.min_scale:
            self.scale = self.min_scale
        self.history.append(self.scale)
        return (not finite) and was_at_minimum

    def state(self) -> dict[str, float | int]:
        if not self.dynamic:
            return {"loss_scale": self.scale}
        return {
            "loss_scale": self.scale,
            "steps_since_rescale": self.steps,
            "overflows_since_rescale": self.overflows,
            "num_skipped_steps": self.skipped,
        }


def bitwise_equal(left: Any, right: Any) -> bool:
    """Structural equality where arrays and floats must match bit for bit (NaN equals the same NaN)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(bitwise_equal(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(bitwise_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, np.ndarray | np.generic) or isinstance(right, np.ndarray | np.generic):
        a, b = np.asarray(left), np.asarray(right)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(left, float) and isinstance(right, float):
        return np.float64(left).tobytes() == np.float64(right).tobytes()
    if type(left) is not type(right):
        return False
    if left is right or left == right:
        return True
    # Objects without value equality (e.g. a copied LR schedule) compare by their attributes.
    return hasattr(left, "__dict__") and bitwise_equal(vars(left), vars(right))


def make_grad_scaler_machine(engine: ModuleType) -> type[RuleBasedStateMachine]:
    """The state machine class for ``engine``; run it with ``run_state_machine_as_test`` or use ``.TestCase``."""

    class GradScalerMachine(RuleBasedStateMachine):
        """One GradScaler, one SGD optimizer over two parameters, and the reference model."""

        def __init__(self) -> None:
            super().__init__()
            self.params = [engine.nn.Parameter(np.full(shape, 0.5, dtype=np.float32)) for shape in PARAMETER_SHAPES]
            self.optimizer = engine.optim.SGD(self.params, lr=LEARNING_RATE, momentum=MOMENTUM)
            self.phase = "idle"  # idle -> grads -> (unscaled) -> stepped -> idle
            self.finite = True
            self.scaled_grads: list[np.ndarray] = []
            self.config: dict[str, Any] = {}
            self.scaler: Any = None
            self.model: LossScaleModel | None = None

        @property
        def reference(self) -> LossScaleModel:
            """The reference model; the initialize rule always runs before any other rule."""
            assert self.model is not None, "the machine's initialize rule runs first"
            return self.model

        # --- setup ---------------------------------------------------------------------------------

        # Dynamic scaling has far more behaviour to explore: two chances in three.
        @initialize(
            config=st.one_of(dynamic_grad_scaler_configs(), dynamic_grad_scaler_configs(), static_grad_scaler_configs())
        )
        def build_scaler(self, config: dict[str, Any]) -> None:
            self.config = config
            self.scaler = engine.amp.GradScaler(**config)
            dynamic = config.get("loss_scale") == "dynamic"
            if dynamic:
                self.model = LossScaleModel(
                    dynamic=True,
                    scale=config["init_scale"],
                    min_scale=config["min_loss_scale"],
                    max_scale=config["max_loss_scale"],
                    steps_per_increase=config["steps_per_increase"],
                    overflow_tolerance=config["overflow_tolerance"],
                )
            else:
                self.model = LossScaleModel(dynamic=False, scale=float(config.get("loss_scale") or 1.0))

        # --- one training iteration --------------------------------------------------------------------

        def _set_scaled_gradients(self, unscaled: list[np.ndarray], finite: bool) -> None:
            scale = np.float32(self.reference.scale)
            with np.errstate(invalid="ignore", over="ignore"):
                self.scaled_grads = [np.asarray(g, dtype=np.float32) * scale for g in unscaled]
            for param, grad in zip(self.params, self.scaled_grads, strict=True):
                param.grad = grad
            self.finite = finite
            self.phase = "grads"

        def _draw_gradients(self, data: st.DataObject, finite: bool) -> list[np.ndarray]:
            broken = -1 if finite else data.draw(st.integers(0, len(PARAMETER_SHAPES) - 1), label="broken parameter")
            return [
                data.draw(gradients_with_nonfinite(shape) if i == broken else finite_gradients(shape), label="grad")
                for i, shape in enumerate(PARAMETER_SHAPES)
            ]

        @precondition(lambda self: self.phase == "idle")
        @rule(data=st.data(), finite=MOSTLY_FINITE)
        def gradients(self, data: st.DataObject, finite: bool) -> None:
            """Start an iteration: scaled gradients (possibly with inf/NaN) land on the parameters."""
            self._set_scaled_gradients(self._draw_gradients(data, finite), finite)

        @precondition(lambda self: self.phase == "grads")
        @rule()
        def unscale(self) -> None:
            self.scaler.unscale_(self.optimizer)
            self.phase = "unscaled"
            if self.finite:
                self._check_unscaled_gradients()

        def _check_unscaled_gradients(self) -> None:
            inverse = np.float32(1.0 / self.reference.scale)
            expected = [g * inverse for g in self.scaled_grads]
            limit = self.config.get("max_gradient_norm") if self.reference.dynamic else None
            if limit is not None:
                norm = math.sqrt(sum(float(np.sum(np.square(g.astype(np.float64)))) for g in expected))
                factor = min(1.0, limit / (norm + 1e-6))
                expected = [g * np.float32(factor) for g in expected]
            for param, want in zip(self.params, expected, strict=True):
                np.testing.assert_allclose(param.grad, want, rtol=1e-5, atol=1e-30)

        @precondition(lambda self: self.phase in ("grads", "unscaled"))
        @rule()
        def step(self) -> None:
            explicit_unscale = self.phase == "unscaled"
            before_params = [p.data.copy() for p in self.params]
            before_state = copy.deepcopy(self.optimizer.state_dict())
            before_global_step = int(self.optimizer.global_step)
            with np.errstate(invalid="ignore", over="ignore"):  # static scaling steps on inf/NaN
                self.scaler.step(self.optimizer)
            self.reference.step(self.finite)
            if not explicit_unscale and self.finite:
                self._check_unscaled_gradients()
            self.phase = "stepped"
            if self.reference.skip_expected(self.finite):
                assert int(self.optimizer.global_step) == before_global_step, "a skipped step advanced global_step"
                for param, before in zip(self.params, before_params, strict=True):
                    assert bitwise_equal(param.data, before), "a skipped step changed a parameter"
                assert bitwise_equal(self.optimizer.state_dict(), before_state), (
                    "a skipped step changed optimizer state"
                )
            else:
                assert int(self.optimizer.global_step) == before_global_step + 1, "a finite step did not advance"
                if not self.finite:
                    # Static scaling checks nothing: the overflow went into the weights. Start afresh.
                    for param in self.params:
                        param.data[...] = np.float32(0.5)

        @precondition(lambda self: self.phase == "stepped")
        @rule()
        def update(self) -> None:
            unrecoverable = self.reference.update(self.finite)
            self.phase = "idle"
            if unrecoverable:
                try:
                    self.scaler.update()
                except NonRecoverableNaNError:
                    return
                raise AssertionError(
                    "update() at the minimum scale after an overflow must raise NonRecoverableNaNError"
                )
            self.scaler.update()

        @precondition(lambda self: self.phase == "idle")
        @rule(data=st.data(), pattern=st.lists(MOSTLY_FINITE, min_size=1, max_size=6))
        def whole_iterations(self, data: st.DataObject, pattern: list[bool]) -> None:
            """Several complete iterations at once (gradients, step, update): reaches growth and the bounds."""
            for finite in pattern:
                self._set_scaled_gradients(self._draw_gradients(data, finite), finite)
                self.step()
                self.update()

        # --- protocol misuse ---------------------------------------------------------------------------

        @precondition(lambda self: self.phase == "stepped")
        @rule()
        def step_twice(self) -> None:
            try:
                self.scaler.step(self.optimizer)
            except GradScalerUsageError:
                return
            raise AssertionError("a second step() before update() must raise GradScalerUsageError")

        @precondition(lambda self: self.phase == "stepped")
        @rule()
        def unscale_after_step(self) -> None:
            try:
                self.scaler.unscale_(self.optimizer)
            except GradScalerUsageError:
                return
            raise AssertionError("unscale_() after step() must raise GradScalerUsageError")

        @precondition(lambda self: self.phase == "unscaled")
        @rule()
        def unscale_twice(self) -> None:
            try:
                self.scaler.unscale_(self.optimizer)
            except GradScalerUsageError:
                return
            raise AssertionError("unscale_() twice in one iteration must raise GradScalerUsageError")

        @rule(new_scale=st.sampled_from([1.0, 2.0**10]))
        def update_with_new_scale(self, new_scale: float) -> None:
            try:
                self.scaler.update(new_scale)
            except GradScalerError:
                return
            raise AssertionError("update(new_scale) must be refused")

        # --- checkpointing -------------------------------------------------------------------------------

        @precondition(lambda self: self.phase == "idle" and hasattr(self.scaler, "load_state_dict"))
        @rule()
        def state_dict_round_trip(self) -> None:
            saved = self.scaler.state_dict()
            fresh = engine.amp.GradScaler(**self.config)
            fresh.load_state_dict(copy.deepcopy(saved))
            assert fresh.state_dict() == saved
            assert fresh.get_scale() == self.scaler.get_scale()
            self.scaler = fresh

        # --- what must hold all the time ---------------------------------------------------------------

        @invariant()
        def scale_and_counters_match_the_model(self) -> None:
            if self.scaler is None:
                return
            assert self.scaler.get_scale() == self.reference.scale, (self.scaler.get_scale(), self.reference.scale)
            assert self.scaler.state_dict() == self.reference.state(), (
                self.scaler.state_dict(),
                self.reference.state(),
            )

        @invariant()
        def dynamic_scale_stays_in_range(self) -> None:
            if self.model is not None and self.reference.dynamic:
                assert self.reference.min_scale <= self.scaler.get_scale() <= self.reference.max_scale

    GradScalerMachine.__name__ = GradScalerMachine.__qualname__ = f"GradScalerMachine[{engine.__name__}]"
    return GradScalerMachine
