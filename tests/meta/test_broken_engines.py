"""The conformance suite must catch each deliberately broken engine on exactly the rule it breaks.

Each broken engine (tests/meta/broken_engines/<name>.py) runs in its own pytest subprocess, and
only over the conformance files of the areas it touches, to keep the whole meta run short (about
a minute on two cores). The conformance matrix (--conformance-json) of that run must show
"failed" for exactly the broken rules and for nothing else; the reference engine, run over all the
same areas, must fail nothing.
"""

from __future__ import annotations

import pytest

from csconform.report.conformance import run_conformance

BROKEN_ENGINES = {
    # name: (conformance areas to run, rules the suite must report as failed)
    "accepts_train_and_eval": (("static_graph", "compilation"), {"GRAPH-005"}),
    "ignores_shape_changes": (("static_graph", "compilation"), {"GRAPH-001"}),
    "ignores_drop_remainder": (("input_pipeline", "estimator"), {"INPUT-008"}),
    "accepts_dict_metrics": (("metrics",), {"METRICS-001"}),
    "skips_tf_config": (("estimator", "input_pipeline"), {"ESTIMATOR-014", "ESTIMATOR-015"}),
    "accepts_hooks": (("estimator",), {"ESTIMATOR-002"}),
    "checkpoint_loses_rng": (("runner",), {"RUNNER-006"}),
    "unverified_checkpoint": (("runner",), {"RUNNER-004"}),
    "ignores_pipelined_capacity": (("execution",), {"EXEC-001", "EXEC-010"}),
    "accepts_oversized_cluster": (("appliance",), {"APPLIANCE-001"}),
    # the GradScaler state machine is marked with fifteen rules: it must blame only the broken one
    "static_scaling_skips_overflows": (("grad_scaler",), {"GRADSCALER-014"}),
    "accepts_second_unscale": (("grad_scaler",), {"GRADSCALER-036"}),
    "gives_up_at_minimum_scale": (("grad_scaler",), {"GRADSCALER-043"}),
    "program_without_lr_schedule": (("lr_schedule", "optimizer"), {"LR-022"}),
    "compiles_on_a_worker": (("compilation", "runner"), {"COMPILE-008"}),
    "placement_without_data_paths": (("compilation",), {"COMPILE-009"}),
    "closures_see_live_arrays": (("executor",), {"EXECUTOR-006"}),
    "losses_to_a_worker": (("runner",), {"RUNNER-011"}),
}
# broken engines checked on a few tests only (name: (areas, failed rules, pytest -k expression)): the whole
# area would cost CI half a minute more. Over the whole grad_scaler area this one fails GRADSCALER-046 and
# GRADSCALER-012 (the state machine: unscale_ divides by the current scale).
BROKEN_ON_A_FEW_TESTS = {
    "unscales_by_the_coming_scale": (("grad_scaler",), {"GRADSCALER-046"}, "every_unscaling_path"),
}

# the subprocesses skip shrinking: a verdict needs the failed rules, not the smallest example
VERDICTS_ONLY = "tests.meta.plugins.verdicts_only"

ALL_AREAS = sorted({area for areas, _rules in BROKEN_ENGINES.values() for area in areas} | {"runner", "execution"})


def failed_rules(engine: str, areas: tuple[str, ...] | list[str], keyword: str = "") -> tuple[set[str], dict]:
    """Run the areas' conformance files (the tests ``keyword`` selects) against ``engine`` the way
    ``csconform check`` does."""
    selected = ("-k", keyword) if keyword else ()
    matrix = run_conformance(engine, areas=areas, pytest_args=(*selected, "-p", VERDICTS_ONLY), echo=False)
    assert matrix["engine"] == engine
    failed = {rule for rule, entry in matrix["rules"].items() if entry["outcome"] == "failed"}
    return failed, matrix


@pytest.fixture(autouse=True)
def _ci_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """The subprocess runs derandomized, like CI, whatever profile this run uses."""
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "ci")


@pytest.mark.parametrize("name", sorted(BROKEN_ENGINES) + sorted(BROKEN_ON_A_FEW_TESTS))
def test_suite_catches_the_broken_rule(name):
    areas, expected, keyword = BROKEN_ON_A_FEW_TESTS.get(name) or (*BROKEN_ENGINES[name], "")
    failed, matrix = failed_rules(f"tests.meta.broken_engines.{name}", areas, keyword)
    assert failed == expected, f"{name}: expected failures {sorted(expected)}, got {sorted(failed)}"
    for rule in expected:
        assert matrix["rules"][rule]["tests"] >= 1


def test_reference_engine_passes_the_same_areas():
    failed, matrix = failed_rules("csconform.engine", ALL_AREAS)
    assert failed == set()
    checked = [rule for rule, entry in matrix["rules"].items() if entry["outcome"] == "passed"]
    assert len(checked) > 50
