"""Declares what it implements but has no ``reset``."""

from csconform.engine import CAPABILITIES, TARGETS  # noqa: F401
