"""validate --fix converts a flat-layout file to the trainer layout as the release's converter does.

The fixtures are real flat files of the last flat-layout releases (``data/modelzoo/sources.yaml``),
converted for 2.4.0, the first release whose ``cszoo config convert_legacy`` writes the conversion
to a file: the converted file must validate at 2.4.0 without the layout findings and with no
finding the flat file does not have, and its learning-rate schedule, parameter count and plan must
be the flat file's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zoo_data import MODELZOO

from csconform.cli import main as cli_main
from csconform.errors import UnreadableDocumentError
from csconform.spec import Catalogue, Spec
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.convert import ConversionError, convert, scheduler_entry, to_yaml
from csconform.userconfig.release_data import knowledge
from csconform.userconfig.validate import Verdict, release_options, validate_file

CONVERTER = "2.4.0"
FLAT = [
    "2.3.1/src/cerebras/modelzoo/models/nlp/mixtral/configs/params_mixtral_8x7b.yaml",
    "2.3.1/src/cerebras/modelzoo/models/nlp/gpt3/configs/Cerebras_GPT/111m_mup.yaml",
    "2.3.1/src/cerebras/modelzoo/models/nlp/gpt2/configs/params_gpt2_medium.yaml",
    "2.2.1/src/cerebras/modelzoo/models/nlp/llama/configs/params_llama2_7b.yaml",
]


def _copy(tmp_path: Path, fixture: str) -> Path:
    """The fixture under ``tmp_path`` at its own relative path (the model family is read from the folders)."""
    copy = tmp_path / fixture
    copy.parent.mkdir(parents=True)
    shutil.copy(MODELZOO / fixture, copy)
    return copy


def _verdict(path: Path, spec: Spec, catalogue: Catalogue) -> Verdict:
    return validate_file(path, spec, release_options(catalogue, CONVERTER, lr_at=(0, 1000, 100000)))


@pytest.mark.parametrize("fixture", FLAT, ids=lambda f: Path(f).stem)
def test_the_converted_file_validates_at_the_converter_s_release_and_trains_the_same(
    fixture: str, tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    path = _copy(tmp_path, fixture)
    flat = _verdict(path, spec, catalogue)
    assert "CONFIG-005" in {f.rule for f in flat.warnings}
    assert cli_main(["validate", str(path), "--release", CONVERTER, "--no-plan", "--fix", "--in-place"]) == 0
    assert path.read_text(encoding="utf-8").startswith("# converted to the trainer layout for release 2.4.0")
    converted = _verdict(path, spec, catalogue)
    assert converted.layout == "trainer"
    rules = {f.rule for f in converted.findings}
    assert not rules & {"CONFIG-004", "CONFIG-005"} and converted.violations == []
    assert rules <= {f.rule for f in flat.findings}
    assert converted.schedule is not None and converted.schedule == flat.schedule
    assert converted.learning_rate == flat.learning_rate
    assert converted.parameters == flat.parameters and converted.parameters is not None
    assert converted.plan is not None and flat.plan is not None
    assert converted.plan.as_dict() == flat.plan.as_dict()


def test_fix_shows_the_conversion_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: Spec, catalogue: Catalogue
) -> None:
    path = _copy(tmp_path, FLAT[0])
    before = path.read_bytes()
    assert cli_main(["validate", str(path), "--release", CONVERTER, "--no-plan", "--fix"]) == 0
    diff = capsys.readouterr().out
    assert "\n-train_input:\n" in diff and "\n+trainer:\n" in diff and "\n+    device: CSX\n" in diff
    assert path.read_bytes() == before


def test_the_conversion_follows_the_release_s_tables(tmp_path: Path) -> None:
    """Keys renamed, moved, pruned, ignored and dropped; the schedule and the optimizer restructured; the
    convert command's device only where the release ships the command."""
    text = (MODELZOO / FLAT[0]).read_text(encoding="utf-8")
    extra = "    mode: train\n    made_up_key: 3\n    lr_note: 1e-5\n"
    path = tmp_path / "flat.yaml"
    path.write_text(text.replace("runconfig:\n", "runconfig:\n" + extra, 1), encoding="utf-8")
    doc = ConfigFile.read(path)
    conversion = convert(doc, knowledge(CONVERTER))
    init = conversion.data["trainer"]["init"]
    assert init["backend"]["cluster_config"]["max_wgt_servers"] == doc.data["runconfig"]["num_wgt_servers"]
    assert init["precision"] == {
        "enabled": True,
        "fp16_type": "cbfloat16",
        "loss_scaling_factor": "dynamic",
        "max_gradient_norm": 1.0,
    }
    assert list(init["optimizer"]) == ["AdamW"] and "max_gradient_norm" not in init["optimizer"]["AdamW"]
    (schedule,) = init["schedulers"]
    assert [next(iter(phase)) for phase in schedule["SequentialLR"]["schedulers"]] == ["LinearLR", "CosineDecayLR"]
    assert {"ScopedTrainFlags": {"csx.performance.micro_batch_size": 4}} in init["callbacks"]
    assert "micro_batch_size" not in conversion.data["trainer"]["fit"]["train_dataloader"]  # pruned
    assert init["device"] == "CSX" and "device" not in convert(doc, knowledge("2.3.1")).data["trainer"]["init"]
    assert conversion.dropped[("runconfig", "mode")] == "release 2.4.0 ignores it"
    assert "no entry" in conversion.dropped[("runconfig", "made_up_key")]
    assert conversion.destinations[("runconfig", "num_wgt_servers")] == [
        ("trainer", "init", "backend", "cluster_config", "max_wgt_servers")
    ]
    # 2.4.0's conversion keeps model.fp16_type in the model section as well as in precision; 2.5.0 prunes it
    assert conversion.destinations[("model", "fp16_type")] == [
        ("trainer", "init", "model", "fp16_type"),
        ("trainer", "init", "precision", "fp16_type"),
    ]
    assert "fp16_type" not in convert(doc, knowledge("2.5.0")).data["trainer"]["init"]["model"]


def test_an_unquoted_text_float_becomes_the_number_it_means(tmp_path: Path) -> None:
    path = tmp_path / "flat.yaml"
    text = (MODELZOO / FLAT[2]).read_text(encoding="utf-8")
    path.write_text(
        text.replace("learning_rate: 0.0002", "learning_rate: 2e-4").replace("    seed: 1\n", '    seed: "1e-3"\n')
    )
    data = convert(ConfigFile.read(path), knowledge(CONVERTER)).data["trainer"]["init"]
    assert data["schedulers"] == [{"ConstantLR": {"learning_rate": 2e-4}}]
    assert data["optimizer"]["AdamW"]["learning_rate"] == 2e-4
    assert data["seed"] == "1e-3"  # written in quotes: text by the author's choice


@pytest.mark.parametrize(
    ("spec", "adjust", "expected"),
    [
        ({"scheduler": "Linear", "total_iters": 5}, None, {"LinearLR": {"total_iters": 5}}),
        ([{"scheduler": "cosinedecay", "total_iters": 5}], None, {"CosineDecayLR": {"total_iters": 5}}),
        (
            [{"scheduler": "Linear", "main_scheduler": "chained"}, {"scheduler": "Exponential"}],
            None,
            {"ChainedScheduler": {"schedulers": [{"LinearLR": {}}, {"ExponentialLR": {}}]}},
        ),
        (
            [{"scheduler": "Linear"}, {"scheduler": "Constant"}],
            {"decoder_kernel": 0.5},
            {
                "ScalePerParamLR": {
                    "scheduler": {"SequentialLR": {"schedulers": [{"LinearLR": {}}, {"ConstantLR": {}}]}}
                }
            },
        ),
    ],
)
def test_a_flat_schedule_becomes_one_trainer_entry(spec: Any, adjust: Any, expected: dict[str, Any]) -> None:
    assert scheduler_entry(spec, adjust) == expected


@pytest.mark.parametrize(
    ("edit", "names"),
    [
        (lambda d: d["optimizer"].pop("optimizer_type"), "optimizer_type"),
        (lambda d: d["optimizer"]["learning_rate"][0].update(scheduler="Cosin"), "Cosin"),
        (
            lambda d: [
                p.update(main_scheduler=m)
                for p, m in zip(d["optimizer"]["learning_rate"], ("chained", "sequential"), strict=True)
            ],
            "main_scheduler",
        ),
    ],
)
def test_a_file_the_release_s_converter_stops_on_keeps_its_finding_without_a_fix(
    edit: Any, names: str, tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    data = yaml.safe_load((MODELZOO / FLAT[0]).read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / "flat.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConversionError, match=names):
        convert(ConfigFile.read(path), knowledge(CONVERTER))
    verdict = validate_file(path, spec, release_options(catalogue, CONVERTER, plan=False))
    (layout,) = [f for f in verdict.warnings if f.rule == "CONFIG-005"]
    assert layout.edits == ()


def test_no_conversion_where_the_release_has_no_trainer_layout(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match="2.2.1 has no trainer layout"):
        convert(ConfigFile.read(MODELZOO / FLAT[3]), knowledge("2.2.1"))


def test_the_line_fixes_come_first_and_the_conversion_on_the_next_run(tmp_path: Path) -> None:
    """A 1.x file judged for 2.10.0: use_bfloat16 becomes fp16_type, then the file is converted."""
    path = _copy(tmp_path, "1.9.1/modelzoo/transformers/pytorch/gpt3/configs/params_gpt3_xl.yaml")
    arguments = ["validate", str(path), "--release", "2.10.0", "--no-plan", "--fix", "--in-place"]
    assert cli_main(arguments) == 1  # the exit status of the findings as found: CONFIG-023
    first = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert "trainer" not in first and first["model"]["fp16_type"] == "bfloat16"
    assert cli_main(arguments) == 0
    second = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert second["trainer"]["init"]["precision"]["fp16_type"] == "bfloat16"
    assert "model" not in second and "fp16_type" not in second["trainer"]["init"]["model"]  # 2.10.0 prunes it


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-1e3, 1e3) | st.sampled_from(["1e-5", "Linear", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "scheduler",
                    "main_scheduler",
                    "total_iters",
                    "learning_rate",
                    "optimizer_type",
                    "adjust_learning_rate",
                    "micro_batch_size",
                    "add_summaries",
                    "listeners",
                    "listener_type",
                    "experimental",
                    "sparsity",
                    "num_csx",
                    "max_steps",
                    "mode",
                    "batch_size",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)
flat_documents = st.dictionaries(
    st.sampled_from(["train_input", "eval_input", "model", "optimizer", "runconfig", "sparsity", "wandb"]),
    _values,
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=flat_documents)
def test_any_flat_document_converts_or_is_refused_with_a_typed_error(tmp_path: Path, document: dict[str, Any]) -> None:
    path = tmp_path / "flat.yaml"
    path.write_text(json.dumps(document), encoding="utf-8")
    try:
        doc = ConfigFile.read(path)
    except UnreadableDocumentError:
        return
    for release in ("2.3.0", "2.4.0", "2.10.0"):
        try:
            conversion = convert(doc, knowledge(release))
        except ConversionError:
            continue
        assert "trainer" in yaml.safe_load(to_yaml(conversion, "converted"))


def test_a_converted_file_without_a_model_name_keeps_the_family_its_data_processor_says(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    """The 2.0.3 UNet file names no model: neither it nor its conversion (out of the zoo folder) is planned;
    the model keys alone, without the data processor, would be taken for GPT-2's (124M parameters)."""
    path = _copy(tmp_path, "2.0.3/modelzoo/vision/pytorch/unet/configs/params_skm_tea.yaml")
    converted = tmp_path / "converted" / "params.yaml"
    converted.parent.mkdir()
    converted.write_text(to_yaml(convert(ConfigFile.read(path), knowledge(CONVERTER)), "converted"), encoding="utf-8")
    for verdict in (_verdict(path, spec, catalogue), _verdict(converted, spec, catalogue)):
        assert verdict.parameters is None
        assert any(note.startswith("model not planned") for note in verdict.notes), verdict.notes
