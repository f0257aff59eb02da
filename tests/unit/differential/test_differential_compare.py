"""The kinds of difference a comparison reports, and which one wins."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from csconform.testing.differential.compare import Opaque, comparable, difference, worst

F32 = np.float32


def bits(*patterns: int) -> np.ndarray:
    return np.array(patterns, dtype=np.uint32).view(np.float32)


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        (1.0, 1, None),  # numbers compare by value, whatever their Python or NumPy type
        (np.float64(0.5), 0.5, None),
        (1.0, None, "type"),
        ([1.0], (1.0,), "type"),
        (np.array([1.0], dtype=F32), np.array([1.0]), "dtype"),
        (np.array([1.0, 2.0], dtype=F32), np.array([1.0], dtype=F32), "shape"),
        ({"a": 1}, {"a": 1, "b": 2}, "layout"),
        ({"a": 1, "c": 5.0}, {"a": 1, "b": 2, "c": 6.0}, "value"),
        (np.array([0.0, 1.0], dtype=F32), np.array([math.nan, 1.0], dtype=F32), "nan"),
        (np.array([1e38], dtype=F32), np.array([math.inf], dtype=F32), "inf"),
        (0.1, 0.2, "value"),
        (1.0, 1.0 + 1e-7, "rounding"),
        (np.array([1.0, 1e-9], dtype=F32), np.array([1.0, 1e-9 * (1 + 1e-6)], dtype=F32), "rounding"),
        # judged element by element: an element off by half is a value, whatever sits beside it
        (np.array([1.0, 1e-9], dtype=F32), np.array([1.0, 2e-9], dtype=F32), "value"),
        (np.array([3.4e38, 1.0], dtype=F32), np.array([3.4e38, 1.0078125], dtype=F32), "value"),
        (np.array([0.0, 1.0], dtype=F32), np.array([1e-30, 1.0], dtype=F32), "value"),
        (np.array([0.0], dtype=F32), np.array([-0.0], dtype=F32), "signed zero"),
        (bits(0x7FC00000), bits(0x7FC00001), "nan payload"),
        (bits(0x7FC00000), bits(0x7FC00000), None),
        (Opaque("object"), Opaque("raised KeyError"), None),
        ("mixed", "float32", "value"),
        (True, np.bool_(True), None),
        ([1.0, 2.0], [1.0], "shape"),
    ],
)
def test_the_kind_of_a_difference(a: object, b: object, kind: str | None) -> None:
    assert difference(a, b) == kind
    assert difference(b, a) == kind


def test_nan_payloads_count_only_where_asked() -> None:
    assert difference({"x": bits(0x7FC00000)}, {"x": bits(0x7FC00001)}, nan_payloads=False) is None
    assert difference([bits(0x7FC00000)], [bits(0x7FC00001)], nan_payloads=True) == "nan payload"


def test_the_most_severe_kind_wins() -> None:
    assert difference({"x": 0.1, "y": np.array([1.0], dtype=F32)}, {"x": 0.2, "y": np.array([1, 2])}) == "dtype"
    assert worst(["rounding", None, "layout", "value"]) == "value"
    assert worst([None]) is None


def test_paths_under_the_program_directory_compare_relative(tmp_path: Path) -> None:
    one, two = tmp_path / "a", tmp_path / "b"
    assert difference(comparable(one / "c0", one), comparable(two / "c0", two)) is None
    assert isinstance(comparable(object()), Opaque)
