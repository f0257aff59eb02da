"""The keys each Model Zoo release accepts in a params file, and a did-you-mean for the others.

A misspelt key (``max_step``, ``loss_scaling_factr``) is silently ignored by the 1.x releases, which
read the keys they know with ``params.get``. The vocabulary of a release is every name its code reads
from a params file or defines as a config field, plus every key its own params files use (and, from
2.0, the argument names of the vendor package's optimizers and schedulers, :mod:`.package_api`):

* names its Python code looks up by a literal (``x["k"]``, ``x.get("k")``, ``x.pop("k")``,
  ``"k" in x``), the fields of its config classes and the arguments of its classes' constructors,
  read with :mod:`ast` from the release's own files at its commit (never run, never copied);
* the keys of every params file in its model folders.

It is one set per release, not one per section: a key valid in some section is not flagged in
another. ``data/modelzoo-keys.json`` stores it per release as the names added and removed since the
previous release; :func:`build` regenerates it from a clone of the Model Zoo
(``python -m csconform.userconfig.vocabulary MIRROR OUT``), and ``tests/unit/validate`` compares the
two when a clone is present.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import re
import subprocess
import sys
import warnings
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from csconform.errors import InvalidInputError
from csconform.spec.loader import default_specs_dir
from csconform.spec.releases import Release, load_catalogue
from csconform.userconfig.package_api import package_api
from csconform.userconfig.release_data import knowledge

DATA_FILE = "modelzoo-keys.json"
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
# Python files that read no params file: data preparation scripts and checkpoint converters.
NOT_CONFIG_CODE = ("data_preparation", "data_processing/scripts", "checkpoint_converters", "/tools/", "/test")
SIMILARITY = 0.75  # difflib ratio above which a known key is offered as the likely intent


@functools.cache
def _stored() -> dict[str, Any]:
    text = (resources.files("csconform.userconfig") / "data" / DATA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def accepted_keys(release: str) -> frozenset[str]:
    """Every key release ``release`` accepts in a params file (see the module docstring)."""
    stored = _stored()["releases"]
    names = [delta["name"] for delta in stored]
    if release not in names:
        raise InvalidInputError(f"no key vocabulary for release {release}; known: {', '.join(names)}")
    keys: set[str] = set()
    for delta in stored[: names.index(release) + 1]:
        keys = (keys | set(delta["added"])) - set(delta["removed"])
    return frozenset(keys)


def did_you_mean(key: str, release: str) -> str | None:
    """The accepted key closest to ``key``, if one is close enough to be the likely intent."""
    matches = difflib.get_close_matches(key, sorted(accepted_keys(release)), n=1, cutoff=SIMILARITY)
    return matches[0] if matches else None


# --- building the vocabulary from a Model Zoo clone -------------------------------------------------


def git(mirror: Path, *args: str) -> str:
    """The output of a git command run in the clone ``mirror`` (a typed error when it fails)."""
    result = subprocess.run(["git", "-C", str(mirror), *args], capture_output=True, check=False)
    if result.returncode:
        raise InvalidInputError(f"git {' '.join(args)} failed in {mirror}: {result.stderr.decode(errors='replace')}")
    return result.stdout.decode("utf-8", errors="replace")


def release_files(mirror: Path, release: Release) -> list[str]:
    """Every file of the release's tree."""
    return git(mirror, "ls-tree", "-r", "--name-only", release.commit).splitlines()


def is_model_params_file(path: str) -> bool:
    """A params file under the release's model folders (1.x: ``modelzoo/**``; 2.x: ``.../models/**``)."""
    if not path.endswith((".yaml", ".yml")) or "/configs/" not in f"/{path}":
        return False
    if path.startswith("src/cerebras/modelzoo/"):
        return path.startswith("src/cerebras/modelzoo/models/")
    return path.startswith("modelzoo/") and not any(part in path for part in ("data_processing", "/schema/"))


def literal_keys(tree: ast.AST, strings_only: bool = True) -> Iterator[str]:
    """Keys code looks up by a literal (``d["k"]``, ``d.get("k")``, ``d.pop("k")``, ``"k" in d``);
    with ``strings_only=False`` any constant (``d[0]``), as text."""

    def literal(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and (not strings_only or isinstance(node.value, str))

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and literal(node.slice):
            yield str(node.slice.value)  # type: ignore[attr-defined]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
            and literal(node.args[0])
        ):
            yield str(node.args[0].value)  # type: ignore[attr-defined]
        elif (
            isinstance(node, ast.Compare)
            and literal(node.left)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
        ):
            yield str(node.left.value)  # type: ignore[attr-defined]


def _code_names(tree: ast.AST) -> Iterator[str]:
    """The keys code looks up, and the fields its classes declare (annotated names, __init__ arguments)."""
    yield from literal_keys(tree, strings_only=False)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    yield item.target.id
                elif isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    yield from (a.arg for a in [*item.args.args, *item.args.kwonlyargs] if a.arg != "self")


def _yaml_keys(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from _yaml_keys(value)
    elif isinstance(data, list):
        for item in data:
            yield from _yaml_keys(item)


def release_keys(mirror: Path, release: Release) -> set[str]:
    """The vocabulary of one release, read from the clone at its commit."""
    keys: set[str] = set()
    for path in release_files(mirror, release):
        if path.endswith(".py") and not any(part in path for part in NOT_CONFIG_CODE):
            try:
                with warnings.catch_warnings():  # the vendor's invalid escape sequences are not ours to report
                    warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
                    tree = ast.parse(git(mirror, "show", f"{release.commit}:{path}"))
            except SyntaxError:
                continue
            keys.update(_code_names(tree))
        elif is_model_params_file(path):
            try:
                keys.update(_yaml_keys(yaml.safe_load(git(mirror, "show", f"{release.commit}:{path}"))))
            except yaml.YAMLError:
                continue
    if not knowledge(release.name).builds_1x_optimizers:  # the release builds the package's own classes
        api = package_api()
        for signature in (*api.optimizers.values(), *api.lr_schedulers.values()):
            keys.update((signature.name, *signature.arguments))
    return {key for key in keys if NAME.match(key)}


def build(mirror: Path, releases: Iterable[Release]) -> dict[str, Any]:
    """The vocabulary of every release (oldest first), each as the keys added and removed since the previous."""
    stored: list[dict[str, Any]] = []
    previous: set[str] = set()
    for release in releases:
        keys = release_keys(mirror, release)
        stored.append({"name": release.name, "added": sorted(keys - previous), "removed": sorted(previous - keys)})
        previous = keys
    return {
        "source": "https://github.com/Cerebras/modelzoo at each release's commit (specs/releases.yaml)",
        "method": __doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else "",
        "releases": stored,
    }


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m csconform.userconfig.vocabulary MODELZOO_CLONE OUT.json")
    catalogue = load_catalogue(default_specs_dir())
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        json.dump(build(Path(sys.argv[1]), catalogue.releases), out, indent=0)
        out.write("\n")
