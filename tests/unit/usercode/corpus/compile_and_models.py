"""One compile per run, one compiled model per step (pytorch-limitations, "Static Graphs"; cstorch.compile)."""

import cerebras.pytorch as cstorch
import torch


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        hidden = self.linear(x)
        if hidden.mean() > 0:  # expect: CODE-001
            hidden = torch.relu(hidden)
        return hidden


encoder = Encoder()
head = torch.nn.Linear(8, 2)
compiled_encoder = cstorch.compile(encoder, backend="CSX")
compiled_head = cstorch.compile(head, backend="CSX")

for size in (8, 16):
    model = torch.nn.Linear(size, 2)
    compiled = cstorch.compile(model, backend="CSX")  # expect: CODE-003


@cstorch.trace
def step(batch):
    features = compiled_encoder(batch)
    return compiled_head(features)  # expect: CODE-005


@cstorch.trace
def recompiling_step(batch):
    again = cstorch.compile(encoder, backend="CSX")  # expect: CODE-003
    return again(batch)


# near miss: one compile, before the loop, and one compiled model in the step
single = cstorch.compile(torch.nn.Linear(8, 2), backend="CSX")


@cstorch.trace
def good_step(batch):
    return single(batch)
