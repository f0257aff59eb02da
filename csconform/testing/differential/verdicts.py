"""Judge a campaign's classes against the differential section of B's triage (csconform/triage.py).

Every class found gets the verdict of its entry (``triaged``) or ``untriaged``; every entry whose
class the campaign did not come across is checked by running its repro again: ``triaged`` if the
repro still shows the class, ``stale`` if not. Entries of verdict ``our-bug`` are fixed engine
bugs: ``fixed`` while their repro shows nothing, ``regression`` when it shows the class again.
A class that does not show again when its program runs a second time is ``flaky``.
``untriaged``, ``stale``, ``regression`` and ``flaky`` fail the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from csconform.testing.differential.areas import get_area
from csconform.testing.differential.campaign import Campaign, FoundClass
from csconform.testing.differential.explore import compared, implementations
from csconform.testing.differential.implementation import Workdirs
from csconform.testing.differential.lockstep import run_lockstep
from csconform.testing.differential.signature import Signature
from csconform.triage import VERDICTS, ClassEntry, Triage

FAILING = ("untriaged", "stale", "regression", "flaky")
"""Judgements that fail the run."""


@dataclass(frozen=True)
class Verdict:
    signature: Signature
    verdict: str
    """``triaged``, ``untriaged``, ``stale``, ``regression``, ``fixed`` or ``flaky``."""
    entry: ClassEntry | None
    found: FoundClass | None
    note: str = ""

    @property
    def fails(self) -> bool:
        return self.verdict in FAILING


def judge(campaign: Campaign, triage: Triage | None) -> list[Verdict]:
    """A verdict for every class found and every entry of the triage (one that applies to B's release)."""
    entries = {entry.signature: entry for entry in (triage.differential if triage else ())}
    verdicts = []
    for found in campaign.classes:
        entry = entries.pop(found.signature, None)
        if not found.reproduced:
            note = (
                "it did not show again when its first program ran a second time: an implementation is not deterministic"
            )
            verdicts.append(Verdict(found.signature, "flaky", entry, found, note))
        elif entry is None:
            note = f"no entry in the triage for {triage.release}" if triage else "no triage file for this release"
            verdicts.append(Verdict(found.signature, "untriaged", None, found, note))
        elif not VERDICTS[entry.verdict].class_shows:
            verdicts.append(Verdict(found.signature, "regression", entry, found, "a fixed engine bug shows again"))
        else:
            verdicts.append(Verdict(found.signature, "triaged", entry, found))
    a, b = implementations(campaign.pair)
    with Workdirs() as workdirs:
        for entry in entries.values():
            if compared(get_area(entry.signature.area), a, b):
                continue  # the pair cannot run this area's calls
            shows = entry.signature in run_lockstep(entry.repro, a, b, workdirs).signatures
            if not VERDICTS[entry.verdict].class_shows:
                verdict, note = ("regression", "its repro shows the class again") if shows else ("fixed", "")
            elif shows:
                verdict, note = "triaged", "not met by this run's examples; its repro still shows it"
            else:
                verdict, note = "stale", "its repro no longer shows the class: the expected difference is gone"
            verdicts.append(Verdict(entry.signature, verdict, entry, None, note))
    return sorted(verdicts, key=lambda v: v.signature)
