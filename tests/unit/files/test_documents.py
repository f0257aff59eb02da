"""The one document reader (csconform.documents): files, YAML and JSON, limits, lines, one refusal type.

Each user-facing message template of the reader is checked once here (``test_message_*``); the other
tests assert the error type and what the refusal names (file, line, key).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.documents import (
    MAX_DEPTH,
    Document,
    check_data,
    dotted,
    format_of,
    parse_document,
    read_bytes,
    read_document,
    read_text,
)
from csconform.documents.parse import ALIAS_EXPANSION
from csconform.errors import InputFileError, UnreadableDocumentError


def _refusal(text: str, format: str = "yaml", **options) -> UnreadableDocumentError:
    with pytest.raises(UnreadableDocumentError) as refused:
        parse_document(text, "f", format, **options)  # type: ignore[arg-type]
    return refused.value


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
)


# --- the message templates ---------------------------------------------------------------------------


def test_message_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(UnreadableDocumentError) as refused:
        read_bytes(tmp_path / "absent", what="model config")
    assert str(refused.value) == f"{tmp_path / 'absent'}: file not found (expected a model config)"


def test_message_cannot_read(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    with pytest.raises(UnreadableDocumentError) as refused:
        read_bytes(loop, what="spec file")
    assert str(refused.value) == f"{loop}: cannot read the spec file: Too many levels of symbolic links"


def test_message_folder(tmp_path: Path) -> None:
    with pytest.raises(UnreadableDocumentError) as refused:
        read_bytes(tmp_path, what="config")
    assert str(refused.value) == f"{tmp_path}: is a folder; expected a config"


def test_message_not_a_regular_file(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # opening it for reading would block until a writer comes: it is never opened
    with pytest.raises(UnreadableDocumentError) as refused:
        read_bytes(pipe, what="config")
    assert str(refused.value) == f"{pipe}: not a regular file (a pipe, socket or device); expected a config"


def test_message_too_large(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as stream:
        stream.truncate(2**40)  # a terabyte of nothing: refused by its size alone
    with pytest.raises(UnreadableDocumentError) as refused:
        read_bytes(sparse, max_bytes=1024, what="config")
    assert str(refused.value) == f"{sparse}: 1 TiB is larger than a config may be (1 KiB)"


def test_message_other_encoding() -> None:
    with pytest.raises(UnreadableDocumentError) as refused:
        read_text_of("café".encode("utf-16"))
    assert refused.value.problem == "not UTF-8 text but UTF-16 (byte-order mark); expected the config in UTF-8"


def test_message_binary() -> None:
    with pytest.raises(UnreadableDocumentError) as refused:
        read_text_of(b"ab\ncd\x00ef")
    assert str(refused.value).endswith(": line 2: not UTF-8 text but binary data (a NUL byte); expected a config")


def test_message_undecodable_byte() -> None:
    with pytest.raises(UnreadableDocumentError) as refused:
        read_text_of(b"line one\nca\xe9\n")
    assert str(refused.value).endswith(": line 2: not UTF-8 text (column 3: byte 0xe9); expected the config in UTF-8")


def test_message_invalid_yaml() -> None:
    """The problem is PyYAML's own words (libyaml's and the pure-Python parser's differ)."""
    assert str(_refusal("a: [1, 2\n")).startswith("f: line 2: invalid YAML: ")


def test_message_invalid_json() -> None:
    assert str(_refusal('{"a": 1,}', "json")) == (
        "f: line 1: invalid JSON: Expecting property name enclosed in double quotes (column 9)"
    )


def test_message_nested_too_deeply() -> None:
    assert (
        str(_refusal(_nested(MAX_DEPTH + 1), top="any"))
        == f"f: [0][0][0][0][0][0][0][0]...: nested deeper than {MAX_DEPTH} levels"
    )


def test_message_not_finite() -> None:
    assert str(_refusal('{"a": {"b": NaN}}', "json")) == "f: a.b: nan is not a finite number"


def test_message_aliases() -> None:
    limit = ALIAS_EXPANSION * len(BOMB) + 10_000
    assert str(_refusal(BOMB)) == (
        f"f: stands for more than {limit:,} values through YAML aliases (a document of {ALIAS_EXPANSION} values "
        "per character at most)"
    )


def test_message_key_given_twice() -> None:
    assert str(_refusal("rules:\n  - id: A\n    level: documented\n    level: reference\n")) == (
        "f: line 4: key rules[0].level is given twice in one mapping (first on line 3)"
    )


def test_message_top_level() -> None:
    assert str(_refusal("- a\n- b\n", what="spec file")) == "f: expected a spec file (a mapping of keys), got a list"


def read_text_of(data: bytes) -> str:
    path = Path(os.environ.get("PYTEST_TMP", "/tmp")) / f"csconform-documents-{os.getpid()}.txt"
    path.write_bytes(data)
    try:
        return read_text(path, what="config")
    finally:
        path.unlink()


# --- what is read, and what each refusal names ---------------------------------------------------------


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    plain, marked = tmp_path / "plain.yaml", tmp_path / "marked.yaml"
    plain.write_text("a: café\n", encoding="utf-8")
    marked.write_text("a: café\n", encoding="utf-8-sig")
    assert read_document(plain).data == read_document(marked).data == {"a": "café"}


def test_the_format_follows_the_suffix(tmp_path: Path) -> None:
    """YAML for .yaml/.yml; anything else is JSON, which reads 1e-05 as a number (YAML 1.1 reads text)."""
    assert [format_of(name) for name in ("a.yaml", "b.YML", "config.json", "c.txt")] == ["yaml", "yaml", "json", "json"]
    for name in ("config.json", "params.yaml"):
        (tmp_path / name).write_text('{"eps": 1e-05}', encoding="utf-8")
    assert read_document(tmp_path / "config.json").data == {"eps": 1e-05}
    assert read_document(tmp_path / "params.yaml").data == {"eps": "1e-05"}


@pytest.mark.parametrize("format", ["yaml", "json"])
def test_sixty_four_levels_are_read_and_sixty_five_refused(format: str) -> None:
    assert parse_document(_nested(MAX_DEPTH), "f", format, top="any").data is not None  # type: ignore[arg-type]
    assert _refusal(_nested(MAX_DEPTH + 1), format, top="any").key == "[0]" * MAX_DEPTH
    assert _refusal(_nested(100_000), format, top="any").source == "f"  # beyond Python's recursion: still typed


def test_non_finite_numbers_are_refused_by_key_in_both_formats() -> None:
    assert _refusal("a: .nan\n").key == "a"
    assert _refusal("a: {b: [1, .inf]}\n").key == "a.b[1]"
    assert _refusal('{"a": [1, 1e999]}', "json").key == "a[1]"
    with pytest.raises(UnreadableDocumentError):
        check_data({"x": [1.0, float("-inf")]}, "in memory")


def test_a_yaml_value_that_contains_itself_is_refused() -> None:
    assert _refusal("a: &a [1, *a]\n").key is not None


def test_aliases_within_the_bound_are_read() -> None:
    text = "base: &b {x: 1, y: 2}\n" + "".join(f"k{i}: *b\n" for i in range(50))
    assert parse_document(text, "f").data["k49"] == {"x": 1, "y": 2}


def test_a_repeated_key_is_refused_or_kept_and_recorded() -> None:
    text = "a: 1\nb:\n  c: 1\n  c: 2\n"
    refused = _refusal(text)
    assert (refused.line, refused.key) == (4, "b.c")
    kept = parse_document(text, "f", repeated_keys="keep-last")
    assert kept.data == {"a": 1, "b": {"c": 2}}
    assert [(r.path, r.line, r.first_line) for r in kept.repeated_keys] == [(("b", "c"), 4, 3)]
    assert _refusal('{"a": 1,\n "a": 2}', "json").line == 2


def test_a_merge_key_is_not_a_repeat() -> None:
    document = parse_document("base: &b {x: 1}\nother: {<<: *b, x: 2, y: 3}\n", "f")
    assert document.data["other"] == {"x": 2, "y": 3} and not document.repeated_keys


def test_json_that_yaml_cannot_compose_keeps_its_data_and_still_refuses_a_repeat() -> None:
    """A surrogate pair escape is valid JSON that PyYAML's scanner refuses: no lines, same data."""
    document = parse_document('{"emoji": "\\ud83d\\ude00"}', "f", "json")
    assert document.data == {"emoji": "\U0001f600"} and document.lines == {}
    assert _refusal('{"e": "\\ud83d\\ude00", "e": 1}', "json").key == "e"


YAML = """\
trainer:
  init:
    callbacks:
    - ScopedTrainFlags:
        csx.performance.micro_batch_size: 4
    precision: &p
      fp16_type: cbfloat16
  fit:
    other: *p
    rate: 1e-5
    quoted: '1e-5'
"""


def test_every_key_and_list_item_has_its_line() -> None:
    document = parse_document(YAML, "f")
    flag = ("trainer", "init", "callbacks", 0, "ScopedTrainFlags", "csx.performance.micro_batch_size")
    assert document.lines[flag] == 5 and document.lines[("trainer", "init", "callbacks", 0)] == 4
    assert document.lines[("trainer", "fit", "other", "fp16_type")] == 7  # an alias points at its anchor
    assert document.line(("trainer", "fit", "missing", "deeper")) == 8  # the nearest ancestor with a line
    assert dotted(flag) == 'trainer.init.callbacks[0].ScopedTrainFlags."csx.performance.micro_batch_size"'
    assert ("trainer", "fit", "quoted") in document.quoted and ("trainer", "fit", "rate") not in document.quoted
    assert document.node(flag) == 4 and document.has(("trainer", "fit")) and not document.has(("trainer", "x"))


def test_json_keys_have_lines() -> None:
    document = parse_document(json.dumps({"model_type": "gpt2", "n_layer": 2}, indent=2), "f", "json")
    assert document.line(("n_layer",)) == 3


def test_the_refusal_is_an_input_file_error() -> None:
    """Callers that catch InputFileError (every file a user names) catch the reader's refusals too."""
    assert issubclass(UnreadableDocumentError, InputFileError)


# --- properties ----------------------------------------------------------------------------------------

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=4),
    max_leaves=30,
)


def _paths(data: object, path: tuple = ()) -> list[tuple]:
    found = [path] if path else []
    if isinstance(data, dict):
        found += [p for key, value in data.items() for p in _paths(value, (*path, key))]
    elif isinstance(data, list):
        found += [p for index, value in enumerate(data) for p in _paths(value, (*path, index))]
    return found


@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(st.text(min_size=1, max_size=6), values, max_size=5))
def test_any_json_or_yaml_document_reads_back_with_a_line_for_every_key(data: dict) -> None:
    for text, format in ((json.dumps(data, indent=1), "json"), (yaml.safe_dump(data), "yaml")):
        document: Document = parse_document(text, "f", format)  # type: ignore[arg-type]
        assert document.data == data
        if document.lines:  # the composer read it: every key and item has its line
            assert all(document.line(path) is not None for path in _paths(data))


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200) | st.sampled_from([BOMB, _nested(5000), "a: &a [*a]", "{" * 70 + "}" * 70]))
def test_any_text_is_a_document_or_one_typed_refusal(text: str) -> None:
    for format in ("yaml", "json"):
        try:
            parse_document(text, "f", format, top="any")  # type: ignore[arg-type]
        except UnreadableDocumentError as refused:
            assert str(refused).startswith("f: ") and "\n" not in str(refused)
