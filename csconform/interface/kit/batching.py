"""Stacking a batch: what ``Dataset.batch`` does to the elements it gathers, for every implementation.

An element of the interface's Dataset is an array, a tuple of them (``(features, labels)``, a label
may be None for unlabelled data) or a dict of them; a batch stacks the elements along a new first
axis component by component, and a None component stays None. Elements of different shapes (a batch
of batches whose last one is short) are refused, as tf.data refuses them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.errors import InvalidInputError


def stack(elements: list[Any]) -> Any:
    """The batch of ``elements`` (at least one): tuples and dicts component-wise, None stays None."""
    first = elements[0]
    if first is None:
        return None
    if isinstance(first, tuple):
        return tuple(stack([element[index] for element in elements]) for index in range(len(first)))
    if isinstance(first, dict):
        return {key: stack([element[key] for element in elements]) for key in first}
    shapes = sorted({np.shape(element) for element in elements})
    if len(shapes) > 1:
        raise InvalidInputError(f"a batch stacks elements of one shape, got elements of shapes {shapes}")
    return np.stack(elements)
