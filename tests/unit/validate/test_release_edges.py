"""Each release-ranged rule at both edges of its range, on real Model Zoo files of the releases there.

A rule that holds from release B (or up to release A) is checked with a file the vendor shipped on one
side of the edge, judged for its own release and for the release across the edge: the rule fires on
one side only. The files are verbatim copies (``data/modelzoo/sources.yaml``); the releases' own
knowledge comes from the extraction script (``csconform/userconfig/data/modelzoo-releases.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest
from zoo_data import MODELZOO

from csconform.spec import Catalogue, Spec
from csconform.userconfig.validate import Verdict, release_options, validate_file

BERT_202 = "2.0.2/modelzoo/transformers/pytorch/bert/configs/bert_base_MSL128.yaml"
BERT_210 = "2.1.0/modelzoo/transformers/pytorch/bert/configs/bert_base_MSL128.yaml"
SST2_191 = "1.9.1/modelzoo/transformers/pytorch/bert/fine_tuning/classifier/configs/bert_base_classifier_sst2.yaml"
LLAMA_221 = "2.2.1/src/cerebras/modelzoo/models/nlp/llama/configs/params_llama2_7b.yaml"
LLAMA_230 = "2.3.0/src/cerebras/modelzoo/models/nlp/llama/configs/params_llama3_8b_v2.yaml"
MIXTRAL_231 = "2.3.1/src/cerebras/modelzoo/models/nlp/mixtral/configs/params_mixtral_8x7b.yaml"
DIT_240 = "2.4.0/src/cerebras/modelzoo/models/vision/dit/configs/params_dit_large_patchsize_2x2.yaml"
BTLM_2100 = "2.10.0/src/cerebras/modelzoo/models/nlp/btlm/configs/params_btlm_2p7b_8k.yaml"


class Edge(NamedTuple):
    rule: str
    fixture: str
    fires_at: str  # the release across the edge where the file breaks the rule
    quiet_at: str  # the release on the other side (the file's own, or its neighbour)
    key: str | None  # the key the finding names
    why: str


EDGES = [
    Edge("CONFIG-042", SST2_191, "1.9.1", "2.0.2", "optimizer.epsilon", "1.x AdamW reads eps; 2.0.2 reads no 1.x keys"),
    Edge("CONFIG-042", BERT_202, "1.9.1", "2.0.2", "optimizer.weight_decay", "1.9.1 reads weight_decay_rate"),
    Edge("CONFIG-002", BERT_210, "2.0.3", "2.1.0", "model.fp16_type", "fp16_type arrives in 2.1.0"),
    Edge("CONFIG-004", LLAMA_230, "2.2.1", "2.3.0", "trainer", "the trainer layout is read from 2.3.0"),
    Edge("CONFIG-005", LLAMA_221, "2.3.0", "2.2.1", None, "a flat file is converted on load from 2.3.0"),
    Edge(
        "CONFIG-041", DIT_240, "2.3.1", "2.4.0", "trainer.init.optimizer.AdamW.learning_rate", "lr's alias from 2.4.0"
    ),
]


def judge(fixture: str, release: str, spec: Spec, catalogue: Catalogue) -> Verdict:
    return validate_file(MODELZOO / fixture, spec, release_options(catalogue, release, plan=False))


@pytest.mark.parametrize("edge", EDGES, ids=lambda e: f"{e.rule}-{e.fires_at}|{e.quiet_at}-{Path(e.fixture).stem}")
def test_a_release_ranged_rule_fires_on_one_side_of_its_edge_only(edge: Edge, spec: Spec, catalogue: Catalogue) -> None:
    assert edge.fixture.split("/")[0] in (edge.fires_at, edge.quiet_at)  # a file of one of the two releases
    fired = judge(edge.fixture, edge.fires_at, spec, catalogue)
    quiet = judge(edge.fixture, edge.quiet_at, spec, catalogue)
    findings = [f for f in (*fired.violations, *fired.warnings) if f.rule == edge.rule]
    assert edge.key in {f.key for f in findings}, edge.why
    assert edge.rule not in {f.rule for f in (*quiet.violations, *quiet.warnings)}, edge.why


def test_the_convert_command_is_named_from_the_release_that_ships_it(spec: Spec, catalogue: Catalogue) -> None:
    """CONFIG-005's remedy: ``cszoo config convert_legacy`` from 2.4.0 (the release whose setup.py installs cszoo)."""
    (before,) = [f for f in judge(MIXTRAL_231, "2.3.1", spec, catalogue).warnings if f.rule == "CONFIG-005"]
    (after,) = [f for f in judge(MIXTRAL_231, "2.4.0", spec, catalogue).warnings if f.rule == "CONFIG-005"]
    assert "cszoo" not in before.message and "cszoo config convert_legacy" in after.message


def test_a_model_key_btlm_s_config_class_lacks_is_refused_from_2_4_0(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    """The vendor's BTLM file conforms; one misspelt model key is refused where the release's model config
    classes forbid unknown keys (from 2.4.0) and not before (2.3.1 has no such classes)."""
    real = MODELZOO / BTLM_2100
    assert judge(BTLM_2100, "2.10.0", spec, catalogue).violations == []
    text = real.read_text(encoding="utf-8")
    assert "      hidden_size: 2560\n" in text
    edited = tmp_path / real.name
    edited.write_text(text.replace("      hidden_size: 2560\n", "      hiden_size: 2560\n", 1), encoding="utf-8")
    for release, refused in (("2.10.0", True), ("2.4.0", True), ("2.3.1", False)):
        verdict = validate_file(edited, spec, release_options(catalogue, release, plan=False))
        keys = {f.key for f in verdict.violations if f.rule == "CONFIG-008"}
        assert (keys == {"trainer.init.model.hiden_size"}) is refused, release
