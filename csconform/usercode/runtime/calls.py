"""Observers of the calls the documents constrain (run in the child process, before the script).

* the mixed-precision sequence: a GradScaler's ``scale``, ``unscale_``, ``step`` and ``update``
  (``torch.amp.GradScaler`` and its subclasses; :func:`watch_scaler_class` for the vendor's), a
  backward pass (``torch.autograd.backward``, which ``Tensor.backward`` calls) and gradient clipping
  (``torch.nn.utils.clip_grad_norm_`` / ``clip_grad_value_``). A call made inside another observed
  call (torch's ``step`` calling ``unscale_`` itself) is the library's business and not recorded;
* writes of ``param_group["lr"]``: every optimizer's param groups become :class:`WatchedGroup`
  dicts, which record an assignment of ``"lr"`` with the user line and the library function (a
  scheduler) that made it;
* the batches every ``torch.utils.data.DataLoader`` yields, with the line that made the loader.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from csconform.usercode.runtime import frames
from csconform.usercode.runtime.capture import Iterations, leading_sizes, replace, rewritten_by_capture
from csconform.usercode.runtime.events import AmpCall, EventLog, LoaderBatch, LrWrite, Where

SCALER_CALLS = ("scale", "unscale_", "step", "update")
CLIPPING = ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm")


class AmpObserver:
    """Records the mixed-precision calls (see the module docstring)."""

    def __init__(self, log: EventLog, iterations: Iterations) -> None:
        self.log, self.iterations = log, iterations
        self._inside = 0

    def event(self, call: str, **details: Any) -> AmpCall:
        """The call, made now, from the innermost user frame."""
        frame = frames.innermost_user_frame()
        where = frames.caller(frame) if frame is not None else None
        captured = rewritten_by_capture(frame.f_code if frame is not None else None)
        return AmpCall(self.iterations.count, where, call, captured=captured, **details)

    def observed(self, call: str, original: Callable[..., Any], describe: Callable[..., AmpCall]) -> Callable[..., Any]:
        @functools.wraps(original)
        def observed_call(*args: Any, **kwargs: Any) -> Any:
            if not self._inside:
                self.log.write(describe(*args, **kwargs))
            self._inside += 1
            try:
                return original(*args, **kwargs)
            finally:
                self._inside -= 1

        return observed_call

    def watch_scaler_class(self, scaler_class: type, api: str) -> None:
        for call in SCALER_CALLS:
            original = scaler_class.__dict__.get(call)
            if original is None:
                continue

            def describe(scaler: Any, *args: Any, _call: str = call, **kwargs: Any) -> AmpCall:
                optimizer = args[0] if args and _call in ("unscale_", "step") else kwargs.get("optimizer")
                return self.event(_call, scaler=id(scaler), optimizer=id(optimizer) if optimizer else 0, api=api)

            replace(scaler_class, call, self.observed(call, original, describe))

    def install(self) -> None:
        self.watch_scaler_class(torch.amp.GradScaler, "torch.amp.GradScaler")

        def backward(*args: Any, **kwargs: Any) -> AmpCall:
            return self.event("backward")

        replace(torch.autograd, "backward", self.observed("backward", torch.autograd.backward, backward))
        clip_module = torch.nn.utils.clip_grad
        for name in CLIPPING:
            original = getattr(clip_module, name, None)
            if original is None:
                continue

            def clip(*args: Any, _name: str = name, **kwargs: Any) -> AmpCall:
                return self.event("clip", api=_name)

            observed = self.observed("clip", original, clip)
            replace(clip_module, name, observed)
            if getattr(torch.nn.utils, name, None) is original:
                replace(torch.nn.utils, name, observed)


class WatchedGroup(dict[Any, Any]):
    """An optimizer's param group that records every assignment of its learning rate. TorchDynamo
    cannot trace an optimizer step over a dict subclass, so while a compiled callable runs the
    optimizer holds ``twin`` instead: a plain dict, the same object every time (its guards hold),
    with the same contents (see :meth:`LearningRates.plain_groups`)."""

    record: Callable[[Any, Any], None] = staticmethod(lambda old, new: None)  # set by LearningRates

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.twin: dict[Any, Any] = {}

    def __setitem__(self, key: Any, value: Any) -> None:
        if key == "lr":
            type(self).record(self.get("lr"), value)
        super().__setitem__(key, value)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]


def _value(value: Any) -> str:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return f"tensor({value.detach().float().item():.6g})"
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)[:60]


class LearningRates:
    """Every optimizer's param groups become :class:`WatchedGroup` (see the module docstring)."""

    def __init__(self, log: EventLog, iterations: Iterations) -> None:
        self.log, self.iterations = log, iterations
        self.optimizers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._compiled_depth = 0
        self._watched_by_twin: dict[int, WatchedGroup] = {}

    def record(self, old: Any, new: Any) -> None:
        writing = sys._getframe(2)  # record <- WatchedGroup.__setitem__ <- the frame that assigned
        if writing.f_code.co_filename == __file__:  # through WatchedGroup.update / setdefault
            writing = writing.f_back  # type: ignore[assignment]
        writer = frames.library_writer(writing) or "user code"
        if self.iterations.count and not writer.startswith("cerebras."):
            self.log.write(LrWrite(self.iterations.count, frames.caller(writing), writer, _value(old), _value(new)))

    def watch(self, optimizer: Any) -> None:
        optimizer.param_groups[:] = [
            group if isinstance(group, WatchedGroup) else WatchedGroup(group) for group in optimizer.param_groups
        ]
        self.optimizers.add(optimizer)

    @contextmanager
    def plain_groups(self) -> Iterator[None]:
        """While a compiled callable runs, the optimizers hold the plain twins of their groups."""
        self._compiled_depth += 1
        if self._compiled_depth == 1:
            self._swap(to_twins=True)
        try:
            yield
        finally:
            self._compiled_depth -= 1
            if self._compiled_depth == 0:
                self._swap(to_twins=False)

    def _swap(self, to_twins: bool) -> None:
        for optimizer in list(self.optimizers):
            groups = optimizer.param_groups
            for index, group in enumerate(groups):
                if to_twins and isinstance(group, WatchedGroup):
                    dict.clear(group.twin)
                    dict.update(group.twin, group)
                    self._watched_by_twin[id(group.twin)] = group
                    groups[index] = group.twin
                elif not to_twins and id(group) in self._watched_by_twin:
                    watched = self._watched_by_twin[id(group)]
                    dict.clear(watched)
                    dict.update(watched, group)
                    groups[index] = watched

    def install(self) -> None:
        replace(WatchedGroup, "record", staticmethod(self.record))
        optimizer_class = torch.optim.Optimizer
        add_param_group, load_state_dict = optimizer_class.add_param_group, optimizer_class.load_state_dict
        watch = self.watch

        @functools.wraps(add_param_group)
        def add_watched_group(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            result = add_param_group(optimizer, *args, **kwargs)
            watch(optimizer)
            return result

        @functools.wraps(load_state_dict)
        def load_watched_state(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            result = load_state_dict(optimizer, *args, **kwargs)
            watch(optimizer)
            return result

        replace(optimizer_class, "add_param_group", add_watched_group)
        replace(optimizer_class, "load_state_dict", load_watched_state)


def watch_data_loaders(log: EventLog, iterations: Iterations) -> None:
    """Record the batch sizes every DataLoader yields, and the user line that made it."""
    from torch.utils.data import DataLoader, dataloader

    iterator_class = getattr(dataloader, "_BaseDataLoaderIter", None)
    if iterator_class is None:  # a torch without it: the step's own inputs are still observed
        return
    made_at: weakref.WeakKeyDictionary[Any, Where | None] = weakref.WeakKeyDictionary()
    source: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
    init, make_iterator, next_batch = DataLoader.__init__, DataLoader.__iter__, iterator_class.__next__

    @functools.wraps(init)
    def made(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made_at[self] = frames.caller()

    @functools.wraps(make_iterator)
    def iterate(self: Any) -> Any:
        iterator = make_iterator(self)
        source[iterator] = self
        return iterator

    @functools.wraps(next_batch)
    def yielded(self: Any) -> Any:
        batch = next_batch(self)
        loader = source.get(self)
        if loader is not None:
            log.write(LoaderBatch(iterations.count, id(loader), made_at.get(loader), leading_sizes(batch)))
        return batch

    replace(DataLoader, "__init__", made)
    replace(DataLoader, "__iter__", iterate)
    replace(iterator_class, "__next__", yielded)
