"""The differential fuzzer's judge: a perturbed implementation is caught on the class it breaks, with a
short repro and a stable signature; an untriaged class, a stale entry and a fixed bug that shows again
fail ``csconform diff``; entries are per version; the engine against itself shows nothing.

The implementations compared are the engine and wrappers of it that differ in one observable
(tests/meta/differential_wrappers); example counts are small, so the whole module takes seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from csconform.cli import main
from csconform.testing.differential.campaign import PROFILES, Campaign, run_campaign
from csconform.testing.differential.explore import Pair, explore
from csconform.testing.differential.shrink import shrink
from csconform.testing.differential.signature import Signature
from csconform.testing.differential.triage import load_triage
from csconform.testing.differential.verdicts import judge

WRAPPERS = "tests.meta.differential_wrappers"
EXAMPLES = 100
CAUGHT = {
    # wrapper: (area, the class it must produce)
    "scaler_starts_halved": ("grad_scaler", Signature("grad_scaler", "GradScaler.__init__", "scaler.scale", "value")),
    "sgd_ignores_weight_decay": ("optimizer", Signature("optimizer", "SGD.step", "weights", "value")),
    "quantize_loses_nan_payloads": (
        "precision",
        Signature("precision", "precision.quantize", "result", "nan payload"),
    ),
}


@pytest.mark.parametrize("wrapper", sorted(CAUGHT))
def test_a_perturbed_implementation_is_caught_on_its_class_with_a_short_repro(wrapper: str) -> None:
    area, expected = CAUGHT[wrapper]
    pair = Pair("csconform.engine", f"{WRAPPERS}.{wrapper}")
    exploration = explore(area, pair, seed=0, examples=EXAMPLES)
    assert expected in exploration.findings, sorted(map(str, exploration.findings))
    shrunk = shrink(expected, pair, exploration.findings[expected].first, EXAMPLES, budget_s=1.0)
    assert expected in shrunk.run.signatures
    assert len(shrunk.program.source) <= len(exploration.findings[expected].program.source)
    assert len(shrunk.program.source) <= 5, shrunk.program.source  # parameters, optimizer (or scaler), calls


def test_the_signature_is_the_same_with_every_seed() -> None:
    area, expected = CAUGHT["sgd_ignores_weight_decay"]
    pair = Pair("csconform.engine", f"{WRAPPERS}.sgd_ignores_weight_decay")
    for seed in (1, 2):
        assert expected in explore(area, pair, seed=seed, examples=EXAMPLES).findings


def test_the_engine_against_itself_shows_no_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--against", "csconform.engine", "--examples", "10", "--out", str(tmp_path), "--quiet"]) == 0
    report = json.loads((tmp_path / "differential_engine.json").read_text())
    assert report["passed"] and report["classes"] == []
    assert [area["examples"] for area in report["areas"]] == [20] * 6  # 10 examples with each of the ci seeds
    assert "0 classes" in capsys.readouterr().out


def _diff(tmp_path: Path, triage: Path | None, wrapper: str = "scaler_starts_halved") -> tuple[int, dict]:
    arguments = ["diff", "--against", f"{WRAPPERS}.{wrapper}", "--areas", CAUGHT[wrapper][0], "--examples", "15"]
    arguments += ["--shrink-budget", "0.5", "--out", str(tmp_path), "--quiet"]
    code = main(arguments + (["--triage", str(triage)] if triage else []))
    return code, json.loads((tmp_path / f"differential_{wrapper}.json").read_text())


def _entry(row: dict, category: str = "reference-choice", signature: str | None = None) -> dict:
    return {
        "signature": signature or row["signature"],
        "category": category,
        "finding": "the wrapper differs on purpose",
        "cause": "tests/meta/differential_wrappers/scaler_starts_halved.py:16 (the starting scale halved)",
        "resolution": "none",
        "reason": "a meta-test",
        "target": row["target"],
        "repro": "\n".join(row["statements"]),
    }


def _triage(tmp_path: Path, version: str, entries: list[dict]) -> Path:
    path = tmp_path / "triage.yaml"
    path.write_text(json.dumps({"implementation": "wrapper", "versions": {version: entries}}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def untriaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict]:
    return _diff(tmp_path_factory.mktemp("untriaged"), None)


def test_an_untriaged_class_fails_the_run(untriaged: tuple[int, dict]) -> None:
    code, report = untriaged
    assert code == 1 and not report["passed"]
    rows = {row["signature"]: row for row in report["classes"]}
    expected = str(CAUGHT["scaler_starts_halved"][1])
    assert rows[expected]["verdict"] == "untriaged"
    assert rows[expected]["note"] == "no triage entry for this version (no triage file)"


def test_triaged_classes_pass_and_stale_or_other_version_entries_fail(
    tmp_path: Path, untriaged: tuple[int, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    _code, first = untriaged
    version = first["versions"]["against"]
    assert version == "scaler-starts-halved 1.0"
    entries = [_entry(row) for row in first["classes"]]

    code, report = _diff(tmp_path, _triage(tmp_path, version, entries))
    assert code == 0 and report["passed"]
    assert {row["verdict"] for row in report["classes"]} == {"triaged"}

    # an entry whose repro no longer shows its class: the expected difference is gone
    gone = _entry(first["classes"][0], signature="grad_scaler | GradScaler.update | result | A returns, B refuses (X)")
    code, report = _diff(tmp_path, _triage(tmp_path, version, [*entries, gone]))
    assert code == 1
    (stale,) = [row for row in report["classes"] if row["verdict"] == "stale"]
    assert stale["signature"] == gone["signature"] and not stale["found"]
    assert f"STALE: {gone['signature']}" in capsys.readouterr().out

    # verdicts of another release do not carry over
    code, report = _diff(tmp_path, _triage(tmp_path, "scaler-starts-halved 0.9", entries))
    assert code == 1 and {row["verdict"] for row in report["classes"]} == {"untriaged"}


def test_a_fixed_engine_bug_stays_fixed_until_its_repro_shows_again(
    tmp_path: Path, untriaged: tuple[int, dict]
) -> None:
    _code, first = untriaged
    version = first["versions"]["against"]
    expected = str(CAUGHT["scaler_starts_halved"][1])
    (row,) = [row for row in first["classes"] if row["signature"] == expected]
    harmless = {
        **_entry(row, "our-bug"),
        "signature": "grad_scaler | GradScaler.update | result | A returns, B refuses (X)",
    }
    triage = load_triage(_triage(tmp_path, version, [_entry(row, "our-bug"), harmless]))
    campaign = Campaign(
        Pair("csconform.engine", f"{WRAPPERS}.scaler_starts_halved"), ("csconform", version), "ci", (0,)
    )
    verdicts = {str(v.signature): v for v in judge(campaign, triage)}
    assert verdicts[expected].verdict == "regression" and verdicts[expected].fails
    assert verdicts[harmless["signature"]].verdict == "fixed" and not verdicts[harmless["signature"]].fails


def test_a_class_that_does_not_show_twice_is_flaky_and_fails_the_run() -> None:
    pair = Pair("csconform.engine", f"{WRAPPERS}.halves_only_the_first_scaler")
    campaign = run_campaign(pair, PROFILES["ci"], areas=["grad_scaler"], seeds=(0,), examples=5, shrink_budget_s=0.2)
    (verdict,) = judge(campaign, None)
    assert verdict.verdict == "flaky" and verdict.fails
    assert verdict.signature == CAUGHT["scaler_starts_halved"][1]
