"""Every step sees one batch size (estimator-limitations, "Drop remainder to enforce fixed batch size";
pytorch-limitations, "Static Graphs"), through a cstorch DataLoader (cstorch.utils.data.DataLoader)."""

import cerebras.pytorch as cstorch
import torch
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.zeros(100, 4))


def input_fn(batch_size, drop_last):
    train = DataLoader(dataset, batch_size=batch_size, shuffle=True)  # expect: CODE-040
    evaluate = torch.utils.data.DataLoader(dataset, batch_size=8, drop_last=False)  # expect: CODE-040
    positional = DataLoader(dataset, 16)  # expect: CODE-040
    fixed = DataLoader(dataset, batch_size=batch_size, drop_last=True)  # near miss
    decided = DataLoader(dataset, batch_size=batch_size, drop_last=drop_last)  # near miss: decided elsewhere
    single = DataLoader(dataset)  # near miss: batches of one sample
    unbatched = DataLoader(dataset, batch_size=None)  # near miss: the dataset gives the batches
    return train, evaluate, positional, fixed, decided, single, unbatched


raw = DataLoader(dataset, batch_size=4, drop_last=True)
executor = cstorch.utils.data.DataExecutor(raw, num_steps=10)  # expect: CODE-041
wrapped = cstorch.utils.data.DataLoader(input_fn, 4, True)
good_executor = cstorch.utils.data.DataExecutor(wrapped, num_steps=10)  # near miss
