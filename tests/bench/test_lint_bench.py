"""Speed of `csconform lint`: the whole Python source tree of the Model Zoo 2.10.0 as one run.

The issue asks for the static lint of the whole tree in seconds. With a clone named by
``CSCONFORM_MODELZOO`` every .py file of release 2.10.0 (training code, data preparation, tools,
tests: about 750 files) is extracted once and linted as one run, judged for 2.10.0; the files per
second are kept in the benchmark's extra info. Without a clone the benchmark is skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from csconform.findings.config import ProjectConfig
from csconform.spec import default_specs_dir, load_catalogue, load_spec
from csconform.usercode.lint import lint_paths
from csconform.usercode.sweep import extract

CLONE = os.environ.get("CSCONFORM_MODELZOO")


@pytest.fixture(scope="module")
def source_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if CLONE is None:
        pytest.skip("CSCONFORM_MODELZOO names no Model Zoo clone (the benchmark lints its 2.10.0 tree)")
    root = tmp_path_factory.mktemp("modelzoo-2.10.0")
    release = load_catalogue(default_specs_dir()).get("2.10.0")
    extract(Path(CLONE), release, root, keep=lambda path: path.endswith(".py"))
    return root


def test_lint_the_whole_modelzoo_2_10_tree(benchmark, source_tree: Path) -> None:
    spec = load_spec()
    release = load_catalogue(default_specs_dir()).get("2.10.0")
    reports = benchmark.pedantic(
        lint_paths, args=([str(source_tree)], spec, release, ProjectConfig()), rounds=3, iterations=1
    )
    files = len(reports)
    benchmark.extra_info["files"] = files
    benchmark.extra_info["files_per_s"] = files / benchmark.stats.stats.mean
    assert files >= 700 and all(report.error is None for report in reports)
