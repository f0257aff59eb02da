"""The user's training step run on CPU (specs/user_code_run.yaml): from what a run observed to findings.

Each check hands the judge of ``lint --run`` the events a run of a script would record (the graphs
PyTorch captured, the step's inputs, DataLoader batches, learning-rate writes, GradScaler calls, how
the run ended) and checks the findings: the rule, its severity, the file and line, and what the
message names. Runs of real scripts (FC-MNIST, a tiny GPT, the vendor's package) are in
tests/unit/usercode/runtime. Like the validator's checks, these exercise the harness's own tool, not
the implementation under test, and are gated on the ``performance`` capability.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from csconform.findings.finding import Finding
from csconform.spec import default_specs_dir, load_catalogue, load_spec
from csconform.usercode.runtime.events import (
    AmpCall,
    Compile,
    Event,
    GraphBreak,
    LoaderBatch,
    LrWrite,
    RunEnd,
    StepCall,
    Where,
)
from csconform.usercode.runtime.judge import judge, value_read

pytestmark = pytest.mark.capability("performance")

SPEC = load_spec()
RELEASE = load_catalogue(default_specs_dir()).newest
SCRIPT = "/project/train.py"
HELPER = "/project/model.py"


def at(line: int, file: str = SCRIPT) -> Where:
    return Where(file, line)


def findings(events: list[Event]) -> list[Finding]:
    verdicts = judge(events, SCRIPT, SPEC, RELEASE, lambda file: file.removeprefix("/project/"))
    return [finding for collected in verdicts.files.values() for finding in collected.violations + collected.warnings]


def steps(*tensors: str, call_line: int = 30) -> list[Event]:
    return [StepCall(number, at(call_line), (shape,)) for number, shape in enumerate(tensors, start=1)]


def graph(iteration: int, frame: int, function: str = "forward", **fields: object) -> Compile:
    values: dict[str, object] = {
        "recompile": 0,
        "file": HELPER,
        "graph_break": False,
        "reason": "return_value",
        "break_at": None,
        "first_op_at": at(12, HELPER),
    }
    values.update(fields)
    return Compile(iteration=iteration, frame=frame, function=function, **values)  # type: ignore[arg-type]


def only(found: list[Finding], rule: str) -> Finding:
    assert [finding.rule for finding in found] == [rule], found
    return found[0]


BRANCH_BREAK = graph(1, 0, graph_break=True, reason="generic_jump TensorVariable()", break_at=at(20, HELPER))


@pytest.mark.spec("CODE-101")
def test_a_graph_first_captured_after_a_branch_is_reported_on_the_branch() -> None:
    """TorchDynamo names the rest of a function after a graph break at line N ``..._at_N`` (torch 2.4)."""
    events = [
        *steps("float32[4, 8]", "float32[4, 8]", "float32[4, 8]"),
        BRANCH_BREAK,
        graph(1, 1, "torch_dynamo_resume_in_forward_at_20", first_op_at=at(23, HELPER)),
        graph(3, 2, "torch_dynamo_resume_in_forward_at_20", first_op_at=at(21, HELPER)),
    ]
    finding = only(findings(events), "CODE-101")
    assert (finding.path, finding.line, finding.severity) == ("model.py", 20, "violation")
    assert "iteration 3" in finding.message and "generic_jump TensorVariable()" in finding.message


@pytest.mark.spec("CODE-101")
def test_a_new_graph_of_the_same_function_is_put_on_the_value_branch_before_it() -> None:
    """torch 2.13 may keep the function's own name: the nearest break on a value before the new ops."""
    events = [
        *steps("float32[4, 8]", "float32[4, 8]", "float32[4, 8]"),
        BRANCH_BREAK,
        graph(1, 3, graph_break=True, reason="Attempted to inline function marked as skipped", break_at=at(15, HELPER)),
        graph(3, 4, first_op_at=at(21, HELPER)),
    ]
    assert only(findings(events), "CODE-101").line == 20


@pytest.mark.spec("CODE-101")
def test_a_recompilation_names_the_guard_that_failed() -> None:
    events = [
        *steps("float32[4, 8]", "float32[4, 8]"),
        graph(1, 0),
        graph(2, 0, recompile=1, guard_failures=("L['scale'] == 0.5",), first_op_at=at(14, HELPER)),
    ]
    finding = only(findings(events), "CODE-101")
    assert finding.line == 14 and "L['scale'] == 0.5" in finding.message and "forward" in finding.message


@pytest.mark.spec("CODE-101")
def test_graphs_of_the_first_iteration_and_of_library_code_alone_are_no_change() -> None:
    events = [
        *steps("float32[4, 8]", "float32[4, 8]", "float32[4, 8]"),
        graph(1, 0),
        graph(1, 1, "torch_dynamo_resume_in_forward_at_20"),
        graph(2, 5, "step", file=str(Path(sysconfig.get_paths()["purelib"]) / "torch/optim/adam.py"), first_op_at=None),
    ]
    assert findings(events) == []


@pytest.mark.spec("CODE-102", "CODE-101")
def test_a_shrinking_data_loader_is_reported_where_it_was_made_with_pytorchs_recompilation() -> None:
    events: list[Event] = [
        LoaderBatch(0, 7, at(40), (64, 64)),
        *steps("float32[64, 784]"),
        *[LoaderBatch(iteration, 7, at(40), (64, 64)) for iteration in (1, 2, 3)],
        StepCall(2, at(45), ("float32[64, 784]",)),
        StepCall(3, at(45), ("float32[64, 784]",)),
        StepCall(4, at(45), ("float32[64, 784]",)),
        LoaderBatch(4, 7, at(40), (32, 32)),
        StepCall(5, at(45), ("float32[32, 784]",)),
        graph(5, 0, recompile=1, guard_failures=("tensor 'images' size mismatch at index 0. expected 64, actual 32",)),
    ]
    finding = only(findings(events), "CODE-102")
    assert (finding.path, finding.line, finding.severity) == ("train.py", 40, "violation")
    assert "32 samples" in finding.message and "64 samples" in finding.message and "iteration 5" in finding.message
    assert "tensor 'images' size mismatch" in finding.message


@pytest.mark.spec("CODE-102")
def test_a_step_given_another_shape_without_a_data_loader_is_reported_where_it_was_called() -> None:
    finding = only(findings(steps("int64[8, 17]", "int64[8, 17]", "int64[4, 17]", call_line=79)), "CODE-102")
    assert finding.line == 79 and "int64[4, 17] at iteration 3" in finding.message


@pytest.mark.spec("CODE-103")
def test_a_graph_break_on_a_tensor_value_is_a_warning_on_its_line() -> None:
    reason = (
        "Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace builtin operator "
        "`print` with argument types ['str', 'Tensor']"
    )
    events = [*steps("float32[4, 8]"), graph(1, 0, graph_break=True, reason=reason, break_at=at(38, HELPER))]
    finding = only(findings(events), "CODE-103")
    assert (finding.line, finding.severity, finding.level) == (38, "warning", "reference")
    assert "a tensor printed" in finding.message and "builtin operator `print`" in finding.message


@pytest.mark.spec("CODE-103")
def test_a_break_torchdynamo_logged_after_an_empty_graph_counts_too() -> None:
    events = [*steps("float32[4, 8]"), GraphBreak(1, at(17, HELPER), "Tensor.item")]
    finding = only(findings(events), "CODE-103")
    assert (finding.path, finding.line) == ("model.py", 17) and "Python number" in finding.message


@pytest.mark.spec("CODE-105")
def test_a_call_a_compiled_step_made_at_a_graph_break_is_put_on_the_breaks_line() -> None:
    """torch 2.4 gives the compiled frame the line before the call; PyTorch's record of the break has it."""
    skipped = "'inline in skipfiles: GradScaler.step | step .../grad_scaler.py, skipped according trace_rules'"
    calls = [
        AmpCall(1, at(65), "scale", 9, captured=True),
        AmpCall(1, at(65), "backward", captured=True),
        AmpCall(1, at(66), "step", 9, 1, captured=True),
        AmpCall(2, at(65), "scale", 9, captured=True),
    ]
    breaks = [GraphBreak(1, at(65), "Unsupported Tensor.backward() call"), GraphBreak(1, at(67), skipped)]
    found = findings([*steps("float32[4, 8]", "float32[4, 8]"), *breaks, *calls, RunEnd("raised", 2)])
    finding = only([finding for finding in found if finding.rule != "CODE-106"], "CODE-105")
    assert finding.line == 67 and "not followed by update()" in finding.message


@pytest.mark.spec("CODE-103")
def test_a_break_at_a_call_pytorch_does_not_trace_is_not_the_users() -> None:
    reason = (
        "Attempted to inline function marked as skipped\n  Explanation: ... `GradScaler.step` should not be traced."
    )
    events = [*steps("float32[4, 8]"), graph(1, 0, graph_break=True, reason=reason, break_at=at(66))]
    assert findings(events) == []


@pytest.mark.spec("CODE-103")
@pytest.mark.parametrize(
    ("reason", "read"),
    [
        ("generic_jump TensorVariable()", "branch"),
        ("Unsupported Tensor.item() call with capture_scalar_outputs=False", "number"),
        ("Tensor.item", "number"),
        ("builtin: bool [<class 'torch._dynamo.variables.tensor.TensorVariable'>] False", "bool"),
        ("Tensor.tolist() with non-integer tensor", "list"),
        ("Input tensor for tolist must be an integer tensor", "list"),
        ("builtin: print [<class 'ConstantVariable'>, <class 'TensorVariable'>] False", "printed"),
        ("Dynamic shape operator", "output shape"),
        ("dynamic shape operator: aten.nonzero.default; to enable, set ...", "output shape"),
        (
            "Failed to trace builtin operator\n  Explanation: ... builtin operator `print` with argument types ['str']",
            None,
        ),
        ("Unsupported Tensor.backward() call", None),
        ("Call to `torch._dynamo.graph_break()`", None),
    ],
)
def test_the_value_reads_in_pytorchs_words_of_torch_2_4_and_2_13(reason: str, read: str | None) -> None:
    said = value_read(reason)
    assert (said is None) if read is None else (said is not None and read in said)


@pytest.mark.spec("CODE-104")
def test_a_learning_rate_written_during_the_run_is_reported_on_the_writing_line() -> None:
    events: list[Event] = [
        *steps("float32[4, 8]", "float32[4, 8]", "float32[4, 8]"),
        LrWrite(2, at(60), "user code", "0.05", "0.01"),
        LrWrite(3, at(60), "user code", "0.01", "0.01"),
        LrWrite(2, at(73), "torch.optim.lr_scheduler.StepLR.step", "0.05", "0.005"),
    ]
    found = findings(events)
    assert [(finding.rule, finding.line) for finding in found] == [("CODE-104", 60), ("CODE-104", 73)]
    assert "iteration 2" in found[0].message and "0.05 -> 0.01" in found[0].message
    assert "torch.optim.lr_scheduler.StepLR.step" in found[1].message


def amp(iteration: int, line: int, call: str, optimizer: int = 1, scaler: int = 9, api: str = "") -> AmpCall:
    no_scaler = call in ("backward", "clip")
    return AmpCall(
        iteration, at(line), call, 0 if no_scaler else scaler, optimizer if call in ("step", "unscale_") else 0, api
    )


def iteration(number: int, *calls: str) -> list[AmpCall]:
    lines = {"scale": 61, "backward": 61, "unscale_": 63, "clip": 64, "step": 66, "update": 68}
    return [amp(number, lines[call], call, api="clip_grad_norm_" if call == "clip" else "") for call in calls]


DOCUMENTED = ("scale", "backward", "unscale_", "clip", "step", "update")


@pytest.mark.spec("CODE-105")
@pytest.mark.parametrize(
    "calls",
    [
        [*iteration(1, *DOCUMENTED), *iteration(2, *DOCUMENTED)],
        [*iteration(1, "scale", "backward", "step", "update")],
        [*iteration(1, "scale", "backward", "scale", "backward", "unscale_", "clip", "step", "update")],
        [
            amp(1, 61, "scale"),
            amp(1, 61, "backward"),
            amp(1, 66, "step", 1),
            amp(1, 67, "step", 2),
            amp(1, 68, "update"),
        ],
    ],
    ids=["documented", "no-unscale", "accumulation", "two-optimizers"],
)
def test_the_documented_orders_are_silent(calls: list[Event]) -> None:
    assert findings([*steps("float32[4, 8]"), *calls, RunEnd("budget", 2)]) == []


@pytest.mark.spec("CODE-105")
@pytest.mark.parametrize(
    ("calls", "end", "line", "said"),
    [
        (iteration(1, "backward", "scale", "step", "update"), "budget", 61, "backward() ran before GradScaler.scale()"),
        (iteration(1, "scale", "backward", "clip", "unscale_", "step", "update"), "budget", 64, "still scaled"),
        (iteration(1, "scale", "backward", "step", "unscale_", "update"), "budget", 63, "unscale_() came after step()"),
        (
            [*iteration(1, "scale", "backward", "step"), *iteration(2, "scale", "backward", "step")],
            "raised",
            66,
            "not followed by update() before the next scale()",
        ),
        (iteration(1, "scale", "backward", "step", "step"), "raised", 66, "before the next step()"),
        (iteration(1, "scale", "backward", "step"), "budget", 66, "before the run ended"),
        (iteration(1, "scale", "backward", "update"), "budget", 68, "update() came without a step()"),
    ],
    ids=["backward-first", "clip-first", "unscale-late", "no-update", "two-steps", "no-final-update", "update-alone"],
)
def test_each_departure_from_the_order_is_reported_on_its_call(
    calls: list[Event], end: str, line: int, said: str
) -> None:
    found = [
        finding for finding in findings([*steps("float32[4, 8]"), *calls, RunEnd(end, 1)]) if finding.rule != "CODE-106"
    ]
    finding = only(found, "CODE-105")
    assert (finding.line, finding.severity) == (line, "violation") and said in finding.message


@pytest.mark.spec("CODE-106")
def test_a_script_that_raises_after_its_first_step_is_a_warning_where_it_raised() -> None:
    end = RunEnd("raised", 2, at(66), "RuntimeError: step() has already been called since the last update().")
    finding = only(findings([*steps("float32[4, 8]", "float32[4, 8]"), end]), "CODE-106")
    assert (finding.line, finding.severity) == (66, "warning")
    assert "RuntimeError: step() has already been called" in finding.message and "iteration 2" in finding.message


@pytest.mark.spec("CODE-106")
@pytest.mark.parametrize("status", ["budget", "finished"])
def test_a_run_that_ends_as_asked_is_silent(status: str) -> None:
    assert findings([*steps("float32[4, 8]"), RunEnd(status, 1)]) == []


@pytest.mark.spec("CODE-104")
def test_findings_in_another_user_file_name_that_file() -> None:
    verdicts = judge(
        [*steps("float32[4, 8]"), LrWrite(1, at(9, HELPER), "user code", "0.1", "0.2")],
        SCRIPT,
        SPEC,
        RELEASE,
        lambda file: file.removeprefix("/project/"),
    )
    assert sorted(verdicts.files) == ["model.py", "train.py"]
    assert verdicts.files["train.py"].violations == [] and verdicts.files["model.py"].violations[0].line == 9
