"""Learning rates are functions of the global step (pytorch-limitations, "Learning Rate Scheduler",
"Scheduling Learning Rate", "Weight Streaming mode")."""

import math

import cerebras.pytorch as cstorch
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)  # expect: CODE-011
warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, step / 100))  # expect: CODE-011
good_scheduler = cstorch.optim.lr_scheduler.CosineDecayLR(  # near miss: the system's scheduler
    optimizer, initial_learning_rate=0.1, end_learning_rate=0.0, total_iters=1000
)


def adjust_learning_rate(optimizer, epoch, base_lr):
    """The classic PyTorch recipe: a rate computed on the host and set in the param groups."""
    lr = base_lr * (0.1 ** (epoch // 30))  # near miss: a variable called lr
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr  # expect: CODE-010


def set_initial_rate(optimizer, rate):
    # near miss: set once while the optimizer is built (as lr= would)
    for group in optimizer.param_groups:
        group["lr"] = rate


set_initial_rate(optimizer, 0.1)
for epoch in range(90):
    adjust_learning_rate(optimizer, epoch, 0.1)
    for group in optimizer.param_groups:
        group["lr"] *= 0.99  # expect: CODE-010
        group.update(lr=0.5)  # expect: CODE-010
        print("lr", group["lr"])  # near miss: read for logging


class HalvingScheduler(torch.optim.lr_scheduler.LRScheduler):
    """Near miss: subclassing is not constructing (the Model Zoo's 1.x schedulers subclass LambdaLR)."""

    def step(self, epoch=None):
        for group in self.optimizer.param_groups:
            group["lr"] = group["lr"] / 2  # expect: CODE-010


class ScalarAdam(torch.optim.Optimizer):
    """A weight-streaming optimizer must keep the rate a tensor."""

    def __init__(self, params, lr=1e-3):
        if lr < 0.0:  # near miss: the constructor's own argument
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr = group["lr"]
            step_size = float(lr)  # expect: CODE-012
            decay = math.sqrt(group["lr"])  # expect: CODE-012
            if group["lr"] > 0.01:  # expect: CODE-012
                step_size = step_size / 2
            for p in group["params"]:
                p.add_(p.grad * -group["lr"])  # near miss: the rate as a tensor
                p.add_(p.grad, alpha=-step_size * decay)
                print(group["lr"].item())  # expect: CODE-012
