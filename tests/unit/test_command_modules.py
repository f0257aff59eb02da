"""``csconform`` imports only the module of the command being run: ``spec list`` pays for neither
cvxpy nor pandas, nor for any other command's module. Checked in a fresh interpreter, where
``sys.modules`` holds exactly what the command imported."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import csconform
from csconform.cli import COMMANDS, build_parser, description, main

ROOT = Path(csconform.__file__).resolve().parents[1]

_IMPORTED_BY = """
import json, sys
from csconform.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def _modules_imported_by(*argv: str) -> set[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", _IMPORTED_BY, *argv], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    ran = json.loads(result.stdout.strip().splitlines()[-1])
    assert ran["status"] == 0
    return set(ran["modules"])


def test_spec_list_imports_only_its_own_command_module() -> None:
    modules = _modules_imported_by("spec", "list")
    commands = {name for name in modules if name.startswith("csconform.commands.")}
    assert commands == {"csconform.commands.spec"}
    assert {"cvxpy", "pandas", "matplotlib", "torch"}.isdisjoint(modules)


def test_every_command_has_a_module_named_for_it() -> None:
    assert {name: module for name, (module, _help) in COMMANDS.items()} == {
        name: f"csconform.commands.{name}" for name in COMMANDS
    }


def test_a_static_lint_imports_neither_torch_nor_tensorflow(tmp_path: Path) -> None:
    source = tmp_path / "train.py"
    source.write_text("import torch\nimport tensorflow as tf\nx = torch.zeros(2)\n", encoding="utf-8")
    modules = _modules_imported_by("lint", str(source), "--isolated")
    assert {name for name in modules if name.startswith("csconform.commands.")} == {"csconform.commands.lint"}
    assert {"torch", "tensorflow", "cvxpy", "pandas", "matplotlib"}.isdisjoint(modules)


def test_each_command_says_once_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    """Its one-line help comes from COMMANDS whichever command the parser is built for, and
    ``csconform COMMAND --help`` opens with its module's first paragraph in plain text."""
    for name, (module_name, help_text) in COMMANDS.items():
        with pytest.raises(SystemExit):
            main([name, "--help"])
        shown = " ".join(capsys.readouterr().out.split())
        first_paragraph = importlib.import_module(module_name).__doc__.split("\n\n")[0]
        assert description(first_paragraph) in shown
        assert "``" not in shown.split("options:")[0]
        for built_for in (name, None):
            assert " ".join(help_text.split()) in " ".join(build_parser(built_for).format_help().split())
