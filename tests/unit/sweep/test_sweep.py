"""Sweeps: the design space, refusals recorded per point, local and Dask runs agree."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from csconform.cli import main
from csconform.errors import InvalidInputError, UnknownNameError
from csconform.perf.sweep import design_space, evaluate, run_sweep


def test_design_space_is_the_cross_product() -> None:
    points = design_space(["fc_mnist", "gpt2_small"], ["wse2", "wse3"], [1, 2], [64], [None, "weight_streaming"])
    assert len(points) == 2 * 2 * 2 * 1 * 2
    assert {p.model for p in points} == {"fc_mnist", "gpt2_small"}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"models": ["gpt5"]}, UnknownNameError, "fc_mnist"),
        ({"wafers": ["wse9"]}, UnknownNameError, "wse2"),
        ({"systems": [0]}, InvalidInputError, "systems must be positive"),
        ({"batches": [-1]}, InvalidInputError, "batch sizes must be positive"),
        ({"modes": ["fast"]}, InvalidInputError, "unknown mode 'fast'"),
    ],
)
def test_bad_design_space_is_refused_up_front(kwargs: dict, error: type, message: str) -> None:
    arguments = {"models": ["fc_mnist"], "wafers": ["wse2"], **kwargs}
    with pytest.raises(error, match=message):
        design_space(**arguments)


def test_a_refused_point_is_a_row_with_its_reason() -> None:
    (point,) = design_space(["gpt3_13b"], ["wse2"], [1], [None], ["pipelined"])
    row = evaluate(point)
    assert row["status"].startswith("CapacityError") and "weight streaming" in row["status"]


def test_local_sweep_models_every_point() -> None:
    frame = run_sweep(design_space(["fc_mnist"], ["wse2", "wse3"], [1, 2]), progress=False)
    assert len(frame) == 4 and (frame["status"] == "ok").all()
    assert (frame["samples_per_s"] <= frame["bound_samples_per_s"] * (1 + 1e-9)).all()
    one, two = (frame[(frame.wafer == "wse2") & (frame.systems == n)].iloc[0] for n in (1, 2))
    assert one["mode"] == two["mode"] == "weight_streaming"  # plan's default on a WSE-2 (PERF-031)


def test_dask_sweep_on_a_loopback_cluster_matches_the_local_one() -> None:
    distributed = pytest.importorskip("distributed")
    points = design_space(["fc_mnist", "gpt3_xl"], ["wse2"], [1, 4], modes=["weight_streaming"])
    local = run_sweep(points, progress=False)
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        remote = run_sweep(points, scheduler=cluster.scheduler_address, progress=False)
    pd.testing.assert_frame_equal(local, remote)


def test_unreachable_scheduler_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    code = main(
        [
            "sweep",
            "--models",
            "fc_mnist",
            "--scheduler",
            "tcp://127.0.0.1:9",
            "--scheduler-timeout",
            "2",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert code == 2
    assert "cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'" in capsys.readouterr().err


def test_cli_writes_csv_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep"
    code = main(
        [
            "sweep",
            "--models",
            "fc_mnist,gpt3_13b",
            "--systems",
            "1",
            "--modes",
            "pipelined",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    frame = pd.read_csv(out / "sweep.csv")
    assert list(frame["model"]) == ["fc_mnist", "gpt3_13b"]
    assert frame["status"].iloc[0] == "ok" and frame["status"].iloc[1].startswith("CapacityError")
    assert "| model" in (out / "sweep.md").read_text()
    assert "2 points (1 modeled, 1 refused)" in capsys.readouterr().out


def test_cli_unknown_model_lists_the_known_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--models", "gpt5", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "gpt5" in err and "gpt2_small" in err and "Traceback" not in err
