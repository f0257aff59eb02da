"""The GradScaler's order: scale, backward, unscale_, clipping, step, update (amp-api,
cerebras.pytorch.amp.GradScaler)."""

import cerebras.pytorch as cstorch
import torch

model = torch.nn.Linear(4, 4)
compiled = cstorch.compile(model, backend="CSX")
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.1)
scaler = cstorch.amp.GradScaler(loss_scale="dynamic")


@cstorch.trace
def no_update(batch):
    loss = compiled(batch).sum()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    scaler.step(optimizer)  # expect: CODE-050
    return loss


@cstorch.trace
def clip_too_early(batch):
    loss = compiled(batch).sum()
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: CODE-051
    scaler.step(optimizer)
    scaler.update()
    return loss


@cstorch.trace
def out_of_order(batch):
    loss = compiled(batch).sum()
    loss.backward()
    scaler.scale(loss)  # expect: CODE-052
    scaler.step(optimizer)
    scaler.unscale_(optimizer)  # expect: CODE-052
    scaler.step(optimizer)  # expect: CODE-052
    scaler.update()
    return loss


@cstorch.trace
def update_first(batch):
    loss = compiled(batch).sum()
    scaler.scale(loss).backward()
    scaler.update()  # expect: CODE-052
    scaler.step(optimizer)
    scaler.update()
    return loss


def unscale_and_clip(optimizer, scaler):
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


def step_only(optimizer, scaler):
    scaler.step(optimizer)  # near miss: the caller updates


@cstorch.trace
def in_order(batch):
    # near miss: the documented order, split over helpers
    loss = compiled(batch).sum()
    scaler.scale(loss).backward()
    unscale_and_clip(optimizer, scaler)
    step_only(optimizer, scaler)
    scaler.update()
    return loss


@cstorch.trace
def one_call(batch):
    # near miss: cstorch.amp.optimizer_step does it all, in order
    loss = compiled(batch).sum()
    cstorch.amp.optimizer_step(loss, optimizer, scaler, max_gradient_norm=1.0)
    return loss


@cstorch.trace
def either(batch, use_amp):
    # near miss: scaling on one branch, a plain backward on the other
    loss = compiled(batch).sum()
    if use_amp:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return loss
