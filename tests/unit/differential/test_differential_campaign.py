"""Campaigns: seeds, profiles, and the same result whether the tasks run here or on a Dask cluster."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from csconform.cli import main
from csconform.errors import InvalidInputError
from csconform.testing.differential.campaign import PROFILES, parse_seeds, run_campaign
from csconform.testing.differential.explore import Pair

ROOT = Path(__file__).resolve().parents[3]
HALVED = Pair("csconform.engine", "tests.meta.differential_wrappers.scaler_starts_halved")


@pytest.mark.parametrize(("text", "seeds"), [("3", (3,)), ("0-3", (0, 1, 2, 3)), ("5,1-2,5", (5, 1, 2))])
def test_seeds(text: str, seeds: tuple[int, ...]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "3-x", "-1"])
def test_bad_seeds_are_refused(text: str) -> None:
    with pytest.raises(InvalidInputError, match="seeds"):
        parse_seeds(text)


def test_the_ci_profile_is_bounded_and_nightly_is_ten_times_more_per_seed() -> None:
    ci, nightly = PROFILES["ci"], PROFILES["nightly"]
    assert 1000 <= sum(ci.examples.values()) * len(ci.seeds) <= 5000
    assert all(nightly.examples[area] == 10 * count for area, count in ci.examples.items())
    assert len(nightly.seeds) > len(ci.seeds)


def _outcome(campaign) -> tuple:  # type: ignore[no-untyped-def]
    areas = {name: (area.examples, area.statements) for name, area in campaign.areas.items()}
    classes = [(c.signature, c.first, c.programs) for c in campaign.classes]
    return areas, classes


def test_a_campaign_on_a_two_worker_dask_cluster_matches_the_local_one() -> None:
    distributed = pytest.importorskip("distributed")
    arguments = {"areas": ["grad_scaler", "precision"], "seeds": (0, 1), "examples": 12, "shrink_examples": 20}
    local = run_campaign(HALVED, PROFILES["ci"], **arguments)
    assert local.classes, "the wrapper must show some class"
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,  # each worker one process: implementations keep process-wide state
        processes=True,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
        env={"PYTHONPATH": str(ROOT)},
    ) as cluster:
        remote = run_campaign(HALVED, PROFILES["ci"], scheduler=cluster.scheduler_address, **arguments)
    assert _outcome(remote) == _outcome(local)


def test_an_unreachable_scheduler_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    arguments = [
        "diff",
        "--against",
        "csconform.engine",
        "--scheduler",
        "tcp://127.0.0.1:9",
        "--scheduler-timeout",
        "2",
    ]
    assert main([*arguments, "--out", str(tmp_path), "--quiet"]) == 2
    assert "cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--areas", "scaling"], "unknown areas ['scaling']"),
        (["--examples", "0"], "argument --examples: "),
        (["--jobs", "0"], "argument --jobs: "),
        (["--shrink-examples", "-1"], "--shrink-examples must be >= 0"),
        (["--triage", "x.yaml"], "compared with itself has no triage"),
    ],
)
def test_bad_options_are_clear_errors(arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) if arguments[0] in ("--areas", "--examples", "--jobs") else contextlib.nullcontext():
        code = main(["diff", "--against", "csconform.engine", *arguments])
        assert code == 2
    assert message in capsys.readouterr().err
