"""The small Model Zoo ``model:`` section the zoo-section tests change one key at a time.

d = 64 wide, 2 blocks, 4 heads, an MLP 256 wide, 100 tokens, 32 positions: small enough that every
expected count can be written out from the architecture by hand.
"""

from __future__ import annotations

D, BLOCKS, HEADS, FFN, VOCAB, POSITIONS = 64, 2, 4, 256, 100, 32
SIZES = {
    "hidden_size": D,
    "num_hidden_layers": BLOCKS,
    "num_heads": HEADS,
    "filter_size": FFN,
    "vocab_size": VOCAB,
    "max_position_embeddings": POSITIONS,
}
