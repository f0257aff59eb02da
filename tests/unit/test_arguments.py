"""The package's argument checks: what each kind takes and refuses, and its one message template.

These are the only tests of the refusals' wording; elsewhere a test asserts the error type and the
argument a refusal names.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from csconform.arguments import (
    INT64_MAX,
    check_callable,
    check_choice,
    check_flag,
    check_float_array,
    check_integer,
    check_integer_array,
    check_mapping,
    check_path,
    check_real,
    check_real_array,
    check_text,
    check_type,
    integer_problem,
    is_finite_real,
    is_integer,
    is_real,
    positive_seconds,
)
from csconform.errors import GradScalerConfigError, InvalidInputError


def refusal(check, *args, **kwargs) -> str:
    with pytest.raises(InvalidInputError) as caught:
        check(*args, **kwargs)
    return str(caught.value)


# --- one message template per kind ---------------------------------------------------------------


def test_type_template():
    assert refusal(check_type, "model", 3, str, "a Module") == "model must be a Module, got int"


def test_callable_template():
    assert refusal(check_callable, "loss_fn", 3) == "loss_fn must be a function (callable), got int"


def test_choice_template():
    assert refusal(check_choice, "mode", "fit", ("train", "eval")) == "mode must be one of 'train', 'eval'; got 'fit'"
    assert refusal(check_choice, "mode", [], ("train",)) == "mode must be one of 'train'; got a list"


def test_text_template():
    assert refusal(check_text, "system_id", "") == "system_id must be a non-empty string, got ''"


def test_mapping_template():
    assert refusal(check_mapping, "state_dict", [1]) == "state_dict must be a mapping (a dict), got list"


def test_path_template():
    assert refusal(check_path, "checkpoint_dir", "a\x00b") == (
        "checkpoint_dir must be a file path (non-empty text without NUL characters), got 'a\\x00b'"
    )


def test_flag_template():
    assert refusal(check_flag, "bias", 1) == "bias must be True or False, got 1"


@pytest.mark.parametrize(
    ("bounds", "value", "message"),
    [
        ({}, 2.0, "steps must be an integer, got 2.0"),
        ({"minimum": 1}, 0, "steps must be a positive integer, got 0"),
        ({"minimum": 0}, -1, "steps must be a non-negative integer, got -1"),
        ({"minimum": 2}, 1, "steps must be an integer >= 2, got 1"),
        ({"minimum": 1, "maximum": 2048}, 4096, "steps must be a positive integer up to 2048, got 4096"),
        ({"minimum": 1}, 2**63, f"steps must be a positive integer that fits in int64 (up to 2**63 - 1), got {2**63}"),
    ],
)
def test_integer_template(bounds, value, message):
    assert refusal(check_integer, "steps", value, **bounds) == message
    assert integer_problem("steps", value, **bounds) == message


@pytest.mark.parametrize(
    ("bounds", "value", "message"),
    [
        ({}, "1", "lr must be a finite number, got '1'"),
        ({"minimum": 0.0}, -1.0, "lr must be a finite number >= 0, got -1.0"),
        ({"minimum": 0.0, "exclusive_minimum": True}, 0.0, "lr must be a finite number > 0, got 0.0"),
        ({"maximum": 1.0, "exclusive_maximum": True}, 1.0, "lr must be a finite number < 1, got 1.0"),
        (
            {"minimum": 0.0, "maximum": 1.0, "exclusive_maximum": True},
            1.5,
            "lr must be a finite number in [0, 1), got 1.5",
        ),
        ({"minimum": 0.0, "finite": False}, float("nan"), "lr must be a number >= 0, got nan"),
    ],
)
def test_real_template(bounds, value, message):
    assert refusal(check_real, "lr", value, **bounds) == message


def test_array_templates():
    assert refusal(check_real_array, "logits", ["a"]) == "logits must be an array of real numbers, got dtype <U1"
    assert refusal(check_real_array, "x", [[1], [1, 2]]) == "x must be an array of real numbers, got list"
    assert (
        refusal(check_float_array, "x", np.ones((2, 3)), last_dim=4) == "x must have last dimension 4, got shape (2, 3)"
    )
    assert refusal(check_integer_array, "targets", [0.5]) == "targets must be an array of integers, got dtype float64"


def test_seconds_template():
    for text in ("soon", "0", "nan", "1e9"):
        with pytest.raises(argparse.ArgumentTypeError) as caught:
            positive_seconds(text)
        assert str(caught.value) == f"expected a positive number of seconds up to 604800 (a week), got {text!r}"


# --- what each kind takes --------------------------------------------------------------------------


def test_integers_are_python_or_numpy_integers_never_bools():
    assert [is_integer(v) for v in (3, np.int8(3), np.uint64(3), True, np.bool_(True), 3.0)] == [True] * 3 + [False] * 3
    assert check_integer("n", np.int64(7), minimum=1) == 7 and type(check_integer("n", np.int64(7))) is int


def test_integers_beyond_int64_are_refused_unless_the_check_takes_any_size():
    assert check_integer("step", INT64_MAX, minimum=0) == INT64_MAX
    with pytest.raises(InvalidInputError, match="step"):
        check_integer("step", INT64_MAX + 1, minimum=0)
    assert check_integer("seed", 2**128, minimum=0, maximum=None) == 2**128


def test_reals_refuse_nan_bools_and_text_and_take_infinity_only_when_asked():
    assert (is_real(True), is_real(np.float32(1)), is_finite_real(float("inf")), is_finite_real(2)) == (
        False,
        True,
        False,
        True,
    )
    assert check_real("tolerance", float("inf"), minimum=0.0, finite=False) == float("inf")
    for value in (float("nan"), float("inf"), True, "1"):
        with pytest.raises(InvalidInputError, match="tolerance"):
            check_real("tolerance", value, minimum=0.0)
    assert check_real("p", 0.0, minimum=0.0, maximum=1.0, exclusive_maximum=True) == 0.0


def test_a_caller_names_its_own_error_type():
    with pytest.raises(GradScalerConfigError, match="steps_per_increase"):
        check_integer("steps_per_increase", -1, minimum=0, error=GradScalerConfigError)
    with pytest.raises(GradScalerConfigError, match="init_scale"):
        check_real("init_scale", 0.0, minimum=0.0, exclusive_minimum=True, error=GradScalerConfigError)


def test_checks_return_the_value_converted():
    assert check_path("out", "a/b") == Path("a/b")
    assert check_flag("bias", np.bool_(False)) is False
    assert check_float_array("x", [1, 2]).dtype == np.float32
    assert check_real_array("x", np.array([1, 2], dtype=np.int16)).dtype == np.int16
    assert positive_seconds("2.5") == 2.5
