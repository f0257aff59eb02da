"""The examples a new user runs first keep working: FC-MNIST through the runner and the Estimator."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> int:
    namespace = runpy.run_path(str(EXAMPLES / name))
    return namespace["main"](list(args))


def test_runner_example_streams_losses_and_resumes_bit_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_example("fc_mnist_runner.py", "--steps", "12", "--stop-at", "7", "--checkpoint-steps", "3") == 0
    out = capsys.readouterr().out
    assert "checkpoint checkpoint_5.ckpt" in out
    assert "-- stopped after 7 steps; resuming from checkpoint_5.ckpt" in out
    assert "resumed run is bit-identical to the uninterrupted run: True" in out


@pytest.mark.parametrize("target", ["cs", "cpu"])
def test_estimator_example_trains_to_a_falling_loss(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    import csconform.engine

    try:
        assert run_example("fc_mnist_estimator.py", "--steps", "15", "--target", target) == 0
    finally:
        csconform.engine.reset()
    out = capsys.readouterr().out
    assert out.count(" loss ") >= 15 and f"15 steps on target {target}" in out
