"""Triage files (csconform/triage.py): one vocabulary for both sections, every problem named, one id one
entry, and a triage that applies to one implementation and one release only."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

import csconform
from csconform.errors import ConflictingTriageError, InstanceFormatError, TriageMismatchError, UnreadableDocumentError
from csconform.testing.differential.signature import Signature
from csconform.triage import VERDICTS, load_triage, read_expected_failures, triage_for

VERSION = metadata.version("csconform")
HEAD = f'implementation: my_runtime.adapter\npackage: csconform\nversion: "{VERSION}"\n'

RULE = """
  - ids: [{ids}]
    verdict: {verdict}
    finding: what it does
    evidence: file.py:1
    resolution: what was done
"""

CLASS = """
  - signature: "grad_scaler | GradScaler.update | result | A refuses (GradScalerUsageError), B returns"
    verdict: departs-from-docs
    finding: update(0.0) is accepted.
    cause: amp/grad_scaler.py:545
    resolution: none needed
    target: cpu
    repro: |
      scaler = impl.amp.GradScaler(loss_scale=16384.0)
      scaler.update(0.0)
"""


def write(tmp_path: Path, text: str, name: str = "triage.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def rules(*entries: tuple[str, str]) -> str:
    return "rules:" + "".join(RULE.format(ids=ids, verdict=verdict) for ids, verdict in entries)


def test_departures_and_reference_choices_are_the_expected_failures(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        HEAD
        + rules(
            ("A-001", "departs-from-docs"),
            ("B-001, B-002", "reference-choice"),
            ("C-001", "spec-claims-too-much"),
            ("D-001", "not-observable"),
            ("E-001", "our-bug"),
        ),
    )
    triage = load_triage(path)
    assert triage.expected_failures() == ["A-001", "B-001", "B-002"]
    assert triage.unobservable() == ["D-001"]
    assert (triage.implementation, triage.release) == ("my_runtime.adapter", f"csconform {VERSION}")
    assert triage.differential == ()


def test_every_verdict_but_a_fixed_engine_bug_expects_its_class_to_show() -> None:
    assert [name for name, verdict in VERDICTS.items() if not verdict.class_shows] == ["our-bug"]
    assert [name for name, verdict in VERDICTS.items() if verdict.rule_fails] == [
        "departs-from-docs",
        "reference-choice",
    ]


def test_both_sections_are_read_from_one_file(tmp_path: Path) -> None:
    triage = load_triage(write(tmp_path, HEAD + rules(("A-001", "departs-from-docs")) + "\ndifferential:" + CLASS))
    (entry,) = triage.differential
    assert entry.signature == Signature(
        "grad_scaler", "GradScaler.update", "result", "A refuses (GradScalerUsageError), B returns"
    )
    assert entry.verdict == "departs-from-docs"
    assert entry.repro.source == ("scaler = impl.amp.GradScaler(loss_scale=16384.0)", "scaler.update(0.0)")
    assert entry.repro.target == "cpu" and entry.repro.area == "grad_scaler"
    assert [e.ids for e in triage.rules] == [("A-001",)]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (("verdict: departs-from-docs", "verdict: fine"), "verdict 'fine'"),
        (("verdict: departs-from-docs", "verdict: reference-choice"), "'reason'"),
        (("    cause: amp/grad_scaler.py:545\n", ""), "['cause']"),
        (("cause: amp/grad_scaler.py:545", "cause: amp/grad_scaler.py"), "'cause'"),
        (("finding: update(0.0) is accepted.", "finding: ''"), "'finding'"),
        (("grad_scaler | GradScaler.update", "scaling | GradScaler.update"), "'scaling'"),
        (("| result | A refuses", "| A refuses"), "area | call | observable | kind"),
        (("scaler.update(0.0)", "for x in y: pass"), "for x in y: pass"),
    ],
)
def test_a_bad_differential_entry_is_refused_naming_the_file_the_entry_and_the_field(
    tmp_path: Path, change: tuple[str, str], named: str
) -> None:
    path = write(tmp_path, (HEAD + "differential:" + CLASS).replace(*change))
    with pytest.raises(InstanceFormatError) as error:
        load_triage(path)
    assert f"{path}: differential entry 1" in str(error.value) and named in str(error.value)


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        (RULE.format(ids="A-001", verdict="maybe"), "'maybe'"),
        (RULE.format(ids="", verdict="departs-from-docs"), "'ids'"),
        (RULE.format(ids="A-001", verdict="departs-from-docs").replace("    finding: what it does\n", ""), "finding"),
        (RULE.format(ids="A-001", verdict="departs-from-docs") + "    cause: x.py:1\n", "cause"),
        ("\n  - A-001\n", "ids"),
    ],
)
def test_a_bad_rules_entry_is_refused_naming_the_file_the_entry_and_the_field(
    tmp_path: Path, entry: str, named: str
) -> None:
    path = write(tmp_path, HEAD + "rules:" + entry)
    with pytest.raises(InstanceFormatError) as error:
        load_triage(path)
    assert f"{path}: rules entry 1" in str(error.value) and named in str(error.value)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (HEAD.replace("implementation: my_runtime.adapter", "implementation: a package under test"), "implementation"),
        (HEAD.replace("package: csconform\n", ""), "'package'"),
        (HEAD.replace(f'version: "{VERSION}"\n', ""), "'version'"),
        (HEAD + "entries: []\n", "['entries']"),  # the old rules-only format
        (HEAD + "versions:\n  2.10: []\n", "['versions']"),  # the old differential format
        (HEAD + "rules: {}\n", "'rules'"),
        (HEAD + "differential: none\n", "'differential'"),
        ("- a list\n", "implementation"),
    ],
)
def test_a_file_that_is_no_triage_is_refused_naming_what_is_wrong(tmp_path: Path, text: str, named: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InstanceFormatError) as error:
        load_triage(path)
    assert str(error.value).startswith(f"{path}: ") and named in str(error.value)


def test_invalid_yaml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnreadableDocumentError, match="invalid YAML"):
        load_triage(write(tmp_path, "implementation: [\n"))


def test_an_unquoted_version_is_refused_saying_to_quote_it(tmp_path: Path) -> None:
    """YAML reads ``2.10`` as the number 2.1: the release written would be lost without a word."""
    path = write(tmp_path, HEAD.replace(f'version: "{VERSION}"', "version: 2.10") + "differential:" + CLASS)
    with pytest.raises(InstanceFormatError) as error:
        load_triage(path)
    assert str(error.value) == (
        f"{path}: 'version' reads as the number 2.1, not as the release written (an unquoted 2.10 is the number "
        '2.1): quote it, e.g. version: "2.10.0"'
    )


def test_two_verdicts_for_one_rule_are_refused_naming_both_entries(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        HEAD + rules(("A-001", "departs-from-docs"), ("B-001", "not-observable"), ("C-001, A-001", "reference-choice")),
    )
    with pytest.raises(ConflictingTriageError) as error:
        load_triage(path)
    assert error.value.key == "A-001" and error.value.places == ("rules entry 1", "rules entry 3")
    assert str(error.value) == (
        f"{path}: rules entry 1 and rules entry 3 give A-001 two verdicts (departs-from-docs, reference-choice): "
        "one id, one entry"
    )


def test_one_id_in_two_entries_is_refused_even_when_they_agree(tmp_path: Path) -> None:
    test_id = "csconform/conformance/test_x.py::test_y"
    path = write(tmp_path, HEAD + rules((f'"{test_id}"', "departs-from-docs"), (f'"{test_id}"', "departs-from-docs")))
    with pytest.raises(ConflictingTriageError) as error:
        load_triage(path)
    assert error.value.key == test_id and error.value.places == ("rules entry 1", "rules entry 2")


def test_a_parametrized_case_may_have_a_verdict_of_its_own(tmp_path: Path) -> None:
    test_id = "csconform/conformance/test_x.py::test_y"
    path = write(
        tmp_path, HEAD + rules((f'"{test_id}"', "spec-claims-too-much"), (f'"{test_id}[float16]"', "not-observable"))
    )
    assert load_triage(path).expected_failures() == []


def test_two_entries_for_one_class_are_refused_naming_both(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + "differential:" + CLASS + CLASS.replace("departs-from-docs", "not-observable"))
    with pytest.raises(ConflictingTriageError) as error:
        load_triage(path)
    assert error.value.places == ("differential entry 1", "differential entry 2")
    assert error.value.key.startswith("grad_scaler | GradScaler.update | result")


# --- which triage applies ---------------------------------------------------------------------------


def test_a_triage_applies_to_its_implementation_and_the_installed_release_only(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD + rules(("A-001", "departs-from-docs")))
    assert read_expected_failures(path, "my_runtime.adapter") == (["A-001"], [], f"csconform {VERSION}")
    with pytest.raises(TriageMismatchError) as other_module:
        read_expected_failures(path, "csconform.engine")
    assert "my_runtime.adapter" in str(other_module.value) and "csconform.engine" in str(other_module.value)
    with pytest.raises(TriageMismatchError) as other_release:
        read_expected_failures(write(tmp_path, HEAD.replace(VERSION, "0.0.1")), "my_runtime.adapter")
    assert "csconform 0.0.1" in str(other_release.value) and f"csconform {VERSION} is installed" in str(
        other_release.value
    )
    with pytest.raises(TriageMismatchError) as not_installed:
        read_expected_failures(
            write(tmp_path, HEAD.replace("package: csconform", "package: no-such-distribution")), "my_runtime.adapter"
        )
    assert "no-such-distribution" in str(not_installed.value)


def test_a_plain_list_of_ids_names_no_release(tmp_path: Path) -> None:
    path = write(tmp_path, "# known\nA-001\n\ncsconform/conformance/test_x.py::test_y[0]  # one case\n", "x.txt")
    assert read_expected_failures(path, "anything") == (["A-001", "csconform/conformance/test_x.py::test_y[0]"], [], "")
    with pytest.raises(InstanceFormatError, match=r"x\.txt:1: expected one rule or test id per line"):
        read_expected_failures(write(tmp_path, "A-001 B-001\n", "x.txt"), "anything")


def test_one_id_on_two_lines_of_a_plain_list_is_refused_naming_both(tmp_path: Path) -> None:
    with pytest.raises(ConflictingTriageError, match=r"x\.txt: line 1 and line 3 both name A-001") as refused:
        read_expected_failures(write(tmp_path, "A-001\nB-001\nA-001  # again\n", "x.txt"), "anything")
    assert refused.value.key == "A-001"


def test_diff_finds_the_triage_of_the_release_installed_beside_the_implementation(tmp_path: Path) -> None:
    package = tmp_path
    assert triage_for("my_runtime.adapter", package) is None  # no triage/ folder
    (tmp_path / "triage").mkdir()
    write(tmp_path / "triage", HEAD.replace(VERSION, "0.0.1"), "0.0.1.yaml")
    write(tmp_path / "triage", HEAD.replace("my_runtime.adapter", "other.adapter"), "other.yaml")
    assert triage_for("my_runtime.adapter", package) is None  # none holds this release's verdicts
    current = write(tmp_path / "triage", HEAD + "differential:" + CLASS, f"{VERSION}.yaml")
    found = triage_for("my_runtime.adapter", package)
    assert found is not None and found.path == current and len(found.differential) == 1
    assert (
        triage_for("csconform.engine", Path(csconform.engine.__path__[0])) is None
    )  # the reference has no verdicts about itself
    write(tmp_path / "triage", HEAD, "copy.yaml")
    with pytest.raises(ConflictingTriageError) as error:
        triage_for("my_runtime.adapter", package)
    assert set(error.value.places) == {str(current), str(tmp_path / "triage" / "copy.yaml")}


def test_a_triage_given_for_another_release_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD.replace(VERSION, "0.0.1") + "differential:" + CLASS)
    with pytest.raises(TriageMismatchError):
        triage_for("my_runtime.adapter", tmp_path, path)
    assert triage_for("my_runtime.adapter", tmp_path, write(tmp_path, HEAD)) is not None


def test_the_shipped_triage_of_cerebras_pytorch_holds_both_sections() -> None:
    """Every shipped verdict passes the loader (a cause with file:line for every class but engine bugs)."""
    import csconform.report.cstorch

    triage = load_triage(csconform.report.cstorch.TRIAGE_FILE)
    assert (triage.implementation, triage.release) == ("csconform.adapters.cstorch", "cerebras-pytorch 2.10.0")
    assert triage.path.name == "2.10.0.yaml" and triage.path.parent.name == "triage"
    assert len(triage.rules) > 40 and len(triage.differential) > 100
    assert sum(entry.verdict == "our-bug" for entry in triage.differential) > 10
