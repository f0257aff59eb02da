"""The traced step: no branch on a tensor's value, no value read outside a step closure (pytorch-limitations,
"Static Graphs"; cstorch.step_closure and cstorch.trace)."""

import logging

import cerebras.pytorch as cstorch
import torch
from steps.helpers import log_loss, scale_check

model = torch.nn.Linear(16, 4)
compiled_model = cstorch.compile(model, backend="CSX")
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
epochs = 4


def clipped(loss):
    while loss > 10.0:  # expect: CODE-001
        loss = loss / 2
    return loss


@cstorch.trace
def training_step(batch, epoch):
    inputs, labels = batch
    outputs = compiled_model(inputs)
    loss = loss_fn(outputs, labels)
    if loss.item() > 5.0:  # expect: CODE-001, CODE-002
        loss = loss * 0.5
    loss = clipped(loss)
    scale_check(loss)
    print(loss)  # expect: CODE-002
    logging.info(f"loss {loss}")  # expect: CODE-002
    value = float(loss)  # expect: CODE-002
    assert torch.isfinite(loss).all()  # expect: CODE-001
    scaled = loss * 2 if loss.sum() > 0 else loss  # expect: CODE-001
    logits = outputs.float()
    kept = [row for row in logits if row.max() > 0]  # expect: CODE-001
    weights = outputs.detach().numpy()  # expect: CODE-002
    # near misses: Python values, the tensor's static metadata, None checks
    if epoch > 3:
        loss = loss * 1.0
    if inputs.shape[0] > 2 and inputs.dim() == 2:
        loss = loss + 0
    if labels is not None and inputs.dtype == torch.float32:
        loss = loss + 0
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    log_loss(loss)
    return loss, value, scaled, kept, weights


@cstorch.step_closure
def report(loss):
    # near miss: a value read inside a step closure
    if loss.item() > 5.0:
        print(f"loss {loss.item()}")


dataloader = cstorch.utils.data.DataLoader(lambda: [])
executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=10)
for epoch in range(epochs):
    for batch in executor:
        loss, *_ = training_step(batch, epoch)
        report(loss)
