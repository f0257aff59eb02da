"""Each release-ranged rule at both edges of its range, on real Model Zoo files of the releases there.

A rule that holds from release B (or up to release A) is checked with a file the vendor shipped on one
side of the edge, judged for its own release and for the release across the edge: the rule fires on
one side only. The files are verbatim copies (``data/modelzoo/sources.yaml``); the releases' own
knowledge comes from the extraction script (``csconform/userconfig/data/modelzoo-releases.json``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from zoo_data import MODELZOO

from csconform.spec import Catalogue, Spec
from csconform.userconfig.checks import reads_use_bfloat16
from csconform.userconfig.release_data import ReleaseKnowledge, first_release
from csconform.userconfig.validate import Verdict, release_options, validate_file

BERT_202 = "2.0.2/modelzoo/transformers/pytorch/bert/configs/bert_base_MSL128.yaml"
BERT_210 = "2.1.0/modelzoo/transformers/pytorch/bert/configs/bert_base_MSL128.yaml"
SST2_191 = "1.9.1/modelzoo/transformers/pytorch/bert/fine_tuning/classifier/configs/bert_base_classifier_sst2.yaml"
LLAMA_221 = "2.2.1/src/cerebras/modelzoo/models/nlp/llama/configs/params_llama2_7b.yaml"
LLAMA_230 = "2.3.0/src/cerebras/modelzoo/models/nlp/llama/configs/params_llama3_8b_v2.yaml"
MIXTRAL_231 = "2.3.1/src/cerebras/modelzoo/models/nlp/mixtral/configs/params_mixtral_8x7b.yaml"
DIT_240 = "2.4.0/src/cerebras/modelzoo/models/vision/dit/configs/params_dit_large_patchsize_2x2.yaml"
BTLM_2100 = "2.10.0/src/cerebras/modelzoo/models/nlp/btlm/configs/params_btlm_2p7b_8k.yaml"
UNET_203 = "2.0.3/modelzoo/vision/pytorch/unet/configs/params_skm_tea.yaml"
GPT3_XL_191 = "1.9.1/modelzoo/transformers/pytorch/gpt3/configs/params_gpt3_xl.yaml"


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
    Edge(
        "CONFIG-024",
        UNET_203,
        "2.0.3",
        "2.1.0",
        "optimizer.loss_scaling_factor",
        "use_bfloat16 sets the half dtype up to 2.0.3; 2.1.0 refuses it and computes in fp16_type's float16",
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


# --- the edges come from the extracted knowledge, and the spec's ranges agree with it ----------------


def _forbids_unknown_model_keys(release: ReleaseKnowledge) -> bool:
    return any(entry["extra"] == "forbid" for entry in release.model_configs.get("models", {}).values())


BOUNDARIES: list[tuple[str, Callable[[ReleaseKnowledge], bool], dict[str, str]]] = [
    ("the trainer layout is read", lambda r: r.reads_trainer_layout, {"CONFIG-004": "<", "CONFIG-005": ">="}),
    (
        "the optimizer is a class of the package",
        lambda r: not r.builds_1x_optimizers,
        {"CONFIG-040": "<", "CONFIG-041": ">=", "CONFIG-042": "<"},
    ),
    ("use_bfloat16 no longer sets the half dtype", lambda r: not reads_use_bfloat16(r.name), {"CONFIG-023": ">="}),
    ("model config classes refuse unknown keys", _forbids_unknown_model_keys, {"CONFIG-008": ">=", "CONFIG-052": ">="}),
]


@pytest.mark.parametrize("boundary", BOUNDARIES, ids=lambda b: b[0])
def test_the_spec_s_release_ranges_are_the_extracted_boundaries(
    boundary: tuple[str, Callable[[ReleaseKnowledge], bool], dict[str, str]], spec: Spec
) -> None:
    """Where a rule's range says a behaviour starts is where the releases' own source says it does."""
    _, fact, rules = boundary
    since = first_release(fact)
    assert since is not None
    for rule, operator in rules.items():
        releases = spec.get(rule).releases
        assert releases is not None
        edges = {(s.operator, s.version) for s in SpecifierSet(releases)}
        assert (operator, since) in edges, (rule, releases, since)


def test_behaviours_the_rules_describe_in_words_start_where_the_extraction_says(spec: Spec) -> None:
    """CONFIG-032 (a clipping threshold of 0) and CONFIG-064 (a fraction as eval_frequency) hold for every
    release with a behaviour that changes at one; their statements name the release the data finds."""
    refused_from = first_release(lambda r: r.zero_clipping_threshold == "refused")
    fraction_from = first_release(lambda r: r.eval_frequency_fraction)
    assert refused_from == "2.0.2" and f"From release {refused_from}" in spec.get("CONFIG-032").statement
    assert fraction_from == "2.3.0" and f"from {fraction_from}" in spec.get("CONFIG-064").statement


def _edited(tmp_path: Path, fixture: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = yaml.safe_load((MODELZOO / fixture).read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / Path(fixture).name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _rules(path: Path, release: str, spec: Spec, catalogue: Catalogue) -> dict[str, set[str | None]]:
    verdict = validate_file(path, spec, release_options(catalogue, release, plan=False))
    found: dict[str, set[str | None]] = {}
    for finding in verdict.findings:
        found.setdefault(finding.rule, set()).add(finding.key)
    return found


def test_a_clipping_threshold_of_0_is_no_clipping_up_to_1_9_1_and_refused_from_2_0_2(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    path = _edited(tmp_path, GPT3_XL_191, lambda d: d["optimizer"].update(max_gradient_norm=0.0))
    assert "CONFIG-032" not in _rules(path, "1.9.1", spec, catalogue)
    assert _rules(path, "2.0.2", spec, catalogue)["CONFIG-032"] == {"optimizer.max_gradient_norm"}


def test_a_fraction_as_eval_frequency_is_refused_up_to_2_2_1_and_taken_from_2_3_0(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    path = _edited(tmp_path, LLAMA_221, lambda d: d["runconfig"].update(eval_frequency=0.5))
    assert _rules(path, "2.2.1", spec, catalogue)["CONFIG-064"] == {"runconfig.eval_frequency"}
    assert "CONFIG-064" not in _rules(path, "2.3.0", spec, catalogue)


def test_a_run_without_an_optimizer_breaks_the_1x_rule_up_to_1_9_1_and_the_package_rule_from_2_0_2(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    path = _edited(tmp_path, GPT3_XL_191, lambda d: d.pop("optimizer"))
    assert _rules(path, "1.9.1", spec, catalogue)["CONFIG-040"] == {"optimizer"}
    assert _rules(path, "2.0.2", spec, catalogue)["CONFIG-041"] == {"optimizer"}


@pytest.mark.parametrize(
    ("release", "reader"),
    [("1.9.1", "1.x"), ("2.0.2", "package"), ("2.2.1", "package"), ("2.3.0", "conversion")],
)
def test_an_unknown_scheduler_is_refused_in_the_words_of_the_release_s_reader(
    release: str, reader: str, tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    """1.x's PyTorchBaseModel up to 1.9.1; the package's classes from 2.0.2; the trainer's conversion of a
    flat file from 2.3.0 (the first release that reads the trainer layout)."""
    path = _edited(tmp_path, GPT3_XL_191, lambda d: d["optimizer"]["learning_rate"][1].update(scheduler="Cosin"))
    verdict = validate_file(path, spec, release_options(catalogue, release, plan=False))
    (message,) = [f.message for f in verdict.violations if f.rule == "CONFIG-050"]
    words = {
        "1.x": "Unsupported LR scheduler cosin",
        "package": "unknown LR scheduler 'Cosin'",
        "conversion": "Invalid lr_scheduler type.",
    }
    assert message.startswith(words[reader])
