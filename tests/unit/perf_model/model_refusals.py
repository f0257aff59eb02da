"""What a refusal of the model readers names, asserted without its wording.

The wording of each message template is pinned once, in ``test_model_reader_messages.py``; every
other test asserts the error's type, the key it points at and the words a user needs to fix the
config (the value given, the range, the quantity, the other field), each as a whole word of the message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from csconform.errors import CsConformError


def refusal(read: Callable[..., object], *args: Any, **options: Any) -> CsConformError:
    """The error ``read(*args, **options)`` raises (the test fails if it raises none)."""
    with pytest.raises(CsConformError) as info:
        read(*args, **options)
    return info.value


def names(message: str, *words: str) -> list[str]:
    """The ``words`` that ``message`` does not name, each looked for as a whole word."""
    return [word for word in words if not re.search(rf"(?<!\w){re.escape(word)}(?!\w)", message)]


def assert_refused(
    error: CsConformError, kind: type[CsConformError], key: str | None, *words: str, source: str | None = None
) -> None:
    """``error`` is a ``kind`` (not a subclass) pointing at ``key``, naming each of ``words`` (and ``source``)."""
    assert type(error) is kind, f"{type(error).__name__}: {error}"
    assert getattr(error, "key", None) == key, f"key {getattr(error, 'key', None)!r}: {error}"
    message = getattr(error, "message", str(error))
    assert not names(message, *words), f"{message!r} does not name {names(message, *words)}"
    if source is not None:
        assert str(error).startswith(f"{source}: ") and getattr(error, "source", source) == source, str(error)
