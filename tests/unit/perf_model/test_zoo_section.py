"""Model Zoo ``model:`` sections read into the performance model (csconform.perf.models.zoo_section).

The params files in ``data/zoo_params`` are the zoo's own (``SOURCES.md``: release tag, commit,
path). Each expected count comes from outside csconform: the published checkpoint the file
reproduces (Llama-2-7B, Mistral-7B, Mixtral-8x7B, Falcon, GPT-2 medium, BERT-base), Hugging Face
transformers' class of the same sizes (``data/hf_configs/transformers_counts.json``) adjusted by the
written-out difference where the zoo's file differs (vocabulary padding, the number of labels), or
arithmetic written out here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from csconform.errors import ModelConfigError, UnknownNameError, UnsupportedModelError
from csconform.perf.models.zoo_section import model_from_zoo_section
from csconform.perf.plan import plan

DATA = Path(__file__).parent / "data" / "zoo_params"
HF = json.loads((DATA.parent / "hf_configs" / "transformers_counts.json").read_text())["counts"]
BERT_MODEL = HF["bert-base-uncased"]["BertModel"]["params"]  # 109,482,240: embeddings, encoder, pooler
POOLER = 768 * 768 + 768


def section(path: Path) -> dict:
    params = yaml.safe_load(path.read_text())
    return params["model"] if "model" in params else params["trainer"]["init"]["model"]


# file, family (the model folder of a 1.x file; 2.x files name it), parameters, active parameters, where from
EXPECTED = [
    ("2.10/params_llama2_7b.yaml", None, 6_738_415_616, None, "Llama-2-7b checkpoint"),
    ("1.9/params_llama_7b.yaml", "llama", 6_738_415_616, None, "LLaMA-1 7B checkpoint (same sizes)"),
    ("2.10/params_mistral_7B_msl128k.yaml", None, 7_241_732_096, None, "Mistral-7B-v0.1 checkpoint"),
    ("2.10/params_mixtral_8x7b.yaml", None, 46_702_792_704, 12_879_925_248, "Mixtral-8x7B-v0.1: 46.7B / 12.9B"),
    ("2.10/params_falcon_7b.yaml", None, 6_921_720_704, None, "transformers FalconForCausalLM, falcon-7b"),
    ("1.9/params_falcon_7b.yaml", "falcon", 6_921_720_704, None, "transformers FalconForCausalLM, falcon-7b"),
    ("2.10/params_falcon_40b.yaml", None, 41_303_293_952, None, "transformers FalconForCausalLM, falcon-40b"),
    ("1.9/params_gpt2_medium.yaml", "gpt2", 354_823_168, None, "gpt2-medium checkpoint (355M)"),
    ("2.10/bert_base_MSL128.yaml", None, 110_106_428, None, "BertForPreTraining of bert-base-uncased"),
    ("1.9/bert_base_MSL128.yaml", "bert", 110_106_428, None, "BertForPreTraining of bert-base-uncased"),
    # GPT-NeoX-20B's checkpoint pads its vocabulary to 50432; the zoo file has 50277: 155 rows fewer, in and out
    ("1.9/params_gpt_neox_20B.yaml", "gpt-neox", 20_554_567_680 - 2 * 155 * 6144, None, "gpt-neox-20b less padding"),
    # GPT-J-6B's checkpoint (6,050,882,784 with transformers) pads to 50400; the zoo has 50257: 143 rows of
    # the embedding, of the LM head and of its bias fewer
    ("1.9/params_gptj_6B.yaml", "gptj", 6_050_882_784 - 143 * (4096 + 4096 + 1), None, "gpt-j-6b less padding"),
    # sequence classification: BertModel plus a 2-label classifier; token classification: no pooler, 7 labels
    ("2.10/bert_base_classifier_sst2.yaml", None, BERT_MODEL + 768 * 2 + 2, None, "BertForSequenceClassification"),
    ("1.9/bert_base_classifier_sst2.yaml", "bert/classifier", BERT_MODEL + 768 * 2 + 2, None, "the same, 1.x"),
    (
        "2.10/bert_base_ner_bc5cdr_chem.yaml",
        None,
        BERT_MODEL - POOLER + 768 * 7 + 7,
        None,
        "BertForTokenClassification",
    ),
    # 784 -> 10 x 50 (ReLU) -> 10, biased
    ("2.10/fc_mnist_params.yaml", None, 784 * 50 + 50 + 9 * (50 * 50 + 50) + 50 * 10 + 10, None, "arithmetic"),
    ("1.9/fc_mnist_params.yaml", "fc_mnist", 784 * 50 + 50 + 9 * (50 * 50 + 50) + 50 * 10 + 10, None, "arithmetic"),
]


@pytest.mark.parametrize(("name", "family", "params", "active", "source"), EXPECTED)
def test_zoo_sections_count_the_architecture_the_zoo_builds(name, family, params, active, source):
    model = model_from_zoo_section(section(DATA / name), family=family, source=name)
    assert model.params == params, source
    assert model.active_params == (active or params)


def test_a_mixture_with_a_shared_expert_counts_it_as_always_active():
    """10 blocks of d=768 with ALiBi, biased LayerNorms, attention and SwiGLU experts (fc1 768 -> 2 x 2048):
    4 routed experts (top 1) and 1 shared expert, a router without bias, a tied head."""
    d, layers, vocab, ffn = 768, 10, 50257, 2048
    expert = (d * 2 * ffn + 2 * ffn) + (ffn * d + d)
    block = 2 * 2 * d + (4 * d * d + 4 * d) + d * 4
    total = vocab * d + layers * (block + 5 * expert) + 2 * d
    active = vocab * d + layers * (block + 2 * expert) + 2 * d
    model = model_from_zoo_section(section(DATA / "2.10/params_moe_111M_with_shared_expert.yaml"))
    assert (model.params, model.active_params) == (total, active) == (298_456_832, 156_753_152)


def test_the_zoo_llama_405b_file_has_twice_the_key_value_heads_of_meta_s_config():
    """The file says num_kv_groups 16 where Meta's Llama-3.1-405B has 8 key/value heads: 126 blocks x K and V
    projections of 8 more heads x 128 wide, 4,227,858,432 parameters more than the 405,853,388,800 published."""
    model = model_from_zoo_section(section(DATA / "2.10/params_llama3p1_405b_msl_128k.yaml"))
    assert model.params == 405_853_388_800 + 126 * 2 * 16384 * 8 * 128


def test_release_one_and_two_key_names_read_the_same_model():
    one = section(DATA / "1.9/params_llama_7b.yaml")  # use_rms_norm, no name, 2048 positions
    two = section(DATA / "2.10/params_llama2_7b.yaml")  # norm_type: rmsnorm, name: llama, 4096 positions
    assert "use_rms_norm" in one and "norm_type" in two
    a = model_from_zoo_section(one, family="llama", seq_len=2048)
    b = model_from_zoo_section(two, seq_len=2048)
    assert [(x.kind, x.params, x.forward_flops) for x in a.layers] == [
        (x.kind, x.params, x.forward_flops) for x in b.layers
    ]


def test_the_zoo_s_defaults_differ_by_model_class():
    base = {"hidden_size": 64, "num_hidden_layers": 2, "num_heads": 4, "filter_size": 256, "vocab_size": 100}
    gpt2 = model_from_zoo_section({**base, "name": "gpt2", "max_position_embeddings": 32})
    gptj = model_from_zoo_section({**base, "name": "gptj", "max_position_embeddings": 32})
    names = lambda m: {x.name for x in m.layers}  # noqa: E731
    assert "position_embeddings" in names(gpt2) and "position_embeddings" not in names(gptj)  # learned vs rotary
    assert "block0.ln2" in names(gpt2) and "block0.ln2" not in names(gptj)  # one norm unless untied
    fc1 = {m: next(x for x in m.layers if x.name == "block0.fc1") for m in (gpt2, gptj)}
    assert fc1[gpt2].bias and not fc1[gptj].bias  # the GPT-J class has no MLP bias unless use_ffn_bias
    untied = model_from_zoo_section({**base, "name": "gptj", "use_untied_layer_norm": True})
    assert "block0.ln2" in names(untied)


def test_bert_segments_follow_nsp_and_the_release():
    """No segment table without NSP, in 1.x (model.py: num_segments=None if disable_nsp else 2) and 2.x
    (the default of num_segments); only 2.x reads a num_segments key."""
    roberta = section(DATA / "2.10/roberta_large.yaml")  # disable_nsp: true
    newest = model_from_zoo_section(roberta)
    assert "token_type_embeddings" not in {x.name for x in newest.layers}
    assert not {"nsp", "pooler"} & {x.name for x in newest.layers}
    for release in ("1.9", "Release_1.9.1", "R_1.7.0", "Release_2.10.0"):
        assert model_from_zoo_section(roberta, release=release).params == newest.params
    three = {**roberta, "num_segments": 3}
    assert model_from_zoo_section(three).params - newest.params == 3 * 1024
    assert model_from_zoo_section(three, release="1.9.1").params == newest.params
    bert = section(DATA / "1.9/bert_base_MSL128.yaml")  # NSP: 2 segments in both lines
    assert model_from_zoo_section(bert, family="bert", release="1.9.1").params == 110_106_428


def test_mistral_s_window_lowers_the_flops_not_the_count():
    windowed = model_from_zoo_section(section(DATA / "2.10/params_mistral_7B_msl128k.yaml"), seq_len=16384)
    full = model_from_zoo_section(
        {**section(DATA / "2.10/params_mistral_7B_msl128k.yaml"), "attention_sliding_window_length": None},
        seq_len=16384,
    )
    assert windowed.params == full.params and windowed.flops_per_sample < full.flops_per_sample
    assert any("at most 4096 keys" in note for note in windowed.notes)


def test_a_zoo_section_plans_and_its_mixture_streams_every_expert():
    model = model_from_zoo_section(section(DATA / "2.10/params_mixtral_8x7b.yaml"), seq_len=2048)
    result = plan(model, wafer="wse3", systems=2, batch=32)
    assert result.params == model.params and result.active_params == model.active_params
    assert result.breakdown["communication"]["streamed_weight_bytes_per_step"] == 4 * model.params
    assert any("weight streaming moves every expert" in note for note in result.notes)
    assert model.at_seq_len(1024).seq_len == 1024


@pytest.mark.parametrize(
    ("change", "error", "key", "message"),
    [
        ({"hidden_size": "4096"}, ModelConfigError, "hidden_size", "must be an integer"),
        ({"moe": {"num_experts": 8, "top_k": 9}}, ModelConfigError, "moe.top_k", "exceeds"),
        ({"moe": {"num_experts": 8, "top_k": 2.0}}, ModelConfigError, "moe.top_k", "must be an integer"),
        (
            {"extra_attention_params": {"num_kv_groups": 5}},
            ModelConfigError,
            "extra_attention_params.num_kv_groups",
            "divide",
        ),
        ({"norm_type": "batchnorm1d"}, UnsupportedModelError, "norm_type", "not modelled"),
        ({"cross_attention_layers": [3]}, UnsupportedModelError, "cross_attention_layers", "not modelled"),
        ({"share_embedding_weights": "yes"}, ModelConfigError, "share_embedding_weights", "true or false"),
        ({"name": 7}, ModelConfigError, "name", "must be a string"),
    ],
)
def test_bad_sections_name_the_section_and_the_key(change, error, key, message):
    model = {**section(DATA / "2.10/params_mixtral_8x7b.yaml"), **change}
    with pytest.raises(error) as info:
        model_from_zoo_section(model, family="mixtral", source="params_mixtral_8x7b.yaml: trainer.init.model")
    assert info.value.key == key and message in str(info.value)
    assert str(info.value).startswith("params_mixtral_8x7b.yaml: trainer.init.model: ") and "\n" not in str(info.value)


def test_a_section_s_own_name_wins_over_the_folder():
    llama = section(DATA / "2.10/params_llama2_7b.yaml")
    assert model_from_zoo_section(llama, family="mistral").family == "llama"
    neox = section(DATA / "1.9/params_gpt_neox_20B.yaml")  # 1.x: no name; a decoder's sub-folder is the decoder
    assert model_from_zoo_section(neox, family="gptj/continuous_pretraining").params == 20_552_663_040


def test_unknown_models_are_refused():
    with pytest.raises(UnknownNameError, match="known: gpt2, gpt3"):
        model_from_zoo_section({"name": "mamba"})
    with pytest.raises(UnknownNameError, match="bert/nonsense"):
        model_from_zoo_section({"name": "bert/nonsense"})
    with pytest.raises(ModelConfigError, match="missing field name"):
        model_from_zoo_section({"hidden_size": 64})
    with pytest.raises(ModelConfigError, match="object of fields"):
        model_from_zoo_section(["not", "a", "section"])  # type: ignore[arg-type]


# The 1.x TensorFlow BERT models (tf/bert/BertModel.py and fine_tuning/<task>/Bert*Model.py, 1.6.0-1.8.0),
# over a BERT-base encoder with 2 segments and V=30522 (the caller reads V from train_input):
TF_BASE = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_heads": 12,
    "filter_size": 3072,
    "max_position_embeddings": 512,
    "use_segment_embedding": True,
    "vocab_size": 30522,
}
TF_ENCODER = (
    30522 * 768 + 512 * 768 + 2 * 768 + 2 * 768 + 12 * (4 * 768 * 768 + 4 * 768 + 2 * 768 * 3072 + 3072 + 5 * 768)
)


def tf_bert(family: str, **keys: object) -> int:
    model = model_from_zoo_section({**TF_BASE, **keys}, family=family, release="1.x", tensorflow=True)
    return int(model.params)


def test_tensorflow_bert_heads_count_as_the_tf_release_builds_them():
    # CLSLayer(hidden_size, num_cls_classes, use_bias=True): a pooler and the output, over 2 classes unless set
    assert tf_bert("bert/classifier") == TF_ENCODER + POOLER + 768 * 2 + 2
    assert tf_bert("bert/classifier", num_cls_classes=3) == TF_ENCODER + POOLER + 768 * 3 + 3
    assert tf_bert("bert/classifier", num_labels=5) == TF_ENCODER + POOLER + 768 * 2 + 2  # a PyTorch key, not read
    # DenseLayer(units=2) at every token, no pooler; DenseLayer(num_classes, use_bias=True)
    assert tf_bert("bert/qa") == TF_ENCODER + 768 * 2 + 2
    assert tf_bert("bert/token_classifier", num_classes=7) == TF_ENCODER + 768 * 7 + 7
    # MultipleCLSLayer(output_size=1, use_bias=True), where the PyTorch model has num_labels (2) outputs
    assert tf_bert("bert/extractive_summarization") == TF_ENCODER + 768 + 1
    pytorch = model_from_zoo_section(
        {**TF_BASE, "num_labels": 2}, family="bert/extractive_summarization", release="1.x"
    )
    assert pytorch.params == TF_ENCODER + 768 * 2 + 2
    # pre-training: the NSP CLSLayer (num_cls_classes) and the MLM layer, whose biases the 1.x code always builds
    mlm = 768 * 768 + 768 + 2 * 768 + 30522
    assert tf_bert("bert") == TF_ENCODER + POOLER + 768 * 2 + 2 + mlm == 110_106_428
    assert tf_bert("bert", use_ffn_bias_in_mlm=False, use_output_bias_in_mlm=False) == 110_106_428
    assert tf_bert("bert", disable_nsp=True) == TF_ENCODER + mlm  # the segment table stays: use_segment_embedding


def test_tensorflow_bert_segments_vocabulary_and_norms_follow_its_own_keys():
    assert tf_bert("bert/qa", use_segment_embedding=False) == TF_ENCODER - 2 * 768 + 768 * 2 + 2  # default: none
    assert tf_bert("bert/qa", use_pre_normalization=True) == tf_bert("bert/qa")  # one norm, after the encoder
    pre = model_from_zoo_section(
        {**TF_BASE, "use_pre_normalization": True}, family="bert/qa", release="1.x", tensorflow=True
    )
    names = {layer.name for layer in pre.layers}
    assert "ln_f" in names and "embeddings.ln" not in names
    no_vocabulary = {k: v for k, v in TF_BASE.items() if k != "vocab_size"}
    with pytest.raises(ModelConfigError) as missing:  # no default vocabulary: BertModel reads train_input's
        model_from_zoo_section(no_vocabulary, family="bert/qa", release="1.x", tensorflow=True)
    assert missing.value.key == "vocab_size"
    with pytest.raises(UnsupportedModelError) as factorized:
        model_from_zoo_section({**TF_BASE, "embedding_size": 128}, family="bert/qa", release="1.x", tensorflow=True)
    assert factorized.value.key == "embedding_size"
