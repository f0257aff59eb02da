"""What each Model Zoo release accepts and does with a params file, read from the release's own source.

``python -m csconform.userconfig.extract CLONE`` reads a clone of https://github.com/Cerebras/modelzoo
at each release's commit (``specs/releases.yaml``) with :mod:`ast` (never run, never copied) and
writes ``data/modelzoo-releases.json``, one entry per release with its commit:

* ``commands``: the console scripts its ``setup.py`` installs (``cszoo`` from 2.4.0) and the
  sub-commands their parsers add (``convert_legacy``);
* ``legacy_conversion``: the tables with which the release converts a flat-layout file to the
  trainer layout on load (``TRAINER_PARAMS_TO_LEGACY``, the keys pruned after and ignored), from 2.3.0;
* ``optimizer_aliases``: the names the optimizer config classes accept for another argument
  (``learning_rate`` for ``lr``, from the ``alias=`` of their fields);
* ``model_configs``: the fields of every model config class (a ``name: Literal[...]`` field names
  the model) with what the class does with an unknown key (``extra``: ``forbid`` refuses it), from
  the releases whose configs are pydantic classes;
* ``param_group_keys``: the keys of the optimizer section that the trainer's ``configure_param_groups``
  (``common/optim_utils.py``) reads besides the optimizer's arguments (``params``: the param groups,
  ``adjust_learning_rate``), from the releases with the trainer layout;
* ``optimizers_1x``: the keys the 1.x ``PyTorchBaseModel._configure_optimizer`` reads for each
  optimizer type, and those it reads for every type (other keys are silently ignored);
* ``families``: for each model folder, the data processors and model keys its own params files use
  (how validate recognises the family of a flat file copied out of its folder);
* ``optimizer_arguments_1x`` and ``lr_schedulers_1x``: for each optimizer type and each LR scheduler
  name of the 1.x ``PyTorchBaseModel``, the constructor argument each key of the section is passed
  to and its default (``weight_decay_rate`` -> ``weight_decay``, 0.0) or that it is required, and
  the keys the scheduler reader copies to another name before choosing (``steps`` -> ``decay_steps``);
* ``refused_keys``: keys a function refuses on sight (an ``if "key" in section: raise`` at its top,
  ``use_bfloat16`` from 2.1.0), with the section when the code names it and the file;
* ``zero_clipping_threshold``: what a ``max_gradient_norm`` or ``max_gradient_value`` of 0 does, read
  from the guard that refuses thresholds (``< 0.0``: 0 is no clipping; ``<= 0.0``: 0 is refused);
* ``eval_frequency_fraction``: whether the trainer's loop takes a fraction of the run as
  ``eval_frequency`` (its parameter's annotation names ``float``);
* ``convert_defaults``: what the convert command adds to the converted file (``init.device: CSX``).

The checks in :mod:`.checks` and the readers read this file through :mod:`.release_data`;
``tests/unit/validate`` rebuilds releases from the clone when ``CSCONFORM_MODELZOO`` names one and
compares them with the file.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import warnings
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from csconform.errors import InvalidInputError
from csconform.spec.loader import default_specs_dir
from csconform.spec.releases import Release, load_catalogue
from csconform.userconfig.release_data import DATA_FILE
from csconform.userconfig.vocabulary import is_model_params_file, literal_keys

ENTRY_POINT = re.compile(r"^\s*(?P<name>[\w-]+)\s*=\s*\\?\s*(?P<target>[\w.]+:\w+)\s*$", re.S)
TRAINER_UTILS = "src/cerebras/modelzoo/trainer/utils.py"
TRAINER_VALIDATE = "src/cerebras/modelzoo/trainer/validate.py"
CONVERSION_TABLES = {
    "to_trainer": "TRAINER_PARAMS_TO_LEGACY",
    "prune": "TRAINER_POST_CONVERSION_PRUNE_LIST",
    "ignore": "IGNORE_LEGACY_KEYS",
}
BASE_MODEL_1X = "modelzoo/common/pytorch/PyTorchBaseModel.py"
OPTIMIZER_PARAMETERS = ("oparams", "optimizer_params")  # what the 1.x code calls the optimizer section it is passed
NOT_MODEL_CODE = ("/tools/", "data_preparation", "/test", "checkpoint_converters")


class Tree:
    """The files of one commit of a clone, read through one ``git cat-file --batch`` process."""

    def __init__(self, mirror: Path, commit: str) -> None:
        self.mirror, self.commit = mirror, commit
        listing = subprocess.run(
            ["git", "-C", str(mirror), "ls-tree", "-r", "--name-only", commit], capture_output=True, check=False
        )
        if listing.returncode:
            raise InvalidInputError(f"{mirror}: no commit {commit} ({listing.stderr.decode(errors='replace').strip()})")
        self.paths = listing.stdout.decode("utf-8", errors="replace").splitlines()
        self._batch = subprocess.Popen(
            ["git", "-C", str(mirror), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def read(self, path: str) -> str | None:
        """The file's text (None when the blob is absent from the clone)."""
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(f"{self.commit}:{path}\n".encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().decode().split()
        if len(header) < 3:
            return None
        data = self._batch.stdout.read(int(header[2]) + 1)[:-1]
        return data.decode("utf-8", errors="replace")

    def parse(self, path: str) -> ast.Module | None:
        text = self.read(path)
        if text is None:
            return None
        try:
            with warnings.catch_warnings():  # the vendor's invalid escape sequences are not ours to report
                warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
                return ast.parse(text)
        except SyntaxError:
            return None

    def close(self) -> None:
        if self._batch.stdin is not None:
            self._batch.stdin.close()
        self._batch.wait()


# --- commands -----------------------------------------------------------------------------------------


def commands(tree: Tree) -> dict[str, Any]:
    """Console scripts from ``setup.py`` and the sub-command names their parsers add."""
    scripts: dict[str, str] = {}
    module = tree.parse("setup.py") if "setup.py" in tree.paths else None
    for node in ast.walk(module) if module else ():
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = ENTRY_POINT.match(node.value.replace("\n", " "))
            if match:
                scripts[match["name"]] = re.sub(r"\s+", "", match["target"])
    subcommands: set[str] = set()
    for path in tree.paths:
        if "/cli/" in path and path.endswith(".py"):
            for node in ast.walk(tree.parse(path) or ast.Module([], [])):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_parser"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    subcommands.add(str(node.args[0].value))
    return {"scripts": scripts, "subcommands": sorted(subcommands)}


# --- the flat layout's conversion -------------------------------------------------------------------


def legacy_conversion(tree: Tree) -> dict[str, Any] | None:
    """The conversion tables of ``trainer/utils.py``, or None before the trainer existed."""
    module = tree.parse(TRAINER_UTILS) if TRAINER_UTILS in tree.paths else None
    if module is None:
        return None
    tables: dict[str, Any] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            for key, name in CONVERSION_TABLES.items():
                if node.targets[0].id == name:
                    tables[key] = ast.literal_eval(node.value)
    return tables if "to_trainer" in tables else None


# --- optimizer argument aliases -----------------------------------------------------------------------


def optimizer_aliases(tree: Tree) -> dict[str, str]:
    """``{alias: field}`` of the optimizer config classes: a dict entry ``(type, "field"): ...
    Field(alias="alias")`` in ``trainer/validate.py``."""
    module = tree.parse(TRAINER_VALIDATE) if TRAINER_VALIDATE in tree.paths else None
    aliases: dict[str, str] = {}
    for node in ast.walk(module) if module else ():
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Tuple) and len(key.elts) == 2 and isinstance(key.elts[1], ast.Constant)):
                continue
            for call in ast.walk(value):
                if isinstance(call, ast.Call):
                    for keyword in call.keywords:
                        if keyword.arg == "alias" and isinstance(keyword.value, ast.Constant):
                            aliases[str(keyword.value.value)] = str(key.elts[1].value)
    return dict(sorted(aliases.items()))


OPTIM_UTILS = "src/cerebras/modelzoo/common/optim_utils.py"
TRAINER_UTILS = "src/cerebras/modelzoo/trainer/utils.py"


def param_group_keys(tree: Tree) -> list[str]:
    """Keys read from ``optimizer_params`` (the optimizer section) by ``common/optim_utils.py``, in the
    releases whose trainer builds its param groups with it (``trainer/utils.py`` calls
    ``configure_param_groups``)."""
    if OPTIM_UTILS not in tree.paths or "configure_param_groups" not in (tree.read(TRAINER_UTILS) or ""):
        return []
    module = tree.parse(OPTIM_UTILS)
    keys: set[str] = set()
    for node in ast.walk(module) if module else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            reads = isinstance(node.func.value, ast.Name) and node.func.value.id == "optimizer_params"
            if reads and node.func.attr in ("get", "pop") and node.args and isinstance(node.args[0], ast.Constant):
                keys.add(str(node.args[0].value))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "optimizer_params"
            and isinstance(node.slice, ast.Constant)
        ):
            keys.add(str(node.slice.value))
    return sorted(keys)


# --- model config classes -----------------------------------------------------------------------------


class _ConfigClass:
    def __init__(self, node: ast.ClassDef) -> None:
        self.name = node.name
        self.bases = [
            b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases
        ]
        self.fields: list[str] = []
        self.models: list[str] = []
        self.extra: str | None = None
        self.converted: set[str] = set()
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                annotation = ast.unparse(item.annotation)
                if item.target.id == "model_config":
                    self.extra = _extra(item.value)
                elif not annotation.startswith("ClassVar") and not item.target.id.startswith("_"):
                    self.fields.append(item.target.id)
                    self.fields += _aliases(item.value)
                    if item.target.id == "name" and annotation.startswith("Literal"):
                        self.models = [str(c.value) for c in ast.walk(item.annotation) if isinstance(c, ast.Constant)]
            elif isinstance(item, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "model_config" for t in item.targets
            ):
                self.extra = _extra(item.value)
            elif isinstance(item, ast.FunctionDef) and _before_validator(item):
                self.converted |= set(literal_keys(item))


def _aliases(value: ast.AST | None) -> list[str]:
    """The other names a field accepts: ``Field(alias="x")``, ``validation_alias=AliasChoices("x", "y")``."""
    names: list[str] = []
    for node in ast.walk(value) if value is not None else ():
        if isinstance(node, ast.keyword) and node.arg in ("alias", "validation_alias"):
            names += [
                str(c.value) for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
    return names


def _extra(value: ast.AST | None) -> str | None:
    for node in ast.walk(value) if value is not None else ():
        if isinstance(node, ast.keyword) and node.arg == "extra" and isinstance(node.value, ast.Constant):
            return str(node.value.value)
        if isinstance(node, ast.Dict):
            for key, item in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "extra" and isinstance(item, ast.Constant):
                    return str(item.value)
    return None


def _before_validator(function: ast.FunctionDef) -> bool:
    """A ``model_validator(mode="before")``: it sees (and may rename or drop) the keys as written."""
    for decorator in function.decorator_list:
        text = ast.unparse(decorator)
        if "model_validator" in text and "before" in text:
            return True
    return False


def model_configs(tree: Tree) -> dict[str, Any]:
    """Every model's config fields (inherited ones included) and what its class does with other keys.

    Classes are matched to their bases by name; the root ``BaseConfig`` forbids extra keys from 2.4.0.
    Models whose classes define the same fields share one entry of ``field_sets``."""
    classes: dict[str, list[_ConfigClass]] = defaultdict(list)
    for path in tree.paths:
        if (
            path.startswith("src/cerebras/modelzoo/")
            and path.endswith(".py")
            and not any(p in path for p in NOT_MODEL_CODE)
        ):
            module = tree.parse(path)
            for node in ast.walk(module) if module else ():
                if isinstance(node, ast.ClassDef):
                    classes[node.name].append(_ConfigClass(node))
    if "BaseConfig" not in classes:
        return {}

    def lineage(cls: _ConfigClass, seen: frozenset[str] = frozenset()) -> list[_ConfigClass]:
        """The class and its bases; of two classes with a base's name, the one that is a config class."""
        found = [cls]
        for base in cls.bases:
            if base in classes and base not in seen and base != cls.name:
                candidates = [lineage(c, seen | {cls.name}) for c in classes[base]]
                found += next((c for c in candidates if any(k.name == "BaseConfig" for k in c)), candidates[0])
        return found

    claimed: dict[str, list[tuple[str, set[str], str]]] = defaultdict(list)
    for group in classes.values():
        for cls in group:
            line = lineage(cls) if cls.models else []
            if not any(c.name == "BaseConfig" for c in line):
                continue
            fields = {f for c in line for f in c.fields} | {key for c in line for key in c.converted}
            extra = next((c.extra for c in line if c.extra is not None), "ignore")
            for model in cls.models:
                claimed[model].append((cls.name, fields, extra))
    field_sets: list[list[str]] = []
    models: dict[str, dict[str, Any]] = {}
    for model, claims in sorted(claimed.items()):
        # several classes may name one model (the model's and its LM head's): a key any of them defines is accepted
        fields_of = sorted(set().union(*(fields for _, fields, _ in claims)))
        extra = "forbid" if all(extra == "forbid" for _, _, extra in claims) else "ignore"
        if fields_of not in field_sets:
            field_sets.append(fields_of)
        name = " / ".join(sorted({cls for cls, _, _ in claims}))
        models[model] = {"class": name, "extra": extra, "fields": field_sets.index(fields_of)}
    return {"field_sets": field_sets, "models": models}


# --- the 1.x optimizers -------------------------------------------------------------------------------


def _optimizer_type(test: ast.AST) -> str | None:
    """``"adamw"`` for a test ``optimizer_type == "adamw"``."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and "optimizer_type" in ast.unparse(test.left)
    ):
        return str(test.comparators[0].value).lower()
    return None


def optimizers_1x(tree: Tree) -> dict[str, Any] | None:
    """The keys ``_configure_optimizer`` reads: per optimizer type, and for every type."""
    module = tree.parse(BASE_MODEL_1X) if BASE_MODEL_1X in tree.paths else None
    function = _function(module, "_configure_optimizer")
    if function is None:
        return None
    per_type: dict[str, list[str]] = {}
    branch_nodes: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.If) and (kind := _optimizer_type(node.test)) is not None:
            body = ast.Module(node.body, [])
            per_type[kind] = sorted(set(literal_keys(body)))
            branch_nodes |= {id(n) for statement in node.body for n in ast.walk(statement)}
    common = {
        key
        for node in ast.walk(function)
        if id(node) not in branch_nodes
        and (key := _direct_key(node)) is not None
        and _is_optimizer_section(_container(node), set(OPTIMIZER_PARAMETERS))
    }
    elsewhere = {
        key
        for path in tree.paths
        if path.startswith("modelzoo/") and "/pytorch/" in path and path.endswith(".py")
        for key in _optimizer_section_keys(tree.parse(path))
    }
    supported = next(
        (
            ast.literal_eval(node.value)
            for node in ast.walk(module)  # type: ignore[arg-type]
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "SUPPORTED_OPTIMIZERS" for t in node.targets)
        ),
        sorted(per_type),
    )
    return {
        "supported": supported,
        "per_type": dict(sorted(per_type.items())),
        "every_type": sorted(common | elsewhere),
    }


def _direct_key(node: ast.AST) -> str | None:
    """The literal key of one lookup (``d["k"]``, ``d.get("k")``, ``d.pop("k")``, ``"k" in d``), if it is one."""
    for key in literal_keys(node):
        inner = _container(node)
        if inner is None or key not in set(literal_keys(inner)):
            return key
    return None


def _container(node: ast.AST) -> ast.AST | None:
    """What a lookup looks into: ``d`` of ``d["k"]``, ``d.get("k")``, ``"k" in d``."""
    if isinstance(node, ast.Subscript):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.value
    if isinstance(node, ast.Compare) and node.comparators:
        return node.comparators[0]
    return None


def _is_optimizer_section(node: ast.AST | None, names: set[str]) -> bool:
    """``x["optimizer"]``, ``x.get("optimizer")`` or a variable holding one."""
    if isinstance(node, ast.Name):
        return node.id in names
    inner = _container(node) if node is not None else None
    key = None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
    elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        key = node.args[0].value
    return key == "optimizer" and inner is not None


def _optimizer_section_keys(module: ast.Module | None) -> Iterator[str]:
    """Keys the 1.x code reads from the optimizer section outside ``_configure_optimizer``."""
    for function in ast.walk(module) if module else ():
        if not isinstance(function, ast.FunctionDef) or function.name == "_configure_optimizer":
            continue
        names = {a.arg for a in function.args.args if a.arg in OPTIMIZER_PARAMETERS} | {
            target.id
            for node in ast.walk(function)
            if isinstance(node, ast.Assign) and _is_optimizer_section(node.value, set())
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(function):
            if isinstance(node, ast.Subscript | ast.Call | ast.Compare) and _is_optimizer_section(
                _container(node), names
            ):
                key = _direct_key(node)
                if key is not None:
                    yield key


# --- the 1.x optimizers' and LR schedulers' arguments -------------------------------------------------


def _branch_names(test: ast.AST, variable: str) -> list[str]:
    """The names an ``if`` of an if/elif chain selects: ``x == "a" or x == "b"``, ``x in ("a", "b")``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return [name for value in test.values for name in _branch_names(value, variable)]
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and variable in ast.unparse(test.left)):
        return []
    right = test.comparators[0]
    if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return [right.value.lower()]
    if isinstance(test.ops[0], ast.In) and isinstance(right, ast.Tuple | ast.List):
        return [str(e.value).lower() for e in right.elts if isinstance(e, ast.Constant)]
    return []


def _chain(body: list[ast.stmt], variable: str) -> Iterator[tuple[list[str], list[ast.stmt]]]:
    """``(names, body)`` of each branch of the if/elif chains in ``body`` that test ``variable``."""
    for statement in body:
        node: ast.stmt | None = statement
        while isinstance(node, ast.If) and (names := _branch_names(node.test, variable)):
            yield names, node.body
            node = node.orelse[0] if len(node.orelse) == 1 else None


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def _section_lookups(expression: ast.AST, section: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(key, {"default": value} or {"required": True})`` of each lookup of ``section`` in ``expression``."""
    for node in ast.walk(expression):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == section
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            default = _literal(node.args[1]) if len(node.args) > 1 else None
            yield str(node.args[0].value), {"default": default}
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == section
            and isinstance(node.slice, ast.Constant)
        ):
            yield str(node.slice.value), {"required": True}


def _arguments(body: list[ast.stmt], section: str) -> dict[str, dict[str, Any]]:
    """For each key of ``section`` a branch reads: the constructor argument it is passed to, and its
    default or that it is required (a local variable in between is followed)."""
    variables = {
        target.id: node.value
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found: dict[str, dict[str, Any]] = {}
    for statement in body:
        for call in ast.walk(statement):
            if not isinstance(call, ast.Call):
                continue
            for keyword in call.keywords:
                if keyword.arg is None:
                    continue
                value = keyword.value
                if isinstance(value, ast.Name) and value.id in variables:
                    value = variables[value.id]
                for key, how in _section_lookups(value, section):
                    found.setdefault(key, {"argument": keyword.arg, **how})
    return dict(sorted(found.items()))


def _function(module: ast.Module | None, name: str) -> ast.FunctionDef | None:
    return (
        next((n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if module
        else None
    )


def optimizer_arguments_1x(tree: Tree) -> dict[str, dict[str, dict[str, Any]]] | None:
    """Per 1.x optimizer type, the keys ``_configure_optimizer`` passes to the optimizer's constructor."""
    module = tree.parse(BASE_MODEL_1X) if BASE_MODEL_1X in tree.paths else None
    function = _function(module, "_configure_optimizer")
    if function is None:
        return None
    section = function.args.args[1].arg if len(function.args.args) > 1 else OPTIMIZER_PARAMETERS[0]
    per_type: dict[str, dict[str, dict[str, Any]]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.If) and (kind := _optimizer_type(node.test)) is not None:
            per_type[kind] = _arguments(node.body, section)
    return dict(sorted(per_type.items()))


def lr_schedulers_1x(tree: Tree) -> dict[str, Any] | None:
    """The 1.x ``_configure_lr_scheduler``: each scheduler name's arguments (as for the optimizers), the
    name each branch answers to, and the keys copied to other names before the branches."""
    module = tree.parse(BASE_MODEL_1X) if BASE_MODEL_1X in tree.paths else None
    outer = _function(module, "_configure_lr_scheduler")
    inner = _function(ast.Module([outer], []) if outer else None, "_get_scheduler")
    if inner is None or len(inner.args.args) < 2:
        return None
    section = inner.args.args[1].arg
    schedulers: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    for branch_names, body in _chain(inner.body, "scheduler"):
        schedulers[branch_names[0]] = _arguments(body, section)
        names.update({name: branch_names[0] for name in branch_names})
    copies: dict[str, set[str]] = defaultdict(set)
    branches = {id(n) for _, body in _chain(inner.body, "scheduler") for s in body for n in ast.walk(s)}
    for node in ast.walk(inner):
        if (
            id(node) not in branches
            and isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(target := node.targets[0], ast.Subscript)
            and isinstance(node.value, ast.Subscript)
            and all(isinstance(n.value, ast.Name) and n.value.id == section for n in (target, node.value))
            and isinstance(target.slice, ast.Constant)
            and isinstance(node.value.slice, ast.Constant)
        ):
            copies[str(node.value.slice.value)].add(str(target.slice.value))
    return {
        "names": dict(sorted(names.items())),
        "arguments": dict(sorted(schedulers.items())),
        "copies": {key: sorted(targets) for key, targets in sorted(copies.items())},
    }


# --- refusals and thresholds -------------------------------------------------------------------------


def _config_code(tree: Tree, containing: str) -> Iterator[tuple[str, ast.Module]]:
    """The release's Python modules that may read a params file and contain ``containing``."""
    for path in tree.paths:
        if path.endswith(".py") and not any(part in path for part in NOT_MODEL_CODE):
            text = tree.read(path) or ""
            if containing in text:
                module = tree.parse(path)
                if module is not None:
                    yield path, module


def refused_keys(tree: Tree) -> dict[str, dict[str, Any]]:
    """Keys refused on sight: a function whose body has ``if "key" in section: raise ...``."""
    refused: dict[str, dict[str, Any]] = {}
    for path, module in _config_code(tree, "raise"):
        for function in ast.walk(module):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for statement in function.body:
                test = statement.test if isinstance(statement, ast.If) and statement.body else None
                if (
                    isinstance(statement, ast.If)
                    and isinstance(statement.body[0], ast.Raise)
                    and isinstance(test, ast.Compare)
                    and isinstance(test.left, ast.Constant)
                    and isinstance(test.left.value, str)
                    and len(test.ops) == 1
                    and isinstance(test.ops[0], ast.In)
                ):
                    sections = list(literal_keys(test.comparators[0]))
                    refused[test.left.value] = {"section": sections[-1] if sections else None, "file": path}
    return dict(sorted(refused.items()))


CLIPPING_THRESHOLDS = ("max_gradient_norm", "max_gradient_value")


def zero_clipping_threshold(tree: Tree) -> str | None:
    """``"refused"`` where the guard on the clipping thresholds raises at ``<= 0``, ``"no clipping"``
    where it raises only below 0; None where the release has no such guard."""
    found: set[str] = set()
    for _, module in _config_code(tree, "max_gradient_norm"):
        for node in ast.walk(module):
            if not (isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body)):
                continue
            for compare in ast.walk(node.test):
                if (
                    isinstance(compare, ast.Compare)
                    and len(compare.ops) == 1
                    and isinstance(compare.ops[0], ast.Lt | ast.LtE)
                    and isinstance(compare.comparators[0], ast.Constant)
                    and compare.comparators[0].value == 0
                    and ast.unparse(compare.left).rsplit(".", 1)[-1] in CLIPPING_THRESHOLDS
                ):
                    found.add("refused" if isinstance(compare.ops[0], ast.LtE) else "no clipping")
    return "refused" if "refused" in found else next(iter(found), None)


TRAINER_LOOP = "src/cerebras/modelzoo/trainer/callbacks/loop.py"


def eval_frequency_fraction(tree: Tree) -> bool:
    """Whether the trainer's loop callback annotates its ``eval_frequency`` parameter with ``float``."""
    module = tree.parse(TRAINER_LOOP) if TRAINER_LOOP in tree.paths else None
    for node in ast.walk(module) if module else ():
        if isinstance(node, ast.FunctionDef):
            for argument in (*node.args.args, *node.args.kwonlyargs):
                annotation = ast.unparse(argument.annotation) if argument.annotation is not None else ""
                if argument.arg == "eval_frequency" and "float" in annotation:
                    return True
    return False


CONFIG_CLI = "src/cerebras/modelzoo/cli/config_mgmt_cli.py"


def convert_defaults(tree: Tree) -> dict[str, Any]:
    """``{"init.device": "CSX"}``: the ``setdefault`` calls with which the convert command completes
    the converted trainer section (``params["trainer"]["init"].setdefault("device", "CSX")``)."""
    function = _function(tree.parse(CONFIG_CLI) if CONFIG_CLI in tree.paths else None, "config_convert")
    defaults: dict[str, Any] = {}
    for node in ast.walk(function) if function else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "setdefault"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
        ):
            scope = [k for k in literal_keys(node.func.value)][::-1]  # innermost subscript first in the walk
            if scope and scope[0] == "trainer":
                defaults[".".join([*scope[1:], str(node.args[0].value)])] = _literal(node.args[1])
    return defaults


# --- families of the flat layout -----------------------------------------------------------------------


def families(tree: Tree) -> dict[str, dict[str, list[str]]]:
    """Per model folder (as :func:`.families.family_from_path` names it), the data processors and
    the model keys its params files use."""
    from csconform.userconfig.families import family_from_path

    found: dict[str, dict[str, set[str]]] = defaultdict(lambda: {"data_processors": set(), "model_keys": set()})
    for path in tree.paths:
        if not is_model_params_file(path) or "/tf/" in f"/{path}":
            continue
        try:
            data = yaml.safe_load(tree.read(path) or "")
        except yaml.YAMLError:
            continue
        if not isinstance(data, dict) or "trainer" in data or not isinstance(data.get("model"), dict):
            continue
        family = family_from_path(path)
        if family is None:
            continue
        entry = found[family]
        entry["model_keys"] |= {str(k) for k in data["model"]}
        for section in ("train_input", "eval_input"):
            processor = data.get(section, {}).get("data_processor") if isinstance(data.get(section), dict) else None
            if isinstance(processor, str):
                entry["data_processors"].add(processor)
    return {family: {k: sorted(v) for k, v in entry.items()} for family, entry in sorted(found.items())}


def release_knowledge(mirror: Path, release: Release) -> dict[str, Any]:
    """Everything this module extracts about one release (see the module docstring)."""
    tree = Tree(mirror, release.commit)
    try:
        return {
            "name": release.name,
            "commit": release.commit,
            "commands": commands(tree),
            "legacy_conversion": legacy_conversion(tree),
            "optimizer_aliases": optimizer_aliases(tree),
            "model_configs": model_configs(tree),
            "param_group_keys": param_group_keys(tree),
            "optimizers_1x": optimizers_1x(tree),
            "families": families(tree),
            "optimizer_arguments_1x": optimizer_arguments_1x(tree),
            "lr_schedulers_1x": lr_schedulers_1x(tree),
            "refused_keys": refused_keys(tree),
            "zero_clipping_threshold": zero_clipping_threshold(tree),
            "eval_frequency_fraction": eval_frequency_fraction(tree),
            "convert_defaults": convert_defaults(tree),
        }
    finally:
        tree.close()


def build(mirror: Path, releases: list[Release]) -> dict[str, Any]:
    return {
        "source": "https://github.com/Cerebras/modelzoo at each release's commit (specs/releases.yaml)",
        "method": (__doc__ or "").split("\n\n")[1].replace("\n", " "),
        "releases": [release_knowledge(mirror, release) for release in releases],
    }


def main(argv: list[str] | None = None) -> int:
    """Regenerate the shipped data: this module's file and the key vocabulary (:mod:`.vocabulary`)."""
    from csconform.userconfig import vocabulary

    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 1:
        sys.exit("usage: python -m csconform.userconfig.extract MODELZOO_CLONE")
    mirror = Path(arguments[0])
    releases = load_catalogue(default_specs_dir()).releases
    data = Path(__file__).parent / "data"
    (data / DATA_FILE).write_text(json.dumps(build(mirror, list(releases)), indent=1) + "\n", encoding="utf-8")
    keys = vocabulary.build(mirror, releases)
    (data / vocabulary.DATA_FILE).write_text(json.dumps(keys, indent=0) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
