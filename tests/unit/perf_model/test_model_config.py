"""Unit tests of the model-config reader (csconform.perf.models.hf_config) and the zoo built on it."""

from __future__ import annotations

import json

import pytest
import yaml
from model_refusals import assert_refused, refusal

from csconform.errors import InvalidInputError, ModelConfigError
from csconform.perf.models.config_file import read_config
from csconform.perf.models.hf_config import load_model_config, model_from_config
from csconform.perf.models.hf_families import FAMILIES
from csconform.perf.models.layer import Layer
from csconform.perf.models.model_spec import ModelSpec
from csconform.perf.models.zoo import canonical_name, get_model, zoo_config

GPTJ = {
    "model_type": "gptj",
    "n_layer": 2,
    "n_embd": 256,
    "n_head": 4,
    "rotary_dim": 64,
    "n_positions": 512,
    "vocab_size": 1000,
}


def by_name(layers):
    return {layer.name: layer for layer in layers}


def test_json_and_yaml_read_the_same(tmp_path):
    config = zoo_config("gpt2_small")
    (tmp_path / "a.json").write_text(json.dumps(config))
    (tmp_path / "a.yml").write_text(yaml.safe_dump(config))
    assert read_config(tmp_path / "a.json") == read_config(tmp_path / "a.yml") == config
    model = load_model_config(tmp_path / "a.yml")
    assert model.params == get_model("gpt2_small").params and model.name == "a"  # named after the file


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.json", "[1, 2]", "a mapping of keys"),
        ("bad.json", '{"model_type": ', "invalid JSON"),
        ("bad.yaml", "model_type: [unclosed", "invalid YAML"),
        ("bad.yaml", "- just\n- a list\n", "a mapping of keys"),
    ],
)
def test_unreadable_files_are_clear_errors(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InvalidInputError, match=message):
        read_config(path)


def test_gptj_runs_attention_and_mlp_from_one_norm_without_attention_biases():
    layers = by_name(model_from_config(GPTJ, seq_len=64).layers)
    assert "block0.ln2" not in layers and "position_embeddings" not in layers  # one norm per block, rotary positions
    assert not layers["block0.attn"].bias and layers["block0.fc1"].bias
    assert layers["lm_head"].bias and not layers["lm_head"].tied
    with pytest.raises(InvalidInputError, match="rotary_dim"):
        model_from_config({**GPTJ, "rotary_dim": 65})


def test_neox_has_untied_output_and_biased_projections():
    config = {
        "model_type": "gpt_neox",
        "num_hidden_layers": 2,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "intermediate_size": 1024,
        "max_position_embeddings": 512,
        "vocab_size": 1000,
    }
    layers = by_name(model_from_config(config).layers)
    assert layers["block0.attn"].bias and "block0.ln2" in layers
    assert layers["lm_head"].params == 256 * 1000
    with pytest.raises(InvalidInputError, match="rotary_pct"):
        model_from_config({**config, "rotary_pct": 2})


def test_bert_heads_follow_the_architecture():
    base = zoo_config("bert_base")
    pretraining = by_name(model_from_config(base).layers)
    assert {"mlm.decoder", "nsp", "pooler"} <= set(pretraining) and pretraining["mlm.decoder"].tied
    classifier = {
        **base,
        "architectures": ["BertForSequenceClassification"],
        "id2label": {"0": "a", "1": "b", "2": "c"},
    }
    layers = by_name(model_from_config(classifier).layers)
    assert layers["classifier"].out_features == 3 and "mlm.decoder" not in layers
    assert by_name(model_from_config({**classifier, "num_labels": 5}).layers)["classifier"].out_features == 5
    with pytest.raises(InvalidInputError, match="id2label"):
        model_from_config({**classifier, "id2label": 3})


def test_sequence_length_defaults_and_overrides():
    bert = get_model("bert_base")
    assert bert.seq_len == 128 and bert.max_seq_len == 512
    assert bert.at_seq_len(512).seq_len == 512
    assert model_from_config(GPTJ).seq_len == 512  # no default given: the longest sequence
    with pytest.raises(InvalidInputError, match="n_positions"):
        model_from_config(GPTJ, seq_len=513)
    described = ModelSpec("x", (Layer("dense", 4, 4),), None, 8, 20.0, "test")
    with pytest.raises(InvalidInputError, match="config"):
        described.at_seq_len(4)
    with pytest.raises(InvalidInputError, match="seq_len"):
        model_from_config(GPTJ, seq_len=0)


def test_a_model_at_another_sequence_length_keeps_its_name_and_source():
    """at_seq_len rebuilds from the same config, under the name it was given and naming the same file."""
    model = model_from_config(GPTJ, name="my-gptj", source="gptj.json")
    shorter = model.at_seq_len(128)
    assert (shorter.name, shorter.seq_len, shorter.layers[0].tokens) == ("my-gptj", 128, 128)
    assert shorter.params == model.params
    with pytest.raises(ModelConfigError) as info:
        model.at_seq_len(513)
    assert info.value.source == "gptj.json" and str(info.value).startswith("gptj.json: ")
    described = ModelSpec("x", (Layer("dense", 4, 4),), None, 8, 20.0, "test")
    assert_refused(refusal(described.at_seq_len, 4), ModelConfigError, None, "seq_len", "config")


def test_spellings_must_agree_and_optional_fields_take_hugging_face_defaults():
    gpt2 = zoo_config("gpt2_small")
    both = {**gpt2, "n_ctx": 1024, "hidden_size": 768}
    assert model_from_config(both).params == get_model("gpt2_small").params
    with pytest.raises(InvalidInputError, match="n_positions=1024, max_position_embeddings=2048"):
        model_from_config({**gpt2, "max_position_embeddings": 2048})
    untied = model_from_config({**gpt2, "tie_word_embeddings": False})
    assert untied.params - get_model("gpt2_small").params == 768 * 50257
    with pytest.raises(InvalidInputError, match="tie_word_embeddings"):
        model_from_config({**gpt2, "tie_word_embeddings": "yes"})


def test_our_own_families_and_the_csconform_block():
    mlp = model_from_config({"model_type": "mlp", "layer_widths": [784, 500, 500, 10]})
    assert mlp.params == 648_010 and mlp.seq_len is None
    too_few = refusal(model_from_config, {"model_type": "mlp", "layer_widths": [784]}, source="mlp.json")
    assert_refused(too_few, ModelConfigError, "layer_widths", "layer_widths", source="mlp.json")
    sequence = refusal(model_from_config, {"model_type": "mlp", "layer_widths": [2, 2]}, seq_len=4, source="mlp.json")
    assert_refused(sequence, ModelConfigError, None, "mlp", "sequence length", source="mlp.json")
    resnet = zoo_config("resnet50")
    assert model_from_config(resnet).params == 25_557_032
    with pytest.raises(InvalidInputError, match="layer_type"):
        model_from_config({**resnet, "layer_type": "basic"})
    with pytest.raises(InvalidInputError, match="csconform.published_params"):
        model_from_config({**resnet, "csconform": {"published_params": -1}})


@pytest.mark.parametrize(
    ("alias", "name"), [("gpt-j-6b", "gptj_6b"), ("GPT-NeoX-20B", "gpt_neox_20b"), ("llama-2-7b", "llama2_7b")]
)
def test_new_zoo_aliases(alias, name):
    assert canonical_name(alias) == name


@pytest.mark.parametrize("model_type", [["gpt2"], {"gpt2": 1}, 3, True])
def test_a_model_type_that_is_not_text_is_refused_naming_the_field(model_type: object) -> None:
    # found by the conformance suite's any-JSON property under the judge's mutation run: a list here
    # ended in "TypeError: unhashable type: 'list'"
    config = {"model_type": model_type, "n_layer": 5, "n_embd": 48, "n_head": 6, "n_positions": 246, "vocab_size": 52}
    with pytest.raises(InvalidInputError, match="field model_type must be a string") as error:
        model_from_config(config, source="config.json")
    assert "config.json" in str(error.value)


@pytest.mark.parametrize("widths", [None, [], 5, "784,10", [2] * 2049])
def test_an_mlp_s_layer_widths_are_a_list_of_at_most_max_layers_widths(widths):
    config = {"model_type": "mlp"} if widths is None else {"model_type": "mlp", "layer_widths": widths}
    error = refusal(model_from_config, config, source="mlp.json")
    words = () if widths is None else ("1..4194304",)  # the range of widths a list must keep to
    assert_refused(error, ModelConfigError, "layer_widths", "layer_widths", *words, source="mlp.json")
    assert len(model_from_config({"model_type": "mlp", "layer_widths": [2] * 2048}).layers) == 2047


def test_a_missing_or_non_string_model_type_is_refused_listing_the_families():
    for config, given in (({}, ()), ({"model_type": ["gpt2"]}, ("['gpt2']",))):
        error = refusal(model_from_config, config, source="config.json")
        assert_refused(error, ModelConfigError, "model_type", "model_type", *given, *FAMILIES, source="config.json")
