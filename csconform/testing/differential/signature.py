"""A class of disagreements: the area, the call, the observable and the kind of difference.

Every disagreement the fuzzer finds is reduced to a :class:`Signature`. Two disagreements with one
signature are one class: one triage verdict, one minimised repro. A signature is built from names
only (the call label of the statement, see program.py; the observable, see observables.py; the
kind, see compare.py, or how the two outcomes differ, e.g. ``A refuses (GradScalerUsageError), B
returns``), so it is the same in every run, with every seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from csconform.errors import InvalidInputError

SEPARATOR = " | "


@dataclass(frozen=True, order=True)
class Signature:
    area: str
    call: str
    observable: str
    kind: str

    def __str__(self) -> str:
        return SEPARATOR.join((self.area, self.call, self.observable, self.kind))

    @classmethod
    def parse(cls, text: str) -> Signature:
        """The inverse of ``str()``: ``"grad_scaler | GradScaler.update | result | ..."``."""
        parts = [part.strip() for part in str(text).split(SEPARATOR.strip(), 3)]
        if len(parts) != 4 or not all(parts):
            raise InvalidInputError(f"a class signature is 'area | call | observable | kind', got {text!r}")
        return cls(*parts)
