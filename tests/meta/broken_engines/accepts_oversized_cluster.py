"""Broken on purpose: the appliance accepts clusters of more than 192 systems (breaks APPLIANCE-001)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import appliance as _appliance

_appliance.MAX_SYSTEMS = 10**6


def __getattr__(name: str):
    return getattr(_reference, name)
