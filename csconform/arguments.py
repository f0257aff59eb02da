"""Argument types shared by the subcommands: a bad value is argparse's own usage error (exit 2).

Each is a function from the option's text to its value that raises ``argparse.ArgumentTypeError``
with what was expected, so ``--time-limit nan`` or ``--systems 0`` is refused before anything runs.
"""

from __future__ import annotations

import argparse
import math

MAX_SECONDS = 7 * 24 * 3600.0
"""Largest time limit or timeout accepted: a week."""


def positive_seconds(text: str) -> float:
    """A number of seconds: finite, > 0 and at most :data:`MAX_SECONDS`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds up to {MAX_SECONDS:g} (a week), got {text!r}"
        )
    return value
