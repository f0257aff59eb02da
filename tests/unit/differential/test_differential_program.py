"""Programs: literals that evaluate back bit-exactly, call labels read from the text, repros that parse back."""

from __future__ import annotations

import math

import numpy as np
import pytest

from csconform.errors import InvalidInputError
from csconform.testing.differential.program import Expr, Program, call, literal, parse_statements, program_from_text


@pytest.mark.parametrize(
    "value",
    [
        1.5,
        -0.0,
        math.inf,
        -math.inf,
        np.float64(0.1),
        np.int64(-3),
        np.uint64(2**63),
        [1, (2.5,), {"a": None, 1: True}],
        np.array([[1.0, -0.0], [math.inf, 2.5e-45]], dtype=np.float32),
        np.array([1, 2], dtype=np.int32),
    ],
)
def test_a_literal_evaluates_to_its_value(value: object) -> None:
    back = eval(literal(value), {"np": np, "math": math})
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and back.shape == value.shape
        assert np.array_equal(back.view(np.uint8), value.view(np.uint8))
    else:
        assert repr(back) == repr(value)


def test_a_nan_payload_prints_as_bits_and_comes_back_exactly() -> None:
    bits = np.array([0x7FC00001, 0xFF800001, 0x7FC00000], dtype=np.uint32)
    text = literal(bits.view(np.float32))
    assert "0x7fc00001" in text
    assert np.array_equal(eval(text, {"np": np}).view(np.uint32), bits)


def test_an_expression_prints_as_it_is() -> None:
    assert call("impl.optim.SGD", Expr("[p0]"), lr=0.5) == "impl.optim.SGD([p0], lr=0.5)"


def test_call_labels_come_from_the_text() -> None:
    statements = parse_statements(
        (
            "p0 = impl.nn.Parameter(np.array([1.0], dtype=np.float32))",
            "opt = impl.optim.SGD([p0], lr=0.5)",
            "scaler = impl.amp.GradScaler()",
            "p0.grad = np.array([1.0], dtype=np.float32)",
            "scaler.update(0.0)",
            "opt.param_groups[0]['lr'] = 0.1",
            "schedule = impl.optim.lr_scheduler.StepLR(initial_learning_rate=0.1, step_size=2, gamma=0.5)",
            "schedule(3)",
            "ds = impl.data.Dataset.from_tensor_slices(np.zeros((4, 2)))",
            "ds = ds.batch(2)",
            "it = ds.iterator(seed_entropy=1)",
            "next(it)",
            "impl.precision.quantize([1.0], 'float16')",
            "saved = opt.state_dict()",
            "saved",
        )
    )
    assert [s.label for s in statements] == [
        "Parameter.__init__",
        "SGD.__init__",
        "GradScaler.__init__",
        "Parameter.grad=",
        "GradScaler.update",
        "SGD.param_groups[]=",
        "StepLR.__init__",
        "StepLR.__call__",
        "Dataset.from_tensor_slices",
        "Dataset.batch",
        "Dataset.iterator",
        "DatasetIterator.__next__",
        "precision.quantize",
        "SGD.state_dict",
        "expression",
    ]
    assert statements[1].binds == "opt" and statements[1].binds_kind == "SGD"
    assert statements[13].binds_kind is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x = (", "not a Python statement"),
        ("a = 1; b = 2", "one assignment or one expression"),
        ("for i in range(2): pass", "one assignment or one expression"),
        ("impl = 3", "may not rebind 'impl'"),
    ],
)
def test_what_is_not_a_program_statement_is_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        parse_statements((text,))


def test_a_printed_repro_reads_back_as_the_same_program() -> None:
    program = Program(
        "grad_scaler", "cpu", ("scaler = impl.amp.GradScaler(loss_scale='#dynamic')", "scaler.update(0.0)")
    )
    text = program.repro("csconform.adapters.cstorch", notes={1: "A: refuses | B: returns"})
    assert 'impl = importlib.import_module("csconform.adapters.cstorch")' in text
    assert "scaler.update(0.0)  # A: refuses | B: returns" in text
    assert program_from_text("grad_scaler", "cpu", text) == program


def test_the_objects_a_statement_leaves_live() -> None:
    """What a statement binds is observed from then on only if it returned an object of a known kind;
    a variable it failed to rebind is no longer observed (A and B decide this the same way)."""
    (scaler, number, failed) = parse_statements(
        ("scaler = impl.amp.GradScaler(loss_scale='dynamic')", "x = 1 + 1", "scaler = impl.amp.GradScaler(-1)")
    )
    live = scaler.kinds_after({}, returned=True)
    assert live == {"scaler": "GradScaler"}
    assert number.kinds_after(live, returned=True) == live
    assert failed.kinds_after(live, returned=False) == {}
    assert scaler.kinds_after({}, returned=False) == {}
