"""The place subcommand's arguments on a parser of its own, and the ISPD report on one small instance."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from csconform.commands import place
from csconform.errors import InstanceFormatError, InvalidInputError
from csconform.perf.placement.ispd.instance import BUNDLED_INSTANCES
from csconform.report import ispd as ispd_report

INSTANCES = BUNDLED_INSTANCES


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="csconform")
    place.add_arguments(top.add_subparsers(dest="command", required=True).add_parser("place"))
    return top


def test_place_arguments_carry_its_handler(tmp_path: Path, capsys) -> None:
    out = tmp_path / "K.json"
    command = ["place", str(INSTANCES / "K.kgraph"), "--json", str(out), "--time-limit", "5", "--no-gp-bound"]
    args = parser().parse_args(command)
    assert args.handler(args) == 0
    document = json.loads(out.read_text())
    assert len(document["kernels"]) == 16 and document["max_time"] >= document["lower_bound"]
    assert "K: 16 kernels" in capsys.readouterr().out


@pytest.mark.parametrize("limit", ["0", "-3", "nan", "inf", "soon"])
def test_bad_time_limits_are_refused_by_the_parser(limit: str) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["place", "x.kgraph", "--time-limit", limit])


def test_a_malformed_file_raises_the_format_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.kgraph"
    path.write_text("(* width=10 height=10 memlimit=9 *)\nwidget[1] a=1\n")
    args = parser().parse_args(["place", str(path)])
    with pytest.raises(InstanceFormatError, match=r"bad.kgraph:2:"):
        args.handler(args)


def test_report_writes_table_csv_and_figures(tmp_path: Path, monkeypatch) -> None:
    instances = tmp_path / "instances"
    instances.mkdir()
    shutil.copy(INSTANCES / "N.kgraph", instances)
    monkeypatch.setenv(ispd_report.INSTANCE_DIR_VARIABLE, str(instances))
    written = ispd_report.write_ispd_report(tmp_path / "out", time_limit_s=10)
    table = pd.read_csv(tmp_path / "out" / "ispd2020.csv")
    assert table.loc[0, "instance"] == "N" and table.loc[0, "kernels"] == 26
    assert 0 < table.loc[0, "bound/achieved"] <= 1
    assert "| N " in (tmp_path / "out" / "ispd2020.md").read_text()
    assert (tmp_path / "out" / "figures" / "ispd_ratios.png").stat().st_size > 0
    assert len(written) == 3  # N is not one of the mapped instances


def test_report_refuses_an_empty_instance_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(ispd_report.INSTANCE_DIR_VARIABLE, str(tmp_path))
    with pytest.raises(InvalidInputError, match="no .kgraph instances"):
        ispd_report.instance_dir()
