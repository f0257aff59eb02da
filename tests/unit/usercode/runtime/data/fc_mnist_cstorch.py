"""FC-MNIST (784-500-500-10) written for cerebras.pytorch 2.10, trained for a few steps on its CPU
backend, with bugs planted on request.

    python fc_mnist_cstorch.py [--plant NAME ...]

The training step is traced with @cstorch.trace; the model is cstorch.compile'd; cstorch's SGD, its
linear LR schedule and its GradScaler; batches from cstorch.utils.data.DataLoader and DataExecutor;
the loss read in a step closure. Each planted line ends with the comment ``# planted: NAME``;
without --plant the script breaks no rule.
"""

import argparse
import tempfile

import cerebras.pytorch as cstorch
import torch
from torch.utils.data import DataLoader, TensorDataset

PLANTS = ("branch", "shrink", "lr", "no-update")
parser = argparse.ArgumentParser()
parser.add_argument("--plant", action="append", default=[], choices=PLANTS)
args = parser.parse_args()
PLANTED = frozenset(args.plant)
BATCH, STEPS = 64, 5
torch.manual_seed(0)


class FCMnist(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 500)
        self.fc2 = torch.nn.Linear(500, 500)
        self.out = torch.nn.Linear(500, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.fc2(torch.relu(self.fc1(images)))))


def input_fn() -> DataLoader:
    samples = STEPS * BATCH - (BATCH // 2 if "shrink" in PLANTED else 0)
    labels = torch.randint(0, 10, (samples,))
    images = torch.randn(10, 784)[labels] * 0.1
    images[2 * BATCH :] += 1.0  # from the third batch on, the images are brighter
    dataset = TensorDataset(images, labels)
    return DataLoader(dataset, batch_size=BATCH, drop_last="shrink" not in PLANTED)  # planted: shrink


backend = cstorch.backend("CPU", artifact_dir=tempfile.mkdtemp())
model = FCMnist()
compiled_model = cstorch.compile(model, backend)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = cstorch.optim.lr_scheduler.LinearLR(
    optimizer, initial_learning_rate=0.05, end_learning_rate=0.01, total_iters=STEPS
)
scaler = cstorch.amp.GradScaler(loss_scale="dynamic")


@cstorch.trace
def train_step(images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    loss = torch.nn.functional.cross_entropy(compiled_model(images), labels)
    if "branch" in PLANTED and images.mean() > 0.5:  # planted: branch
        loss = loss * 0.5
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)  # planted: no-update
    if "no-update" not in PLANTED:
        scaler.update()
    scheduler.step()
    return loss


@cstorch.step_closure
def log(step: int, loss: torch.Tensor) -> None:
    print(f"step {step}: loss {loss.item():.4f}")


executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=STEPS)
for step, (images, labels) in enumerate(executor):
    if "lr" in PLANTED and step == 2:
        optimizer.param_groups[0]["lr"] = 0.01  # planted: lr
    loss = train_step(images, labels)
    log(step, loss)
