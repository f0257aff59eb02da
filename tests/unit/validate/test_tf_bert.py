"""1.x TensorFlow BERT fine-tuning files: their model keys come from the pre-training file they name.

The fixtures are the 1.8.0 zoo's own files at their zoo paths (data/modelzoo/sources.yaml): the
fine-tuning files, the pre-training files their ``model.pretrain_params_path`` names and the
vocabulary their ``train_input.vocab_file`` names. The release (``tf/bert/utils.py:
load_pretrain_model_params``, called with the task folder ``fine_tuning/<task>``) reads the path
relative to the task folder, not to the params file's own ``configs/`` folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from arithmetic import evaluate
from zoo_data import MODELZOO, expected_fixtures

from csconform.errors import ModelSourceError
from csconform.spec import Catalogue, Spec
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.performance import build_model, model_family
from csconform.userconfig.validate import Verdict, describe, release_options, validate_file

TF_BERT = "modelzoo/transformers/tf/bert"
SQUAD = f"{TF_BERT}/fine_tuning/qa/configs/params_bert_large_squad.yaml"
PRETRAINING = f"{TF_BERT}/configs/params_bert_large_msl512.yaml"


@pytest.fixture
def zoo(tmp_path: Path) -> Path:
    """A copy of the 1.8.0 fixtures, keeping their zoo paths."""
    shutil.copytree(MODELZOO / "1.8.0", tmp_path / "1.8.0")
    return tmp_path / "1.8.0"


def judged(path: Path, spec: Spec, catalogue: Catalogue, **options: object) -> Verdict:
    return validate_file(path, spec, release_options(catalogue, "1.8.0", **options))


def perf_025(verdict: Verdict):
    (finding,) = [f for f in verdict.warnings if f.rule == "PERF-025"]
    return finding


def test_the_pretraining_file_is_read_relative_to_the_task_folder(zoo: Path, spec: Spec, catalogue: Catalogue) -> None:
    verdict = judged(zoo / SQUAD, spec, catalogue)
    assert verdict.parameters == evaluate(expected_fixtures()[f"1.8.0/{SQUAD}"]["parameters"]) == 334_094_338
    assert verdict.plan is not None
    pretraining = str(zoo / PRETRAINING)
    assert any(pretraining in note and "model.pretrain_params_path" in note for note in verdict.plan.notes)
    vocabulary = str(zoo / "modelzoo/transformers/vocab/google_research_uncased_L-12_H-768_A-12.txt")
    assert any(vocabulary in note and "30522" in note for note in verdict.plan.notes)


def test_the_params_file_s_own_folder_is_not_where_the_release_looks(
    zoo: Path, spec: Spec, catalogue: Catalogue
) -> None:
    # '../../configs/...' from fine_tuning/qa/configs (the file's folder) is fine_tuning/configs: put it only there
    beside = zoo / TF_BERT / "fine_tuning/configs/params_bert_large_msl512.yaml"
    beside.parent.mkdir()
    (zoo / PRETRAINING).rename(beside)
    verdict = judged(zoo / SQUAD, spec, catalogue, plan=False)
    finding = perf_025(verdict)
    assert finding.key == "model.pretrain_params_path" and finding.line == 27
    assert str(zoo / PRETRAINING) in finding.message and str(beside) not in finding.message
    assert verdict.parameters is None and verdict.outcome == "conforms"


def test_a_file_copied_out_of_its_folder_says_what_would_make_it_plannable(
    tmp_path: Path, spec: Spec, catalogue: Catalogue
) -> None:
    mine = tmp_path / "home" / "me" / "work" / "my_squad.yaml"
    mine.parent.mkdir(parents=True)
    shutil.copy(MODELZOO / "1.8.0" / SQUAD, mine)
    verdict = judged(mine, spec, catalogue, family="bert/qa", plan=False)
    task = tmp_path / "home" / "me"  # the folder above the file's
    tried = tmp_path / "configs/params_bert_large_msl512.yaml"  # ../../configs from there
    assert perf_025(verdict).message == (
        "the performance model refuses the model: model.pretrain_params_path: no pre-training params file at "
        f"{tried}: the release reads '../../configs/params_bert_large_msl512.yaml' relative to the task folder "
        f"(fine_tuning/<task>, where its utils.py is), taken to be {task}, the folder above this file's; copy "
        f"the pre-training params file to {tried}, or write its model keys into this file's model section"
    )
    assert verdict.parameters is None


@pytest.mark.parametrize(
    ("pretraining", "problem"),
    [("train_input: {batch_size: 1}\n", "has no model section"), ("model: [1\n", "cannot be read")],
)
def test_an_unusable_pretraining_file_is_a_typed_refusal(
    zoo: Path, pretraining: str, problem: str, catalogue: Catalogue
) -> None:
    (zoo / PRETRAINING).write_text(pretraining, encoding="utf-8")
    run = describe(ConfigFile.read(zoo / SQUAD), release_options(catalogue, "1.8.0"))
    with pytest.raises(ModelSourceError) as refused:
        build_model(run, model_family(run))
    assert refused.value.key == "model.pretrain_params_path" and problem in refused.value.message
    assert str(zoo / PRETRAINING) in refused.value.message


def test_the_fine_tuning_file_s_keys_override_the_pretraining_file_s(
    zoo: Path, spec: Spec, catalogue: Catalogue
) -> None:
    text = (zoo / SQUAD).read_text(encoding="utf-8")
    (zoo / SQUAD).write_text(
        text.replace("    cls_dropout_rate: 0.1\n", "    num_hidden_layers: 2\n"), encoding="utf-8"
    )
    verdict = judged(zoo / SQUAD, spec, catalogue, plan=False)
    layer = 4 * 1024 * 1024 + 4 * 1024 + 2 * 1024 * 4096 + 4096 + 5 * 1024
    assert verdict.parameters == 334_094_338 - 22 * layer


def test_the_vocabulary_size_comes_from_train_input(zoo: Path, spec: Spec, catalogue: Catalogue) -> None:
    text = (zoo / SQUAD).read_text(encoding="utf-8")
    named = '    vocab_file: "../../../../vocab/google_research_uncased_L-12_H-768_A-12.txt"\n'
    (zoo / SQUAD).write_text(text.replace(named, "    vocab_size: 30000\n", 1), encoding="utf-8")
    assert judged(zoo / SQUAD, spec, catalogue, plan=False).parameters == 334_094_338 - 522 * 1024
    (zoo / SQUAD).write_text(text, encoding="utf-8")
    (zoo / "modelzoo/transformers/vocab/google_research_uncased_L-12_H-768_A-12.txt").unlink()
    finding = perf_025(judged(zoo / SQUAD, spec, catalogue, plan=False))
    assert finding.key == "train_input.vocab_file" and finding.line == 7 and "train_input.vocab_size" in finding.message
