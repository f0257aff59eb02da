"""Train FC-MNIST with the Estimator flavour (modelled on the CerebrasEstimator), as on a CS system.

The input function returns a Dataset that shuffles, repeats forever and batches with
``drop_remainder=True``; ``train`` runs an explicit number of steps, and every step's loss streams
to the host as it is computed. The same script on ``--target cpu`` is free of the CS-system
limitations (e.g. it may use a finite dataset, user hooks and eval metric ops).

    python examples/fc_mnist_estimator.py --steps 30
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from csconform import engine
from csconform.engine import amp, data, nn, optim
from csconform.engine.estimator import CerebrasEstimator, CSRunConfig, EstimatorSpec, ModeKeys
from csconform.engine.optim import lr_scheduler

TF_CONFIG = {"TF_CONFIG": json.dumps({"cluster": {"chief": ["localhost:2222"]}, "task": {"type": "chief", "index": 0}})}


def input_fn(params: dict) -> data.Dataset:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(10, 784)).astype(np.float32)
    labels = rng.integers(0, 10, size=4096)
    images = centres[labels] + rng.normal(scale=8.0, size=(4096, 784)).astype(np.float32)
    dataset = data.Dataset.from_tensor_slices((images, labels.astype(np.int64)))
    return dataset.shuffle(1000).repeat().batch(params["batch_size"], drop_remainder=True)


def make_model_fn(steps: int):
    """The model, optimizer and loss scaler live in this closure, as a model_fn's variables would."""
    nn.init.manual_seed(0)
    model = nn.fc_mnist()
    schedule = lr_scheduler.CosineDecayLR(initial_learning_rate=0.05, end_learning_rate=0.0, total_iters=steps)
    optimizer = optim.SGD(model.parameters(), lr=schedule, momentum=0.9)
    scaler = amp.GradScaler(loss_scale="dynamic")

    def model_fn(features, labels, mode, params):
        loss = nn.cross_entropy(model(features), labels)

        def train_op() -> None:
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

        return EstimatorSpec(mode, loss=loss.value, train_op=train_op if mode == ModeKeys.TRAIN else None)

    return model_fn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--target", choices=("cs", "cpu"), default="cs")
    args = parser.parse_args(argv)
    engine.set_target(args.target)
    estimator = CerebrasEstimator(
        make_model_fn(args.steps), config=CSRunConfig(), params={"batch_size": 128}, env=TF_CONFIG
    )
    result = estimator.train(
        input_fn, steps=args.steps, on_loss=lambda step, loss: print(f"step {step:3d}  loss {loss:.4f}")
    )
    first, last = np.mean(result.losses[:5]), np.mean(result.losses[-5:])
    print(f"{result.steps_run} steps on target {args.target}: mean loss {first:.3f} (first 5) -> {last:.3f} (last 5)")
    return 0 if last < first else 1


if __name__ == "__main__":
    raise SystemExit(main())
