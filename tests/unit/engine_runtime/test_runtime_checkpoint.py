"""Unit tests of engine.checkpoint: the file format, leaf types, refusals and cadence."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest

from csconform.engine import checkpoint
from csconform.errors import CheckpointError


def full_state(**extra):
    state = {
        "step": 4,
        "model": {"w": np.arange(6, dtype=np.float32).reshape(2, 3)},
        "optimizer": {"global_step": np.int64(5), "state": {"0": {"momentum": np.ones(3)}}},
        "grad_scaler": {"loss_scale": 1024.0, "steps_since_rescale": 3},
        "data": {"seed_entropy": 2**100 + 7, "elements_produced": 5},
    }
    state.update(extra)
    return state


def test_round_trip_keeps_types_and_bits(tmp_path):
    state = full_state(
        extra={"flag": True, "name": "run", "nothing": None, "pair": (1, 2.5), "items": [np.float16(1.5)]}
    )
    loaded = checkpoint.load(checkpoint.save(tmp_path / "a.ckpt", state))
    assert loaded["extra"] == {
        "flag": True,
        "name": "run",
        "nothing": None,
        "pair": (1, 2.5),
        "items": [np.float16(1.5)],
    }
    assert type(loaded["extra"]["items"][0]) is np.float16
    assert loaded["data"]["seed_entropy"] == 2**100 + 7
    assert loaded["model"]["w"].dtype == np.float32 and np.array_equal(loaded["model"]["w"], state["model"]["w"])
    assert loaded["optimizer"]["global_step"] == 5 and isinstance(loaded["optimizer"]["global_step"], np.int64)


def test_header_layout():
    data = checkpoint.encode(full_state())
    assert data.startswith(checkpoint.MAGIC)
    assert (
        data[
            len(checkpoint.MAGIC) + checkpoint.DIGEST_HEX_CHARS : len(checkpoint.MAGIC)
            + checkpoint.DIGEST_HEX_CHARS
            + 1
        ]
        == b"\n"
    )


def well_signed(manifest) -> bytes:
    """A file with a correct checksum around an arbitrary manifest (no arrays)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{checkpoint.MANIFEST_KEY: np.array(json.dumps(manifest))})
    payload = buffer.getvalue()
    return checkpoint.MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def test_refusals(tmp_path):
    with pytest.raises(CheckpointError, match="without '/'"):
        checkpoint.encode(full_state(model={"a/b": np.zeros(1)}))
    with pytest.raises(CheckpointError, match="cannot store"):
        checkpoint.encode(full_state(model={"w": object()}))
    with pytest.raises(CheckpointError, match="cannot read"):
        checkpoint.load(tmp_path / "missing.ckpt")
    with pytest.raises(CheckpointError, match="not a csconform checkpoint"):
        checkpoint.decode(b"PK\x03\x04 not ours")
    with pytest.raises(CheckpointError, match="not a csconform checkpoint"):
        checkpoint.decode(b"")
    with pytest.raises(CheckpointError, match="lacks"):
        checkpoint.decode(well_signed({"dict": {"step": {"int": 1}}}))
    state = full_state()
    del state["data"]
    with pytest.raises(CheckpointError, match="data"):
        checkpoint.encode(state)


def test_cadence_edge_cases():
    assert checkpoint.checkpoint_steps_for(5, None) == []
    assert checkpoint.checkpoint_steps_for(0, 3) == []
    assert checkpoint.checkpoint_steps_for(1, 10) == [0]
    assert checkpoint.checkpoint_steps_for(6, 1) == [0, 1, 2, 3, 4, 5]
    assert checkpoint.checkpoint_steps_for(7, 3) == [2, 5, 6]
