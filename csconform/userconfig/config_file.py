"""A user's config file as the description readers see it: settings that know where they were written.

The file is read by the one document reader (:mod:`csconform.documents`), keeping a key given twice
(the Model Zoo loads params files with PyYAML, which keeps the last value; validate warns about the
repeat). This view adds what the readers of a run need: a value with its :class:`Location` (dotted
key path and line), the file's keys by section, and the YAML 1.1 text floats (``1e-5``) that the
Model Zoo reads as numbers.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.documents import Document, KeyPath, dotted, read_document
from csconform.findings.finding import Location
from csconform.userconfig.description import KeyUse, Setting

# A float in exponent form without a decimal point (1e-5): YAML 1.2 reads a number, but PyYAML's
# YAML 1.1 resolver, which the Model Zoo loads params files with, reads the string "1e-5".
TEXT_FLOAT = re.compile(r"^[-+]?[0-9]+[eE][-+]?[0-9]+$")

LOSS_SCALING_KEYS = {
    "factor": "loss_scaling_factor",
    "initial_scale": "initial_loss_scale",
    "steps_per_increase": "steps_per_increase",
    "min_scale": "min_loss_scale",
    "max_scale": "max_loss_scale",
    "max_gradient_norm": "max_gradient_norm",
    "max_gradient_value": "max_gradient_value",
}
""":class:`~.description.LossScaling`'s fields and the Model Zoo's keys for them, spelt alike in both
layouts (flat: under ``optimizer``; trainer: in the precision section)."""
LOOP_KEYS = ("max_steps", "num_steps", "num_epochs", "eval_steps", "eval_frequency")
"""Loop settings whose key is the :class:`~.description.Loop` field's name in both layouts."""


def as_number(value: Any) -> Any:
    """A YAML 1.1 text float (``"1e-5"``) as the number it means; any other value unchanged."""
    return float(value) if isinstance(value, str) and TEXT_FLOAT.match(value) else value


@dataclass(frozen=True)
class ConfigFile(Document):
    """A params file or ``config.json``: the document, with its values as settings."""

    @classmethod
    def read(cls, path: Path | str) -> ConfigFile:
        """Read ``path`` (YAML, or JSON for ``.json``); an unreadable file is an UnreadableDocumentError."""
        document = read_document(path, what="config", repeated_keys="keep-last")
        return cls(**{f.name: getattr(document, f.name) for f in dataclasses.fields(Document)})

    def origin(self, path: KeyPath) -> Location:
        return Location(dotted(path), self.line(path))

    def setting(self, path: KeyPath) -> Setting[Any] | None:
        """The value at ``path`` with its origin, or None when the key is absent or null."""
        value = self.node(path)
        return None if value is None else Setting(as_number(value), self.origin(path))

    def settings(self, section: KeyPath, keys: Mapping[str, str]) -> dict[str, Setting[Any] | None]:
        """``{field: setting}`` for each ``field: key`` of ``keys``, the keys read inside ``section``."""
        return {name: self.setting((*section, key)) for name, key in keys.items()}

    def section(self, path: KeyPath) -> Mapping[str, Any] | None:
        value = self.node(path)
        return value if isinstance(value, Mapping) else None

    def entries(self, path: KeyPath) -> Iterator[tuple[KeyPath, Any]]:
        """``(path, value)`` of every entry of the mapping or list at ``path``, text floats as numbers."""
        for entry_path, value in self.items(path):
            yield entry_path, as_number(value)

    def key_uses(self, section_depth: int) -> tuple[KeyUse, ...]:
        """Every key in the file; its section is the path's first ``section_depth`` keys."""
        uses = []
        for path, line in self.lines.items():
            if isinstance(path[-1], str):
                names = [p for p in path if isinstance(p, str)]
                section = ".".join(names[:section_depth])
                uses.append(KeyUse(dotted(path), line, section, path[-1]))
        return tuple(uses)

    def duplicate_keys(self) -> tuple[KeyUse, ...]:
        return tuple(
            KeyUse(dotted(repeat.path), repeat.line, "", str(repeat.path[-1])) for repeat in self.repeated_keys
        )

    def text_numbers(self) -> tuple[KeyUse, ...]:
        """Every value that YAML 1.1 reads as text although it is written as a number (``1e-5``)."""
        found = []
        for path, line in self.lines.items():
            value = self.node(path)
            if isinstance(value, str) and TEXT_FLOAT.match(value) and path not in self.quoted:
                found.append(KeyUse(dotted(path), line, "", value))
        return tuple(found)
