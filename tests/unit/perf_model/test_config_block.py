"""What a model config says besides its architecture: model_type, the ``csconform`` block, sequence lengths.

The reader's rules (csconform.perf.models.hf_config's docstring): an unknown or missing ``model_type`` is
refused naming the known ones; the optional ``csconform`` block gives the published parameter count
and its source, a default batch and sequence length, and a name; the model is otherwise named after
its file, else the hub name ``_name_or_path``, else the family.
"""

from __future__ import annotations

import math

import pytest
from model_refusals import assert_refused, refusal

from csconform.errors import ModelConfigError, UnknownNameError, UnreadableDocumentError
from csconform.perf.models.config_file import read_config
from csconform.perf.models.fields import MAX_SEQUENCE, shown
from csconform.perf.models.hf_config import model_from_config
from csconform.perf.models.hf_families import FAMILIES
from csconform.perf.models.model_spec import DEFAULT_BATCH

GPT2 = {"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 128, "vocab_size": 100}


def test_the_csconform_block_sets_name_count_source_batch_and_sequence_length():
    block = {"name": "tiny", "published_params": 1e5, "source": "a paper", "default_batch": 32, "default_seq_len": 64}
    model = model_from_config({**GPT2, "csconform": block}, name="file")
    assert (model.name, model.published_params, model.source, model.default_batch) == ("tiny", 1e5, "a paper", 32)
    assert model.seq_len == 64 and model.max_seq_len == 128 and model.family == "gpt2"
    longer = model.at_seq_len(128)
    assert (longer.name, longer.seq_len, longer.source, longer.published_params) == ("tiny", 128, "a paper", 1e5)


def test_without_a_csconform_block_the_defaults_apply():
    model = model_from_config(GPT2)
    assert model.published_params == float(model.params) and isinstance(model.published_params, float)
    assert (model.source, model.default_batch, model.seq_len) == ("a model config", DEFAULT_BATCH, 128)
    assert model.config == GPT2 and model.notes == ("head: the LM head (tied to the token embedding)",)
    assert model_from_config({**GPT2, "csconform": {"default_seq_len": 0}}).seq_len == 128  # 0: no default


@pytest.mark.parametrize(
    ("name", "config", "expected"),
    [
        ("file", {}, "file"),
        (None, {"_name_or_path": "openai-community/gpt2"}, "openai-community/gpt2"),
        (None, {"_name_or_path": ""}, "gpt2"),
        (None, {"_name_or_path": 3}, "gpt2"),
        ("file", {"csconform": {"name": "block"}}, "block"),
        ("", {"csconform": {"name": ""}}, "gpt2"),
    ],
)
def test_the_model_is_named_by_the_block_else_the_file_else_the_hub_name_else_the_family(name, config, expected):
    assert model_from_config({**GPT2, **config}, name=name).name == expected


# (block, the key refused, what the message names; the wording is pinned in test_model_reader_messages.py)
@pytest.mark.parametrize(
    ("block", "key", "words"),
    [
        ({"name": 3}, "csconform.name", ("3",)),
        ({"published_params": 0}, "csconform.published_params", ("0",)),
        ({"published_params": True}, "csconform.published_params", ("True",)),
        ({"published_params": "1e6"}, "csconform.published_params", ("'1e6'",)),
        ({"source": ["a"]}, "csconform.source", ("['a']",)),
        ({"default_batch": 0}, "csconform.default_batch", ("default batch", f"1..{2**24}", "0")),
        ({"default_batch": 2**24 + 1}, "csconform.default_batch", ("default batch", f"1..{2**24}", str(2**24 + 1))),
        ({"default_seq_len": -1}, "csconform.default_seq_len", ("default sequence length", f"0..{2**24}", "-1")),
        ({"default_seq_len": 129}, "n_positions", ("seq_len", "129", "128")),
    ],
)
def test_a_wrong_csconform_block_is_refused_naming_the_field(block, key, words):
    error = refusal(model_from_config, {**GPT2, "csconform": block}, source="config.json")
    assert_refused(error, ModelConfigError, key, key, *words, source="config.json")


def test_the_largest_default_batch_is_read():
    assert model_from_config({**GPT2, "csconform": {"default_batch": 2**24}}).default_batch == 2**24


@pytest.mark.parametrize(
    ("model_type", "kind", "key", "words"),
    [
        (None, ModelConfigError, "model_type", ("model_type",)),
        ("mamba", UnknownNameError, None, ("model_type", "'mamba'")),
        ("phi-msft", UnknownNameError, None, ("model_type", "'phi-msft'", "microsoft/phi-1", "phi")),
    ],
)
def test_a_missing_or_unknown_model_type_is_refused_listing_the_known_ones(model_type, kind, key, words):
    config = {**GPT2, "model_type": model_type} if model_type else {k: v for k, v in GPT2.items() if k != "model_type"}
    error = refusal(model_from_config, config, source="config.json")
    assert_refused(error, kind, key, *words, *FAMILIES, source="config.json")


@pytest.mark.parametrize(
    ("seq_len", "key", "words"),
    [
        (0, None, (str(MAX_SEQUENCE), "0")),
        (True, None, (str(MAX_SEQUENCE), "True")),
        (MAX_SEQUENCE + 1, None, (str(MAX_SEQUENCE), str(MAX_SEQUENCE + 1))),
        (129, "n_positions", ("n_positions", "129", "128")),
    ],
)
def test_a_sequence_length_out_of_range_is_refused(seq_len, key, words):
    assert_refused(refusal(model_from_config, GPT2, seq_len=seq_len), ModelConfigError, key, "seq_len", *words)


def test_the_shortest_and_the_longest_sequence_lengths_are_read():
    assert model_from_config(GPT2, seq_len=1).seq_len == 1
    longest = model_from_config({**GPT2, "n_positions": MAX_SEQUENCE}, seq_len=MAX_SEQUENCE)
    assert (longest.seq_len, longest.max_seq_len) == (MAX_SEQUENCE, MAX_SEQUENCE)


def test_a_gpt2_config_without_any_position_field_is_refused():
    """The position table's rows are a size (they hold parameters), and size fields are required.

    transformers' GPT2Config would take 1024; a config.json on the hub always states n_positions, so a
    file without it is more likely cut short than meant to take the default. Only the legacy n_ctx,
    on its own, stands in for it (the note says so)."""
    bare = {k: v for k, v in GPT2.items() if k != "n_positions"}
    error = refusal(model_from_config, bare, source="config.json")
    words = ("n_positions", "max_position_embeddings", "maximum sequence length")
    assert_refused(error, ModelConfigError, "n_positions", *words, source="config.json")
    legacy = model_from_config({**bare, "n_ctx": 128})
    assert legacy.max_seq_len == 1024 and "transformers' default" in legacy.notes[0]


def test_contradictory_spellings_are_refused_naming_the_first_spelling():
    error = refusal(model_from_config, {**GPT2, "hidden_size": 128})
    assert_refused(error, ModelConfigError, "n_embd", "model width", "n_embd=64", "hidden_size=128")


@pytest.mark.parametrize(
    ("config", "key", "words"),
    [
        ([GPT2], None, ("model config", "list")),
        ("gpt2", None, ("model config", "str")),
        ({**GPT2, "csconform": [1]}, "csconform", ("csconform", "list")),
        ({**GPT2, "csconform": "tiny"}, "csconform", ("csconform", "str")),
    ],
)
def test_a_config_or_block_that_is_not_an_object_is_refused_naming_its_type(config, key, words):
    error = refusal(model_from_config, config, source="config.json")
    assert_refused(error, ModelConfigError, key, *words, source="config.json")


def test_an_unknown_model_type_without_a_file_is_refused_without_a_prefix():
    with pytest.raises(UnknownNameError) as info:
        model_from_config({**GPT2, "model_type": "mamba"})
    with pytest.raises(UnknownNameError) as with_file:
        model_from_config({**GPT2, "model_type": "mamba"}, source="config.json")
    assert str(with_file.value) == f"config.json: {info.value}"  # the wording: test_model_reader_messages.py


def test_a_published_count_is_any_positive_finite_number():
    assert model_from_config({**GPT2, "csconform": {"published_params": 1}}).published_params == 1.0
    assert model_from_config({**GPT2, "csconform": {"published_params": 0.5}}).published_params == 0.5
    for refused in (math.inf, -0.5, math.nan):
        error = refusal(model_from_config, {**GPT2, "csconform": {"published_params": refused}})
        assert_refused(
            error, ModelConfigError, "csconform.published_params", "csconform.published_params", repr(refused)
        )


def test_the_longer_than_refusal_names_the_field_the_config_spells():
    spelled = {**{k: v for k, v in GPT2.items() if k != "n_positions"}, "max_position_embeddings": 128}
    error = refusal(model_from_config, spelled, seq_len=129)
    assert_refused(error, ModelConfigError, "max_position_embeddings", "max_position_embeddings", "129", "128")
    assert model_from_config(spelled).max_seq_len == 128


@pytest.mark.parametrize(
    ("bom", "encoding"),
    [
        (b"\xff\xfe\x00\x00", "UTF-32"),
        (b"\x00\x00\xfe\xff", "UTF-32"),
        (b"\xff\xfe", "UTF-16"),
        (b"\xfe\xff", "UTF-16"),
    ],
)
def test_a_file_in_another_unicode_encoding_is_refused_naming_it(tmp_path, bom, encoding):
    (tmp_path / "config.json").write_bytes(bom + b"{}")
    with pytest.raises(UnreadableDocumentError) as info:
        read_config(tmp_path / "config.json")
    assert encoding in info.value.problem


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2**100, "an integer of about 30 digits"),  # 101 bits
        (2**99, str(2**99)),  # 100 bits: printed
        (-(2**100), "an integer of about 30 digits"),
        (True, "True"),
        ("x" * 78, repr("x" * 78)),  # 80 characters with the quotes: printed
        ("x" * 79, repr("x" * 79)[:77] + "..."),
    ],
)
def test_values_in_messages_are_shown_shortened(value, text):
    assert shown(value) == text
