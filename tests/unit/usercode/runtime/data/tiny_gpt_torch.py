"""A tiny GPT (2 layers, width 32, 4 heads) trained for a few steps on CPU, with bugs planted on request.

    python tiny_gpt_torch.py [--plant NAME ...]

The whole training step (forward, loss, backward, GradScaler, AdamW) is one function compiled with
the @torch.compile decorator; the batches are sliced from a token tensor by hand. Each planted line
ends with the comment ``# planted: NAME``; without --plant the script breaks no rule.
"""

import argparse

import torch
from torch import nn

PLANTS = ("branch", "shrink", "lr", "no-update")
parser = argparse.ArgumentParser()
parser.add_argument("--plant", action="append", default=[], choices=PLANTS)
parser.add_argument("--steps", type=int, default=5)
args = parser.parse_args()
PLANTED = frozenset(args.plant)
VOCAB, WIDTH, HEADS, LAYERS, CONTEXT, BATCH = 64, 32, 4, 2, 16, 8
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attention = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))
        self.register_buffer("causal", torch.triu(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool), diagonal=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attention(h, h, h, attn_mask=self.causal, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.position = nn.Parameter(torch.zeros(CONTEXT, WIDTH))
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.position
        for block in self.blocks:
            x = block(x)
        return self.head(x)


model = TinyGPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
scaler = torch.amp.GradScaler("cpu")


@torch.compile
def train_step(tokens: torch.Tensor) -> torch.Tensor:
    logits = model(tokens[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
    if "branch" in PLANTED and tokens.float().mean() > VOCAB / 2:  # planted: branch
        loss = loss * 2
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)  # planted: no-update
    if "no-update" not in PLANTED:
        scaler.update()
    return loss


samples = args.steps * BATCH - (BATCH // 2 if "shrink" in PLANTED else 0)
tokens = torch.randint(0, VOCAB // 2, (samples, CONTEXT + 1))
tokens[2 * BATCH :] += VOCAB // 2  # from the third batch on, the upper half of the vocabulary
for step in range(args.steps):
    if "lr" in PLANTED and step == 2:
        optimizer.param_groups[0]["lr"] = 1e-3  # planted: lr
    loss = train_step(tokens[step * BATCH : (step + 1) * BATCH])  # planted: shrink
    print(f"step {step}: loss {loss.item():.4f}")
