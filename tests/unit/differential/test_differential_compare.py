"""The kinds of difference a comparison reports, and which one wins."""

from __future__ import annotations

import math
import pickle
from collections import namedtuple
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from csconform.testing.differential.compare import SEVERITY, Opaque, comparable, difference, worst

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


class _Hostile:
    """Everything a value can do wrong: its repr, ==, iteration and attribute access raise."""

    def __repr__(self) -> str:
        raise RuntimeError("repr")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("==")

    def __iter__(self) -> Any:
        raise RuntimeError("iter")

    __hash__ = object.__hash__


class _BadMapping(Mapping[str, int]):
    def __getitem__(self, key: str) -> int:
        raise KeyError(key)

    def __iter__(self) -> Any:
        raise RuntimeError("iteration")

    def __len__(self) -> int:
        return 1


def _itself() -> list[Any]:
    value: list[Any] = [1.0]
    value.append(value)
    return value


Pair = namedtuple("Pair", "x y")
ODD_VALUES = [
    Pair(1.0, 2),
    _Hostile(),
    _BadMapping(),
    {_Hostile(): 1.0},
    np.datetime64("2026-11-28"),
    np.array(["2026-11-28"], dtype="datetime64[D]"),
    np.array([_Hostile()], dtype=object),
    np.zeros(2, dtype=[("a", "f4"), ("b", "i4")]),
    Fraction(1, 3),
    Decimal("0.1"),
    _itself(),
    b"bytes",
    {1, 2},
]


@pytest.mark.parametrize("value", ODD_VALUES, ids=[type(value).__name__ for value in ODD_VALUES])
def test_any_value_is_made_comparable_plain_data_that_pickles_and_compares(value: Any) -> None:
    plain = comparable(value)
    assert pickle.loads(pickle.dumps(plain)) is not None or plain is None
    for other in (*ODD_VALUES, 1.0, None):
        assert difference(plain, comparable(other)) in (None, *SEVERITY)
    assert difference(plain, comparable(value)) is None  # a value equals itself, whatever its == does


def test_a_named_tuple_is_its_fields_and_numbers_of_other_types_are_their_values() -> None:
    assert comparable(Pair(1.0, 2)) == (1.0, 2) and difference(comparable(Pair(1.0, 2)), (1.0, 2)) is None
    assert difference(comparable(Fraction(1, 2)), 0.5) is None
    assert difference(comparable(np.datetime64("2026-11-28")), comparable(np.datetime64("2026-11-29"))) == "value"
