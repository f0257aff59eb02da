"""The differential triage file: entries by version, every field checked, every problem named."""

from __future__ import annotations

from pathlib import Path

import pytest

from csconform.errors import InstanceFormatError, UnreadableDocumentError
from csconform.testing.differential.signature import Signature
from csconform.testing.differential.triage import default_triage_path, load_triage

ENTRY = """
    - signature: "grad_scaler | GradScaler.update | result | A refuses (GradScalerUsageError), B returns"
      category: departs-from-docs
      finding: update(0.0) is accepted.
      cause: amp/grad_scaler.py:545
      resolution: none needed
      target: cpu
      repro: |
        scaler = impl.amp.GradScaler(loss_scale=16384.0)
        scaler.update(0.0)
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "differential.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_entries_are_read_per_version(tmp_path: Path) -> None:
    triage = load_triage(write(tmp_path, "implementation: pkg\nversions:\n  pkg 1.0:" + ENTRY + "  pkg 2.0: []\n"))
    (entry,) = triage.entries("pkg 1.0")
    assert entry.signature == Signature(
        "grad_scaler", "GradScaler.update", "result", "A refuses (GradScalerUsageError), B returns"
    )
    assert entry.repro.source == ("scaler = impl.amp.GradScaler(loss_scale=16384.0)", "scaler.update(0.0)")
    assert entry.repro.target == "cpu" and entry.repro.area == "grad_scaler"
    assert triage.entries("pkg 2.0") == () and triage.entries("pkg 3.0") == ()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("category: departs-from-docs", "category: fine"), "category 'fine' is not one of"),
        (("category: departs-from-docs", "category: reference-choice"), "says why the reference differs"),
        (("      cause: amp/grad_scaler.py:545\n", ""), "missing keys \\['cause'\\]"),
        (("cause: amp/grad_scaler.py:545", "cause: amp/grad_scaler.py"), "file:line"),
        (("finding: update(0.0) is accepted.", "finding: ''"), "'finding' must be non-empty text"),
        (("grad_scaler | GradScaler.update", "scaling | GradScaler.update"), "unknown area 'scaling'"),
        (("| result | A refuses", "| A refuses"), "a class signature is 'area | call | observable | kind'"),
        (("scaler.update(0.0)", "for x in y: pass"), "one assignment or one expression"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_file_and_the_entry(tmp_path: Path, change: tuple, message: str) -> None:
    path = write(tmp_path, ("implementation: pkg\nversions:\n  pkg 1.0:" + ENTRY).replace(*change))
    with pytest.raises(InstanceFormatError, match=message) as error:
        load_triage(path)
    assert "version 'pkg 1.0', entry 1" in str(error.value)


def test_two_entries_for_one_class_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InstanceFormatError, match="two entries for grad_scaler"):
        load_triage(write(tmp_path, "implementation: pkg\nversions:\n  pkg 1.0:" + ENTRY + ENTRY))


def test_not_a_triage_file(tmp_path: Path) -> None:
    with pytest.raises(InstanceFormatError, match="expected a mapping with 'implementation' and 'versions'"):
        load_triage(write(tmp_path, "entries: []\n"))
    with pytest.raises(UnreadableDocumentError, match="invalid YAML"):
        load_triage(write(tmp_path, "implementation: [\n"))


def test_the_default_triage_file_sits_beside_the_implementation(tmp_path: Path) -> None:
    import csconform.engine

    assert default_triage_path(csconform.engine) is None  # the reference has no verdicts about itself
    package = type("Package", (), {"__path__": [str(tmp_path)]})
    assert default_triage_path(package) is None
    write(tmp_path, "implementation: pkg\nversions: {}\n")
    assert default_triage_path(package) == tmp_path / "differential.yaml"


def test_every_shipped_verdict_locates_its_cause() -> None:
    """The cerebras-pytorch triage loads under the file:line demand (engine bugs excepted)."""
    import csconform

    triage = load_triage(Path(csconform.__file__).parent / "adapters" / "cstorch" / "differential.yaml")
    assert sum(len(entries) for entries in triage.versions.values()) > 100
