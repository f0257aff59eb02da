"""The model section of a 1.x TensorFlow BERT params file, assembled from the files the release reads.

A TensorFlow BERT fine-tuning params file of releases 1.6-1.8 (``modelzoo/transformers/tf/bert/
fine_tuning/<task>/configs/*.yaml``) holds only its head's keys and ``model.pretrain_params_path``.
The task's ``utils.py: set_defaults`` calls ``bert/utils.py: load_pretrain_model_params`` with the
folder of that ``utils.py``, the task folder: a relative path is relative to the task folder (the
parent of the file's ``configs/`` folder), not to the params file's own folder. The release reads the
pre-training file's ``model:`` section, drops ``use_vsl`` and lets the fine-tuning file's keys
override it.

Every TensorFlow BERT model (``bert/BertModel.py``) takes its vocabulary size from the input, not the
model section: ``train_input.vocab_size``, else the lines of ``train_input.vocab_file``
(``get_vocab_size``), a path relative to the working directory, which the release's READMEs make the
task folder (``python run.py --params configs/...``).

The plan's notes say which files were read; a file that is not where the release would read it is a
:class:`~csconform.errors.ModelSourceError` naming the key, the path tried and what would make the
model plannable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from csconform.arguments import integer_problem
from csconform.documents.files import read_bytes
from csconform.errors import ModelSourceError, UnreadableDocumentError
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.description import RunDescription

PRETRAIN_KEY = "pretrain_params_path"
"""The fine-tuning model key naming the pre-training params file (read by no other model of any release)."""
NOT_INHERITED = ("use_vsl",)
"""Pre-training model keys ``load_pretrain_model_params`` drops before the merge."""
MAX_VOCABULARY_BYTES = 64 * 2**20


def names_pretraining_file(section: Any) -> bool:
    """The model section names a pre-training params file (``model.pretrain_params_path``)."""
    return isinstance(section, dict) and section.get(PRETRAIN_KEY) is not None


def task_folder(params_file: str) -> Path:
    """The folder the release resolves the file's relative paths from: the parent of the folder
    holding the file (``fine_tuning/qa`` for ``fine_tuning/qa/configs/params_bert_base_squad.yaml``)."""
    return Path(os.path.abspath(params_file)).parent.parent


def vocabulary_file(params_file: Path) -> Path | None:
    """Where the release reads the vocabulary of a TensorFlow BERT params file (``train_input.vocab_file``
    from the task folder); None when the file names none or cannot be read."""
    try:
        named = ConfigFile.read(params_file).node(("train_input", "vocab_file"))
    except UnreadableDocumentError:
        return None
    return _resolved(task_folder(str(params_file)), named) if isinstance(named, str) and named.strip() else None


def _resolved(task: Path, written: str) -> Path:
    """``written`` relative to the task folder, as the release joins it (an absolute path as it is)."""
    return Path(os.path.normpath(task / written))


def tensorflow_bert_section(run: RunDescription) -> tuple[dict[str, Any], list[str]]:
    """The model section the release builds the model from (the pre-training file's keys under the
    file's own, ``vocab_size`` from the input), and notes naming every file read besides this one."""
    assert run.model is not None
    section = dict(run.model.fields.value)
    notes = []
    task = task_folder(run.file)
    if names_pretraining_file(section):
        section, note = _with_pretraining_keys(section, task, run)
        notes.append(note)
    section["vocab_size"], note = _vocabulary_size(run, task)
    notes.append(note)
    return section, notes


def _with_pretraining_keys(section: dict[str, Any], task: Path, run: RunDescription) -> tuple[dict[str, Any], str]:
    assert run.model is not None
    key = f"{run.model.fields.origin.key}.{PRETRAIN_KEY}"
    written = section[PRETRAIN_KEY]
    if not isinstance(written, str) or not written.strip():
        raise ModelSourceError(f"{key} must be a path, got {written!r}", source=run.file, key=key)
    path = _resolved(task, written)
    remedy = f"copy the pre-training params file to {path}, or write its model keys into this file's model section"
    if not path.is_file():
        raise ModelSourceError(
            f"{key}: no pre-training params file at {path}: the release reads {written!r} relative to the task folder "
            f"(fine_tuning/<task>, where its utils.py is), taken to be {task}, the folder above this file's; {remedy}",
            source=run.file,
            key=key,
        )
    try:
        pretraining = ConfigFile.read(path).section(("model",))
    except UnreadableDocumentError as exc:
        raise ModelSourceError(
            f"{key}: the pre-training params file cannot be read: {exc}", source=run.file, key=key
        ) from None
    if pretraining is None:
        raise ModelSourceError(
            f"{key}: the pre-training params file {path} has no model section (a mapping of model keys); write the "
            "pre-training model keys into this file's model section",
            source=run.file,
            key=key,
        )
    merged = {name: value for name, value in pretraining.items() if name not in NOT_INHERITED}
    merged.update(section)
    note = (
        f"model keys from the pre-training params file {path} ({key} {written!r}, relative to the task folder as "
        "the release reads it), under this file's own model keys"
    )
    return merged, note


def _vocabulary_size(run: RunDescription, task: Path) -> tuple[int, str]:
    """``train_input.vocab_size``, else the lines of ``train_input.vocab_file`` as the release counts them
    (``count_lines``: the newlines, plus one when the last line has none)."""
    assert run.model is not None
    stated, named = run.model.vocab_size, run.model.vocab_file
    if stated is not None:
        problem = integer_problem("train_input.vocab_size", stated.value, minimum=1)
        if problem is not None:
            raise ModelSourceError(problem, source=run.file, key="train_input.vocab_size")
        return int(stated.value), f"vocabulary size {stated.value} from train_input.vocab_size"
    key = "train_input.vocab_file"
    remedy = "set train_input.vocab_size to plan the model"
    if named is None or not isinstance(named.value, str) or not named.value.strip():
        raise ModelSourceError(
            f"the TensorFlow BERT model reads its vocabulary size from train_input.vocab_size or the lines of "
            f"{key}, and the file sets neither; {remedy}",
            source=run.file,
            key="train_input",
        )
    path = _resolved(task, named.value)
    try:
        data = read_bytes(path, MAX_VOCABULARY_BYTES, what="vocabulary file")
    except UnreadableDocumentError as exc:
        raise ModelSourceError(
            f"{key}: the vocabulary size is the line count of {path}, which cannot be read ({exc.problem}); the "
            f"release reads {named.value!r} relative to the working directory its README runs run.py from, the "
            f"task folder {task}; {remedy}",
            source=run.file,
            key=key,
        ) from None
    if not data:
        raise ModelSourceError(f"{key}: the vocabulary file {path} is empty; {remedy}", source=run.file, key=key)
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    return lines, f"vocabulary size {lines}: the lines of the vocabulary file {path} ({key})"
