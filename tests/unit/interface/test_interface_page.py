"""``csconform interface``: the published page is the contract, and an implementation is checked against it."""

from __future__ import annotations

import types
from pathlib import Path

from csconform.cli import main
from csconform.commands.interface import contract_lines
from csconform.interface.capabilities import CAPABILITIES

PAGE = Path(__file__).resolve().parents[3] / "docs" / "interface.md"


def test_docs_page_is_the_generated_contract():
    assert PAGE.read_text(encoding="utf-8") == "\n".join(contract_lines(markdown=True)) + "\n", (
        "docs/interface.md is stale: csconform interface --markdown > docs/interface.md"
    )


def test_contract_names_every_capability_and_protocol_member():
    text = "\n".join(contract_lines())
    for capability in CAPABILITIES:
        assert f"{capability.name}: {capability.title}" in text
    assert "unscale_(optimizer: Optimizer) -> None" in text
    assert "reset() -> None" in text


def test_checking_an_engine_names_what_it_lacks(capsys, monkeypatch):
    assert main(["interface", "--engine", "csconform.engine"]) == 0
    assert "csconform.engine: implements what it declares" in capsys.readouterr().out
    lacking = types.ModuleType("lacking_engine")
    lacking.CAPABILITIES, lacking.TARGETS = frozenset({"metrics"}), ("cpu",)
    monkeypatch.setitem(__import__("sys").modules, "lacking_engine", lacking)
    assert main(["interface", "--engine", "lacking_engine"]) == 1
    out = capsys.readouterr().out
    assert "missing: lacking_engine.reset is missing" in out
    assert "missing: lacking_engine.metrics is missing (capability metrics)" in out


def test_an_engine_that_cannot_be_imported_is_a_one_line_error(capsys):
    assert main(["interface", "--engine", "no_such_engine_module"]) == 2
    err = capsys.readouterr().err  # the wording is pinned in tests/unit/report/test_check_cli.py
    assert len(err.strip().splitlines()) == 1 and "'no_such_engine_module'" in err and "Traceback" not in err
