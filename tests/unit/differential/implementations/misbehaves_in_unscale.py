"""``GradScaler.unscale_`` misbehaves the way the scaler's scale says: the test picks the way by the
scale it builds the scaler with (5: hangs, 6: ends the process, 7: raises SystemExit; 9: every
reading of the scale takes half a second); any other scale is the engine's. One module, so one
process serves every case."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from csconform.engine.amp import GradScaler as _GradScaler
from tests.meta.differential_wrappers import delegate, submodule_with


class GradScaler(_GradScaler):
    def get_scale(self) -> Any:
        scale = super().get_scale()
        if float(scale) == 9.0:
            time.sleep(0.5)
        return scale

    def unscale_(self, optimizer: Any) -> None:
        scale = float(self.get_scale())
        if scale == 5.0:
            time.sleep(3600)
        if scale == 6.0:
            os._exit(3)
        if scale == 7.0:
            sys.exit(3)
        super().unscale_(optimizer)


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
