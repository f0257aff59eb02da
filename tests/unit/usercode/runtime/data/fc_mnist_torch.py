"""FC-MNIST (784-500-500-10) trained for a few steps on CPU, on synthetic data, with bugs planted on request.

    python fc_mnist_torch.py [--plant NAME ...]

The model is compiled with torch.compile (the step csconform observes is its forward); mixed
precision with torch.amp.GradScaler, gradient clipping, SGD with momentum. Each planted line ends
with the comment ``# planted: NAME`` (the line a checker must point at); without --plant the script
breaks no rule.
"""

import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

PLANTS = ("branch", "shrink", "lr", "torch-scheduler", "no-update", "clip-first", "item", "print")
parser = argparse.ArgumentParser()
parser.add_argument("--plant", action="append", default=[], choices=PLANTS)
args = parser.parse_args()
PLANTED = frozenset(args.plant)
BATCH = 64
torch.manual_seed(0)


class FCMnist(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 500)
        self.fc2 = torch.nn.Linear(500, 500)
        self.out = torch.nn.Linear(500, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(images))
        if "branch" in PLANTED and images.mean() > 0.5:  # planted: branch
            h = h * 0.5
        h = torch.relu(self.fc2(h))
        if "print" in PLANTED:
            print("largest activation", h.abs().max())  # planted: print
        if "item" in PLANTED:
            h = h / float(h.abs().max())  # planted: item
        return self.out(h)


def synthetic_mnist(samples: int) -> TensorDataset:
    """Ten Gaussian blobs; from the third batch on, the images are brighter."""
    labels = torch.randint(0, 10, (samples,))
    images = torch.randn(10, 784)[labels] * 0.1
    images[2 * BATCH :] += 1.0
    return TensorDataset(images, labels)


dataset = synthetic_mnist(4 * BATCH + BATCH // 2 if "shrink" in PLANTED else 5 * BATCH)
loader = DataLoader(dataset, batch_size=BATCH, drop_last="shrink" not in PLANTED)  # planted: shrink
model = torch.compile(FCMnist())
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.amp.GradScaler("cpu")
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2) if "torch-scheduler" in PLANTED else None

for step, (images, labels) in enumerate(loader):
    if "lr" in PLANTED and step == 2:
        for group in optimizer.param_groups:
            group["lr"] = 0.01  # planted: lr
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    if "clip-first" in PLANTED:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # planted: clip-first
    scaler.unscale_(optimizer)
    if "clip-first" not in PLANTED:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)  # planted: no-update
    if "no-update" not in PLANTED:
        scaler.update()
    if scheduler is not None:
        scheduler.step()  # planted: torch-scheduler
    print(f"step {step}: loss {loss.item():.4f}")
