"""validate --release A --to B: what changes for a real params file between two releases."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from zoo_data import MODELZOO

from csconform.cli import build_parser
from csconform.cli import main as cli_main
from csconform.commands.validate import ChangesOptionError
from csconform.findings import render
from csconform.spec import Catalogue, Spec
from csconform.userconfig.release_changes import Change, ReleaseChanges, release_changes
from csconform.userconfig.summary import change_text
from csconform.userconfig.validate import release_options

GPT3_XL_191 = MODELZOO / "1.9.1/modelzoo/transformers/pytorch/gpt3/configs/params_gpt3_xl.yaml"
SST2_191 = (
    MODELZOO / "1.9.1/modelzoo/transformers/pytorch/bert/fine_tuning/classifier/configs/bert_base_classifier_sst2.yaml"
)
MIXTRAL_231 = MODELZOO / "2.3.1/src/cerebras/modelzoo/models/nlp/mixtral/configs/params_mixtral_8x7b.yaml"
LLAMA_230 = MODELZOO / "2.3.0/src/cerebras/modelzoo/models/nlp/llama/configs/params_llama3_8b_v2.yaml"
DIT_240 = MODELZOO / "2.4.0/src/cerebras/modelzoo/models/vision/dit/configs/params_dit_large_patchsize_2x2.yaml"


def changes(path: Path, source: str, target: str, spec: Spec, catalogue: Catalogue) -> ReleaseChanges:
    before = release_options(catalogue, source, plan=False)
    return release_changes(path, spec, before, release_options(catalogue, target, plan=False))


def by_key(report: ReleaseChanges, kind: str) -> dict[str | None, Change]:
    return {change.key: change for change in report.changes if change.kind == kind}


def test_a_1x_file_moving_to_the_newest_release(spec: Spec, catalogue: Catalogue) -> None:
    report = changes(GPT3_XL_191, "1.9.1", "2.10.0", spec, catalogue)
    (layout,) = [c for c in report.changes if c.kind == "layout"]
    assert layout.line == 1 and "cszoo config convert_legacy" in (layout.action or "")
    (command,) = [c for c in report.changes if c.kind == "command"]
    assert "cszoo" in command.message and "convert_legacy" in command.message
    optimizer = by_key(report, "optimizer")
    assert optimizer["optimizer.weight_decay_rate"].line == 98
    assert optimizer["optimizer.weight_decay_rate"].action == "write weight_decay"
    assert optimizer["optimizer.beta1"].action == "write betas: [beta1, beta2]"
    moved = by_key(report, "moved")
    assert "trainer.init.precision.enabled" in moved["model.mixed_precision"].message
    assert "trainer.init.schedulers" in moved["optimizer.learning_rate"].message
    assert "runconfig.max_steps" not in moved  # moved under the same name: counted in the layout change
    scheduler = by_key(report, "scheduler")["optimizer.learning_rate[0].steps"]
    assert scheduler.line == 105 and "total_iters" in (scheduler.action or "")
    assert by_key(report, "dropped")["runconfig.save_losses"].line == 118
    assert by_key(report, "refused key")["runconfig.use_cs_grad_accum"].line == 121
    (refused,) = [c for c in report.changes if c.rule == "CONFIG-023"]
    assert refused.kind == "finding (refused)" and refused.key == "model.use_bfloat16" and refused.line == 90
    assert [f.rule for f in report.violations] == ["CONFIG-023"] and report.exit_code == 1


def test_defaults_that_differ_between_two_1x_releases(spec: Spec, catalogue: Catalogue) -> None:
    """1.6.0's AdamW defaults correct_bias to False, 1.9.1's to True (their PyTorchBaseModel)."""
    report = changes(SST2_191, "1.6.0", "1.9.1", spec, catalogue)
    (default,) = [c for c in report.changes if c.kind == "default"]
    assert (
        default.key == "optimizer.correct_bias"
        and default.action == "write correct_bias: false to keep release 1.6.0's value"
    )
    assert report.exit_code == 0


def test_defaults_the_package_takes_over(spec: Spec, catalogue: Catalogue) -> None:
    report = changes(SST2_191, "1.9.1", "2.0.2", spec, catalogue)
    defaults = by_key(report, "default")
    assert defaults["optimizer.betas"].action == "write betas: [0.9, 0.999] to keep release 1.9.1's value"
    assert defaults["optimizer.correct_bias"].action == "write correct_bias: true to keep release 1.9.1's value"
    resolved = [c for c in report.changes if c.kind == "resolved" and c.rule == "CONFIG-042"]
    assert [c.key for c in resolved] == ["optimizer.epsilon"]  # 1.9.1 ignored it; 2.0.2 does not know it either


def test_the_command_that_converts_appears_with_2_4_0(spec: Spec, catalogue: Catalogue) -> None:
    forward = changes(MIXTRAL_231, "2.3.1", "2.4.0", spec, catalogue)
    (command,) = [c for c in forward.changes if c.kind == "command"]
    assert command.action == "cszoo config convert_legacy FILE -o NEW converts this file once"
    assert not [c for c in forward.changes if c.kind in ("layout", "moved", "dropped")]  # both convert it alike
    backward = changes(MIXTRAL_231, "2.4.0", "2.3.1", spec, catalogue)
    assert [c.message for c in backward.changes if c.kind == "command"] == [
        "release 2.3.1 no longer installs the command cszoo"
    ]


def test_an_optimizer_argument_alias_that_one_release_has(spec: Spec, catalogue: Catalogue) -> None:
    report = changes(DIT_240, "2.3.1", "2.4.0", spec, catalogue)
    alias = by_key(report, "alias")["trainer.init.optimizer.AdamW.learning_rate"]
    assert alias.line is not None and alias.action == "write lr (both releases read it)"
    assert not [c for c in report.changes if c.rule == "CONFIG-041"]  # the alias change says it
    assert report.exit_code == 0


def test_a_trainer_file_taken_back_before_the_trainer(spec: Spec, catalogue: Catalogue) -> None:
    report = changes(LLAMA_230, "2.3.0", "2.2.1", spec, catalogue)
    (layout,) = [c for c in report.changes if c.kind == "layout"]
    assert layout.key == "trainer" and "only the flat layout" in layout.message
    assert "CONFIG-004" in {f.rule for f in report.violations} and report.exit_code == 1


def test_the_key_use_bfloat16_is_refused_on_sight_from_2_1_0(spec: Spec, catalogue: Catalogue) -> None:
    report = changes(GPT3_XL_191, "2.0.3", "2.1.0", spec, catalogue)
    refused = by_key(report, "refused key")["model.use_bfloat16"]
    assert refused.line == 90 and "half_dtype.py" in refused.message


def test_change_text_is_one_line_with_its_action_below() -> None:
    change = Change("moved", "release 2.4.0 reads it as x.y", "write x.y", "a.b", 7)
    assert change_text("f.yaml", change) == "f.yaml:7: moved a.b: release 2.4.0 reads it as x.y\n    do: write x.y"
    assert change_text("f.yaml", Change("command", "m")) == "f.yaml: command: m"


def test_the_cli_prints_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["validate", str(MIXTRAL_231), "--release", "2.3.1", "--to", "2.4.0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{MIXTRAL_231}: from release 2.3.1 to 2.4.0; flat layout; 1 change\n")
    assert cli_main(["validate", str(GPT3_XL_191), "--release", "1.9", "--to", "2.10", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["release"] == "1.9.1" and document["to"] == "2.10.0"
    (entry,) = document["files"]
    assert entry["from"] == "1.9.1" and entry["to"] == "2.10.0" and entry["outcome"] == "violations"
    kinds = {change["kind"] for change in entry["changes"]}
    assert {"layout", "command", "optimizer", "moved", "finding (refused)"} <= kinds
    schema = json.loads((Path(render.__file__).parent / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(document)  # each change against the schema's change
    entry["changes"][0]["colour"] = "red"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(document)


@pytest.mark.parametrize(
    ("options", "names"),
    [
        (["--to", "2.4.0"], "--release"),
        (["--release", "2.3.1", "--to", "2.4.0", "--fix"], "--fix"),
        (["--release", "2.3.1", "--to", "2.4.0", "--lr-at", "5"], "--lr-at"),
        (["--release", "2.3.1", "--to", "2.4.0", "--format", "sarif"], "sarif"),
    ],
)
def test_options_that_do_not_go_with_to_are_refused(options: list[str], names: str) -> None:
    arguments = build_parser("validate").parse_args(["validate", str(MIXTRAL_231), "--isolated", *options])
    with pytest.raises(ChangesOptionError, match=names):
        arguments.handler(arguments)


def test_an_unknown_release_to_compare_with_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["validate", str(MIXTRAL_231), "--release", "2.3.1", "--to", "9.9"]) == 2
    assert "unknown release '9.9'" in capsys.readouterr().err


def test_back_from_the_package_to_a_1x_release(spec: Spec, catalogue: Catalogue) -> None:
    """The reverse of the first test: only the keys 1.9.1 passes to another argument than the package's."""
    report = changes(GPT3_XL_191, "2.10.0", "1.9.1", spec, catalogue)
    optimizer = by_key(report, "optimizer")
    assert set(optimizer) == {"optimizer.beta1", "optimizer.beta2", "optimizer.weight_decay_rate"}
    assert "release 1.9.1 passes it to the optimizer's weight_decay" in optimizer["optimizer.weight_decay_rate"].message
    assert not [c for c in report.changes if c.kind in ("default", "moved", "dropped")]  # 1.9.1 converts nothing
    (layout,) = [c for c in report.changes if c.kind == "layout"]
    assert "reads this flat-layout file as it is" in layout.message


def test_two_releases_that_both_convert_report_only_what_their_conversions_do_differently(
    spec: Spec, catalogue: Catalogue
) -> None:
    """2.5.0 prunes the copy of model.mixed_precision that 2.4.0's conversion leaves in the model section."""
    report = changes(GPT3_XL_191, "2.4.0", "2.5.0", spec, catalogue)
    moved = by_key(report, "moved")
    assert set(moved) == {"model.mixed_precision"}
    assert moved["model.mixed_precision"].message == (
        "release 2.5.0 reads it as trainer.init.precision.enabled "
        "(release 2.4.0: trainer.init.model.mixed_precision, trainer.init.precision.enabled)"
    )
    assert not [c for c in report.changes if c.kind == "dropped"]  # both drop the same keys


def test_the_changes_are_never_written_over_the_file_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "params.yaml"
    copy.write_bytes(MIXTRAL_231.read_bytes())
    for option in ("--json", "--output"):
        assert cli_main(["validate", str(copy), "--release", "2.3.1", "--to", "2.4.0", option, str(copy)]) == 2
        assert "is the input" in capsys.readouterr().err
    assert copy.read_bytes() == MIXTRAL_231.read_bytes()
