"""csconform.output_guard: no write over an input or over the package; every write atomic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import csconform
from csconform import output_guard
from csconform.errors import OutputPathError


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "input.json"
    path.write_text("{}", encoding="utf-8")
    return path


@pytest.mark.parametrize("spelling", ["same", "dotted", "absolute", "symlink", "hardlink", "folder-link"])
def test_every_spelling_of_an_input_is_refused(tmp_path: Path, source: Path, spelling: str) -> None:
    if spelling == "same":
        out = source
    elif spelling == "dotted":
        (tmp_path / "sub").mkdir()
        out = tmp_path / "sub" / ".." / "input.json"
    elif spelling == "absolute":
        out = source.resolve()
    elif spelling == "symlink":
        out = tmp_path / "link.json"
        out.symlink_to(source)
    elif spelling == "hardlink":
        out = tmp_path / "hard.json"
        os.link(source, out)
    else:
        (tmp_path / "alias").symlink_to(tmp_path, target_is_directory=True)
        out = tmp_path / "alias" / "input.json"
    with output_guard.protect([("--config", source)]), pytest.raises(OutputPathError, match="is the input --config"):
        output_guard.write_text(out, "overwritten", "--json")
    assert source.read_text(encoding="utf-8") == "{}"


def test_the_installed_package_is_refused_unless_replacing_a_shipped_file_is_asked_for(tmp_path: Path) -> None:
    shipped = Path(csconform.__file__).parent / "perf" / "calibration" / "calibration.json"
    with pytest.raises(OutputPathError, match="installed files"):
        output_guard.check_output(shipped, "--write")
    assert output_guard.check_output(shipped, "--write-shipped", replace_shipped=True) == shipped.resolve()
    with pytest.raises(OutputPathError, match="installed files"):
        output_guard.check_output_folder(shipped.parent, "--out")


def test_folders_files_as_folders_empty_paths_and_suffixes(tmp_path: Path, source: Path) -> None:
    with pytest.raises(OutputPathError, match="is a folder"):
        output_guard.check_output(tmp_path, "--json")
    with pytest.raises(OutputPathError, match="is a file, not a folder"):
        output_guard.check_output(source / "out.json", "--json")
    with pytest.raises(OutputPathError, match="empty path"):
        output_guard.check_output("", "--json")
    with pytest.raises(OutputPathError, match="must end in .png"):
        output_guard.check_output(tmp_path / "map.xyz", "--png", suffixes=(".png",))
    with pytest.raises(OutputPathError, match="is a file"):
        output_guard.check_output_folder(source, "--out")


def test_writes_are_atomic_keep_the_mode_and_leave_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "deep" / "out.txt"
    output_guard.write_text(out, "first")
    out.chmod(0o640)
    output_guard.write_text(out, "second")
    assert out.read_text(encoding="utf-8") == "second" and out.stat().st_mode & 0o777 == 0o640

    def failing_replace(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OutputPathError, match="No space left"):
        output_guard.write_text(out, "third")
    assert out.read_text(encoding="utf-8") == "second"
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.txt"]


def test_a_symbolic_link_output_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    (tmp_path / "latest.json").symlink_to(target)
    output_guard.write_text(tmp_path / "latest.json", "{}")
    assert target.read_text(encoding="utf-8") == "{}" and (tmp_path / "latest.json").is_symlink()


def test_a_dangling_link_output_is_refused_not_given_a_folder(tmp_path: Path) -> None:
    (tmp_path / "dangling.json").symlink_to("missing/nowhere.json")
    with pytest.raises(OutputPathError, match="cannot write there"):
        output_guard.write_text(tmp_path / "dangling.json", "{}", "--json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.json"]
