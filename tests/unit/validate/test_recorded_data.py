"""The data validate ships is what its sources say: the key vocabulary, the package's signatures, the
Model Zoo excerpts the rules cite. Each is regenerated from its source where the source is at hand
(a Model Zoo clone in CSCONFORM_MODELZOO; the cerebras-pytorch package) and compared with the file."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
from importlib import resources
from pathlib import Path

import pytest
from zoo_data import CLONE

from csconform.spec import default_specs_dir, load_catalogue
from csconform.userconfig import extract, release_data, vocabulary
from csconform.userconfig import package_api as api
from csconform.userconfig.release_data import knowledge

EXCERPTS = default_specs_dir() / "vendor" / "cerebras-modelzoo.md"
BLOCK = re.compile(
    r"^`(?P<release>[\d.]+):(?P<file>[\w./-]+):(?P<first>\d+)-(?P<last>\d+)`\n\n```\w+\n(?P<text>.*?)\n```$",
    re.M | re.S,
)


def _cstorch_installed() -> bool:
    try:
        return importlib.metadata.version("cerebras-pytorch") == api.PACKAGE_VERSION
    except importlib.metadata.PackageNotFoundError:
        return False


def test_the_vocabulary_grows_and_shrinks_with_the_releases() -> None:
    assert {"max_steps", "loss_scaling_factor", "use_bfloat16"} <= vocabulary.accepted_keys("1.9.1")
    assert "fp16_type" not in vocabulary.accepted_keys("1.9.1") and "fp16_type" in vocabulary.accepted_keys("2.10.0")
    assert "use_bfloat16" not in vocabulary.accepted_keys("2.10.0")
    assert vocabulary.did_you_mean("loss_scaling_factr", "2.10.0") == "loss_scaling_factor"
    assert vocabulary.did_you_mean("zzzz", "2.10.0") is None
    names = [r.name for r in load_catalogue(default_specs_dir()).releases]
    stored = json.loads((resources.files("csconform.userconfig") / "data" / vocabulary.DATA_FILE).read_text())
    assert [entry["name"] for entry in stored["releases"]] == names


@pytest.mark.skipif(CLONE is None, reason="CSCONFORM_MODELZOO names no Model Zoo clone")
@pytest.mark.parametrize("release", ["1.9.1", "2.10.0"])
def test_the_vocabulary_is_current(release: str) -> None:
    """Two releases rebuilt from the clone (the whole file takes minutes: python -m csconform.userconfig.vocabulary)."""
    chosen = load_catalogue(default_specs_dir()).get(release)
    assert vocabulary.release_keys(Path(CLONE), chosen) == set(vocabulary.accepted_keys(release))


def test_the_extracted_knowledge_covers_every_release_with_its_commit() -> None:
    stored = json.loads((resources.files("csconform.userconfig") / "data" / release_data.DATA_FILE).read_text())
    catalogue = load_catalogue(default_specs_dir())
    assert [(r["name"], r["commit"]) for r in stored["releases"]] == [(r.name, r.commit) for r in catalogue.releases]
    assert knowledge("2.3.1").convert_command is None and knowledge("2.4.0").convert_command == (
        "cszoo config convert_legacy"
    )
    assert knowledge("2.3.1").optimizer_aliases == {} and knowledge("2.4.0").optimizer_aliases["learning_rate"] == "lr"
    assert knowledge("1.7.0").optimizer_reads("AdamW") >= {"eps", "beta1", "learning_rate"}  # type: ignore[operator]
    assert "epsilon" not in knowledge("1.7.0").optimizer_reads("adamw")  # type: ignore[operator]
    btlm = knowledge("2.10.0").model_config("btlm")
    assert btlm is not None and btlm.extra == "forbid" and {"hidden_size", "name"} <= btlm.fields
    assert knowledge("2.3.1").model_config("btlm") is None and knowledge("2.3.1").legacy_conversion is not None
    assert knowledge("2.2.1").legacy_conversion is None


def test_the_extracted_behaviours_change_where_the_releases_source_changes() -> None:
    """The facts the checks' release boundaries are read from, at both sides of each edge."""
    assert knowledge("1.9.1").zero_clipping_threshold == "no clipping"  # gradient_clipper.py: `< 0.0` raises
    assert knowledge("2.0.2").zero_clipping_threshold == "refused"  # run_cstorch_flow.py: `<= 0.0` raises
    assert not knowledge("2.2.1").eval_frequency_fraction and knowledge("2.3.0").eval_frequency_fraction
    assert "use_bfloat16" not in knowledge("2.0.3").refused_keys
    assert knowledge("2.1.0").refused_keys["use_bfloat16"]["file"].endswith("half_dtype.py")
    assert knowledge("2.1.0").refused_keys["precision_opt_level"]["section"] == "model"
    assert knowledge("2.3.1").convert_defaults == {} and knowledge("2.4.0").convert_defaults == {"init.device": "CSX"}
    adamw_191 = knowledge("1.9.1").optimizer_arguments_1x["adamw"]  # type: ignore[index]
    assert adamw_191["weight_decay_rate"] == {"argument": "weight_decay", "default": 0.0}
    assert adamw_191["beta2"] == {"argument": "betas", "default": 0.999} and adamw_191["correct_bias"]["default"]
    assert not knowledge("1.6.0").optimizer_arguments_1x["adamw"]["correct_bias"]["default"]  # type: ignore[index]
    assert knowledge("1.9.1").optimizer_arguments_1x["sgd"]["momentum"] == {"argument": "momentum", "required": True}  # type: ignore[index]
    schedulers = knowledge("1.9.1").lr_schedulers_1x
    assert schedulers is not None and schedulers["names"]["linearlr"] == "polynomial"
    assert schedulers["copies"]["steps"] == ["decay_steps"]
    assert schedulers["arguments"]["cosinedecay"]["decay_steps"] == {"argument": "decay_steps", "required": True}
    assert knowledge("2.0.2").optimizer_arguments_1x is None and knowledge("2.0.2").lr_schedulers_1x is None


@pytest.mark.skipif(CLONE is None, reason="CSCONFORM_MODELZOO names no Model Zoo clone")
@pytest.mark.parametrize("release", ["1.7.0", "1.9.1", "2.0.2", "2.1.0", "2.3.1", "2.4.0", "2.10.0"])
def test_the_extracted_knowledge_is_current(release: str) -> None:
    """Releases at the edges of what changed, re-read from the clone (all: python -m csconform.userconfig.extract)."""
    stored = json.loads((resources.files("csconform.userconfig") / "data" / release_data.DATA_FILE).read_text())
    entry = next(r for r in stored["releases"] if r["name"] == release)
    assert extract.release_knowledge(Path(str(CLONE)), load_catalogue(default_specs_dir()).get(release)) == entry


def test_the_package_api_has_the_classes_the_zoo_configs_name() -> None:
    package = api.package_api()
    assert package.optimizer("adamw").name == "AdamW" and package.optimizer("Adamm") is None  # type: ignore[union-attr]
    assert package.lr_scheduler("cosinedecaylr").required == (
        "initial_learning_rate",
        "end_learning_rate",
        "total_iters",
    )  # type: ignore[union-attr]
    assert package.is_weight_decay_scheduler("CosineDecayWD") and not package.is_weight_decay_scheduler("LinearLR")


@pytest.mark.skipif(not _cstorch_installed(), reason="cerebras-pytorch 2.10.0 is not installed here")
def test_the_package_api_is_the_installed_package() -> None:
    shipped = json.loads((resources.files("csconform.userconfig") / "data" / api.DATA_FILE).read_text())
    assert api.introspect() == shipped


def test_every_excerpt_is_headed_by_its_place() -> None:
    text = EXCERPTS.read_text(encoding="utf-8")
    blocks = list(BLOCK.finditer(text))
    assert len(blocks) == text.count("\n```\n") and blocks
    known = set(load_catalogue(default_specs_dir()).names)
    for block in blocks:
        assert block["release"] in known
        assert block["text"].count("\n") == int(block["last"]) - int(block["first"]), block["file"]


@pytest.mark.skipif(CLONE is None, reason="CSCONFORM_MODELZOO names no Model Zoo clone")
def test_the_excerpts_are_verbatim() -> None:
    catalogue = load_catalogue(default_specs_dir())
    for block in BLOCK.finditer(EXCERPTS.read_text(encoding="utf-8")):
        commit = catalogue.get(block["release"]).commit
        source = subprocess.run(
            ["git", "-C", str(CLONE), "show", f"{commit}:{block['file']}"], capture_output=True, check=True
        ).stdout.decode("utf-8")
        lines = source.splitlines()[int(block["first"]) - 1 : int(block["last"])]
        assert block["text"] == "\n".join(lines), f"{block['release']}:{block['file']}:{block['first']}"
