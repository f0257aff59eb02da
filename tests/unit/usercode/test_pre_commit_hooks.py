"""The pre-commit hooks (.pre-commit-hooks.yaml): the file is what pre-commit reads, and each hook's
entry is a real command that, given the files pre-commit would pass it, checks them."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from csconform.cli import COMMANDS
from csconform.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[3]
HOOKS = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
MODELZOO_PARAMS = ROOT / "tests/unit/validate/data/modelzoo/2.10.0/src/cerebras/modelzoo/models/nlp"


def test_the_hooks_are_what_pre_commit_reads() -> None:
    assert set(HOOKS) == {"csconform-lint", "csconform-validate"}
    for hook in HOOKS.values():
        assert {"id", "name", "entry", "language"} <= set(hook) and hook["language"] == "python"
        program, command = shlex.split(hook["entry"])[:2]
        assert program == "csconform" and command in COMMANDS
    assert HOOKS["csconform-lint"]["types"] == ["python"] and HOOKS["csconform-lint"]["require_serial"] is True


@pytest.mark.parametrize(
    ("path", "passed"),
    [
        ("configs/params_gpt3_xl.yaml", True),
        ("model/params.yml", True),
        ("hf/config.json", True),
        ("ci/workflow.yaml", False),
        ("params/notes.json", False),
    ],
)
def test_validate_is_given_params_files_and_config_json_only(path: str, passed: bool) -> None:
    assert bool(re.search(HOOKS["csconform-validate"]["files"], path)) == passed


def _run(hook: str, files: list[str]) -> int:
    return cli_main([*shlex.split(HOOKS[hook]["entry"])[1:], *files])


def test_the_lint_hook_checks_the_files_it_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("import torch\n", encoding="utf-8")
    bad.write_text("from torch.utils.data import DataLoader\nloader = DataLoader([], batch_size=2)\n", encoding="utf-8")
    assert _run("csconform-lint", [str(good)]) == 0
    assert _run("csconform-lint", [str(good), str(bad)]) == 1
    assert f"{bad}:2:10: CODE-040" in capsys.readouterr().out


def test_the_validate_hook_checks_the_files_it_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(
        str(p) for p in MODELZOO_PARAMS.rglob("*.y*ml") if re.search(HOOKS["csconform-validate"]["files"], str(p))
    )
    assert len(files) >= 5 and _run("csconform-validate", files) == 0
    assert "verdict: conforms" in capsys.readouterr().out
