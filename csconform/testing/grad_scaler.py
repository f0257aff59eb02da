"""A reference model of dynamic loss scaling and a state machine that checks a GradScaler against it.

Shipped inside the package so that any implementation of the engine interface can reuse it, as it
is or extended by a subclass (the way zarr ships ``zarr.testing.stateful``)::

    from hypothesis.stateful import invariant, run_state_machine_as_test
    from csconform.testing.grad_scaler import GradScalerMachine

    def test_grad_scaler_protocol(engine):
        run_state_machine_as_test(GradScalerMachine.for_engine(engine))

    class MyGradScalerMachine(GradScalerMachine):
        engine = my_engine

        @invariant()
        def my_own_check(self) -> None: ...

    TestMyGradScaler = MyGradScalerMachine.TestCase

:class:`LossScaleModel` is written from the published rule (public-facts#GradScaler) in
plain Python and shares no code with the reference engine. The machine drives the implementation's
``amp.GradScaler`` through whole training iterations (gradients in, optional ``unscale_``, ``step``,
``update``) with finite and with overflowing gradients, misuses the protocol on purpose, and round-trips
``state_dict``. After every step it compares the scale and counters with the model and checks that a
skipped step left the parameters and the optimizer state bit-identical.

What the machine needs from the engine: ``reset()``, ``amp.GradScaler``, ``nn.Parameter`` (``data``,
``grad``) and ``optim.SGD(params, lr=..., momentum=...)`` with ``global_step`` and ``state_dict()``. Rules that need
more (``state_dict``/``load_state_dict``) are skipped by precondition when the scaler lacks them.

Every check names the spec rule whose statement it found broken (a
:class:`~csconform.testing.violations.RuleViolation`), so a failing run is blamed on that rule alone
(:data:`RULES` lists every rule the machine checks). A scale or counter that disagrees with the model
is blamed on the clause of the update rule the model applied last (back-off, growth or clamp), an
unexpected exception from the engine on no rule in particular.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, ClassVar

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from csconform.errors import GradScalerError, GradScalerUsageError, InvalidInputError, NonRecoverableNaNError
from csconform.testing.strategies import (
    dynamic_grad_scaler_configs,
    finite_gradients,
    gradients_with_nonfinite,
    static_grad_scaler_configs,
)
from csconform.testing.violations import RuleViolation, expect, violation_of

__all__ = [
    "LossScaleModel",
    "GradScalerMachine",
    "bitwise_equal",
    "check_scaler_state",
    "PARAMETER_SHAPES",
    "RULES",
]

RULES = (
    "GRADSCALER-041",  # the initial scale
    "GRADSCALER-007",  # update(new_scale) refused
    "GRADSCALER-009",  # unscale_() after step() refused
    "GRADSCALER-012",  # unscale_ divides by the scale
    "GRADSCALER-013",  # finiteness
    "GRADSCALER-014",  # static scaling never skips, never changes
    "GRADSCALER-015",  # a skipped step changes nothing
    "GRADSCALER-019",  # DLS + GCC clipping
    "GRADSCALER-020",  # back-off (and counting)
    "GRADSCALER-021",  # growth
    "GRADSCALER-022",  # clamping
    "GRADSCALER-023",  # state_dict round trip
    "GRADSCALER-036",  # a second unscale_() changes nothing
    "GRADSCALER-037",  # step() twice refused
    "GRADSCALER-043",  # update() at the minimum scale clamps and never raises
)
"""The spec rules the state machine checks; every violation it raises names some of them."""

PARAMETER_SHAPES: tuple[tuple[int, ...], ...] = ((3, 2), (4,))
# steps_per_increase=0 (double after every clean update) has fixed-input checks of its own; the
# vendor's package reads 0 as "unset" (2000), and the machine explores the rest of the protocol.
DYNAMIC_CONFIGS = dynamic_grad_scaler_configs(min_steps_per_increase=1)
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
    passed since the last rescale; clamp into ``[min_scale, max_scale]``, also at the minimum with
    gradients that stay non-finite (never an error). Static mode never changes.
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
    # what the last event was ("init", "step", or the update's clause: "backoff", "growth", "count")
    # and whether that update clamped the scale: a disagreement is blamed on it (rules_to_blame)
    last_event: str = "init"
    clamped: bool = False
    scale_before_update: float = 0.0

    def skip_expected(self, finite: bool) -> bool:
        """Whether ``step`` must skip the optimizer: only in dynamic mode, only for non-finite grads."""
        return self.dynamic and not finite

    def step(self, finite: bool) -> None:
        """One optimizer step through the scaler; a skipped one is counted."""
        self.last_event, self.clamped = "step", False
        if self.skip_expected(finite):
            self.skipped += 1

    def update(self, finite: bool) -> None:
        """Apply one iteration's update."""
        if not self.dynamic:
            return
        self.last_event, self.clamped, self.scale_before_update = "count", False, self.scale
        self.steps += 1
        if not finite:
            self.overflows += 1
        if self.overflows / self.steps > self.overflow_tolerance:
            self.scale = self.scale / 2
            self.steps = 0
            self.overflows = 0
            self.last_event = "backoff"
        if self.steps > self.steps_per_increase:
            self.scale = self.scale * 2
            self.steps = 0
            self.overflows = 0
            self.last_event = "growth"
        if self.scale > self.max_scale:
            self.scale = self.max_scale
            self.clamped = True
        if self.scale < self.min_scale:
            self.scale = self.min_scale
            self.clamped = True
        self.history.append(self.scale)

    def state(self) -> dict[str, float | int]:
        if not self.dynamic:
            return {"loss_scale": self.scale}
        return {
            "loss_scale": self.scale,
            "steps_since_rescale": self.steps,
            "overflows_since_rescale": self.overflows,
            "num_skipped_steps": self.skipped,
        }

    def rules_to_blame(self, actual: dict[str, Any]) -> tuple[str, ...]:
        """The rules an implementation broke when its state ``actual`` is not :meth:`state`.

        Other keys break the state_dict rule (023). Before anything ran, the initial scale is wrong
        (041); static scaling must never change (014). In dynamic mode a wrong skip count alone
        breaks the skip rule (015) and a clamped update the clamping rule (022). Otherwise the
        clause the implementation applied is read from its state (:meth:`_clause_applied`); where
        it is not the model's clause, the one of the two that is a back-off is to blame (020),
        else growth (021); where it is the same clause, that clause got its arithmetic wrong
        (counting belongs to the back-off rule, 020).
        """
        expected = self.state()
        if set(actual) != set(expected):
            return ("GRADSCALER-023",)
        if self.last_event == "init":
            return ("GRADSCALER-041",)
        if not self.dynamic:
            return ("GRADSCALER-014",)
        differing = {key for key in expected if actual[key] != expected[key]}
        if differing == {"num_skipped_steps"}:
            return ("GRADSCALER-015",)
        if self.clamped:
            return ("GRADSCALER-022",)
        modelled = "count" if self.last_event == "step" else self.last_event
        applied = self._clause_applied(actual)
        if "backoff" in (modelled, applied) and (modelled != applied or modelled == "backoff"):
            return ("GRADSCALER-020",)
        if "growth" in (modelled, applied):
            return ("GRADSCALER-021",)
        return ("GRADSCALER-020",)

    def _clause_applied(self, actual: dict[str, Any]) -> str:
        """Which update clause an implementation that ended at ``actual`` applied last.

        A lower scale than before the update is a back-off, a higher one growth; an unchanged scale
        with counters reset where the model kept counting is a clause whose change the bounds
        swallowed: growth at the maximum, back-off at the minimum.
        """
        scale = float(actual["loss_scale"])
        if scale < self.scale_before_update:
            return "backoff"
        if scale > self.scale_before_update:
            return "growth"
        counters_reset = actual["steps_since_rescale"] == 0 and self.steps != 0
        at_minimum = self.scale_before_update <= self.min_scale
        if counters_reset and at_minimum and self.overflows > 0:
            return "backoff"  # an overflow the model still counts (within tolerance) was backed off on
        if counters_reset and self.scale_before_update >= self.max_scale:
            return "growth"
        if counters_reset and at_minimum:
            return "backoff"
        return "count"


def check_scaler_state(scaler: Any, model: LossScaleModel) -> None:
    """Raise a :class:`RuleViolation` naming the broken rule unless ``scaler`` is where ``model`` is."""
    expected = model.state()
    state = dict(scaler.state_dict())
    reported = {**state, "loss_scale": scaler.get_scale()}
    for actual in (reported, state):
        if actual != expected:
            raise RuleViolation(
                model.rules_to_blame(actual),
                f"after {model.last_event!r} the scaler is at {actual}, the documented rule gives {expected}",
            )


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


class GradScalerMachine(RuleBasedStateMachine):
    """One GradScaler, one SGD optimizer over two parameters, and the reference model.

    The implementation under test is the class attribute ``engine``: bind it with
    :meth:`for_engine` (``run_state_machine_as_test(GradScalerMachine.for_engine(engine))``) or in a
    subclass (``engine = my_engine``; its ``.TestCase`` then runs under unittest or pytest). A
    subclass may add rules and invariants of its own; they can read the state the machine keeps:
    ``scaler``, ``optimizer``, ``params``, ``phase`` (``idle``, ``grads``, ``unscaled``,
    ``stepped``), ``finite`` (this iteration's gradients), ``reference`` (the
    :class:`LossScaleModel`), and check a call that must be refused with :meth:`expect_refused`.
    """

    engine: ClassVar[ModuleType]

    @classmethod
    def for_engine(cls, engine: ModuleType) -> type[GradScalerMachine]:
        """This machine (or a subclass of it) bound to ``engine``, named for it in Hypothesis' output."""
        return type(f"{cls.__name__}[{engine.__name__}]", (cls,), {"engine": engine})

    def __init__(self) -> None:
        if getattr(type(self), "engine", None) is None:
            raise InvalidInputError(
                f"{type(self).__name__} has no engine to check: use {type(self).__name__}.for_engine(module)"
                " or set engine in a subclass"
            )
        super().__init__()
        self.engine.reset()  # each example is a run of its own: nothing left over from the last one
        self.params = [self.engine.nn.Parameter(np.full(shape, 0.5, dtype=np.float32)) for shape in PARAMETER_SHAPES]
        self.optimizer = self.engine.optim.SGD(self.params, lr=LEARNING_RATE, momentum=MOMENTUM)
        self.phase = "idle"  # idle -> grads -> (unscaled) -> stepped -> idle
        self.finite = True
        self.scaled_grads: list[np.ndarray] = []
        self.config: dict[str, Any] = {}
        self.scaler: Any = None
        self.model: LossScaleModel | None = None
        # what the last step() found, checked once its iteration is over (after update())
        self.before_step: tuple[Any, ...] = ()
        self.skip_expected = False

    @property
    def reference(self) -> LossScaleModel:
        """The reference model; the initialize rule always runs before any other rule."""
        assert self.model is not None, "the machine's initialize rule runs first"
        return self.model

    # --- setup ---------------------------------------------------------------------------------

    # Dynamic scaling has far more behaviour to explore: two chances in three.
    @initialize(config=st.one_of(DYNAMIC_CONFIGS, DYNAMIC_CONFIGS, static_grad_scaler_configs()))
    def build_scaler(self, config: dict[str, Any]) -> None:
        self.config = config
        self.scaler = self.engine.amp.GradScaler(**config)
        dynamic = config.get("loss_scale") == "dynamic"
        if dynamic:
            self.model = LossScaleModel(
                dynamic=True,
                scale=min(config["init_scale"], config["max_loss_scale"]),  # GRADSCALER-041
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
        # with a clipping limit the two rules meet in one expectation: a wrong value breaks either
        rules = ("GRADSCALER-012", "GRADSCALER-019") if limit is not None else ("GRADSCALER-012",)
        with violation_of(*rules):
            for param, want in zip(self.params, expected, strict=True):
                np.testing.assert_allclose(param.grad, want, rtol=1e-5, atol=1e-30)

    @precondition(lambda self: self.phase in ("grads", "unscaled"))
    @rule()
    def step(self) -> None:
        explicit_unscale = self.phase == "unscaled"
        self.before_step = (
            [p.data.copy() for p in self.params],
            copy.deepcopy(self.optimizer.state_dict()["state"]),
            int(self.optimizer.global_step),
            self.reference.skipped,
        )
        with np.errstate(invalid="ignore", over="ignore"):  # static scaling steps on inf/NaN
            self.scaler.step(self.optimizer)
        self.skip_expected = self.reference.skip_expected(self.finite)
        self.reference.step(self.finite)
        if not explicit_unscale and self.finite:
            self._check_unscaled_gradients()
        self.phase = "stepped"

    def _check_the_step(self) -> None:
        """After the iteration (an implementation may restore a skipped step only when it ends)."""
        before_params, before_state, before_global_step, before_skipped = self.before_step
        advanced = int(self.optimizer.global_step) - before_global_step
        if self.skip_expected:
            # an overflow the scaler did not even count went undetected (013); one it counted but
            # stepped on anyway was not skipped as documented (015)
            counted = self.scaler.state_dict().get("num_skipped_steps") == before_skipped + 1
            rules = ("GRADSCALER-015",) if counted else ("GRADSCALER-013", "GRADSCALER-015")
            expect(advanced == 0, rules, "a step after non-finite gradients advanced global_step")
            for param, before in zip(self.params, before_params, strict=True):
                expect(bitwise_equal(param.data, before), rules, "a skipped step changed a parameter")
            expect(
                bitwise_equal(self.optimizer.state_dict()["state"], before_state),
                rules,
                "a skipped step changed the optimizer state",
            )
        elif self.reference.dynamic:
            expect(advanced == 1, "GRADSCALER-013", "a step after finite gradients was skipped")
        else:
            expect(advanced == 1, "GRADSCALER-014", "static loss scaling skipped a step")
            if not self.finite:
                # Static scaling checks nothing: the overflow went into the weights. Start afresh.
                for param in self.params:
                    param.data[...] = np.float32(0.5)

    @precondition(lambda self: self.phase == "stepped")
    @rule()
    def update(self) -> None:
        self.reference.update(self.finite)
        self.phase = "idle"
        try:
            self.scaler.update()
        except NonRecoverableNaNError as exc:
            raise RuleViolation("GRADSCALER-043", f"update() raised at the minimum scale: {exc}") from exc
        self._check_the_step()
        check_scaler_state(self.scaler, self.reference)

    @precondition(lambda self: self.phase == "idle")
    @rule(data=st.data(), pattern=st.lists(MOSTLY_FINITE, min_size=1, max_size=6))
    def whole_iterations(self, data: st.DataObject, pattern: list[bool]) -> None:
        """Several complete iterations at once (gradients, step, update): reaches growth and the bounds."""
        for finite in pattern:
            self._set_scaled_gradients(self._draw_gradients(data, finite), finite)
            self.step()
            self.update()

    # --- protocol misuse: refused, and nothing changes ------------------------------------------------

    def expect_refused(self, rule_id: str, call: str, attempt: Callable[[], object]) -> None:
        """``attempt()`` must raise the usage error and leave parameters, gradients and the scaler as they were."""
        before = (
            [p.data.copy() for p in self.params],
            [None if p.grad is None else np.copy(p.grad) for p in self.params],
            int(self.optimizer.global_step),
            self.scaler.state_dict(),
        )
        try:
            attempt()
        except GradScalerUsageError:
            pass
        except Exception as error:  # noqa: BLE001 - any other outcome breaks the rule
            raise RuleViolation(rule_id, f"{call} raised {type(error).__name__}: {error}") from error
        else:
            raise RuleViolation(rule_id, f"{call} must raise GradScalerUsageError")
        after = (
            [p.data for p in self.params],
            [p.grad for p in self.params],
            int(self.optimizer.global_step),
            self.scaler.state_dict(),
        )
        expect(bitwise_equal(after, before), rule_id, f"the refused {call} changed the training state")

    @precondition(lambda self: self.phase == "stepped")
    @rule()
    def step_twice(self) -> None:
        self.expect_refused(
            "GRADSCALER-037", "a second step() before update()", lambda: self.scaler.step(self.optimizer)
        )

    @precondition(lambda self: self.phase == "stepped")
    @rule()
    def unscale_after_step(self) -> None:
        self.expect_refused("GRADSCALER-009", "unscale_() after step()", lambda: self.scaler.unscale_(self.optimizer))

    @precondition(lambda self: self.phase == "unscaled")
    @rule()
    def unscale_twice(self) -> None:
        before = ([np.copy(p.grad) for p in self.params], self.scaler.state_dict())
        try:
            self.scaler.unscale_(self.optimizer)
        except Exception as error:  # noqa: BLE001 - a second unscale_ does nothing, it is not refused
            raise RuleViolation("GRADSCALER-036", f"a second unscale_() raised {type(error).__name__}") from error
        after = ([np.copy(p.grad) for p in self.params], self.scaler.state_dict())
        expect(bitwise_equal(after, before), "GRADSCALER-036", "a second unscale_() changed the gradients")

    @rule(new_scale=st.sampled_from([1.0, 2.0**10]))
    def update_with_new_scale(self, new_scale: float) -> None:
        before = self.scaler.state_dict()
        try:
            self.scaler.update(new_scale)
        except GradScalerError:
            expect(
                self.scaler.state_dict() == before,
                "GRADSCALER-007",
                "the refused update(new_scale) changed the state",
            )
            return
        raise RuleViolation("GRADSCALER-007", "update(new_scale) must be refused")

    # --- checkpointing -------------------------------------------------------------------------------

    @precondition(lambda self: self.phase == "idle" and hasattr(self.scaler, "load_state_dict"))
    @rule()
    def state_dict_round_trip(self) -> None:
        saved = self.scaler.state_dict()
        fresh = self.engine.amp.GradScaler(**self.config)
        fresh.load_state_dict(copy.deepcopy(saved))
        expect(fresh.state_dict() == saved, "GRADSCALER-023", f"restored {fresh.state_dict()}, saved {saved}")
        expect(fresh.get_scale() == self.scaler.get_scale(), "GRADSCALER-023", "the restored scale differs")
        self.scaler = fresh

    # --- what must hold all the time ---------------------------------------------------------------

    @invariant()
    def scale_and_counters_match_the_model(self) -> None:
        if self.scaler is not None:
            check_scaler_state(self.scaler, self.reference)

    @invariant()
    def dynamic_scale_stays_in_range(self) -> None:
        if self.model is not None and self.reference.dynamic:
            expect(
                self.reference.min_scale <= self.scaler.get_scale() <= self.reference.max_scale,
                "GRADSCALER-022",
                f"scale {self.scaler.get_scale()} outside [{self.reference.min_scale}, {self.reference.max_scale}]",
            )
