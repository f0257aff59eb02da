"""Every params file of every release's model folders through `csconform validate`.

With a clone of the Model Zoo (``CSCONFORM_MODELZOO``) the whole sweep runs (about 2,300 files of 23
releases, a few seconds each release) and must reproduce the committed record ``reports/modelzoo_validation.json``
exactly: a changed count means the validator or the spec changed, and the record (regenerated with
``python -m csconform.userconfig.sweep``) must say so. Without a clone, the fixtures are the sample.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from zoo_data import CLONE, MODELZOO

from csconform.cli import main as cli_main
from csconform.spec.loader import default_specs_dir
from csconform.spec.releases import load_catalogue
from csconform.userconfig.sweep import ALSO_FOR_NEWEST, VENDOR_DEFECTS, sweep

RECORD = Path(__file__).resolve().parents[3] / "reports" / "modelzoo_validation.json"


def test_a_directory_of_real_params_files_gives_one_verdict_each(capsys: pytest.CaptureFixture[str]) -> None:
    folder = MODELZOO / "2.10.0"
    files = sorted(folder.rglob("*.yaml"))
    assert cli_main(["validate", str(folder), "--no-plan", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [Path(f["file"]) for f in document["files"]] == files
    assert document["command"] == "validate" and document["release"] == "2.10.0"
    counts = {key: document["summary"][key] for key in ("files", "conforms", "violations", "unreadable")}
    assert counts == {"files": len(files), "conforms": len(files), "violations": 0, "unreadable": 0}
    warnings = sum(len(f["warnings"]) for f in document["files"])
    assert document["summary"]["findings"] == warnings and document["summary"]["suppressed"] == 0
    assert cli_main(["validate", str(MODELZOO / "2.10.0"), "--release", "1.9.1", "--no-plan"]) == 1
    out = capsys.readouterr().out
    tail = out.splitlines()[-1]  # files, conform, with violations, unreadable (wording: conformance/test_user_config)
    assert "CONFIG-004" in out and re.findall(r"\d+", tail) == [str(len(files)), "1", str(len(files) - 1), "0"]


@pytest.mark.skipif(CLONE is None, reason="CSCONFORM_MODELZOO names no Model Zoo clone")
def test_the_whole_sweep_matches_the_committed_record(tmp_path: Path) -> None:
    record = json.loads(RECORD.read_text(encoding="utf-8"))["sweeps"]
    catalogue = load_catalogue(default_specs_dir())
    pairs = []
    for release in catalogue.releases:
        pairs.append((release.name, release.name))
        if release.name in ALSO_FOR_NEWEST:
            pairs.append((release.name, catalogue.newest.name))
    assert [(s["files_of"], s["judged_for"]) for s in record] == pairs  # every release, judged for its own
    for expected in record:
        if expected["files_of"] == expected["judged_for"]:  # at its own release a file breaks only a known defect
            assert set(expected["files_with_violation"]) <= set(VENDOR_DEFECTS), expected["files_of"]
        result = sweep(Path(str(CLONE)), expected["files_of"], expected["judged_for"], tmp_path)
        summary = result.summary()
        assert summary["read"] == summary["files"]  # every file read, none a traceback or unreadable
        assert summary == expected, (expected["files_of"], expected["judged_for"])


@pytest.mark.skipif(CLONE is None, reason="CSCONFORM_MODELZOO names no Model Zoo clone")
def test_the_sweep_extracts_what_a_tensorflow_bert_file_reads(tmp_path: Path) -> None:
    """The pre-training file a fine-tuning file names (a params file, at its zoo path) and the vocabulary
    its train_input names are extracted where the release reads them: every 1.8.0 TensorFlow BERT file is planned."""
    result = sweep(Path(str(CLONE)), "1.8.0", "1.8.0", tmp_path)
    tf_bert = [v for v in result.verdicts if "/transformers/tf/bert/" in v.path]
    assert len(tf_bert) == 19 and all(v.plan is not None for v in tf_bert)
    assert (tmp_path / "1.8.0/modelzoo/transformers/vocab/google_research_uncased_L-12_H-768_A-12.txt").is_file()
    tasks = {Path(v.path).parent.parent.name for v in tf_bert if "/fine_tuning/" in v.path}
    assert tasks == {"classifier", "qa", "token_classifier", "extractive_summarization"}
