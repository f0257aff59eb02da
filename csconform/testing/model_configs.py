"""A Hypothesis strategy of model configs: valid ones, near misses and arbitrary JSON.

A config reader must turn every one of them into a model or a clear refusal. Valid configs are small
(a few layers, narrow) so that planning each is quick; near misses take a valid config and drop a
field, give a field a value of the wrong kind or range, or spell a field twice with two values;
arbitrary JSON covers the rest.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
ODD_VALUES = st.one_of(
    st.text(max_size=8),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.integers(0, 8), max_size=3),
    st.booleans(),
    st.integers(-4, 0),
    st.integers(2**24, 2**62),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.none(),
)
# a second spelling of the same quantity, which a reader must reconcile with the first
SPELLINGS = {
    "n_layer": "num_hidden_layers",
    "num_hidden_layers": "n_layer",
    "n_embd": "hidden_size",
    "hidden_size": "n_embd",
    "n_head": "num_attention_heads",
    "num_attention_heads": "n_head",
    "n_positions": "max_position_embeddings",
    "max_position_embeddings": "n_positions",
}


@st.composite
def valid_model_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A small, valid config of one of the transformer families."""
    family = draw(
        st.sampled_from(
            ["gpt2", "gptj", "gpt_neox", "llama", "bert", "mistral", "qwen2", "mixtral", "phi", "falcon", "opt"]
            + ["bloom", "roberta"]
        )
    )
    layers = draw(st.integers(1, 6))
    heads = draw(st.integers(1, 8))
    width = heads * draw(st.sampled_from([8, 16, 32, 64]))
    vocab = draw(st.integers(2, 5000))
    positions = draw(st.integers(1, 512))
    if family in ("gpt2", "gptj"):
        config: dict[str, Any] = {"n_layer": layers, "n_embd": width, "n_head": heads, "n_positions": positions}
        config["n_inner"] = draw(st.none() | st.integers(1, 4 * width))
    else:
        config = {
            "num_hidden_layers": layers,
            "hidden_size": width,
            "num_attention_heads": heads,
            "max_position_embeddings": positions,
            "intermediate_size": draw(st.integers(1, 4 * width)),
        }
    config.update(model_type=family, vocab_size=vocab)
    divisors = [k for k in range(1, heads + 1) if heads % k == 0]
    if family in ("llama", "mistral", "qwen2", "mixtral", "phi"):
        config["num_key_value_heads"] = draw(st.sampled_from(divisors))
    if family in ("mistral", "mixtral", "qwen2"):
        config["sliding_window"] = draw(st.none() | st.integers(1, 1024))
        config["use_sliding_window"] = draw(st.booleans())
    if family == "mixtral":
        experts = draw(st.integers(1, 8))
        config.update(num_local_experts=experts, num_experts_per_tok=draw(st.integers(1, experts)))
    if family == "falcon":
        config.update(
            new_decoder_architecture=draw(st.booleans()),
            multi_query=draw(st.booleans()),
            parallel_attn=draw(st.booleans()),
            num_kv_heads=draw(st.sampled_from(divisors)),
            bias=draw(st.booleans()),
        )
    if family == "opt":
        config.update(ffn_dim=config.pop("intermediate_size"), word_embed_proj_dim=draw(st.sampled_from([width, 8])))
        config["do_layer_norm_before"] = draw(st.booleans())
    if family in ("bert", "roberta") and draw(st.booleans()):
        config["architectures"] = [f"{family.capitalize()}ForSequenceClassification"]
        config["num_labels"] = draw(st.integers(1, 10))
    config["tie_word_embeddings"] = draw(st.booleans())
    return config


@st.composite
def near_miss_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid config with one to three fields broken."""
    config = draw(valid_model_configs())
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(config)))
        action = draw(st.sampled_from(["odd", "odd", "drop", "respell"]))
        if action == "drop":
            config.pop(key)
        elif action == "odd":
            config[key] = draw(ODD_VALUES)
        elif key in SPELLINGS:
            config[SPELLINGS[key]] = draw(st.integers(1, 4096))
        if not config:
            break
    return config


def model_configs() -> st.SearchStrategy[Any]:
    """Near misses (most often), valid configs, and any JSON value at all."""
    return st.one_of(near_miss_configs(), near_miss_configs(), valid_model_configs(), JSON)
