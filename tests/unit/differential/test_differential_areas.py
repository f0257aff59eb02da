"""The data area's programs of several epochs read every element of every epoch, and one more."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import csconform.engine as engine
from csconform.errors import CsConformError
from csconform.testing.differential.areas.data import MAX_EPOCHS, epochs_read, source


def _reads(source_lines: list[str], workdir: Path) -> list[str] | None:
    """What each ``next`` of the program did on the engine ("returned", "stopped" or "refused"); None
    when the pipeline was refused before its iterator ran (an edge argument)."""
    engine.reset()
    namespace = {"impl": engine, "np": np, "math": math, "workdir": workdir}
    reads = []
    for line in source_lines:
        try:
            exec(line, namespace)
        except StopIteration:
            reads.append("stopped")
        except CsConformError:
            if not line.startswith("next("):
                return None
            reads.append("refused")  # a batch of batches whose last one is short: an edge too
        else:
            if line.startswith("next("):
                reads.append("returned")
    return reads


@settings(max_examples=80, database=None, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_program_of_several_epochs_reads_to_the_end_and_one_past_it(data: st.DataObject, tmp_path: Path) -> None:
    tensors, pairs = data.draw(source())
    epochs = data.draw(st.integers(2, MAX_EPOCHS))
    lines = data.draw(epochs_read(tensors, pairs, epochs))
    assert f"ds = ds.repeat({epochs})" in lines
    reads = _reads(lines, tmp_path)
    assume(reads is not None and "refused" not in reads)  # too few programs left would fail the test
    assert reads == ["returned"] * (len(reads) - 1) + ["stopped"], lines
