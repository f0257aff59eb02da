"""Real Model Zoo params files against expectations worked out by hand (data/modelzoo/expected.yaml).

Each fixture is judged for its own release; its verdict, the rules of its findings, its parameter
count and its learning rate at a few steps must match the hand-written arithmetic (rates to 1e-6
relative). The fixtures are copied verbatim from the Model Zoo; ``sources.yaml`` says from where, and
when a clone is given (``CSCONFORM_MODELZOO``) every file is compared byte for byte with it.
"""

from __future__ import annotations

import math
import subprocess
from collections import Counter

import pytest
from arithmetic import evaluate
from zoo_data import CLONE, MODELZOO, expected_fixtures, sources

from csconform.spec import Catalogue, Spec
from csconform.userconfig.validate import Verdict, release_options, validate_file

EXPECTED = expected_fixtures()
SOURCES = sources()
_VERDICTS: dict[str, Verdict] = {}


def verdict_of(name: str, spec: Spec, catalogue: Catalogue) -> Verdict:
    if name not in _VERDICTS:
        steps = tuple(int(step) for step in EXPECTED[name]["learning_rates"])
        options = release_options(catalogue, EXPECTED[name]["release"], lr_at=steps, plan=False)
        _VERDICTS[name] = validate_file(MODELZOO / name, spec, options)
    return _VERDICTS[name]


def test_there_are_at_least_25_fixtures_across_releases_and_families() -> None:
    assert len(EXPECTED) >= 25
    assert len({e["release"] for e in EXPECTED.values()}) >= 8
    assert len({name.split("/configs/")[0].rsplit("/", 1)[-1] for name in EXPECTED}) >= 10
    assert {entry["fixture"] for entry in SOURCES if "read_by" not in entry} == set(EXPECTED)
    for entry in SOURCES:
        assert entry["fixture"].startswith(f"{entry['release']}/") and entry["fixture"].endswith(entry["path"])
        assert (MODELZOO / entry["fixture"]).is_file()


@pytest.mark.skipif(CLONE is None, reason="CSCONFORM_MODELZOO names no Model Zoo clone")
def test_fixtures_are_verbatim_copies() -> None:
    for entry in SOURCES:
        blob = subprocess.run(
            ["git", "-C", str(CLONE), "show", f"{entry['commit']}:{entry['path']}"], capture_output=True, check=True
        ).stdout
        assert (MODELZOO / entry["fixture"]).read_bytes() == blob, entry["fixture"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict_and_findings(name: str, spec: Spec, catalogue: Catalogue) -> None:
    expected, verdict = EXPECTED[name], verdict_of(name, spec, catalogue)
    assert verdict.release == expected["release"] and verdict.outcome == expected["verdict"]
    assert Counter(f.rule for f in verdict.violations) == Counter(expected["violations"])
    assert Counter(f.rule for f in verdict.warnings) == Counter(expected["warnings"])
    for finding in (*verdict.violations, *verdict.warnings):
        assert finding.line is None or finding.line >= 1


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_learning_rates(name: str, spec: Spec, catalogue: Catalogue) -> None:
    verdict = verdict_of(name, spec, catalogue)
    for step, arithmetic in EXPECTED[name]["learning_rates"].items():
        expected = evaluate(arithmetic)
        assert math.isclose(verdict.learning_rate[int(step)], expected, rel_tol=1e-6, abs_tol=0.0), (step, arithmetic)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=pytest.mark.xfail(strict=True, reason=EXPECTED[name]["parameters_disagreement"])
            if "parameters_disagreement" in EXPECTED[name]
            else (),
        )
        for name in sorted(EXPECTED)
    ],
)
def test_parameter_counts(name: str, spec: Spec, catalogue: Catalogue) -> None:
    expected, verdict = EXPECTED[name], verdict_of(name, spec, catalogue)
    if expected["parameters"] is None:
        assert verdict.parameters is None and any(note.startswith("model not planned") for note in verdict.notes)
    else:
        assert verdict.parameters == evaluate(expected["parameters"])


def test_the_arithmetic_evaluator_refuses_anything_else() -> None:
    assert evaluate("2 * (3 + 4) - 1e-1 ** 2") == pytest.approx(13.99)
    assert evaluate("cos(pi)") == -1.0
    for text in ("__import__('os')", "open('x')", "[1, 2]", "x + 1"):
        with pytest.raises(ValueError):
            evaluate(text)
