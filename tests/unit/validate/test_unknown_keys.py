"""A file of many unknown keys: each gets its warning, and only the first ones a did-you-mean scan."""

from __future__ import annotations

from pathlib import Path

import pytest

from csconform.spec import Catalogue, Spec
from csconform.userconfig import checks
from csconform.userconfig.validate import release_options, validate_file

UNKNOWN_KEYS = 100_000


def test_a_hundred_thousand_unknown_keys_cost_a_bounded_number_of_scans(
    tmp_path: Path, spec: Spec, catalogue: Catalogue, monkeypatch: pytest.MonkeyPatch
) -> None:
    scans: list[str] = []

    def counted(key: str, release: str) -> str | None:
        scans.append(key)
        return None

    monkeypatch.setattr(checks, "did_you_mean", counted)
    keys = "".join(f"  frobnicate_{n}: 1\n" for n in range(UNKNOWN_KEYS))
    path = tmp_path / "params.yaml"
    path.write_text(f"train_input: {{batch_size: 8}}\nrunconfig:\n  max_steps: 10\n{keys}", encoding="utf-8")
    verdict = validate_file(path, spec, release_options(catalogue, "2.10"))
    unknown = [f for f in verdict.warnings if f.rule == "CONFIG-002"]
    assert len(unknown) == UNKNOWN_KEYS
    assert len(scans) == checks.SUGGESTED_KEYS
