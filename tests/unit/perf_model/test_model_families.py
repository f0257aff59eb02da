"""Model families from their public config.json: exact parameter counts, FLOPs, plans, refusals.

The fixtures in ``data/hf_configs`` are published checkpoints' configs (``SOURCES.md``). Each count
is compared with two things no one here wrote: Hugging Face transformers' own model class built from
the same config (``transformers_counts.json``, written by ``count_with_transformers.py``) and the
figure published for the checkpoint (``published.json``: a safetensors index total, a model card, a
paper, with its source).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_refusals import assert_refused, refusal

from csconform.cli import main as cli_main
from csconform.errors import (
    ModelConfigError,
    UnknownNameError,
    UnreadableDocumentError,
    UnsupportedModelError,
)
from csconform.perf.models.config_file import read_config
from csconform.perf.models.hf_config import load_model_config, model_from_config

DATA = Path(__file__).parent / "data" / "hf_configs"
TRANSFORMERS = json.loads((DATA / "transformers_counts.json").read_text())["counts"]
PUBLISHED = json.loads((DATA / "published.json").read_text())
PLANNED = sorted(name for name in PUBLISHED if name != "t5-small")
FITS_ONE_WAFER = ["gpt2", "bert-base-uncased", "roberta-base", "bloom-560m", "opt-350m", "Qwen2-0.5B"]


def config(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


@pytest.mark.parametrize("name", PLANNED)
def test_each_family_counts_what_transformers_builds_from_the_same_config(name):
    model = load_model_config(DATA / f"{name}.json")
    expected = TRANSFORMERS[name][PUBLISHED[name]["architecture"]]
    assert model.params == expected["params"]
    assert model.active_params == expected.get("active_params", expected["params"])


@pytest.mark.parametrize("name", PLANNED)
def test_each_family_counts_the_published_checkpoint(name):
    published = PUBLISHED[name]
    params = load_model_config(DATA / f"{name}.json").params
    if published["exact"]:
        assert params == published["params"]
    else:  # only a rounded size is published (model card, paper): the nominal size is within 5 %
        assert abs(params - published["nominal"]) <= 0.05 * published["nominal"]


@pytest.mark.parametrize(
    ("architecture", "expected_class"),
    [("BertForMaskedLM", "BertForMaskedLM"), ("BertForPreTraining", "BertForPreTraining"), ("BertModel", "BertModel")],
)
def test_bert_counts_the_heads_its_architecture_names(architecture, expected_class):
    model = model_from_config({**config("bert-base-uncased"), "architectures": [architecture]})
    assert model.params == TRANSFORMERS["bert-base-uncased"][expected_class]["params"]
    assert any(note.startswith(f"heads counted (*{architecture.removeprefix('Bert')}") for note in model.notes)


def test_bert_for_masked_lm_has_no_pooler_and_no_next_sentence_head():
    """The 0.5 % the old reader counted too many: BertForPreTraining's pooler (d^2 + d) and NSP head (2d + 2)."""
    masked = model_from_config(config("bert-base-uncased"))
    pretraining = model_from_config({**config("bert-base-uncased"), "architectures": ["BertForPreTraining"]})
    names = {layer.name for layer in masked.layers}
    assert not {"pooler", "nsp"} & names and "mlm.decoder" in names
    assert pretraining.params - masked.params == (768 * 768 + 768) + (768 * 2 + 2) == 592_130
    assert 0.0054 < (pretraining.params - masked.params) / masked.params < 0.0055
    roberta = model_from_config({**config("roberta-base"), "architectures": ["RobertaModel"]})
    assert roberta.params == TRANSFORMERS["roberta-base"]["RobertaModel"]["params"]


def test_legacy_fields_say_which_field_governs():
    gpt2 = load_model_config(DATA / "gpt2-n_ctx-2048.json")
    assert gpt2.params == load_model_config(DATA / "gpt2.json").params and gpt2.max_seq_len == 1024
    assert gpt2.notes[0] == (
        "n_ctx (2048) is a legacy field transformers ignores; n_positions (1024) sets the position table and the "
        "longest sequence"
    )
    with pytest.raises(ModelConfigError, match="n_positions"):
        model_from_config(config("gpt2-n_ctx-2048"), seq_len=2048)  # n_ctx does not lengthen the table
    only_n_ctx = {
        k: v for k, v in config("gpt2-n_ctx-2048").items() if k not in ("n_positions", "max_position_embeddings")
    }
    legacy = model_from_config(only_n_ctx)
    assert legacy.params == gpt2.params and legacy.max_seq_len == legacy.seq_len == 1024
    assert legacy.notes[0] == (
        "n_ctx (2048) is a legacy field transformers ignores; n_positions (1024) sets the position table and the "
        "longest sequence (transformers' default, as the config has no n_positions)"
    )
    llama = load_model_config(DATA / "llama-7b.json")
    assert llama.max_seq_len == 2048 and any("max_sequence_length" in note for note in llama.notes)
    both = model_from_config({**config("llama-7b"), "max_position_embeddings": 4096})
    assert both.max_seq_len == 4096 and any("max_position_embeddings governs" in note for note in both.notes)


def llama_like_flops(c: dict, tokens: int, keys: int, gated_experts: int = 1, router: int = 0) -> float:
    """The 6N + attention formula from the config's numbers, written out for RMSNorm, gated-MLP decoders,
    with the softmax cross-entropy over the vocabulary (4 FLOPs a logit forward, 2 backward)."""
    d, layers, vocab = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    q = c["num_attention_heads"] * (d // c["num_attention_heads"])
    kv = c.get("num_key_value_heads", c["num_attention_heads"]) * (d // c["num_attention_heads"])
    per_layer = 2 * d * q + 2 * d * kv + gated_experts * 3 * d * c["intermediate_size"] + router * d
    matmul = layers * per_layer + d * vocab  # the LM head's product counts, tied or not
    attention = layers * 4 * tokens * keys * q
    norms = 8 * tokens * d * (2 * layers + 1)
    loss = (4 + 2) * tokens * vocab
    return 3 * (2 * tokens * matmul + attention + norms) + tokens * d + loss  # + the embedding's backward scatter-add


@pytest.mark.parametrize(
    ("name", "tokens", "keys", "experts", "router"),
    [
        ("Mistral-7B-v0.1", 8192, 4096, 1, 0),  # the 4096-token window caps the keys per query
        ("Mistral-7B-v0.1", 2048, 2048, 1, 0),
        ("Mixtral-8x7B-v0.1", 4096, 4096, 2, 8),  # two experts' MLPs per token, the router's 8 logits
        ("llama-7b", 2048, 2048, 1, 0),
    ],
)
def test_flops_per_token_follow_six_n_plus_attention(name, tokens, keys, experts, router):
    model = model_from_config(config(name), seq_len=tokens)
    assert model.flops_per_sample == pytest.approx(
        llama_like_flops(config(name), tokens, keys, experts, router), rel=1e-12
    )
    # and so, per token, about 6 x the active parameters (embedding lookups excluded) plus attention
    per_token = model.flops_per_sample / tokens
    assert 6 * model.active_params * 0.95 < per_token < 6 * model.active_params * 1.6


def test_gpt2_flops_count_the_tied_head_and_the_positions_backward():
    c, tokens = config("gpt2"), 1024
    d, layers, vocab = 768, 12, 50257
    matmul = layers * (4 * d * d + 2 * d * 4 * d) + d * vocab
    expected = 3 * (2 * tokens * matmul + layers * 4 * tokens * tokens * d + 8 * tokens * d * (2 * layers + 1))
    loss = (4 + 2) * tokens * vocab  # the softmax cross-entropy over the vocabulary, forward and backward
    assert model_from_config(c, seq_len=tokens).flops_per_sample == pytest.approx(
        expected + 2 * tokens * d + loss, rel=1e-12
    )


def test_qwen2_windows_only_the_blocks_from_max_window_layers_on():
    c = {**config("Qwen2-0.5B"), "use_sliding_window": True, "sliding_window": 256, "max_window_layers": 20}
    windowed = model_from_config(c, seq_len=1024)
    windows = {layer.name.split(".")[0]: layer.window for layer in windowed.layers if layer.kind == "attention"}
    assert all(windows[f"block{i}"] == (256 if i >= 20 else 0) for i in range(24))
    full = model_from_config(config("Qwen2-0.5B"), seq_len=1024)
    assert windowed.params == full.params and windowed.flops_per_sample < full.flops_per_sample
    attention = next(layer for layer in full.layers if layer.kind == "attention")
    assert attention.bias and attention.output_bias is False  # Q, K, V biases; none on the output projection


def test_mixtral_counts_every_expert_and_computes_with_two():
    model = load_model_config(DATA / "Mixtral-8x7B-v0.1.json", seq_len=1024)
    experts = [layer for layer in model.layers if layer.experts > 1]
    assert len(experts) == 64 and all(layer.experts == 8 and layer.experts_per_token == 2 for layer in experts)
    per_expert = 3 * 4096 * 14336
    assert model.params - model.active_params == 32 * 6 * per_expert
    assert any("weight streaming moves every expert" in note for note in model.notes)


@pytest.mark.parametrize("name", PLANNED)
def test_plan_model_config_streams_every_family(name, tmp_path):
    out = tmp_path / "plan.json"
    argv = [
        "plan",
        "--model-config",
        str(DATA / f"{name}.json"),
        "--seq-len",
        "128",
        "--batch",
        "8",
        "--json",
        str(out),
    ]
    assert cli_main(argv) == 0
    planned = json.loads(out.read_text())
    assert planned["mode"] == "weight_streaming" and planned["params"] == PUBLISHED[name]["params"]
    assert planned["seq_len"] == 128 and 0 < planned["samples_per_s"] <= planned["bound_samples_per_s"]


@pytest.mark.parametrize("name", FITS_ONE_WAFER)
def test_plan_model_config_pipelines_the_families_that_fit_one_wafer(name, tmp_path):
    out = tmp_path / "plan.json"
    argv = ["plan", "--model-config", str(DATA / f"{name}.json"), "--seq-len", "128", "--batch", "8"]
    assert cli_main([*argv, "--mode", "pipelined", "--json", str(out)]) == 0
    planned = json.loads(out.read_text())
    assert planned["mode"] == "pipelined" and planned["params"] == PUBLISHED[name]["params"]
    assert len(planned["kernels"]) > 1 and planned["samples_per_s"] > 0


def test_mixtral_plan_shows_total_and_active_parameters_and_the_streamed_bytes(tmp_path, capsys):
    out = tmp_path / "plan.json"
    argv = ["plan", "--model-config", str(DATA / "Mixtral-8x7B-v0.1.json"), "--seq-len", "1024", "--batch", "16"]
    assert cli_main([*argv, "--json", str(out)]) == 0
    planned = json.loads(out.read_text())
    assert planned["params"] == 46_702_792_704 and planned["active_params"] == 12_879_925_248
    assert planned["breakdown"]["parameters"]["total"] == planned["params"]
    # every expert's weights stream in twice a step (forward, backward) in 16 bits: the untied head counts once
    assert planned["breakdown"]["communication"]["streamed_weight_bytes_per_step"] == 2 * 2 * planned["params"]
    assert planned["breakdown"]["communication"]["streamed_gradient_bytes_per_step"] == 4 * planned["params"]
    printed = capsys.readouterr().out
    assert "46702.8M parameters (12879.9M active per token)" in printed and "GB of weights streamed" in printed
    assert "weight streaming moves every expert's weights" in printed


def test_an_encoder_decoder_model_is_refused_saying_so(tmp_path, capsys):
    with pytest.raises(UnsupportedModelError, match="encoder-decoder") as info:
        load_model_config(DATA / "t5-small.json")
    assert info.value.key == "model_type" and "t5-small.json" in str(info.value)
    declared = refusal(model_from_config, {"model_type": "my_seq2seq", "is_encoder_decoder": True})
    assert_refused(declared, UnsupportedModelError, "model_type", "model_type", "'my_seq2seq'", "encoder-decoder")
    assert cli_main(["plan", "--model-config", str(DATA / "t5-small.json")]) == 2
    err = capsys.readouterr().err
    assert "encoder-decoder" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


DEEP_KEY = "x" + ".a" * 63
# name, contents, the key path the refusal names (None: no single key), the line it names (None: none)
UNREADABLE = [
    ("binary.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", None, 3),
    ("nul.json", b"\x00{}", None, 1),
    ("utf16.json", '{"model_type": "gpt2"}'.encode("utf-16"), None, None),
    ("utf16_no_bom.json", '{"model_type": "gpt2"}'.encode("utf-16-le"), None, 1),
    ("utf32.json", '{"model_type": "gpt2"}'.encode("utf-32"), None, None),
    ("latin1.json", '{"model_type": "gpt2",\n "name": "caf\u00e9"}'.encode("latin-1"), None, 2),
    ("empty.json", b"  \n", None, 2),
    ("syntax.json", b'{"model_type": ', None, 1),
    ("syntax.yaml", b"model_type: [unclosed\n", None, 2),
    ("nested.json", b"[" * 100_000 + b"]" * 100_000, None, None),
    ("deep.json", ('{"model_type": "gpt2", "x": ' + '{"a": ' * 70 + "1" + "}" * 71).encode(), DEEP_KEY, None),
    ("nan.json", b'{"model_type": "gpt2", "n_embd": NaN}', "n_embd", None),
    ("inf.yaml", b"model_type: gpt2\nrope_scaling: {factor: .inf}\n", "rope_scaling.factor", None),
    ("huge.json", b'{"model_type": "gpt2", "n_embd": 1e400}', "n_embd", None),
    ("list.yaml", b"- a\n- b\n", None, None),
    ("string.json", b'"gpt2"', None, None),
    ("bigint.json", b'{"model_type": "gpt2", "n_layer": ' + b"9" * 5000 + b"}", None, None),
    ("twice.json", b'{"model_type": "gpt2",\n "n_layer": 2,\n "n_layer": 3}', "n_layer", 3),
    ("twice.yaml", b"model_type: gpt2\nrope_scaling: {factor: 1, factor: 2}\n", "rope_scaling.factor", 2),
]


@pytest.mark.parametrize(("name", "data", "key", "line"), UNREADABLE)
def test_unreadable_files_are_typed_errors_naming_the_file_key_and_line(name, data, key, line, tmp_path, capsys):
    """The one document reader's refusal (its messages are tested in tests/unit/files): the file, the key
    at fault and the line where they are known; plan says it in one line and exits 2."""
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UnreadableDocumentError) as info:
        read_config(path)
    assert info.value.source == str(path) and info.value.key == key and info.value.line == line
    assert cli_main(["plan", "--model-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"hidden_size": "4096"}, "hidden_size"),
        ({"num_local_experts": 2.5}, "num_local_experts"),
        ({"num_experts_per_tok": 9}, "num_experts_per_tok"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
        ({"architectures": "MixtralForCausalLM"}, "architectures"),
        ({"sliding_window": -1}, "sliding_window"),
    ],
)
def test_wrong_types_name_the_key(change, key, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config("Mixtral-8x7B-v0.1"), **change}))
    with pytest.raises(ModelConfigError) as info:
        load_model_config(path)
    assert info.value.key == key and key in str(info.value) and str(path) in str(info.value)


def test_former_remote_code_formats_are_named_in_the_refusal():
    with pytest.raises(UnknownNameError, match="phi-msft is the former remote-code format"):
        model_from_config({"model_type": "phi-msft", "n_embd": 2560})


def test_missing_and_directory_paths_are_typed_errors(tmp_path):
    for path in (tmp_path / "absent.json", tmp_path):
        with pytest.raises(UnreadableDocumentError) as info:
            read_config(path)
        assert info.value.source == str(path) and info.value.key is None
        assert "expected a model config" in info.value.problem  # what the path should have held


def test_a_yaml_alias_bomb_is_refused_and_merge_keys_still_work(tmp_path):
    """A "billion laughs" file expands to 9**8 strings: refused at its size, never expanded."""
    rows = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    rows += [f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefg", "bcdefgh", strict=True)]
    (tmp_path / "laughs.yaml").write_text("\n".join(rows) + "\n")
    with pytest.raises(UnreadableDocumentError, match="aliases"):
        load_model_config(tmp_path / "laughs.yaml")
    (tmp_path / "merge.yaml").write_text(
        "base: &b {x: 1}\nmodel_type: mlp\nlayer_widths: [2, 3]\nother: {<<: *b, y: 2}\n"
    )
    assert read_config(tmp_path / "merge.yaml")["other"] == {"x": 1, "y": 2}


def test_values_after_a_shared_alias_are_checked(tmp_path):
    """A YAML alias met a second time does not end the check (the not-a-number comes after it)."""
    (tmp_path / "alias.yaml").write_text("a: &shared [1, 2]\nb: *shared\nmodel_type: gpt2\nn: .nan\n")
    with pytest.raises(UnreadableDocumentError) as refused:
        read_config(tmp_path / "alias.yaml")
    assert refused.value.key == "n"


def test_a_utf8_byte_order_mark_is_read(tmp_path):
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + (DATA / "gpt2.json").read_bytes())
    assert read_config(tmp_path / "bom.json") == config("gpt2")
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbfmodel_type: gpt2\nn_layer: 2\n")
    assert read_config(tmp_path / "bom.yaml") == {"model_type": "gpt2", "n_layer": 2}
