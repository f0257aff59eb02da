"""Which Model Zoo model a params file describes: its ``name``, the option, its folder, or its contents.

A 2.x model section names its model (``name: gpt3``). A 1.x (flat) file does not: the zoo picks the
model by the folder whose ``run.py`` reads the file. A file copied out of that folder (the usual case)
is recognised from its contents instead: the data processor its input sections name and the keys of
its model section, against the families of the release's own params files
(:mod:`.extract`'s ``families``). ``--model-family`` overrides all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from csconform.perf.models.zoo_section import ZOO_FAMILIES
from csconform.userconfig.release_data import knowledge, release_names

FINE_TUNING = ("classifier", "token_classifier", "extractive_summarization", "qa")
FAMILY_FOLDER_DEPTH = 3
"""Folders above ``configs`` that may name the model: the zoo's deepest is ``bert/fine_tuning/qa/configs``.
Looking no higher keeps a folder of the user's own (a checkout named ``t5``, ``bert``) from naming it."""


@dataclass(frozen=True)
class Family:
    """A zoo model name and how it was found (``name``, ``option``, ``folder`` or ``inferred``)."""

    name: str
    how: str
    note: str | None = None


def family_from_path(path: str) -> str | None:
    """The Model Zoo model a params file belongs to, from its folder (``.../gpt3/configs/x.yaml``):
    the nearest of the :data:`FAMILY_FOLDER_DEPTH` folders above ``configs`` that names a zoo model (with
    its fine-tuning task for BERT), else the folder holding ``configs`` itself."""
    parts = [p.lower() for p in PurePath(path).parts]
    if "configs" not in parts:
        return None
    before = parts[: len(parts) - 1 - parts[::-1].index("configs")]
    known = {name.lower(): name for name in ZOO_FAMILIES if "/" not in name}
    for index in range(len(before) - 1, max(len(before) - 1 - FAMILY_FOLDER_DEPTH, -1), -1):
        if before[index] in known:
            family = known[before[index]]
            task = next((p for p in before[index + 1 :] if p in FINE_TUNING), None)
            return f"{family}/{task}" if task and f"{family}/{task}" in ZOO_FAMILIES else family
    return before[-1] if before else None


def infer_family(model: Mapping[str, Any], processors: set[str], release: str) -> Family | None:
    """The family whose own files in ``release`` name one of ``processors`` and whose model keys
    cover the section's best (every key of the section known to the family first, then the fewest
    keys the family uses beyond them); None when no family of the release fits."""
    keys = {str(k) for k in model}
    best: tuple[tuple[float, ...], str, str] | None = None
    for family, seen in knowledge(release).families.items():
        family_keys = set(seen["model_keys"])
        processor = processors & set(seen["data_processors"])
        if processors and not processor:
            continue
        covered = len(keys & family_keys) / max(len(keys), 1)
        jaccard = len(keys & family_keys) / max(len(keys | family_keys), 1)
        score = (covered, jaccard, float(family in ZOO_FAMILIES))
        if best is None or score > best[0]:
            what = f"data processor {sorted(processor)[0]} and its model keys" if processor else "its model keys"
            best = (score, family, what)
    if best is None:
        return None
    return Family(
        best[1], "inferred", f"model family {best[1]} inferred from {best[2]} ({release}); --model-family to override"
    )


def flat_families_release(release: str) -> str:
    """The release whose files' families to infer from: ``release`` if its own files are flat,
    else the newest release before it whose files are (a 1.x file judged for 2.10 is a 2.3.1-era file)."""
    names = release_names()
    for name in reversed(names[: names.index(release) + 1]):
        if len(knowledge(name).families) > 1:
            return name
    return release
