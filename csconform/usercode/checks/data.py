"""Fixed batches (CODE-040, CODE-041): every step sees one batch size, through the executor's loader.

A graph is compiled for one batch size, so a torch DataLoader that batches must drop the short last
batch of an epoch (CODE-040, fixed by adding ``drop_last=True``), and a DataExecutor takes the
batches from a cstorch DataLoader, which it refuses to do without (CODE-041).
"""

from __future__ import annotations

import ast

from csconform.usercode.fixes import keyword_added, value_replaced
from csconform.usercode.scope import Scope, argument, has_unpacking, is_constant, keyword
from csconform.usercode.values import DATA_EXECUTOR, TORCH_DATALOADER, TORCH_LOADER

BATCH_SIZE_POSITION = 1
DROP_LAST_POSITION = 8
"""Positions in ``DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
collate_fn, pin_memory, drop_last, ...)``."""


def check_dataloaders(scope: Scope) -> None:
    """CODE-040: a DataLoader that batches without drop_last=True."""
    if not scope.module.mentions("DataLoader"):
        return
    source = scope.module.source
    for call in scope.calls():
        if scope.called(call) != TORCH_DATALOADER or has_unpacking(call) or keyword(call, "batch_sampler"):
            continue
        batch_size = argument(call, "batch_size", BATCH_SIZE_POSITION)
        if batch_size is None or is_constant(batch_size, None, 1):
            continue  # no batching, or batches of one sample: every batch has the same size
        drop_last = argument(call, "drop_last", DROP_LAST_POSITION)
        place: ast.expr
        if drop_last is None:
            edit = keyword_added(source, call, "drop_last=True")
            place = call
        elif is_constant(drop_last, False):
            edit = value_replaced(source, drop_last, "True")
            place = drop_last
        else:
            continue  # True, or a value decided elsewhere
        scope.refuse(
            "CODE-040",
            place,
            f"DataLoader with batch_size={scope.text(batch_size)} keeps the last partial batch: every step must "
            "see a batch of one fixed size",
            edits=(edit,),
        )


def check_executor_loaders(scope: Scope) -> None:
    """CODE-041: a DataExecutor given a torch DataLoader."""
    if not scope.module.mentions("DataExecutor"):
        return
    for call in scope.calls():
        if scope.called(call) != DATA_EXECUTOR:
            continue
        loader = argument(call, "dataloader", 0)
        if loader is not None and scope.value(loader).kind == TORCH_LOADER:
            scope.refuse(
                "CODE-041",
                loader,
                f"DataExecutor over a torch DataLoader ({scope.text(loader)}): the executor takes a "
                "cstorch.utils.data.DataLoader",
            )
