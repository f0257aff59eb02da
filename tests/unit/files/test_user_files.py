"""The shared reader of users' files (csconform.user_files) and YAML on top of it (spec/yaml_io)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from csconform.errors import InputFileError, SpecError
from csconform.spec.yaml_io import parse_yaml, read_yaml
from csconform.user_files import MAX_DEPTH, parse_json, read_bytes, read_json, read_text


def test_a_regular_utf8_file_is_read_with_or_without_a_byte_order_mark(tmp_path: Path) -> None:
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_text("café\n", encoding="utf-8")
    marked.write_text("café\n", encoding="utf-8-sig")
    assert read_text(plain) == read_text(marked) == "café\n"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("café".encode("utf-16"), "UTF-16"),
        (b"\xff\xfe\x00\x00a\x00\x00\x00", "UTF-32"),
        (b"ab\ncd\x00ef", "NUL byte on line 2"),
        (b"line one\nca\xe9\n", "line 2, column 3: byte 0xe9"),
    ],
)
def test_other_encodings_and_binary_data_are_named(tmp_path: Path, data: bytes, words: str) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    with pytest.raises(InputFileError, match=words) as refused:
        read_text(path)
    assert str(refused.value).startswith(f"{path}: not UTF-8")


def test_missing_folders_pipes_and_oversized_files_are_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="file not found"):
        read_bytes(tmp_path / "absent")
    with pytest.raises(InputFileError, match="is a folder"):
        read_bytes(tmp_path)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # opening it for reading would block until a writer comes: it is never opened
    with pytest.raises(InputFileError, match="not a regular file"):
        read_bytes(pipe)
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as stream:
        stream.truncate(2**40)  # a terabyte of nothing: refused by its size alone
    with pytest.raises(InputFileError, match="larger than"):
        read_bytes(sparse, max_bytes=1024)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"a": 1, "a": 2}', "key 'a' appears twice"),
        ('{"a": {"b": NaN}}', r"a\.b: nan is not a finite number"),
        ('{"a": [1, 1e999]}', r"a\[1\]: inf is not a finite number"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than 64"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64"),
        ('{"a": 1,}', "line 1, column 9: not valid JSON"),
    ],
)
def test_json_documents_are_checked(text: str, words: str) -> None:
    with pytest.raises(InputFileError, match=words):
        parse_json(text, "f.json")


def test_read_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text('{"ok": [1, 2.5, "x", null, true]}', encoding="utf-8-sig")
    assert read_json(path) == {"ok": [1, 2.5, "x", None, True]}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "rules:\n  - id: A\n    level: documented\n    level: reference\n",
            "line 4: .*'level' appears twice .*line 3",
        ),
        ("a: .nan\n", "a: nan is not a finite number"),
        ("a: " + "[" * 500 + "]" * 500 + "\n", "nested"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
            ),
            "aliases",
        ),
    ],
)
def test_yaml_documents_are_checked(text: str, words: str) -> None:
    with pytest.raises(SpecError, match=words):
        parse_yaml(text, "f.yaml")


def test_yaml_keeps_shared_nodes_merge_keys_and_a_byte_order_mark(tmp_path: Path) -> None:
    assert parse_yaml("a: &x [1]\nb: *x\nc: {<<: {d: 1}, e: 2}\n", "f.yaml") == {
        "a": [1],
        "b": [1],
        "c": {"d": 1, "e": 2},
    }
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\n", encoding="utf-8-sig")
    assert read_yaml(path) == {"a": 1}
    with pytest.raises(InputFileError):
        read_yaml(tmp_path / "absent.yaml", error=InputFileError)
