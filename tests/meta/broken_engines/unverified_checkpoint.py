"""Broken on purpose: checkpoints are loaded without verifying their checksum (breaks RUNNER-004)."""

from __future__ import annotations

import io
import json

import numpy as np

import csconform.engine as _reference
from csconform.engine import checkpoint as _checkpoint


def _decode_trusting_the_payload(data: bytes, source: str = "<bytes>"):
    payload = data[len(_checkpoint.MAGIC) + _checkpoint.DIGEST_HEX_CHARS + 1 :]
    with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
        manifest = json.loads(str(archive[_checkpoint.MANIFEST_KEY]))
        arrays = {name: archive[name] for name in archive.files if name != _checkpoint.MANIFEST_KEY}
    return _checkpoint._unflatten(manifest, arrays)


_checkpoint.decode = _decode_trusting_the_payload


def __getattr__(name: str):
    return getattr(_reference, name)
