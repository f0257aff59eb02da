"""The Model Zoo's BERT and fc_mnist sections key by key: defaults, the count, each refusal and its limit.

The expected counts are written out from the architecture a section describes (BERT as transformers'
BertForPreTraining builds it: token, position and segment tables, an embedding LayerNorm, blocks of
attention (Q, K, V and output projections) and an MLP with a LayerNorm after each, then the pooler,
the next-sentence classifier and the masked-LM head whose decoder shares the token table), so a reader
that reads a key under another name, loses a default or moves a limit disagrees with arithmetic no
reader computed.
"""

from __future__ import annotations

import pytest
from model_refusals import assert_refused, refusal
from small_zoo_section import BLOCKS, FFN, HEADS, POSITIONS, SIZES, VOCAB, D

from csconform.errors import ModelConfigError
from csconform.perf.models.fields import MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH
from csconform.perf.models.zoo_section import model_from_zoo_section

BERT = {"name": "bert", **SIZES}


def bert_body(d: int, blocks: int, ffn: int, vocab: int, positions: int, segments: int = 2) -> int:
    """Embeddings (token, position, segment tables and their LayerNorm) and the blocks."""
    embeddings = vocab * d + positions * d + segments * d + 2 * d
    block = 4 * (d * d + d) + 2 * d + (d * ffn + ffn + ffn * d + d) + 2 * d
    return embeddings + blocks * block


def pretraining_heads(d: int, vocab: int) -> int:
    """The pooler, the two-way next-sentence classifier, the masked-LM transform, LayerNorm and decoder bias."""
    return (d * d + d) + (2 * d + 2) + (d * d + d) + 2 * d + vocab


def test_the_small_bert_counts_what_its_architecture_holds():
    model = model_from_zoo_section(BERT, source="params.yaml: model")
    assert model.params == bert_body(D, BLOCKS, FFN, VOCAB, POSITIONS) + pretraining_heads(D, VOCAB)
    assert (model.seq_len, model.max_seq_len, model.family) == (POSITIONS, POSITIONS, "bert")


def test_an_empty_bert_section_takes_the_zoo_defaults_and_says_so():
    model = model_from_zoo_section({"name": "bert", "max_position_embeddings": 512})
    assert model.notes == (
        "hidden_size absent: the Model Zoo's default 768",
        "num_hidden_layers absent: the Model Zoo's default 12",
        "num_heads absent: the Model Zoo's default 12",
        "vocab_size absent: the Model Zoo's default 50257",
        "filter_size absent: the Model Zoo's default 3072",
        "heads counted: the pooler, next-sentence prediction and the masked-LM head (transform, LayerNorm, decoder)",
    )
    assert model.params == bert_body(768, 12, 3072, 50257, 512) + pretraining_heads(768, 50257) == 125_282_643
    written = {"hidden_size": 768, "num_hidden_layers": 12, "num_heads": 12, "vocab_size": 50257, "filter_size": 3072}
    assert model_from_zoo_section({**BERT, **written, "max_position_embeddings": 512}).layers == model.layers


def test_roberta_is_pre_trained_like_bert():
    bert, roberta = model_from_zoo_section(BERT), model_from_zoo_section({**BERT, "name": "roberta"})
    assert roberta.layers == bert.layers and roberta.family == "roberta"


@pytest.mark.parametrize("seq_len", [1, 16, POSITIONS])
def test_every_token_layer_and_the_per_token_heads_run_at_the_sequence_length_asked(seq_len):
    """The pooler and the sequence classifiers read one token; token classification, QA and extractive
    summarisation classify every token."""
    for name in ("bert", "bert/classifier", "bert/token_classifier", "bert/qa", "bert/extractive_summarization"):
        section = {**BERT, "name": name, "num_labels": 2, "num_classes": 3}
        model = model_from_zoo_section(section, seq_len=seq_len)
        per_sequence = {"pooler", "nsp"} | ({"classifier"} if name == "bert/classifier" else set())
        for layer in model.layers:
            assert layer.tokens == (1 if layer.name in per_sequence else seq_len), (name, layer.name)


def test_a_sequence_longer_than_the_position_table_is_refused_naming_the_section():
    error = refusal(model_from_zoo_section, BERT, seq_len=POSITIONS + 1, source="params.yaml: model")
    words = ("seq_len", "max_position_embeddings", str(POSITIONS), str(POSITIONS + 1))
    assert_refused(error, ModelConfigError, None, *words, source="params.yaml: model")


def test_the_pooler_and_nsp_classifier_follow_use_ffn_bias():
    base = model_from_zoo_section(BERT)
    unbiased = model_from_zoo_section({**BERT, "use_ffn_bias": False})
    mlp_biases = BLOCKS * (FFN + D)
    assert base.params - unbiased.params == mlp_biases + D + 2  # the pooler's and the NSP classifier's biases
    classifier = {**BERT, "name": "bert/classifier", "num_labels": 3}
    difference = (
        model_from_zoo_section(classifier).params - model_from_zoo_section({**classifier, "use_ffn_bias": False}).params
    )
    assert difference == mlp_biases + D  # the pooler's bias; the classifier keeps its own


def test_padding_rows_are_added_only_when_mask_padding_in_positional_embed_is_set():
    base = model_from_zoo_section(BERT)
    assert model_from_zoo_section({**BERT, "pad_token_id": 3}).params == base.params
    assert model_from_zoo_section({**BERT, "pad_token_id": 3, "mask_padding_in_positional_embed": True}).params == (
        base.params + 3 * D
    )


def test_relative_positions_are_buckets_not_a_table():
    relative = model_from_zoo_section({**BERT, "position_embedding_type": "relative"})
    table = [layer for layer in relative.layers if layer.name == "position_embeddings"]
    learned = model_from_zoo_section(BERT)
    assert not table or table[0].params != POSITIONS * D
    assert relative.params == learned.params - POSITIONS * D + 32 * HEADS  # 32 buckets per head, the default


def test_segments_may_be_zero_and_pad_token_id_zero():
    none = model_from_zoo_section({**BERT, "name": "bert/classifier", "num_labels": 2, "num_segments": 0})
    two = model_from_zoo_section({**BERT, "name": "bert/classifier", "num_labels": 2})
    assert two.params - none.params == 2 * D


LIMITS = [
    ("hidden_size", "model width", 1, MAX_WIDTH),
    ("num_hidden_layers", "number of layers", 1, MAX_LAYERS),
    ("num_heads", "number of attention heads", 1, MAX_WIDTH),
    ("vocab_size", "vocabulary size", 1, 2**24),
    ("filter_size", "MLP width", 1, 4 * MAX_WIDTH),
    ("max_position_embeddings", "maximum sequence length", 1, MAX_SEQUENCE),
    ("num_segments", "number of segments", 0, 2**16),
]
HEAD_LIMITS = [
    ("bert/classifier", "num_labels", "number of labels", 1, 2**24),
    ("bert/token_classifier", "num_classes", "number of classes", 1, 2**24),
    ("bert/extractive_summarization", "num_labels", "number of labels", 1, 2),
    ("bert", "num_classes", "number of NSP classes", 1, 2**16),
]


@pytest.mark.parametrize(("key", "quantity", "low", "high"), LIMITS)
def test_each_size_is_refused_just_outside_its_range_naming_the_key_and_quantity(key, quantity, low, high):
    for wrong in (low - 1, high + 1):
        error = refusal(model_from_zoo_section, {**BERT, key: wrong}, source="params.yaml: model")
        assert_refused(error, ModelConfigError, key, key, quantity, f"{low}..{high}", str(wrong))


@pytest.mark.parametrize(("name", "key", "quantity", "low", "high"), HEAD_LIMITS)
def test_each_head_size_is_read_at_its_limits_and_refused_beyond(name, key, quantity, low, high):
    section = {**BERT, "name": name}
    for right in (low, high):
        head = [layer for layer in model_from_zoo_section({**section, key: right}).layers if layer.group == "head"]
        assert any(layer.out_features == right for layer in head)
    for wrong in (low - 1, high + 1):
        error = refusal(model_from_zoo_section, {**section, key: wrong})
        assert_refused(error, ModelConfigError, key, key, quantity, f"{low}..{high}", str(wrong))


def test_a_classifier_without_its_size_is_refused_naming_the_key():
    for name, key, quantity in (
        ("bert/classifier", "num_labels", "number of labels"),
        ("bert/token_classifier", "num_classes", "number of classes"),
    ):
        error = refusal(model_from_zoo_section, {**BERT, "name": name})
        assert_refused(error, ModelConfigError, key, key, quantity)


def test_a_negative_pad_token_id_is_refused():
    error = refusal(model_from_zoo_section, {**BERT, "mask_padding_in_positional_embed": True, "pad_token_id": -1})
    assert_refused(error, ModelConfigError, "pad_token_id", "pad_token_id", "pad token id", f"0..{2**24}", "-1")


def test_the_largest_sizes_are_read():
    wide = model_from_zoo_section({**BERT, "num_hidden_layers": MAX_LAYERS, "vocab_size": 2**24, "num_segments": 2**16})
    assert sum(1 for layer in wide.layers if layer.name.endswith(".attn")) == MAX_LAYERS
    table = {layer.name: layer for layer in wide.layers}
    assert table["token_embeddings"].params == 2**24 * D and table["token_type_embeddings"].params == 2**16 * D
    mlp = model_from_zoo_section({**BERT, "filter_size": 4 * MAX_WIDTH})
    assert {layer.name: layer for layer in mlp.layers}["block0.fc2"].in_features == 4 * MAX_WIDTH


# --- DPR: two BERT encoders ----------------------------------------------------------------------


def test_a_dpr_encoder_that_states_only_its_positions_is_bert_base():
    """The Model Zoo's defaults of each encoder: 768 wide, 12 blocks of 12 heads, an MLP 3072 wide, 30522 tokens."""
    stated = {"max_position_embeddings": 512}
    written = {"hidden_size": 768, "num_hidden_layers": 12, "num_heads": 12, "vocab_size": 30522, "filter_size": 3072}
    defaults = model_from_zoo_section({"name": "dpr", "encoder": stated})
    assert defaults.layers == model_from_zoo_section({"name": "dpr", "encoder": {**stated, **written}}).layers


@pytest.mark.parametrize(("pooler_type", "pooled"), [("cls", False), ("mean", False), ("ffn_pooler", True)])
def test_a_dpr_encoder_has_a_pooler_only_with_the_ffn_pooler(pooler_type, pooled):
    """Each of the two encoders gets a d x d pooler with its bias, and the note says so."""
    section = {"name": "dpr", "q_encoder": SIZES, "ctx_encoder": SIZES}
    without = model_from_zoo_section(section)
    model = model_from_zoo_section({**section, "pooler_type": pooler_type})
    assert model.params - without.params == (2 * (D * D + D) if pooled else 0)
    assert sum(layer.name.endswith("pooler") for layer in model.layers) == (2 if pooled else 0)
    assert model.notes[-1].endswith(
        " with a pooler (ffn_pooler)" if pooled else " without a pooler (pooler_type cls or mean)"
    )


def test_a_sequence_longer_than_the_context_encoder_s_positions_is_refused():
    """The sequence length is checked against each encoder's own position table, not only the question
    encoder's (which sets the section's longest sequence)."""
    section = {"name": "dpr", "q_encoder": {**SIZES, "max_position_embeddings": 2 * POSITIONS}, "ctx_encoder": SIZES}
    assert model_from_zoo_section(section).max_seq_len == 2 * POSITIONS
    error = refusal(model_from_zoo_section, section, seq_len=POSITIONS + 1, source="params.yaml: model")
    words = ("seq_len", "max_position_embeddings", str(POSITIONS), str(POSITIONS + 1))
    assert_refused(error, ModelConfigError, None, *words, source="params.yaml: model")


# --- fc_mnist -------------------------------------------------------------------------------------


def test_fc_mnist_names_its_layers_in_order():
    model = model_from_zoo_section({"name": "fc_mnist", "hidden_sizes": [20, 30]})
    assert [layer.name for layer in model.layers] == ["fc1", "fc2", "fc3"]
    assert [(layer.in_features, layer.out_features) for layer in model.layers] == [(784, 20), (20, 30), (30, 10)]


@pytest.mark.parametrize(
    ("section", "key", "words"),
    [
        ({"depth": MAX_LAYERS + 1, "hidden_size": 20}, "depth", (f"1..{MAX_LAYERS}", str(MAX_LAYERS + 1))),
        ({"depth": 2, "hidden_size": MAX_WIDTH + 1}, "hidden_size", ("hidden width", f"1..{MAX_WIDTH}")),
        ({"hidden_sizes": [20, MAX_WIDTH + 1]}, "hidden_sizes", (f"1..{MAX_WIDTH}",)),
    ],
)
def test_fc_mnist_sizes_beyond_their_limits_are_refused(section, key, words):
    error = refusal(model_from_zoo_section, {"name": "fc_mnist", **section})
    assert_refused(error, ModelConfigError, key, key, *words)


def test_fc_mnist_reads_its_widest_sizes():
    deep = model_from_zoo_section({"name": "fc_mnist", "depth": MAX_LAYERS, "hidden_size": MAX_WIDTH})
    assert len(deep.layers) == MAX_LAYERS + 1 and deep.layers[0].out_features == MAX_WIDTH
    listed = model_from_zoo_section({"name": "fc_mnist", "hidden_sizes": [MAX_WIDTH]})
    assert listed.layers[0].out_features == MAX_WIDTH


def test_a_rebuilt_section_keeps_its_family_name_source_and_release():
    """at_seq_len reads the same section again: a 1.x file (family from its folder) under the name it was given."""
    section = {key: value for key, value in BERT.items() if key != "name"}
    model = model_from_zoo_section(
        {**section, "num_segments": 3}, family="bert", source="params.yaml: model", name="my-bert", release="1.9"
    )
    shorter = model.at_seq_len(16)
    assert (shorter.name, shorter.family, shorter.seq_len, shorter.params) == ("my-bert", "bert", 16, model.params)
    with pytest.raises(ModelConfigError) as info:
        model.at_seq_len(POSITIONS + 1)
    assert str(info.value).startswith("params.yaml: model: seq_len must be")
