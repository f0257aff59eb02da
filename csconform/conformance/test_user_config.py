"""A user's own training setup (specs/user_config.yaml): `csconform validate` on small params files.

Each check writes a params file breaking (or keeping) one rule, judges it for a release in and out of
the rule's range, and checks the finding: the rule, its level, the key path, the line in the file and
the documented message. csconform's validator is the harness's own tool, not the implementation
under test; like the performance model's checks, these are gated on the `performance` capability so
that another implementation reports them unsupported rather than passed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from csconform.cli import main as cli_main
from csconform.errors import UnknownNameError
from csconform.findings.finding import Finding
from csconform.perf.calibration.band import stated_band
from csconform.spec import default_specs_dir, load_catalogue, load_spec
from csconform.userconfig.checks import ESTIMATOR_RULES
from csconform.userconfig.validate import Verdict, release_options, validate_file

pytestmark = pytest.mark.capability("performance")

SPEC = load_spec()
CATALOGUE = load_catalogue(default_specs_dir())
GPT = {
    "vocab_size": 1000,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_heads": 4,
    "filter_size": 256,
    "max_position_embeddings": 128,
    "position_embedding_type": "learned",
    "share_embedding_weights": True,
}


def flat(**changes: Any) -> dict[str, Any]:
    """A small, conforming flat-layout params file (1.x style), with ``section={key: value}`` changes."""
    data: dict[str, Any] = {
        "train_input": {"data_processor": "GptHDF5DataProcessor", "batch_size": 64, "max_sequence_length": 128},
        "model": {**GPT, "mixed_precision": True},
        "optimizer": {
            "optimizer_type": "AdamW",
            "weight_decay_rate": 0.01,
            "learning_rate": [
                {"scheduler": "Linear", "initial_learning_rate": 0.0, "end_learning_rate": 1.0e-3, "steps": 100},
                {
                    "scheduler": "CosineDecay",
                    "initial_learning_rate": 1.0e-3,
                    "end_learning_rate": 1.0e-4,
                    "steps": 900,
                },
            ],
        },
        "runconfig": {"max_steps": 1000, "checkpoint_steps": 500, "log_steps": 10},
    }
    return _changed(data, changes)


def trainer(**changes: Any) -> dict[str, Any]:
    """A small, conforming trainer-layout params file (2.x), with ``init_<section>`` / ``fit_<section>`` changes."""
    init: dict[str, Any] = {
        "backend": {"backend_type": "CSX"},
        "model": {"name": "gpt3", **GPT},
        "optimizer": {"AdamW": {"betas": [0.9, 0.95], "weight_decay": 0.1}},
        "schedulers": [
            {
                "SequentialLR": {
                    "schedulers": [
                        {"LinearLR": {"initial_learning_rate": 0.0, "end_learning_rate": 1.0e-3, "total_iters": 100}},
                        {
                            "CosineDecayLR": {
                                "initial_learning_rate": 1.0e-3,
                                "end_learning_rate": 1.0e-4,
                                "total_iters": 900,
                            }
                        },
                    ]
                }
            }
        ],
        "precision": {"enabled": True, "fp16_type": "cbfloat16", "loss_scaling_factor": "dynamic"},
        "loop": {"max_steps": 1000},
        "checkpoint": {"steps": 500},
    }
    fit: dict[str, Any] = {"train_dataloader": {"data_processor": "GptHDF5MapDataProcessor", "batch_size": 64}}
    data = {"trainer": {"init": init, "fit": fit}}
    for key, value in changes.items():
        part, _, section = key.partition("_")
        target = init if part == "init" else fit
        if value is None:
            target.pop(section, None)
        elif isinstance(value, dict) and isinstance(target.get(section), dict):
            target[section] = {**target[section], **value}
        else:
            target[section] = value
    return data


def _changed(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    for section, value in changes.items():
        if value is None:
            data.pop(section, None)
        elif isinstance(value, dict) and isinstance(data.get(section), dict):
            data[section] = {k: v for k, v in {**data[section], **value}.items() if v is not None}
        else:
            data[section] = value
    return data


def write(tmp_path: Path, data: dict[str, Any] | str, name: str = "params.yaml") -> Path:
    """The file, in a Model Zoo model folder (``gpt3/configs``) as a 1.x file needs to name its model."""
    path = tmp_path / "gpt3" / "configs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def judge(path: Path, release: str | None = None, **options: Any) -> Verdict:
    return validate_file(path, SPEC, release_options(CATALOGUE, release, **options))


def line_of(path: Path, text: str, occurrence: int = 1) -> int:
    """The 1-based line of the ``occurrence``-th line containing ``text``."""
    hits = [i + 1 for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()) if text in line]
    return hits[occurrence - 1]


def only(findings: list[Finding], rule: str) -> Finding:
    matching = [f for f in findings if f.rule == rule]
    assert len(matching) == 1, (rule, findings)
    return matching[0]


def rules(findings: list[Finding]) -> list[str]:
    return sorted(f.rule for f in findings)


# --- reading, reporting, releases ------------------------------------------------------------------


@pytest.mark.spec("CONFIG-001")
def test_both_layouts_conform_and_findings_point_at_the_key(tmp_path: Path) -> None:
    assert judge(write(tmp_path, flat()), "1.9.1").outcome == "conforms"
    assert judge(write(tmp_path, trainer(), "t.yaml"), "2.10.0").outcome == "conforms"
    path = write(tmp_path, flat(train_input={"batch_size": 0}))
    verdict = judge(path, "1.9.1")
    finding = only(verdict.violations, "CONFIG-010")
    assert (finding.level, finding.key, finding.line) == (
        "documented",
        "train_input.batch_size",
        line_of(path, "batch_size"),
    )
    assert verdict.exit_code == 1 and verdict.layout == "flat"


@pytest.mark.spec("CONFIG-001")
def test_the_command_exits_0_1_2_and_prints_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = write(tmp_path, flat(), "good.yaml"), write(tmp_path, flat(train_input={"batch_size": -1}), "bad.yaml")
    binary = good.parent / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00model: \x00\x01")
    assert cli_main(["validate", str(good), "--release", "1.9.1", "--no-plan"]) == 0
    assert cli_main(["validate", str(bad), "--release", "1.9.1", "--no-plan"]) == 1
    assert cli_main(["validate", str(binary), "--release", "1.9.1"]) == 2
    capsys.readouterr()
    assert cli_main(["validate", str(bad), "--release", "1.9.1", "--json", "--lr-at", "0,50"]) == 1
    (document,) = json.loads(capsys.readouterr().out)["files"]
    assert {"violations", "warnings", "parameters", "plan", "release", "learning_rate"} <= set(document)
    assert document["violations"][0].keys() >= {"rule", "level", "path", "line", "column", "key", "message", "fix"}
    assert document["violations"][0]["path"] == str(bad)
    assert document["release"] == "1.9.1" and set(document["learning_rate"]) == {"0", "50"}
    assert cli_main(["validate", str(good.parent), "--release", "1.9.1", "--no-plan"]) == 2
    out = capsys.readouterr().out
    assert "3 files: 1 conform, 1 with violations, 1 unreadable" in out
    assert out.count("judged for release 1.9.1") == 3


@pytest.mark.spec("CONFIG-001")
def test_a_hugging_face_config_with_training_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = {"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000, "n_positions": 128}
    path = write(tmp_path, json.dumps(config, indent=1), "config.json")
    arguments = ["validate", str(path), "--batch-size", "32", "--max-steps", "1000", "--learning-rate", "1e-3"]
    assert cli_main([*arguments, "--warmup-steps", "100", "--json"]) == 0
    (document,) = json.loads(capsys.readouterr().out)["files"]
    assert document["layout"] == "hf" and document["plan"]["batch"] == 32
    assert document["schedule"]["warmup_end"] == {"step": 100, "lr": pytest.approx(1e-3, rel=1e-6)}
    assert cli_main([*arguments, "--batch-size", "0"]) == 1
    assert cli_main(["validate", str(write(tmp_path, flat())), "--batch-size", "4"]) == 2  # options are for config.json


@pytest.mark.spec("CONFIG-001")
def test_other_rules_a_config_breaks_are_reported_with_their_ids(tmp_path: Path) -> None:
    estimator = judge(write(tmp_path, flat(runconfig={"save_checkpoint_secs": 600})), "1.6.0")
    assert only(estimator.violations, "ESTIMATOR-007").key == "runconfig.save_checkpoint_secs"
    cluster = judge(write(tmp_path, flat(runconfig={"num_csx": 300})), "1.9.1", wafer="wse2")
    assert only(cluster.violations, "HW-009").level == "documented"
    pipelined = judge(write(tmp_path, flat(runconfig={"num_csx": 2, "execution_strategy": "pipeline"})), "1.9.1")
    assert only(pipelined.violations, "PERF-018").key == "runconfig.execution_strategy"


@pytest.mark.spec("CONFIG-001")
@pytest.mark.parametrize(("key", "rule"), sorted(ESTIMATOR_RULES.items()))
def test_each_estimator_parameter_the_system_refuses_is_its_rule(tmp_path: Path, key: str, rule: str) -> None:
    path = write(tmp_path, flat(runconfig={key: 1}))
    finding = only(judge(path, "1.6.0", plan=False).violations, rule)
    assert (finding.level, finding.key, finding.line) == ("documented", f"runconfig.{key}", line_of(path, f"{key}:"))


@pytest.mark.spec("CONFIG-002")
def test_an_unknown_key_is_a_warning_with_the_likely_key(tmp_path: Path) -> None:
    path = write(tmp_path, flat(runconfig={"max_step": 10}))
    finding = only(judge(path, "1.9.1").warnings, "CONFIG-002")
    assert (finding.key, finding.line) == ("runconfig.max_step", line_of(path, "max_step:"))
    assert "did you mean 'max_steps'?" in finding.message
    fp16 = write(tmp_path, flat(model={"fp16_type": "bfloat16"}))
    unknown = {r: [f.key for f in judge(fp16, r).warnings if f.rule == "CONFIG-002"] for r in ("1.9.1", "2.3.1")}
    assert "model.fp16_type" in unknown["1.9.1"]  # 1.9.1 has no fp16_type ...
    assert "model.fp16_type" not in unknown["2.3.1"]  # ... 2.1.0 introduced it
    assert "optimizer.weight_decay_rate" in unknown["2.3.1"]  # and 2.x spells weight decay weight_decay


@pytest.mark.spec("CONFIG-003")
def test_a_key_given_twice_is_a_warning_at_its_second_line(tmp_path: Path) -> None:
    text = yaml.safe_dump(flat(), sort_keys=False).replace(
        "  max_steps: 1000\n", "  max_steps: 1000\n  max_steps: 10\n"
    )
    path = write(tmp_path, text)
    finding = only(judge(path, "1.9.1").warnings, "CONFIG-003")
    assert finding.line == line_of(path, "max_steps", occurrence=2)


@pytest.mark.spec("CONFIG-004")
def test_the_trainer_layout_is_refused_before_2_3_0(tmp_path: Path) -> None:
    path = write(tmp_path, trainer(init_precision={"fp16_type": "float16"}))
    finding = only(judge(path, "2.2.1").violations, "CONFIG-004")
    assert (finding.key, finding.line, finding.level) == ("trainer", 1, "public")
    assert "CONFIG-004" not in rules(judge(path, "2.3.0").violations)


@pytest.mark.spec("CONFIG-005")
def test_a_flat_file_is_legacy_from_2_3_0(tmp_path: Path) -> None:
    path = write(tmp_path, flat())
    assert "CONFIG-005" in rules(judge(path, "2.3.0").warnings)
    assert "CONFIG-005" not in rules(judge(path, "2.2.1").warnings)
    # the remedy names the release's own command only where the release ships it (cszoo, from 2.4.0)
    assert "cszoo" not in only(judge(path, "2.3.1").warnings, "CONFIG-005").message
    assert "cszoo config convert_legacy" in only(judge(path, "2.4.0").warnings, "CONFIG-005").message


@pytest.mark.spec("CONFIG-008")
def test_from_2_4_0_a_model_key_its_config_class_does_not_define_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, trainer(init_model={"name": "btlm", "hiden_size": 64}))
    finding = only(judge(path, "2.4.0").violations, "CONFIG-008")
    assert (finding.key, finding.line) == ("trainer.init.model.hiden_size", line_of(path, "hiden_size"))
    assert "did you mean 'hidden_size'?" in finding.message
    assert "CONFIG-008" not in rules(judge(path, "2.3.1").violations)  # no config classes before 2.4.0
    # a flat file's model keys that the conversion moves elsewhere (mixed_precision) are not the model's
    flat_named = write(tmp_path, flat(model={"name": "gpt3", "fp16_type": "bfloat16"}), "f.yaml")
    assert "CONFIG-008" not in rules(judge(flat_named, "2.10.0").violations)


@pytest.mark.spec("CONFIG-006")
def test_the_newest_release_is_the_default_and_the_verdict_names_it(tmp_path: Path) -> None:
    path = write(tmp_path, flat())
    default = judge(path)
    assert (default.release, default.release_is_default) == (CATALOGUE.newest.name, True)
    chosen = judge(path, "1.9")
    assert (chosen.release, chosen.release_is_default) == ("1.9.1", False)
    with pytest.raises(UnknownNameError, match="known releases: 1.6.0"):
        judge(path, "3.0")


@pytest.mark.spec("CONFIG-007")
def test_a_number_yaml_reads_as_text_is_a_warning_and_read_as_a_number(tmp_path: Path) -> None:
    text = yaml.safe_dump(flat(), sort_keys=False).replace("end_learning_rate: 0.0001", "end_learning_rate: 1e-4")
    path = write(tmp_path, text)
    verdict = judge(path, "1.9.1", lr_at=(999,))
    finding = only(verdict.warnings, "CONFIG-007")
    assert finding.line == line_of(path, "1e-4") and "write 1.0e-4" in finding.message
    assert verdict.learning_rate[999] == pytest.approx(
        1e-4 + 0.9e-3 * 0.5 * (1 + math.cos(math.pi * 899 / 900)), rel=1e-6
    )
    quoted = write(tmp_path, text.replace("end_learning_rate: 1e-4", "end_learning_rate: '1e-4'"), "q.yaml")
    assert "CONFIG-007" not in rules(judge(quoted, "1.9.1").warnings)


# --- batch ---------------------------------------------------------------------------------------------


@pytest.mark.spec("CONFIG-010")
@pytest.mark.parametrize("batch", [None, 0, 2.5, "sixty"])
def test_a_training_batch_is_one_positive_integer(tmp_path: Path, batch: Any) -> None:
    train_input = {"batch_size": batch} if batch is not None else {"batch_size": None}
    assert "CONFIG-010" in rules(judge(write(tmp_path, flat(train_input=train_input)), "1.9.1").violations)


@pytest.mark.spec("CONFIG-011")
def test_before_2_3_0_the_batch_divides_over_the_systems(tmp_path: Path) -> None:
    path = write(tmp_path, flat(train_input={"batch_size": 100}, runconfig={"num_csx": 3}))
    finding = only(judge(path, "2.2.1").violations, "CONFIG-011")
    assert finding.message == "Expected batch_size (100) to be a multiple of num_csx (3)."
    assert "CONFIG-011" not in rules(judge(path, "2.3.0").violations)
    assert "CONFIG-011" not in rules(judge(path, "2.2.1", num_csx=4).violations)


@pytest.mark.spec("CONFIG-012")
def test_from_2_3_0_the_batch_is_at_least_the_systems(tmp_path: Path) -> None:
    path = write(
        tmp_path, trainer(fit_train_dataloader={"batch_size": 2}, init_backend={"cluster_config": {"num_csx": 4}})
    )
    finding = only(judge(path, "2.10.0").violations, "CONFIG-012")
    assert finding.message == "Expected batch_size (2) to be greater than or equal to num_csx (4)."
    assert finding.key == "trainer.fit.train_dataloader.batch_size"
    assert judge(path, "2.10.0", num_csx=2).violations == []


@pytest.mark.spec("CONFIG-013")
def test_from_2_0_2_to_2_2_1_micro_batches_divide_the_per_system_batch(tmp_path: Path) -> None:
    path = write(tmp_path, flat(train_input={"micro_batch_size": 12}, runconfig={"num_csx": 2}))
    finding = only(judge(path, "2.1.1").violations, "CONFIG-013")
    assert finding.message.startswith("With current batch_size (64) and num_csx (2), per-CSX batch size (32)")
    assert judge(path, "1.9.1").violations == [] and judge(path, "2.3.0").violations == []
    assert judge(write(tmp_path, flat(train_input={"micro_batch_size": 8})), "2.1.1").violations == []


@pytest.mark.spec("CONFIG-014")
@pytest.mark.parametrize(("micro", "refused"), [(600, True), (0, True), ("big", True), (64, False), ("auto", False)])
def test_from_2_3_0_a_micro_batch_lies_between_1_and_the_batch(tmp_path: Path, micro: Any, refused: bool) -> None:
    flags = {"ScopedTrainFlags": {"csx.performance.micro_batch_size": micro}}
    path = write(tmp_path, trainer(init_callbacks=[flags]))
    found = [f for f in judge(path, "2.10.0").violations if f.rule == "CONFIG-014"]
    assert bool(found) == refused
    if micro == 600:
        assert (
            found[0].message
            == "Expected micro_batch_size (600) to be a positiveinteger less than or equal to the batch_size (64)."
        )
        assert (found[0].key or "").endswith('ScopedTrainFlags."csx.performance.micro_batch_size"')


@pytest.mark.spec("CONFIG-015")
def test_a_training_loader_keeping_its_short_batch_is_a_warning(tmp_path: Path) -> None:
    assert "CONFIG-015" in rules(judge(write(tmp_path, flat(train_input={"drop_last": False})), "1.9.1").warnings)
    assert "CONFIG-015" not in rules(judge(write(tmp_path, flat(train_input={"drop_last": True})), "1.9.1").warnings)


# --- precision and loss scaling ----------------------------------------------------------------------------


@pytest.mark.spec("CONFIG-020")
def test_disabled_mixed_precision_is_refused_before_2_3_0_and_switched_back_on_after(tmp_path: Path) -> None:
    old = write(tmp_path, flat(model={**GPT, "mixed_precision": False}))
    assert only(judge(old, "2.2.1").violations, "PRECISION-001").level == "documented"
    assert "CONFIG-020" not in rules(judge(old, "2.2.1").warnings)
    new = write(tmp_path, trainer(init_precision={"enabled": False}), "t.yaml")
    verdict = judge(new, "2.10.0")
    assert verdict.violations == [] and only(verdict.warnings, "CONFIG-020").key == "trainer.init.precision.enabled"


@pytest.mark.spec("CONFIG-021")
def test_fp16_type_is_one_of_the_three_formats(tmp_path: Path) -> None:
    path = write(tmp_path, trainer(init_precision={"fp16_type": "float32"}))
    finding = only(judge(path, "2.10.0").violations, "CONFIG-021")
    assert (
        finding.message
        == "Invalid value for \"fp16_type\". Expected one of ['float16', 'bfloat16', 'cbfloat16']. Got: float32."
    )


@pytest.mark.spec("CONFIG-022")
@pytest.mark.parametrize(("factor", "refused"), [(1.0, True), (None, True), ("dynamic", False)])
def test_cbfloat16_needs_dynamic_loss_scaling(tmp_path: Path, factor: Any, refused: bool) -> None:
    precision = {"enabled": True, "fp16_type": "cbfloat16"} | ({"loss_scaling_factor": factor} if factor else {})
    path = write(tmp_path, trainer(init_precision=None) | {})
    data = trainer()
    data["trainer"]["init"]["precision"] = precision
    path = write(tmp_path, data)
    found = [f for f in judge(path, "2.10.0").violations if f.rule == "CONFIG-022"]
    assert bool(found) == refused
    if found:
        assert found[0].message.startswith("In order to use cbfloat16, dynamic loss scaling must be enabled.")


@pytest.mark.spec("CONFIG-023")
def test_use_bfloat16_is_refused_from_2_1_0(tmp_path: Path) -> None:
    path = write(tmp_path, flat(model={**GPT, "use_bfloat16": True}))
    finding = only(judge(path, "2.1.0").violations, "CONFIG-023")
    assert finding.key == "model.use_bfloat16" and finding.message.startswith('The flag "use_bfloat16" is deprecated.')
    assert judge(path, "2.0.3").violations == []


@pytest.mark.spec("CONFIG-024")
def test_bfloat16_switches_a_configured_loss_scaling_off(tmp_path: Path) -> None:
    old = write(tmp_path, flat(model={**GPT, "use_bfloat16": True}, optimizer={"loss_scaling_factor": "dynamic"}))
    assert "CONFIG-024" in rules(judge(old, "1.9.1").warnings)
    new = write(tmp_path, trainer(init_precision={"fp16_type": "bfloat16"}), "t.yaml")
    assert only(judge(new, "2.10.0").warnings, "CONFIG-024").key == "trainer.init.precision.loss_scaling_factor"
    static_one = write(
        tmp_path, trainer(init_precision={"fp16_type": "bfloat16", "loss_scaling_factor": 1.0}), "s.yaml"
    )
    assert "CONFIG-024" not in rules(judge(static_one, "2.10.0").warnings)


@pytest.mark.spec("CONFIG-030")
def test_loss_scaling_factor_is_a_number_null_or_dynamic(tmp_path: Path) -> None:
    path = write(tmp_path, trainer(init_precision={"fp16_type": "float16", "loss_scaling_factor": "auto"}))
    finding = only(judge(path, "2.10.0").violations, "CONFIG-030")
    assert finding.message == "'loss_scaling_factor' must be a float, None, or 'dynamic'.Got auto instead."
    too_small = write(tmp_path, trainer(init_precision={"min_loss_scale": 1.0e-6}), "m.yaml")
    assert only(judge(too_small, "2.10.0").violations, "GRADSCALER-034").message == "min_loss_scale too small"
    negative = write(tmp_path, trainer(init_precision={"steps_per_increase": -5}), "n.yaml")
    assert only(judge(negative, "2.10.0").warnings, "GRADSCALER-040").level == "reference"


@pytest.mark.spec("CONFIG-031")
def test_clipping_by_norm_and_by_value_is_refused(tmp_path: Path) -> None:
    both = write(tmp_path, trainer(init_precision={"max_gradient_norm": 1.0, "max_gradient_value": 0.5}))
    finding = only(judge(both, "2.10.0").violations, "CONFIG-031")
    assert finding.message.startswith("Gradients can be clipped by norm(=1.0) or by value(=0.5), but not both.")
    one_x = write(tmp_path, flat(optimizer={"max_gradient_norm": 1.0, "max_gradient_value": 0.0}), "f.yaml")
    assert judge(one_x, "1.9.1").violations == []  # 0 switches clipping by value off in 1.x


@pytest.mark.spec("CONFIG-032")
def test_a_clipping_threshold_is_positive_from_2_0_2(tmp_path: Path) -> None:
    zero = write(tmp_path, flat(optimizer={"max_gradient_norm": 0.0}))
    assert "CONFIG-032" in rules(judge(zero, "2.0.2").violations)
    assert judge(zero, "1.9.1").violations == []
    negative = write(tmp_path, flat(optimizer={"max_gradient_norm": -1.0}), "n.yaml")
    assert "CONFIG-032" in rules(judge(negative, "1.9.1").violations)


# --- optimizer and schedule ------------------------------------------------------------------------------


@pytest.mark.spec("CONFIG-040")
def test_before_2_0_2_the_optimizer_is_one_the_release_names(tmp_path: Path) -> None:
    path = write(tmp_path, flat(optimizer={"optimizer_type": "Adamm"}))
    finding = only(judge(path, "1.9.1").violations, "CONFIG-040")
    assert finding.message.startswith("Unsupported optimizer type Adamm. Supported types:['Adadelta'")
    assert "CONFIG-040" in rules(judge(write(tmp_path, flat(optimizer=None), "n.yaml"), "1.9.1").violations)
    assert judge(write(tmp_path, flat(optimizer={"optimizer_type": "adamw"}), "c.yaml"), "1.9.1").violations == []


@pytest.mark.spec("CONFIG-041")
def test_from_2_0_2_the_optimizer_is_a_class_of_the_package(tmp_path: Path) -> None:
    def with_optimizer(optimizer: dict[str, Any], name: str) -> Path:
        data = trainer()
        data["trainer"]["init"]["optimizer"] = optimizer
        return write(tmp_path, data, name)

    assert "CONFIG-041" in rules(judge(with_optimizer({"Adamm": {}}, "a.yaml"), "2.10.0").violations)
    unused = with_optimizer({"Adam": {"correct_bias": True}}, "u.yaml")
    finding = only(judge(unused, "2.10.0").warnings, "CONFIG-041")
    assert finding.key == "trainer.init.optimizer.Adam.correct_bias"
    assert judge(with_optimizer({"adamw": {"correct_bias": True}}, "c.yaml"), "2.10.0").warnings == []
    # the param groups the trainer builds from the section (configure_param_groups) are no argument
    grouped = with_optimizer({"AdamW": {"params": [{"params": ["*.bias"], "weight_decay": 0.0}]}}, "g.yaml")
    assert judge(grouped, "2.3.0").warnings == [] and judge(grouped, "2.10.0").warnings == []
    bad_betas = with_optimizer({"AdamW": {"betas": [0.9, 1.5]}}, "b.yaml")
    assert only(judge(bad_betas, "2.10.0").warnings, "OPTIM-011").level == "reference"


@pytest.mark.spec("CONFIG-041")
def test_from_2_4_0_learning_rate_is_the_optimizer_s_lr(tmp_path: Path) -> None:
    data = trainer()
    data["trainer"]["init"]["optimizer"] = {"AdamW": {"learning_rate": 1.0e-4, "weight_decay": 0.1}}
    path = write(tmp_path, data)
    assert "CONFIG-041" not in rules(judge(path, "2.4.0").warnings)  # the config classes' alias
    assert "CONFIG-041" in rules(judge(path, "2.3.1").warnings)  # no alias before the config classes
    data["trainer"]["init"]["optimizer"] = {"AdamW": {"learning_rate": -1.0}}
    refused = only(judge(write(tmp_path, data, "n.yaml"), "2.10.0").warnings, "OPTIM-011")  # judged as lr
    assert refused.key == "trainer.init.optimizer.AdamW.learning_rate"


@pytest.mark.spec("CONFIG-042")
def test_before_2_0_2_an_optimizer_key_the_type_never_reads_is_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, flat(optimizer={"epsilon": 1.0e-8}))
    finding = only(judge(path, "1.7.0").warnings, "CONFIG-042")
    assert (finding.key, finding.line) == ("optimizer.epsilon", line_of(path, "epsilon"))
    assert "'eps'" not in finding.message and "eps," in finding.message  # it names what AdamW reads
    assert "CONFIG-042" not in rules(
        judge(write(tmp_path, flat(optimizer={"eps": 1.0e-8}), "e.yaml"), "1.7.0").warnings
    )
    assert "CONFIG-042" not in rules(judge(path, "2.0.2").warnings)


@pytest.mark.spec("CONFIG-050")
def test_an_lr_scheduler_is_one_the_release_knows(tmp_path: Path) -> None:
    data = flat()
    data["optimizer"]["learning_rate"][1]["scheduler"] = "CosineDecy"
    path = write(tmp_path, data)
    assert only(judge(path, "1.9.1").violations, "CONFIG-050").message == "Unsupported LR scheduler cosinedecy"
    assert only(judge(path, "2.3.1").violations, "CONFIG-050").message.startswith(
        "Invalid lr_scheduler type. Expected one of ["
    )
    data["optimizer"]["learning_rate"][1]["scheduler"] = "cosinedecaylr"  # case and the LR suffix do not matter
    assert judge(write(tmp_path, data, "ok.yaml"), "2.3.1").violations == []


@pytest.mark.spec("CONFIG-051")
def test_an_lr_scheduler_has_its_required_arguments(tmp_path: Path) -> None:
    data = trainer()
    del data["trainer"]["init"]["schedulers"][0]["SequentialLR"]["schedulers"][1]["CosineDecayLR"]["end_learning_rate"]
    finding = only(judge(write(tmp_path, data), "2.10.0").violations, "CONFIG-051")
    assert finding.message == "CosineDecayLR needs end_learning_rate"


@pytest.mark.spec("CONFIG-052")
def test_from_2_4_0_an_argument_the_scheduler_does_not_take_is_refused(tmp_path: Path) -> None:
    data = trainer()
    data["trainer"]["init"]["schedulers"][0]["SequentialLR"]["schedulers"][0]["LinearLR"]["alpha"] = 0.1
    path = write(tmp_path, data)
    assert (only(judge(path, "2.10.0").violations, "CONFIG-052").key or "").endswith("LinearLR.alpha")
    assert "CONFIG-052" not in rules(judge(path, "2.3.1").violations)


@pytest.mark.spec("CONFIG-053")
def test_every_phase_but_the_last_has_a_length(tmp_path: Path) -> None:
    data = flat()
    del data["optimizer"]["learning_rate"][0]["steps"]
    finding = only(judge(write(tmp_path, data), "1.9.1").violations, "CONFIG-053")
    assert (
        finding.message
        == "Non final learning rate schedulers must have either the 'steps' or 'decay_steps' parameter given."
    )
    data = trainer()
    data["trainer"]["init"]["schedulers"][0]["SequentialLR"]["milestones"] = [50]
    finding = only(judge(write(tmp_path, data, "t.yaml"), "2.10.0").violations, "CONFIG-053")
    assert finding.message == "Expected SequentialLR to have milestones [100], but got [50]"


@pytest.mark.spec("CONFIG-054")
def test_a_schedule_cut_short_by_the_end_of_training_is_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, flat(runconfig={"max_steps": 50}))
    messages = sorted(f.message for f in judge(path, "1.9.1").warnings if f.rule == "CONFIG-054")
    assert messages == [
        "CosineDecay starts at step 100, after the last training step 49: it never runs",
        "Linear ends at step 100; training stops at step 49, mid-phase",
    ]
    assert "CONFIG-054" not in rules(judge(write(tmp_path, flat(), "ok.yaml"), "1.9.1").warnings)


@pytest.mark.spec("CONFIG-055")
def test_a_rate_that_jumps_between_phases_is_a_warning(tmp_path: Path) -> None:
    data = flat()
    data["optimizer"]["learning_rate"][0]["end_learning_rate"] = 1.25e-4
    finding = only(judge(write(tmp_path, data), "1.9.1").warnings, "CONFIG-055")
    assert finding.message == "the rate jumps from 0.000125 to 0.001 where Linear hands over to CosineDecay"
    assert finding.key == "optimizer.learning_rate[1]"


# --- loop ------------------------------------------------------------------------------------------------


@pytest.mark.spec("CONFIG-060")
@pytest.mark.parametrize("max_steps", [None, 0, -3, "many"])
def test_a_training_run_states_a_positive_length(tmp_path: Path, max_steps: Any) -> None:
    path = write(tmp_path, flat(runconfig={"max_steps": max_steps, "checkpoint_steps": None}))
    assert "CONFIG-060" in rules(judge(path, "1.9.1").violations)


@pytest.mark.spec("CONFIG-061")
def test_in_2_10_0_step_counts_fit_32_bits(tmp_path: Path) -> None:
    path = write(tmp_path, trainer(init_loop={"max_steps": 3_000_000_000}))
    finding = only(judge(path, "2.10.0", plan=False).violations, "CONFIG-061")
    assert finding.message == "`max_steps` must be at most 2147483647 for CSX runs, got 3000000000"
    assert "CONFIG-061" not in rules(judge(path, "2.9.0", plan=False).violations)


@pytest.mark.spec("CONFIG-062")
def test_checkpoint_steps_are_null_or_non_negative(tmp_path: Path) -> None:
    path = write(tmp_path, trainer(init_checkpoint={"steps": -5}))
    assert only(judge(path, "2.10.0").violations, "CONFIG-062").message == (
        "Checkpoint steps must be None or a non-negative integer, but got -5"
    )


@pytest.mark.spec("CONFIG-063")
@pytest.mark.parametrize(("steps", "warned"), [(5000, True), (50, True), (100, False), (0, False)])
def test_a_checkpoint_cadence_outside_the_run_or_below_the_bound_is_a_warning(
    tmp_path: Path, steps: int, warned: bool
) -> None:
    path = write(tmp_path, flat(runconfig={"checkpoint_steps": steps}))
    assert ("CONFIG-063" in rules(judge(path, "1.9.1").warnings)) == warned


@pytest.mark.spec("CONFIG-064")
def test_eval_frequency_and_eval_steps_are_positive(tmp_path: Path) -> None:
    zero = write(tmp_path, trainer(init_loop={"max_steps": 1000, "eval_frequency": 0}))
    assert "CONFIG-064" in rules(judge(zero, "2.10.0").violations)
    half = write(tmp_path, trainer(init_loop={"max_steps": 1000, "eval_frequency": 0.5}), "h.yaml")
    assert judge(half, "2.10.0").violations == []
    flat_half = write(tmp_path, flat(runconfig={"eval_frequency": 0.5}), "f.yaml")
    assert "CONFIG-064" in rules(judge(flat_half, "1.9.1").violations)  # a fraction only from 2.3.0
    no_steps = write(tmp_path, flat(runconfig={"eval_steps": 0}), "e.yaml")
    assert only(judge(no_steps, "1.9.1").violations, "CONFIG-064").key == "runconfig.eval_steps"


@pytest.mark.spec("CONFIG-065")
def test_an_evaluation_cadence_longer_than_the_run_is_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, trainer(init_loop={"max_steps": 1000, "eval_frequency": 5000}))
    assert only(judge(path, "2.10.0").warnings, "CONFIG-065").key == "trainer.init.loop.eval_frequency"


@pytest.mark.spec("CONFIG-066")
def test_training_sequences_fit_the_model_s_position_table(tmp_path: Path) -> None:
    longer = write(tmp_path, flat(train_input={"max_sequence_length": 129}))
    verdict = judge(longer, "1.9.1")
    finding = only(verdict.violations, "CONFIG-066")
    assert finding.key == "train_input.max_sequence_length" and finding.line == line_of(longer, "max_sequence_length")
    assert finding.message == (
        "max_sequence_length 129 is longer than the model's position table of 128 rows (max_position_embeddings): "
        "positions 128 to 128 have no row to read"
    )
    assert any("CONFIG-066" in note for note in verdict.notes) and "PERF-025" not in rules(verdict.warnings)
    in_trainer = write(tmp_path, trainer(fit_train_dataloader={"max_sequence_length": 256}), "t.yaml")
    assert only(judge(in_trainer, "2.10.0").violations, "CONFIG-066").key == (
        "trainer.fit.train_dataloader.max_sequence_length"
    )
    for fits in (
        flat(train_input={"max_sequence_length": 128}),  # as long as the table
        flat(train_input={"max_sequence_length": 256}, model={"position_embedding_type": "rotary"}),  # no table
        flat(train_input={"max_sequence_length": 256}, model={"position_embedding_type": "alibi"}),
    ):
        assert "CONFIG-066" not in rules(judge(write(tmp_path, fits, "fits.yaml"), "1.9.1").violations)
    fixed = write(tmp_path, flat(train_input={"max_sequence_length": 256}, model={"position_embedding_type": "fixed"}))
    assert "CONFIG-066" in rules(judge(fixed, "1.9.1").violations)  # sinusoids kept as a table of 128 rows


@pytest.mark.spec("CONFIG-070")
def test_training_with_evaluation_across_the_releases(tmp_path: Path) -> None:
    path = write(tmp_path, flat(runconfig={"mode": "train_and_eval"}))
    assert only(judge(path, "1.7.1").violations, "GRAPH-005").key == "runconfig.mode"
    assert "CONFIG-070" in rules(judge(path, "1.9.1").warnings) and judge(path, "1.9.1").violations == []
    assert "CONFIG-070" in rules(judge(path, "2.2.0").warnings)


@pytest.mark.spec("CONFIG-071")
def test_from_2_2_1_training_and_evaluation_share_one_run(tmp_path: Path) -> None:
    old_style = write(tmp_path, flat(runconfig={"mode": "train_and_eval"}))
    new_style = write(
        tmp_path, trainer(fit_val_dataloader={"batch_size": 64}, init_loop={"eval_frequency": 100}), "t.yaml"
    )
    for path, release in ((old_style, "2.2.1"), (new_style, "2.10.0")):
        verdict = judge(path, release)
        assert not {"GRAPH-005", "CONFIG-070"} & {f.rule for f in verdict.violations + verdict.warnings}


@pytest.mark.spec("CONFIG-080")
def test_eval_metrics_without_evaluation_data_are_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, flat(model={**GPT, "compute_eval_metrics": True}))
    assert only(judge(path, "1.9.1").warnings, "CONFIG-080").key == "model.compute_eval_metrics"
    with_eval = write(
        tmp_path, flat(model={**GPT, "compute_eval_metrics": True}, eval_input={"batch_size": 8}), "e.yaml"
    )
    assert "CONFIG-080" not in rules(judge(with_eval, "1.9.1").warnings)


# --- what validate runs ------------------------------------------------------------------------------------


@pytest.mark.spec("CONFIG-090")
def test_the_schedule_runs_through_the_engine(tmp_path: Path) -> None:
    plot = tmp_path / "lr.png"
    verdict = judge(write(tmp_path, flat()), "1.9.1", lr_at=(0, 50, 100, 550, 999), plot_path=plot)
    points = verdict.schedule
    assert points is not None and points.steps == 1000 and points.warmup_end == (100, pytest.approx(1e-3, rel=1e-6))
    assert points.boundaries == ((100, "CosineDecayLR", pytest.approx(1e-3, rel=1e-6)),)
    cosine = [1e-4 + 0.9e-3 * 0.5 * (1 + math.cos(math.pi * t / 900)) for t in (450, 899)]
    assert points.last == pytest.approx(cosine[1], rel=1e-6)
    assert [verdict.learning_rate[s] for s in (0, 50, 100, 550, 999)] == pytest.approx(
        [0, 5e-4, 1e-3, *cosine], rel=1e-6
    )
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    negative = flat()
    negative["optimizer"]["learning_rate"][1]["end_learning_rate"] = -1.0
    assert only(judge(write(tmp_path, negative, "n.yaml"), "1.9.1").warnings, "LR-004").level == "reference"
    lambda_lr = flat(optimizer={"learning_rate": {"scheduler": "Lambda", "initial_learning_rate": 0.1}})
    verdict = judge(write(tmp_path, lambda_lr, "l.yaml"), "1.9.1")
    assert any("not implemented by the reference engine" in note for note in verdict.notes) and verdict.schedule is None


@pytest.mark.spec("CONFIG-091")
def test_the_model_is_planned_with_time_to_train_and_its_band(tmp_path: Path) -> None:
    verdict = judge(write(tmp_path, flat(runconfig={"num_csx": 2})), "1.9.1")
    plan = verdict.plan
    assert plan is not None and plan.systems == 2 and plan.batch == 64 and plan.seq_len == 128
    d, layers, f, vocab, positions = 64, 2, 256, 1000, 128
    expected = vocab * d + positions * d + layers * (4 * d * d + 2 * d * f + 9 * d + f) + 2 * d
    assert verdict.parameters == plan.parameters == expected
    assert plan.time_to_train_s == pytest.approx(1000 * 64 / plan.samples_per_s, rel=1e-12)
    assert plan.tokens_per_s == pytest.approx(plan.samples_per_s * 128, rel=1e-12)
    stated = stated_band(plan.mode, plan.family, plan.wafer)  # grouped cross-validation's band for this plan
    factor, worst_factor = stated["factor"], stated["worst"]
    assert plan.band is not None and plan.time_to_train_s is not None and stated["slower_by"] == 1.0  # a CS-2
    assert (plan.band.low_s, plan.band.high_s) == pytest.approx(
        (plan.time_to_train_s / factor, plan.time_to_train_s * factor)
    )
    assert plan.worst_band is not None and plan.worst_band.factor == worst_factor >= factor > 1
    assert plan.model_flops_per_step > 6 * expected * 64 * 128  # 6N per token plus attention
    unknown = judge(write(tmp_path, trainer(init_model={"name": "llava"}), "u.yaml"), "2.3.1")
    assert unknown.violations == [] and unknown.plan is None and any("model not planned" in n for n in unknown.notes)
    assert np.isfinite(plan.samples_per_s) and plan.samples_per_s > 0
