"""The public config.json of each family through `csconform validate` with training options: the
parameter count is the published checkpoint's (tests/unit/perf_model/data/hf_configs/published.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from csconform.spec import Catalogue, Spec
from csconform.userconfig.read_hf import TrainingOptions
from csconform.userconfig.validate import release_options, validate_file

CONFIGS = Path(__file__).resolve().parents[1] / "perf_model" / "data" / "hf_configs"
PUBLISHED = json.loads((CONFIGS / "published.json").read_text(encoding="utf-8"))
DECODER_OR_ENCODER = sorted(
    name
    for name, entry in PUBLISHED.items()
    if entry.get("exact") and (CONFIGS / f"{name}.json").is_file() and not name.startswith("t5")
)
TRAINING = TrainingOptions(batch_size=64, max_steps=1000, learning_rate=1e-4, warmup_steps=100, seq_len=128)


@pytest.mark.parametrize("name", DECODER_OR_ENCODER)
def test_a_public_config_json_has_its_published_size(name: str, spec: Spec, catalogue: Catalogue) -> None:
    options = release_options(catalogue, None, training=TRAINING, plan=False)
    verdict = validate_file(CONFIGS / f"{name}.json", spec, options)
    assert verdict.outcome == "conforms" and verdict.layout == "hf"
    assert verdict.parameters == PUBLISHED[name]["params"]


def test_an_encoder_decoder_config_is_refused_as_such(spec: Spec, catalogue: Catalogue) -> None:
    verdict = validate_file(CONFIGS / "t5-small.json", spec, release_options(catalogue, None, training=TRAINING))
    assert verdict.parameters is None and any("encoder-decoder" in note for note in verdict.notes)


def test_falcon_s_original_config_json_is_read_as_falcon(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    """tiiuae/falcon-7b's config.json as first published (model_type RefinedWebModel)."""
    original = {
        "alibi": False,
        "apply_residual_connection_post_layernorm": False,
        "architectures": ["RWForCausalLM"],
        "bias": False,
        "hidden_size": 4544,
        "layer_norm_epsilon": 1e-05,
        "model_type": "RefinedWebModel",
        "multi_query": True,
        "n_head": 71,
        "n_layer": 32,
        "parallel_attn": True,
        "vocab_size": 65024,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(original), encoding="utf-8")
    verdict = validate_file(path, spec, release_options(catalogue, "2.10.0", training=TRAINING))
    assert verdict.parameters == 6_921_720_704  # tiiuae/falcon-7b
    assert verdict.plan is not None
    assert any("RefinedWebModel" in note and "read as falcon" in note for note in verdict.plan.notes)
