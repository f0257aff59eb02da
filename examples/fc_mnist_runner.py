"""Train FC-MNIST on the reference engine with the PyTorch-flavoured runner, as on a CS system.

Mixed precision (float16 compute, FP32 weights), dynamic loss scaling, a polynomial learning-rate
schedule of the global step, losses streamed live, checkpoints every ``--checkpoint-steps`` steps.
The run stops part-way, resumes from its last checkpoint in a fresh runner, and checks that the
result is bit-for-bit the one an uninterrupted run reaches.

    python examples/fc_mnist_runner.py --steps 40 --stop-at 25 --checkpoint-steps 10
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from csconform.engine import amp, data, nn, optim
from csconform.engine.optim import lr_scheduler
from csconform.engine.runner import Runner

BATCH = 128


def synthetic_mnist(samples: int, seed: int = 0) -> data.Dataset:
    """Ten Gaussian blobs in 784 dimensions: learnable, and no download needed."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(10, 784)).astype(np.float32)
    labels = rng.integers(0, 10, size=samples)
    images = centres[labels] + rng.normal(scale=8.0, size=(samples, 784)).astype(np.float32)
    return (
        data.Dataset.from_tensor_slices((images, labels.astype(np.int64)))
        .shuffle(1000)
        .repeat()
        .batch(BATCH, drop_remainder=True)
    )


def make_runner(steps: int, checkpoint_steps: int, checkpoint_dir: Path) -> Runner:
    nn.init.manual_seed(0)  # the layers' initial weights
    model = nn.fc_mnist()
    schedule = lr_scheduler.PolynomialLR(
        initial_learning_rate=0.05, end_learning_rate=0.005, total_iters=steps, power=1.0
    )
    optimizer = optim.SGD(model.parameters(), lr=schedule, momentum=0.9)
    scaler = amp.GradScaler(loss_scale="dynamic", steps_per_increase=20)
    return Runner(
        model,
        nn.cross_entropy,
        optimizer,
        grad_scaler=scaler,
        checkpoint_steps=checkpoint_steps,
        checkpoint_dir=checkpoint_dir,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--stop-at", type=int, default=35, help="interrupt after this many steps")
    parser.add_argument("--checkpoint-steps", type=int, default=10)
    args = parser.parse_args(argv)
    dataset = synthetic_mnist(4096)

    with tempfile.TemporaryDirectory() as folder:
        uninterrupted = make_runner(args.steps, args.checkpoint_steps, Path(folder) / "full")
        for _ in uninterrupted.train(dataset, args.steps, data_seed=7):
            pass
        expected = uninterrupted.model.state_dict()

        first = make_runner(args.steps, args.checkpoint_steps, Path(folder) / "run")
        last_checkpoint = None
        for output in first.train(dataset, args.steps, data_seed=7):
            mark = f"  checkpoint {output.checkpoint.name}" if output.checkpoint else ""
            print(f"step {output.step:3d}  loss {output.loss:.4f}  loss scale {output.loss_scale:g}{mark}")
            last_checkpoint = output.checkpoint or last_checkpoint
            if output.step + 1 == args.stop_at:
                print(f"-- stopped after {args.stop_at} steps; resuming from {last_checkpoint.name}")
                break

        resumed = make_runner(args.steps, args.checkpoint_steps, Path(folder) / "run")
        for output in resumed.train(dataset, args.steps, resume_from=last_checkpoint):
            print(f"step {output.step:3d}  loss {output.loss:.4f}  loss scale {output.loss_scale:g}")
        final = resumed.model.state_dict()

    identical = all(np.array_equal(final[name], expected[name]) for name in expected)
    print(f"resumed run is bit-identical to the uninterrupted run: {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
