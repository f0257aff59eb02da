"""Run mutmut on the judge, with the judge's own configuration (``tests/mutation/judge.toml``).

mutmut reads ``[tool.mutmut]`` from the ``pyproject.toml`` of the folder it runs in and keeps its
incremental state in ``mutants/`` there. The project's own ``[tool.mutmut]`` mutates the reference
engine, killed by the conformance suite. The judge — the matrix, the verdicts, the report tables, the
calibration — is killed by the harness's unit and meta tests instead, so it runs in a folder of its
own, ``mutation-judge/`` (git-ignored): links to ``csconform/``, ``specs/`` and ``tests/``, and a
``pyproject.toml`` that is the project's with ``judge.toml``'s ``[tool.mutmut]`` in place of its own.
Its state stays in ``mutation-judge/mutants/`` between runs, so a second run only tests what changed.

    python tests/mutation/judge.py                       # mutmut run --max-children 1
    python tests/mutation/judge.py run "csconform.spec.matrix*"
    python tests/mutation/judge.py --clean               # forget every earlier result first
    python tests/mutation/judge.py results               # any mutmut command
    python tests/mutation/judge.py generate              # only write the mutants (to draw a sample of them)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
FOLDER = PROJECT / "mutation-judge"
LINKED = ("csconform", "specs", "tests")


def project_settings_without_mutmut() -> str:
    """The project's pyproject.toml with its ``[tool.mutmut]`` table (and that table's comments) cut out."""
    kept: list[str] = []
    skipping = False
    for line in (PROJECT / "pyproject.toml").read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            skipping = line.strip() == "[tool.mutmut]"
        if not skipping:
            kept.append(line)
    while kept and (not kept[-1].strip() or kept[-1].startswith("#")):
        kept.pop()  # the comment that introduced the engine's table
    return "\n".join(kept) + "\n"


def refresh_copies() -> None:
    """Drop mutmut's copies of the package files it does not mutate that changed since (mutmut copies a
    file only when its copy is missing, so an edit would otherwise not reach the tests). mutmut's own
    files beside the mutated ones stay: results (``.meta``) and the line index ``mutmut show`` and the
    page's export read each mutant's change from (``.spans``; without it every lookup parses the
    whole mutated file)."""
    copies = FOLDER / "mutants"
    mutated = set(tomllib.loads((Path(__file__).parent / "judge.toml").read_text())["tool"]["mutmut"]["only_mutate"])
    for copy in (copies / "csconform").rglob("*"):
        relative = copy.relative_to(copies)
        if (
            copy.is_file()
            and relative.as_posix() not in mutated
            and not copy.name.endswith((".meta", ".spans", ".pyc"))
        ):
            source = PROJECT / relative
            if not source.is_file() or source.read_bytes() != copy.read_bytes():
                copy.unlink()


def prepare(clean: bool) -> None:
    if clean:
        shutil.rmtree(FOLDER / "mutants", ignore_errors=True)
    refresh_copies()
    FOLDER.mkdir(exist_ok=True)
    for name in LINKED:
        link = FOLDER / name
        if not link.is_symlink():
            link.symlink_to(Path("..") / name, target_is_directory=True)
    judge = (Path(__file__).parent / "judge.toml").read_text(encoding="utf-8")
    (FOLDER / "pyproject.toml").write_text(project_settings_without_mutmut() + "\n" + judge, encoding="utf-8")


def generate() -> None:
    """mutmut's first step alone: copy the package into ``mutants/`` and write every mutant, without running
    a test (``mutmut run`` does this before its stats run), so that a sample can be drawn from the mutants'
    names (``tests/mutation/report.py --sample``)."""
    import mutmut.__main__ as mutmut_cli
    from mutmut.configuration import reset_config
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths

    os.chdir(FOLDER)  # mutmut reads its configuration from the folder it runs in
    reset_config()  # importing mutmut's CLI already read the project's (the engine's) configuration
    mutmut_cli.set_mutant_under_test("mutant_generation")
    (FOLDER / "mutants").mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    mutmut_cli.store_lines_covered_by_tests()
    print(f"{mutmut_cli.create_mutants(max_children=1).mutated} files mutated in {FOLDER / 'mutants'}")


def main(argv: list[str]) -> int:
    clean = "--clean" in argv
    arguments = [a for a in argv if a != "--clean"] or ["run", "--max-children", "1"]
    prepare(clean)
    if arguments == ["generate"]:
        generate()
        return 0
    environment = {**os.environ, "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")}
    mutmut = shutil.which("mutmut") or "mutmut"
    return subprocess.run([mutmut, *arguments], cwd=FOLDER, env=environment, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
