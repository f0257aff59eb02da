"""Only mixed precision (pytorch-limitations, "Floating Point Precision"): no float64; the 16-bit casts are
inserted automatically."""

import cerebras.pytorch as cstorch
import numpy as np
import torch

torch.set_default_dtype(torch.float64)  # expect: CODE-020


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        # near miss: a schedule computed on the host in float64 before training
        self.register_buffer("betas", torch.linspace(0.1, 0.2, 10, dtype=torch.float64).float())

    def forward(self, x):
        wide = x.double()  # expect: CODE-020
        ones = torch.ones(4, dtype=torch.float64)  # expect: CODE-020
        half = self.linear(x).half()  # expect: CODE-021
        brain = x.to(torch.bfloat16)  # expect: CODE-021
        if x.dtype == torch.float64:  # near miss: a comparison with the dtype
            x = x.float()
        return wide, ones, half, brain, np.float64(1.0)


model = Model().double()  # expect: CODE-020
compiled = cstorch.compile(Model(), backend="CSX")
cstorch.amp.set_half_dtype(torch.bfloat16)  # near miss: choosing the 16-bit format is the way
