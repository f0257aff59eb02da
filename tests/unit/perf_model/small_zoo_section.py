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

SOURCE_POSITIONS, TARGET_POSITIONS, HEAD_WIDTH = 32, 16, 16
T5_SIZES = {
    "d_model": D,
    "encoder_num_hidden_layers": BLOCKS,
    "num_heads": HEADS,
    "d_kv": HEAD_WIDTH,
    "d_ff": FFN,
    "src_vocab_size": VOCAB,
    "src_max_position_embeddings": SOURCE_POSITIONS,
    "tgt_max_position_embeddings": TARGET_POSITIONS,
}
"""The same sizes in the keys of the zoo's T5 class (an encoder and a decoder of 2 blocks each, heads of
16, 32 source and 16 target positions)."""
