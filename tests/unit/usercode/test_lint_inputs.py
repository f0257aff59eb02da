"""What lint reads: columns in characters, every unreadable input as one line naming the file, the
folder walk, names and imports across the run's files, the project's settings and inline silencing."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from csconform.errors import InvalidInputError, UnreadableDocumentError
from csconform.findings.config import ProjectConfig
from csconform.spec import Catalogue, Spec
from csconform.usercode.files import python_files
from csconform.usercode.lint import lint_paths
from csconform.usercode.names import ImportTable
from csconform.usercode.project import Project, load_module, module_name
from csconform.usercode.source import MAX_SOURCE_BYTES, parse_source, read_source

LOADER = "from torch.utils.data import DataLoader\n"


def lint_one(path: Path, spec: Spec, catalogue: Catalogue, settings: ProjectConfig | None = None):  # type: ignore[no-untyped-def]
    (report,) = lint_paths([str(path)], spec, catalogue.newest, settings or ProjectConfig())
    return report


def test_columns_count_characters_not_utf8_bytes(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    path = tmp_path / "unicode.py"
    path.write_text(LOADER + 'données = "é"; loader = DataLoader(range(4), batch_size=2)\n', encoding="utf-8")
    (finding,) = lint_one(path, spec, catalogue).findings
    line = path.read_text(encoding="utf-8").splitlines()[1]
    assert (finding.line, finding.column) == (2, line.index("DataLoader") + 1)
    (edit,) = finding.edits
    assert edit.column == line.index("batch_size=2") + len("batch_size=2") + 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"def f(:\n", "line 1: not valid Python"),
        (b"x = 1\x00\n", "binary data"),
        (b"\xff\xfe\x00x", "UTF-16"),
        (b"x = '\xe9'\n", "not UTF-8"),
    ],
)
def test_an_unreadable_file_is_one_line_naming_it(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "bad.py"
    path.write_bytes(content)
    with pytest.raises(UnreadableDocumentError) as caught:
        read_source(path)
    assert str(caught.value).startswith(f"{path}: ") and problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_files_own_syntax_warnings_are_not_printed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_source("escape.py", 'pattern = "\\d+"\n').tree.body


def test_a_file_over_the_bound_and_a_nesting_too_deep_are_refused(tmp_path: Path) -> None:
    large = tmp_path / "large.py"
    large.write_bytes(b"#" * (MAX_SOURCE_BYTES + 1))
    with pytest.raises(UnreadableDocumentError, match="larger than a Python source file may be"):
        read_source(large)
    with pytest.raises(UnreadableDocumentError) as too_nested:  # the "not valid Python" template is pinned above
        parse_source("deep.py", "x = " + "(" * 5000 + ")" * 5000 + "\n")
    assert (too_nested.value.source, too_nested.value.line) == ("deep.py", 1)
    with pytest.raises(UnreadableDocumentError, match="chain.py: nested too deeply for the Python parser"):
        parse_source("chain.py", "x = " + " + ".join(["a"] * 5000) + "\n")
    chain = tmp_path / "chain.py"
    chain.write_text("x = " + " + ".join(["a"] * 400) + "\n", encoding="utf-8")
    with pytest.raises(UnreadableDocumentError, match="chain.py: line 1: nested more than 250 levels deep"):
        load_module(read_source(chain), chain)


def test_symlink_loops_and_fifos_are_unreadable_not_hangs(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.py")
    reports = lint_paths([str(tmp_path)], spec, catalogue.newest, ProjectConfig())
    assert {Path(r.path).name: r.exit_code for r in reports} == {
        "a.py": 2,
        "b.py": 2,
        **({"pipe.py": 2} if hasattr(os, "mkfifo") else {}),
    }


def test_the_walk_skips_tool_folders_and_excluded_paths(tmp_path: Path) -> None:
    for name in ("src/model.py", "src/legacy/old.py", ".venv/lib/x.py", "build/__pycache__/y.py", "notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n", encoding="utf-8")
    settings = ProjectConfig(path=tmp_path / "pyproject.toml", exclude=("src/legacy/*",))
    found = [p.relative_to(tmp_path).as_posix() for p in python_files([str(tmp_path)], settings)]
    assert found == ["src/model.py"]
    with pytest.raises(InvalidInputError, match="no .py file under this directory"):
        python_files([str(tmp_path / "build")], ProjectConfig())


def test_names_stand_for_the_api_they_import() -> None:
    source = parse_source(
        "m.py",
        "import cerebras_pytorch as cstorch\nfrom torch import nn\nimport torch.nn.functional as F\n"
        "from ..helpers import clip\nfrom . import steps\n",
    )
    imports = ImportTable.of(
        [n for n in source.tree.body if hasattr(n, "names")],  # type: ignore[misc]
        "pkg.sub.m",
    )
    assert imports.names["cstorch"] == "cerebras.pytorch"
    assert imports.names["nn"] == "torch.nn" and imports.names["F"] == "torch.nn.functional"
    assert imports.names["clip"] == "pkg.helpers.clip" and imports.names["steps"] == "pkg.sub.steps"


def test_an_import_of_the_run_resolves_to_its_file_whatever_the_folders_above(tmp_path: Path) -> None:
    files = {
        "proj/src/mypkg/__init__.py": "",
        "proj/src/mypkg/train.py": "from mypkg.helpers.clip import Clip, clip\n",
        "proj/src/mypkg/helpers/clip.py": (
            "class Clip:\n    def run(self):\n        pass\n\ndef clip(x):\n    return x\n"
        ),
        "proj/1.0/scripts/run.py": "from helpers.clip import clip\n",
    }
    modules = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        modules.append(load_module(read_source(path), path))
    project = Project(modules)
    train = modules[1]
    assert module_name(tmp_path / "proj/src/mypkg/helpers/clip.py")[0].endswith("proj.src.mypkg.helpers.clip")
    clip = project.resolve(train.imports.names["clip"], train)
    cls = project.resolve(train.imports.names["Clip"], train)
    assert getattr(clip, "qualname", None) == "clip" and getattr(cls, "qualname", None) == "Clip"
    assert project.resolve("mypkg.helpers.clip.Clip.run", train) is modules[2].classes[0].methods["run"]
    assert project.resolve("helpers.clip.clip", modules[3]) is clip
    assert project.resolve("mypkg.missing", train) is None


def test_silenced_findings_are_counted(tmp_path: Path, spec: Spec, catalogue: Catalogue) -> None:
    path = tmp_path / "data.py"
    path.write_text(
        LOADER
        + "a = DataLoader([], batch_size=2)  # csconform: ignore[CODE-040]\n"
        + "b = DataLoader([], batch_size=2)  # csconform: ignore[CODE-041]\n"
        + "c = DataLoader([], batch_size=2)\n",
        encoding="utf-8",
    )
    report = lint_one(path, spec, catalogue)
    assert [f.line for f in report.findings] == [3, 4] and report.suppressed == 1
    settings = ProjectConfig(path=tmp_path / "pyproject.toml", per_file_ignores=(("data.py", frozenset({"CODE-040"})),))
    silenced = lint_one(path, spec, catalogue, settings)
    assert silenced.findings == [] and silenced.suppressed == 3 and silenced.exit_code == 0
