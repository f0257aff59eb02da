"""Reading a user's file: key lines, repeated keys, text numbers, JSON, unreadable files, the layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csconform.errors import CsConformError, UnreadableDocumentError
from csconform.spec import Catalogue, Spec
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.families import family_from_path
from csconform.userconfig.read_hf import TrainingOptions
from csconform.userconfig.validate import describe, release_options, validate_file

YAML = """\
trainer:
  init:
    callbacks:
    - ScopedTrainFlags:
        csx.performance.micro_batch_size: 4
    precision: &p
      fp16_type: cbfloat16
  fit:
    other: *p
    rate: 1e-5
    quoted: '1e-5'
"""


def test_text_numbers_become_numbers_and_are_listed(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(YAML, encoding="utf-8")
    doc = ConfigFile.read(path)
    assert doc.setting(("trainer", "fit", "rate")).value == 1e-5  # type: ignore[union-attr]
    assert [use.path for use in doc.text_numbers()] == ["trainer.fit.rate"]


def test_a_json_config_keeps_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gpt2", "n_layer": 2}, indent=2), encoding="utf-8")
    doc = ConfigFile.read(path)
    assert doc.data["n_layer"] == 2 and doc.origin(("n_layer",)).line == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe\x00\x01binary", "not UTF-8"),
        (b"model: [1, 2\n", "invalid YAML"),
        (b"- just\n- a list\n", "got a list"),
        (b"", "got an empty document"),
        (b"hello: world\n", "neither a Model Zoo params file"),
        (b'{"model_type": "gpt2",}', "invalid JSON"),
        (b"trainer: [1, 2]\n", "trainer must be a mapping"),
    ],
)
def test_an_unreadable_file_is_a_verdict_of_its_own(
    tmp_path: Path, content: bytes, message: str, spec: Spec, catalogue: Catalogue
) -> None:
    path = tmp_path / ("config.json" if content.startswith(b"{") else "params.yaml")
    path.write_bytes(content)
    verdict = validate_file(path, spec, release_options(catalogue, None))
    assert verdict.exit_code == 2 and message in (verdict.error or "") and "\n" not in (verdict.error or "")


def test_a_missing_file_is_unreadable(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    verdict = validate_file(tmp_path / "nope.yaml", spec, release_options(catalogue, None))
    assert verdict.outcome == "unreadable" and "file not found" in (verdict.error or "")


def test_the_model_folder_names_the_family() -> None:
    assert family_from_path("modelzoo/transformers/pytorch/gpt3/configs/Cerebras_GPT/111m.yaml") == "gpt3"
    assert family_from_path("a/bert/fine_tuning/classifier/configs/x.yaml") == "bert/classifier"
    assert family_from_path("src/cerebras/modelzoo/models/nlp/t5/configs/t5_base.yaml") == "t5"
    assert family_from_path("my/own/params.yaml") is None
    # a folder of the user's above the zoo's own layout names no model (here a checkout named t5)
    assert family_from_path("/home/t5/zoo/vision/pytorch/unet/configs/params.yaml") == "unet"


def test_the_training_options_of_a_config_json_make_a_schedule(tmp_path: Path, catalogue: Catalogue) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama"}', encoding="utf-8")
    training = TrainingOptions(batch_size=8, max_steps=1000, learning_rate=0.1, warmup_steps=100, schedule="linear")
    run = describe(ConfigFile.read(path), release_options(catalogue, None, training=training, num_csx=2))
    assert run.layout == "hf" and run.systems == 2 and run.steps == 1000
    assert run.schedule is not None and [c.name.value for c in run.schedule.children] == ["LinearLR", "LinearLR"]
    assert run.schedule.children[1].arguments["total_iters"].value == 900
    assert run.batch.train is not None and run.batch.train.origin.key == "--batch-size"


documents = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**10) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "trainer",
                    "init",
                    "fit",
                    "model",
                    "optimizer",
                    "runconfig",
                    "train_input",
                    "batch_size",
                    "max_steps",
                    "learning_rate",
                    "schedulers",
                    "SequentialLR",
                    "LinearLR",
                    "precision",
                    "loop",
                    "checkpoint",
                    "steps",
                    "num_csx",
                    "micro_batch_size",
                    "fp16_type",
                    "loss_scaling_factor",
                    "scheduler",
                    "total_iters",
                    "eval_frequency",
                    "name",
                    "optimizer_type",
                    "AdamW",
                    "callbacks",
                    "max_gradient_norm",
                    "model_type",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    document=st.dictionaries(
        st.sampled_from(["trainer", "train_input", "model", "optimizer", "runconfig"]), documents, min_size=1
    )
)
def test_any_document_gives_a_verdict_or_a_typed_refusal(
    tmp_path: Path, document: dict, spec: Spec, catalogue: Catalogue
) -> None:
    path = tmp_path / "gpt3" / "configs" / "params.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    for release in ("1.7.1", "2.2.0", "2.10.0"):
        try:
            verdict = validate_file(path, spec, release_options(catalogue, release, plan=False))
        except CsConformError:
            continue
        assert verdict.exit_code in (0, 1, 2)


def test_describe_refuses_training_options_for_a_params_file(tmp_path: Path, catalogue: Catalogue) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("runconfig: {max_steps: 10}\n", encoding="utf-8")
    with pytest.raises(CsConformError, match="training options"):
        describe(ConfigFile.read(path), release_options(catalogue, None, training=TrainingOptions(batch_size=4)))
    with pytest.raises(UnreadableDocumentError):
        ConfigFile.read(tmp_path)


def _leaves(data: object, path: tuple = ()) -> list[tuple]:
    if isinstance(data, dict):
        return [leaf for key, value in data.items() for leaf in _leaves(value, (*path, key))] or [path]
    if isinstance(data, list):
        return [leaf for i, value in enumerate(data) for leaf in _leaves(value, (*path, i))] or [path]
    return [path]


def _replaced(data: object, path: tuple, value: object) -> object:
    if not path:
        return value
    copy = json.loads(json.dumps(data))
    node = copy
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return copy


REAL = sorted((Path(__file__).parent / "data" / "modelzoo").rglob("params_*.yaml"))
ODD_VALUES = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats() | st.text(max_size=6) | st.just([])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_real_file_with_any_one_value_changed_gives_a_verdict(
    tmp_path: Path, data: st.DataObject, spec: Spec, catalogue: Catalogue
) -> None:
    source = data.draw(st.sampled_from(REAL))
    document = ConfigFile.read(source).data
    leaf = data.draw(st.sampled_from(_leaves(document)))
    changed = _replaced(document, leaf, data.draw(ODD_VALUES))
    path = tmp_path / source.relative_to(source.parents[3])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(changed, allow_nan=True), encoding="utf-8")
    release = data.draw(st.sampled_from(["1.9.1", "2.1.1", "2.10.0"]))
    verdict = validate_file(path, spec, release_options(catalogue, release, plan=False))
    assert verdict.exit_code in (0, 1, 2)
