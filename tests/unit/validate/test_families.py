"""Which zoo model a params file is, and its count as the release builds it: names, folders, inference,
--model-family, the GPT-2- and BERT-class families, fine-tuning heads, Falcon's legacy model_type."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from arithmetic import evaluate
from zoo_data import MODELZOO

from csconform.spec import Catalogue, Spec
from csconform.userconfig.validate import Verdict, release_options, validate_file

SQUAD_LARGE = MODELZOO / "1.7.0/modelzoo/transformers/pytorch/bert/fine_tuning/qa/configs/bert_large_squad.yaml"
GPT2_SMALL = MODELZOO / "1.7.1/modelzoo/transformers/pytorch/gpt2/configs/params_gpt2_small.yaml"
BTLM = MODELZOO / "2.10.0/src/cerebras/modelzoo/models/nlp/btlm/configs/params_btlm_2p7b_8k.yaml"
VIT_HUGE = (
    MODELZOO
    / "2.3.1/src/cerebras/modelzoo/models/vision/vision_transformer/configs/params_vit_huge_patch_16_imagenet_1k.yaml"
)
# BERT-large for question answering as 1.x builds it: the encoder (2 segments) and a 2-way span head at every
# token; no pooler, no masked-LM or next-sentence heads (336,226,108 is the pre-training model's count)
SQUAD_LARGE_PARAMETERS = 334_094_338


def judge(path: Path, spec: Spec, catalogue: Catalogue, release: str, **options: object) -> Verdict:
    return validate_file(path, spec, release_options(catalogue, release, plan=False, **options))


def test_a_1x_file_copied_out_of_its_folder_is_planned_without_flags(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    copied = tmp_path / "squad.yaml"
    shutil.copy(SQUAD_LARGE, copied)
    verdict = judge(copied, spec, catalogue, "1.7.0")
    assert verdict.parameters == SQUAD_LARGE_PARAMETERS
    (note,) = [n for n in verdict.notes if "inferred" in n]
    assert "bert/qa" in note and "BertQADataProcessor" in note and "--model-family" in note
    assert judge(SQUAD_LARGE, spec, catalogue, "1.7.0").parameters == SQUAD_LARGE_PARAMETERS  # in its folder too
    gpt2 = tmp_path / "gpt2.yaml"
    shutil.copy(GPT2_SMALL, gpt2)
    small = "50257*768 + 1024*768 + 12*(4*768*768 + 2*768*3072 + 9*768 + 3072) + 2*768"
    assert judge(gpt2, spec, catalogue, "1.7.1").parameters == evaluate(small)
    assert judge(gpt2, spec, catalogue, "2.10.0").parameters == evaluate(small)  # inferred from 2.3.1's families


def test_a_flat_vision_transformer_copied_out_of_its_folder_is_planned(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    copied = tmp_path / "vit.yaml"
    shutil.copy(VIT_HUGE, copied)
    verdict = validate_file(copied, spec, release_options(catalogue, "2.3.1"))
    huge = "3*16*16*1280 + 3*1280 + 196*1280 + 32*(4*1280*1280 + 2*1280*5120 + 5120 + 9*1280) + 2*1280 + 1281*1000"
    assert verdict.plan is not None and verdict.plan.parameters == evaluate(huge)
    (note,) = [n for n in verdict.notes if "inferred" in n]
    assert "vision_transformer" in note and "ImageNet1KProcessor" in note and "--model-family" in note


def test_model_family_overrides_the_name_of_a_2x_file(spec: Spec, catalogue: Catalogue) -> None:
    own = judge(BTLM, spec, catalogue, "2.10.0").parameters
    as_bert = judge(BTLM, spec, catalogue, "2.10.0", family="bert")
    assert as_bert.parameters not in (None, own) and "model family bert from --model-family" in as_bert.notes
    squad_as_bert = judge(SQUAD_LARGE, spec, catalogue, "1.7.0", family="bert")
    assert squad_as_bert.parameters == 336_226_108  # the pre-training heads, as asked


def test_an_unknown_model_says_what_would_make_it_plannable(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    path = tmp_path / "unet.yaml"
    path.write_text("trainer:\n  init:\n    model: {name: unet, hidden_size: 64}\n", encoding="utf-8")
    (note,) = [n for n in judge(path, spec, catalogue, "2.3.1").notes if n.startswith("model not planned")]
    assert "unknown zoo model 'unet'" in note and "--model-family" in note and "--no-plan" in note


# Each family's first file counted as the zoo builds it; where a published checkpoint exists, its size.
FAMILY_COUNTS = {
    # GPT-2 class, ALiBi (no position table), SwiGLU with biases, tied head
    "btlm/configs/params_btlm_2p7b_8k.yaml": "50257*2560"
    " + 32*(4*2560*2560 + 4*2560 + 3*2560*6826 + 2*6826 + 2560 + 4*2560) + 2*2560",
    "jais/configs/params_jais_13b.yaml": "84992*5120"
    " + 40*(4*5120*5120 + 4*5120 + 3*5120*13653 + 2*13653 + 5120 + 4*5120) + 2*5120",
    # GPT-2 class, learned positions, multi-query attention (one key/value head of 128), tied head
    "starcoder/configs/params_starcoder_15b.yaml": "49152*6144 + 8192*6144 + 40*(6144*6144 + 6144 + 2*(6144*128 + 128)"
    " + 6144*6144 + 6144 + 4*6144 + 2*6144*24576 + 24576 + 6144) + 2*6144",
    # ESM-2 35M: the BERT pre-training model with disable_nsp (no pooler, NSP or segments), rotary positions, a
    # final LayerNorm, no embedding LayerNorm, the masked-LM head tied (transform, LayerNorm, bias)
    "esm2/configs/params_esm2_t12_35M_UR50D.yaml": "33*480 + 12*(4*480*480 + 4*480 + 2*480*1920 + 1920 + 480 + 4*480)"
    " + 2*480 + (480*480 + 480 + 2*480 + 33)",
    # DPR: two BERT-base encoders without segment embeddings or pooler (pooler_type cls)
    "dpr/configs/params_dpr_base_nq.yaml": "2*(30522*768 + 512*768 + 2*768 + 12*(4*768*768 + 4*768 + 2*768*3072 + 3072"
    " + 768 + 4*768))",
}


@pytest.mark.parametrize("name", sorted(FAMILY_COUNTS))
def test_gpt2_and_bert_class_families_are_counted_as_the_zoo_builds_them(
    name: str, spec: Spec, catalogue: Catalogue
) -> None:
    path = MODELZOO / "2.10.0/src/cerebras/modelzoo/models/nlp" / name
    verdict = judge(path, spec, catalogue, "2.10.0")
    assert verdict.parameters == evaluate(FAMILY_COUNTS[name]), verdict.notes


def test_bloom_and_btlm_match_their_published_checkpoints(spec: Spec, catalogue: Catalogue) -> None:
    bloom = MODELZOO / "2.10.0/src/cerebras/modelzoo/models/nlp/bloom/configs/params_bloom_7b.yaml"
    assert judge(bloom, spec, catalogue, "2.10.0").parameters == 7_069_016_064  # bigscience/bloom-7b1


def test_a_flat_file_matching_no_family_says_what_would_make_it_plannable(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "train_input: {data_processor: MyOwnProcessor, batch_size: 8}\nmodel: {width: 64}\n"
        "optimizer: {optimizer_type: SGD, learning_rate: 0.1}\nruntime: {max_steps: 10}\n",
        encoding="utf-8",
    )
    verdict = judge(path, spec, catalogue, "1.9.1")
    (note,) = [n for n in verdict.notes if n.startswith("model not planned")]
    assert "1.9.1" in note and "--model-family" in note and "PERF-025" not in {f.rule for f in verdict.warnings}


def test_dpr_s_two_encoders_are_planned_apart(spec: Spec, catalogue: Catalogue) -> None:
    path = MODELZOO / "2.10.0/src/cerebras/modelzoo/models/nlp/dpr/configs/params_dpr_base_nq.yaml"
    verdict = validate_file(path, spec, release_options(catalogue, "2.10.0"))
    assert verdict.plan is not None and verdict.plan.parameters == evaluate(
        FAMILY_COUNTS["dpr/configs/params_dpr_base_nq.yaml"]
    )
