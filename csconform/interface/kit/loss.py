"""The ``Loss`` value every implementation's loss functions return: a scalar that scales and starts backward.

The interface's ``Loss`` (:mod:`csconform.interface.nn`) is read as a number (``value``, ``item()``,
``float(loss)``) and multiplied by a real number for loss scaling, ``loss * scale`` or
``scale * loss``, whose ``backward()`` multiplies every gradient by the scale. An implementation's
``Loss`` derives from :class:`Loss` and says what its value is, how it is scaled and how its backward
pass runs; the arithmetic is here.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from csconform.arguments import is_real


class Loss(abc.ABC):
    @property
    @abc.abstractmethod
    def value(self) -> np.float32:
        """The (scaled) loss as a float32 scalar."""

    @abc.abstractmethod
    def scaled(self, factor: float) -> Loss:
        """This loss multiplied by ``factor``: its backward pass multiplies every gradient by it too."""

    @abc.abstractmethod
    def backward(self) -> None:
        """Accumulate d(loss)/d(parameter) into each parameter's ``grad``."""

    def __float__(self) -> float:
        return float(self.value)

    def item(self) -> float:
        return float(self.value)

    def __mul__(self, factor: Any) -> Loss:
        if not is_real(factor):
            return NotImplemented
        return self.scaled(float(factor))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"{type(self).__name__}(value={self.value!r})"
