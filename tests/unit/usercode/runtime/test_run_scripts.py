"""lint --run on real scripts: FC-MNIST and a tiny GPT (torch), FC-MNIST for cerebras.pytorch, and
scripts that stop, exit or hang. Each run is a child process (about 10 to 20 s of CPU): the default
run keeps FC-MNIST with its bugs, FC-MNIST clean and one refusal; CSCONFORM_LINT_RUN_ALL=1 runs all."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from run_scripts import DATA, every_run, planted_line

from csconform.errors import InvalidInputError, ScriptRunError
from csconform.findings.finding import FileReport
from csconform.spec import Spec
from csconform.spec.releases import Release
from csconform.usercode.runtime import lint_run

FC_MNIST = DATA / "fc_mnist_torch.py"
TINY_GPT = DATA / "tiny_gpt_torch.py"
FC_MNIST_CSTORCH = DATA / "fc_mnist_cstorch.py"
TIMEOUT_S = 240.0
has_cstorch = (
    importlib.util.find_spec("cerebras") is not None and importlib.util.find_spec("cerebras.pytorch") is not None
)


def run(script: Path, args: list[str], spec: Spec, release: Release, **options: object) -> list[FileReport]:
    values: dict[str, object] = {"steps": 5, "timeout_s": TIMEOUT_S}
    values.update(options)
    return lint_run(script, args, spec=spec, release=release, **values)  # type: ignore[arg-type]


def found(reports: list[FileReport]) -> set[tuple[str, int | None]]:
    return {(finding.rule, finding.line) for report in reports for finding in report.findings}


def plants(*names: str) -> list[str]:
    return [argument for name in names for argument in ("--plant", name)]


@pytest.mark.spec("CODE-101", "CODE-102", "CODE-103", "CODE-104", "CODE-105")
def test_fc_mnist_with_five_planted_bugs_gets_each_at_its_line(spec: Spec, release: Release) -> None:
    bugs = {"branch": "CODE-101", "shrink": "CODE-102", "print": "CODE-103", "lr": "CODE-104", "clip-first": "CODE-105"}
    reports = run(FC_MNIST, plants(*bugs), spec, release)
    assert [report.path for report in reports] == [str(FC_MNIST)]
    assert found(reports) == {(rule, planted_line(FC_MNIST, bug)) for bug, rule in bugs.items()}
    assert reports[0].exit_code == 1


@pytest.mark.spec("CODE-101", "CODE-102", "CODE-103", "CODE-104", "CODE-105", "CODE-106")
def test_fc_mnist_as_written_is_silent(spec: Spec, release: Release) -> None:
    reports = run(FC_MNIST, [], spec, release)
    assert found(reports) == set() and reports[0].exit_code == 0


def script(tmp_path: Path, text: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


STEP = """
    import sys
    import torch

    @torch.compile
    def step(x):
        return x * 2
"""


@pytest.mark.spec("CODE-106")
def test_a_script_that_raises_before_its_first_step_is_refused_naming_the_line(
    tmp_path: Path, spec: Spec, release: Release
) -> None:
    path = script(tmp_path, STEP + "    open('/no/such/data.bin')\n    step(torch.ones(2))\n")
    with pytest.raises(ScriptRunError) as refused:
        run(path, [], spec, release)
    assert str(path) in str(refused.value) and "line 8" in str(refused.value)
    assert "FileNotFoundError" in str(refused.value) and "before its first step" in str(refused.value)


@pytest.mark.spec("CODE-106")
@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"steps": 0}, "--steps"),
        ({"timeout_s": -1.0}, "--timeout"),
        ({"step": "not a name"}, "--step"),
        ({"step": "missing"}, "missing"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(
    tmp_path: Path, spec: Spec, release: Release, options: dict[str, object], named: str
) -> None:
    with pytest.raises(InvalidInputError, match=named):
        run(script(tmp_path, STEP), [], spec, release, **options)


@pytest.mark.spec("CODE-106")
def test_a_script_that_is_not_python_or_not_there_is_unreadable(tmp_path: Path, spec: Spec, release: Release) -> None:
    broken = script(tmp_path, "def step(:\n")
    (report,) = run(broken, [], spec, release)
    assert report.exit_code == 2 and str(broken) in str(report.error) and "line 1" in str(report.error)
    (missing,) = run(tmp_path / "absent.py", [], spec, release)
    assert missing.exit_code == 2 and "absent.py" in str(missing.error)


@every_run
@pytest.mark.spec("CODE-101", "CODE-102", "CODE-103", "CODE-104", "CODE-105")
@pytest.mark.parametrize(
    ("script_path", "plant", "rule"),
    [
        (FC_MNIST, "branch", "CODE-101"),
        (FC_MNIST, "item", "CODE-101"),
        (FC_MNIST, "shrink", "CODE-102"),
        (FC_MNIST, "print", "CODE-103"),
        (FC_MNIST, "lr", "CODE-104"),
        (FC_MNIST, "torch-scheduler", "CODE-104"),
        (FC_MNIST, "clip-first", "CODE-105"),
        (FC_MNIST, "no-update", "CODE-105"),
        (TINY_GPT, "branch", "CODE-101"),
        (TINY_GPT, "shrink", "CODE-102"),
        (TINY_GPT, "lr", "CODE-104"),
        (TINY_GPT, "no-update", "CODE-105"),
    ],
    ids=lambda value: value.stem if isinstance(value, Path) else value,
)
def test_each_planted_bug_alone_is_found_at_its_line(
    script_path: Path, plant: str, rule: str, spec: Spec, release: Release
) -> None:
    reports = run(script_path, plants(plant), spec, release)
    assert {finding for finding in found(reports) if finding[0] != "CODE-106"} == {
        (rule, planted_line(script_path, plant))
    }


@every_run
@pytest.mark.spec("CODE-101", "CODE-102", "CODE-103", "CODE-104", "CODE-105", "CODE-106")
def test_the_tiny_gpt_as_written_is_silent(spec: Spec, release: Release) -> None:
    assert found(run(TINY_GPT, [], spec, release)) == set()


@every_run
@pytest.mark.skipif(not has_cstorch, reason="cerebras-pytorch is not installed here")
@pytest.mark.spec("CODE-101", "CODE-102", "CODE-104", "CODE-105")
@pytest.mark.parametrize(
    ("plant", "rule"),
    [(None, None), ("branch", "CODE-101"), ("shrink", "CODE-102"), ("lr", "CODE-104"), ("no-update", "CODE-105")],
)
def test_fc_mnist_for_cerebras_pytorch_on_its_cpu_backend(
    plant: str | None, rule: str | None, spec: Spec, release: Release
) -> None:
    reports = run(FC_MNIST_CSTORCH, plants(plant) if plant else [], spec, release)
    expected = {(rule, planted_line(FC_MNIST_CSTORCH, plant))} if plant and rule else set()
    assert {finding for finding in found(reports) if finding[0] != "CODE-106"} == expected


@every_run
@pytest.mark.spec("CODE-106")
@pytest.mark.parametrize(
    ("tail", "said"),
    [
        ("    sys.exit(3)\n", "exited (exit status 3) before its first step"),
        ("    print('no step')\n", "without calling a step csconform can observe"),
        ("    import time\n    time.sleep(60)\n", "time limit of 5 s ran out before the script's first step"),
    ],
    ids=["exit", "no-step", "hang"],
)
def test_a_script_that_never_reaches_a_step_is_refused(
    tmp_path: Path, spec: Spec, release: Release, tail: str, said: str
) -> None:
    with pytest.raises(ScriptRunError, match=said.replace("(", r"\(").replace(")", r"\)")):
        run(script(tmp_path, STEP + tail), [], spec, release, timeout_s=5.0 if "sleep" in tail else TIMEOUT_S)


@every_run
@pytest.mark.spec("CODE-106")
@pytest.mark.parametrize(
    ("tail", "line", "said"),
    [
        ("    step(torch.ones(2))\n    sys.exit(4)\n", 9, "exited (exit status 4)"),
        ("    step(torch.ones(2))\n    while True:\n        pass\n", None, "time limit"),
    ],
    ids=["exit", "hang"],
)
def test_a_script_that_stops_after_a_step_is_a_warning_where_it_stopped(
    tmp_path: Path, spec: Spec, release: Release, tail: str, line: int | None, said: str
) -> None:
    (report,) = run(script(tmp_path, STEP + tail), [], spec, release, timeout_s=20.0)
    (finding,) = report.findings
    assert finding.rule == "CODE-106" and finding.severity == "warning" and said in finding.message
    assert finding.line == line if line is not None else finding.line in (9, 10)


@every_run
@pytest.mark.spec("CODE-101", "CODE-104")
def test_a_step_named_with_step_is_compiled_and_observed(tmp_path: Path, spec: Spec, release: Release) -> None:
    path = script(
        tmp_path,
        """
        import torch

        model = torch.nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def train_step(x, scale):
            loss = (model(x) * scale).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss

        for step in range(4):
            optimizer.param_groups[0]["lr"] = 0.1 / (step + 1)
            train_step(torch.ones(3, 4), float(step))
        """,
    )
    assert found(run(path, [], spec, release, step="train_step")) == {("CODE-104", 15), ("CODE-101", 8)}
