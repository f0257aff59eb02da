"""CI runs the README's own commands: the markers it reads must be there and name real commands."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _command_after(marker: str) -> str:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    function = script[script.index("command_after()") : script.index("\n}\n") + 3]
    result = subprocess.run(
        ["bash", "-c", f"{function}\ncommand_after {marker}"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_ci_reads_the_readme_install_command() -> None:
    assert _command_after("install") == 'python -m pip install -e ".[test,torch]"'


def test_ci_reads_the_readme_test_command() -> None:
    assert _command_after("test") == "pytest -n auto"


def test_ci_installs_chromium_and_requires_the_browser_test_before_the_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install, require = (
        script.index("apt-get install -y -qq chromium"),
        script.index("export CSCONFORM_REQUIRE_BROWSER=1"),
    )
    assert install < require < script.index('bash -c "$test_command"')
