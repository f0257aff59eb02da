"""Typed access to a config's fields: every problem names the key and the file.

Shared by the two model readers (:mod:`~csconform.perf.models.hf_config` for Hugging Face configs,
:mod:`~csconform.perf.models.zoo_section` for Model Zoo sections), with the bounds that keep a
mistyped config from building millions of layers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from csconform.errors import ModelConfigError

ACTIVATIONS = (
    "gelu",
    "gelu_new",
    "gelu_fast",
    "gelu_pytorch_tanh",
    "gelu_python",
    "quick_gelu",
    "relu",
    "silu",
    "swish",
    "tanh",
    "sigmoid",
)
"""Activations a config may name: the choice changes no count, but an unknown one is a mistyped config."""
# Upper bounds far above any published model; they keep a mistyped config from building millions of layers.
MAX_LAYERS = 2048
MAX_WIDTH = 2**20
MAX_SEQUENCE = 2**24


def shown(value: Any) -> str:
    """``value`` for a one-line message: its repr, shortened (an integer too long to print is described)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Fields:
    """Typed access to a config's fields; every problem names the key (``prefix`` + field) and the source.

    ``notes`` collects what a reader decided where a config leaves room (legacy fields, defaults)."""

    def __init__(self, config: Any, source: str | None = None, prefix: str = "") -> None:
        self.source, self.prefix = source, prefix
        if not isinstance(config, Mapping):
            block = prefix.rstrip(".")
            what = f"field {block}" if block else "a model config"
            message = f"{what} must be an object of fields, got {type(config).__name__}"
            raise ModelConfigError(message, source=source, key=block or None)
        self.config = config
        self.notes: list[str] = []

    def error(self, message: str, key: str | None = None, kind: type[ModelConfigError] = ModelConfigError):
        return kind(message, source=self.source, key=None if key is None else self.prefix + key)

    def key(self, name: str) -> str:
        return self.prefix + name

    def present(self, names: Sequence[str]) -> list[tuple[str, Any]]:
        return [(n, self.config[n]) for n in names if n in self.config and self.config[n] is not None]

    def integer(
        self, quantity: str, names: Sequence[str], default: int | None = None, minimum: int = 1, limit: int = 2**24
    ) -> int:
        """The one value of ``quantity`` spelled any of ``names``; spellings that disagree are refused."""
        present = self.present(names)
        for name, value in present:
            if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= limit:
                raise self.error(
                    f"field {self.key(name)} ({quantity}) must be an integer in {minimum}..{limit}, got {shown(value)}",
                    name,
                )
        values = {value for _, value in present}
        if len(values) > 1:
            spelled = ", ".join(f"{self.key(n)}={v}" for n, v in present)
            raise self.error(f"contradictory fields for the {quantity}: {spelled}", present[0][0])
        if values:
            return values.pop()
        if default is None:
            raise self.error(f"missing field {' or '.join(self.key(n) for n in names)} (the {quantity})", names[0])
        return default

    def labels(self, default: int) -> int:
        """Output classes: ``num_labels``, else the size of ``id2label``, else ``default``."""
        id2label = self.config.get("id2label")
        if id2label is not None and not isinstance(id2label, Mapping):
            raise self.error(
                f"field {self.key('id2label')} must be an object, got {type(id2label).__name__}", "id2label"
            )
        return self.integer("number of labels", ("num_labels",), default=len(id2label or {}) or default, limit=2**24)

    def check_flag(self, name: str) -> None:
        """Refuse ``name`` given as anything but true or false (absent and null are fine)."""
        value = self.config.get(name)
        if value is not None and not isinstance(value, bool):
            raise self.error(f"field {self.key(name)} must be true or false, got {shown(value)}", name)

    def flag(self, name: str, default: bool) -> bool:
        self.check_flag(name)
        value = self.config.get(name)
        return default if value is None else value

    def check_number(self, name: str, low: float, high: float) -> None:
        """Refuse ``name`` given as anything but a number in [low, high] (a field that changes no count)."""
        value = self.config.get(name)
        if value is None:
            return
        if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
            raise self.error(f"field {self.key(name)} must be a number in [{low}, {high}], got {shown(value)}", name)

    def choice(self, name: str, default: str | None, choices: Sequence[str | None]) -> str | None:
        value = self.config.get(name, default)
        if value not in choices:
            known = ", ".join(str(c) for c in choices)
            raise self.error(f"field {self.key(name)} must be one of {known}, got {shown(value)}", name)
        return value

    def string(self, name: str, default: str) -> str:
        """``name`` when it is a string, ``default`` when absent or null."""
        value = self.config.get(name)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(f"field {self.key(name)} must be a string, got {shown(value)}", name)
        return value

    def check_activation(self, name: str) -> None:
        """Refuse an unknown activation (absent and null are fine; the choice changes no count)."""
        value = self.config.get(name)
        if value is not None and (not isinstance(value, str) or value not in ACTIVATIONS):
            raise self.error(
                f"field {self.key(name)}: unknown activation {shown(value)}; known: {', '.join(ACTIVATIONS)}", name
            )

    def strings(self, name: str) -> list[str]:
        value = self.config.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(f"field {self.key(name)} must be a list of strings, got {shown(value)}", name)
        return value

    def integers(self, name: str, minimum: int = 1, limit: int = 2**22) -> list[int]:
        value = self.config.get(name)
        if value is None:
            raise self.error(f"missing field {self.key(name)}", name)
        if (
            not isinstance(value, list)
            or not value
            or len(value) > MAX_LAYERS
            or not all(isinstance(v, int) and not isinstance(v, bool) and minimum <= v <= limit for v in value)
        ):
            raise self.error(f"field {self.key(name)} must be a non-empty list of integers in {minimum}..{limit}", name)
        return value
