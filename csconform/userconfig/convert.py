"""A flat-layout params file converted to the trainer layout, the way a release's converter does it.

From 2.3.0 the Model Zoo converts a flat file (``train_input``, ``eval_input``, ``model``,
``optimizer``, ``runconfig``, ...) to the trainer layout on load, and from 2.4.0 ``cszoo config
convert_legacy`` writes the result to a file. The conversion is driven by the release's tables
(``TRAINER_PARAMS_TO_LEGACY`` and the keys pruned and ignored, recorded per release by
:mod:`.extract`), read here the way the release's ``convert_legacy_params_to_trainer_params`` reads
them (docs/sources.md, cerebras-modelzoo: the flat layout in the trainer releases):

* each entry of the table names a flat key (``runconfig.max_steps``) or a whole flat section
  (``optimizer.*``) and the trainer key that receives it; sections nested more deeply are placed
  first, and a key a deeper section took is not repeated in the enclosing one;
* the keys the release ignores are dropped, and so are the keys no entry names (the release warns
  about them); empty values are left out;
* the LR schedule (``optimizer.learning_rate``, a number or one or more ``scheduler:`` mappings)
  becomes ``schedulers``: a list of ``{ClassName: {arguments}}``, several phases a ``SequentialLR``
  (``ChainedScheduler`` for ``main_scheduler: chained``), a constant rate a ``ConstantLR``, and all
  of it wrapped in a ``ScalePerParamLR`` when ``adjust_learning_rate`` is set;
* the optimizer becomes ``{optimizer_type: {its other keys}}``; a callback set to true becomes an
  empty mapping; the keys the release prunes after the conversion are removed; the convert command
  adds what it adds (``init.device: CSX``).

The steps are those of 2.10.0's converter, with each release's own tables (2.3.x's converter kept
an ``fit`` section without training data and did not split ``Listener`` callbacks; neither changes a
file that trains). A value the file writes as a YAML 1.1 text float (``1e-5``) is written as the
number it means (the fix of CONFIG-007). Comments are not carried over.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from csconform.documents import KeyPath
from csconform.errors import InvalidInputError
from csconform.userconfig.config_file import TEXT_FLOAT, ConfigFile
from csconform.userconfig.release_data import ReleaseKnowledge
from csconform.userconfig.schedulers import class_name

GLOB = "*"
CHAINED = ("chained", "chainedlr")
SCOPED_FLAGS = ("ScopedTrainFlags", "ScopedValidateFlags")
MICRO_BATCH_FLAG = "csx.performance.micro_batch_size"


class ConversionError(InvalidInputError):
    """The release's converter would stop on this file (no ``optimizer_type``, an unknown scheduler)."""


class _Missing:
    """A place in the trainer layout that the file gives no value for."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Conversion:
    """The trainer-layout data, and where each of the flat file's keys went."""

    data: dict[str, Any]
    destinations: dict[KeyPath, list[KeyPath]] = field(default_factory=dict)
    """A value of the flat file (its key path) -> the trainer-layout keys it was placed at."""
    dropped: dict[KeyPath, str] = field(default_factory=dict)
    """A value of the flat file -> why the conversion leaves it out."""


def _leaves(node: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """``(key path, value)`` of every value that is not a mapping or a list (empty ones hold none)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _leaves(value, (*path, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))
    else:
        yield path, node


def _flat_name(path: KeyPath) -> str:
    """How the conversion table names a flat value: its keys and list indices joined by dots."""
    return ".".join(map(str, path))


def _table_entries(table: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """``(place in the trainer layout, flat key or section)`` of every entry of the conversion table."""
    if isinstance(table, Mapping):
        for key, value in table.items():
            yield from _table_entries(value, (*path, str(key)))
    elif isinstance(table, list):
        for index, value in enumerate(table):
            yield from _table_entries(value, (*path, str(index)))
    else:
        yield path, str(table)


def _subtree(data: Any, scope: list[str]) -> Any:
    node = data
    for part in scope:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


def _rebuild(node: Any, prefix: str, value_of: Any) -> Any:
    """``node`` with each value replaced by ``value_of(dotted key)``, its mappings and lists kept."""
    if isinstance(node, Mapping):
        return {key: _rebuild(value, f"{prefix}.{key}", value_of) for key, value in node.items()}
    if isinstance(node, list):
        return [_rebuild(value, f"{prefix}.{index}", value_of) for index, value in enumerate(node)]
    return value_of(prefix)


def _fill(table: Any, values: Mapping[str, Any]) -> Any:
    """The conversion table with each flat key or section replaced by the file's value (or MISSING)."""
    if isinstance(table, Mapping):
        return {key: _fill(value, values) for key, value in table.items()}
    if isinstance(table, list):
        return [_fill(value, values) for value in table]
    return values.get(str(table), MISSING)


def _given(value: Any) -> bool:
    """A value the converted file keeps: anything but MISSING, an empty mapping or list, or null."""
    return value is not MISSING and (bool(value) or isinstance(value, int | float | str))


def _clean(node: Any) -> Any:
    """Leave out what the file does not give; a section's ``*`` entry is merged into it as it is."""
    if isinstance(node, Mapping):
        cleaned: dict[str, Any] = {}
        for key, value in node.items():
            if value is MISSING:
                continue
            if key == GLOB:
                if not isinstance(value, Mapping):
                    return _clean(value)
                cleaned.update(value)
                continue
            value = _clean(value)
            if _given(value):
                cleaned[key] = value
        return cleaned
    if isinstance(node, list):
        return [item for item in map(_clean, node) if _given(item)]
    return node


def _pop_everywhere(node: Any, key: str) -> list[Any]:
    """Remove ``key`` from every mapping in ``node``; the values removed."""
    found = []
    if isinstance(node, dict):
        found.append(node.pop(key, False))
        for value in node.values():
            found += _pop_everywhere(value, key)
    elif isinstance(node, list):
        for item in node:
            found += _pop_everywhere(item, key)
    return found


def _without_missing(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_missing(v) for k, v in node.items() if v is not MISSING}
    if isinstance(node, list):
        return [_without_missing(v) for v in node if v is not MISSING]
    return node


def scheduler_entry(spec: Any, adjust_learning_rate: Any = None) -> dict[str, Any]:
    """One flat-layout LR schedule (a ``scheduler:`` mapping or a list of them) as a trainer entry."""
    if adjust_learning_rate:
        return {"ScalePerParamLR": {"scheduler": scheduler_entry(spec)}}
    if isinstance(spec, list):
        phases, mains = [], set()
        for phase in spec:
            phase = dict(phase) if isinstance(phase, Mapping) else phase
            if isinstance(phase, dict) and phase.get("main_scheduler"):
                mains.add(str(phase.pop("main_scheduler")))
            phases.append(scheduler_entry(phase))
        if len(mains) > 1:
            raise ConversionError(f"the phases name different main_scheduler values: {sorted(mains)}")
        main = next(iter(mains), None)
        key = "ChainedScheduler" if main is not None and main.lower() in CHAINED else "SequentialLR"
        return phases[0] if len(phases) == 1 and key == "SequentialLR" else {key: {"schedulers": phases}}
    if not isinstance(spec, Mapping) or "scheduler" not in spec:
        raise ConversionError(f"an LR schedule phase without a scheduler key: {spec!r}")
    arguments = {k: v for k, v in spec.items() if k != "scheduler"}
    name = class_name(str(spec["scheduler"]).lower())
    if name is None:
        raise ConversionError(f"no LR scheduler class is called {spec['scheduler']!r}")
    return {name: arguments}


def _numbers(doc: ConfigFile) -> Any:
    """The file's data with the unquoted YAML 1.1 text floats (``1e-5``) as numbers."""

    def walk(node: Any, path: KeyPath) -> Any:
        if isinstance(node, Mapping):
            return {key: walk(value, (*path, key)) for key, value in node.items()}
        if isinstance(node, list):
            return [walk(value, (*path, index)) for index, value in enumerate(node)]
        if isinstance(node, str) and TEXT_FLOAT.match(node) and path not in doc.quoted:
            return float(node)
        return node

    return walk(doc.data, ())


def convert(doc: ConfigFile, release: ReleaseKnowledge) -> Conversion:
    """The file in the trainer layout, as ``release`` converts it (ConversionError where it would stop)."""
    tables = release.legacy_conversion
    if tables is None:
        raise ConversionError(f"release {release.name} has no trainer layout to convert to")
    if "trainer" in doc.data:
        raise ConversionError(f"{doc.source} is in the trainer layout already")
    taken = _take(_numbers(doc), tables, release.name)
    trainer = _restructure(_fill(tables["to_trainer"], taken.values), tables, release, doc.source)
    placed: dict[str, list[KeyPath]] = {}
    for place, key in _table_entries(tables["to_trainer"]):
        target = tuple(part for part in place if part != GLOB)
        for leaf in taken.origin.get(key, []):
            rest = taken.paths[leaf][len(key.split(".")) - 1 :] if key.endswith(".*") else ()
            placed.setdefault(leaf, []).append((*target, *rest))
    destinations = {taken.paths[leaf]: _resolved(places, trainer) for leaf, places in placed.items()}
    return Conversion({"trainer": trainer}, destinations, {taken.paths[k]: why for k, why in taken.dropped.items()})


@dataclass
class _Taken:
    """The flat file's values as the table's entries take them."""

    values: dict[str, Any]
    """Entry (a flat key, or a section ending in ``.*``) -> its value."""
    origin: dict[str, list[str]]
    """Entry -> the flat values (as the table names them) it took."""
    dropped: dict[str, str]
    paths: dict[str, KeyPath]
    """A flat value as the table names it -> its key path in the file."""


def _take(params: Any, tables: Mapping[str, Any], release: str) -> _Taken:
    """Ignored keys out; exact entries first; then the sections, the most deeply nested first, each with
    its values no other section took (a value an exact entry took is repeated); the rest dropped."""
    entries = [key for _, key in _table_entries(tables["to_trainer"])]
    paths = {_flat_name(path): path for path, _ in _leaves(params)}
    remaining = {_flat_name(path): value for path, value in _leaves(params)}
    dropped = {key: f"release {release} ignores it" for key in tables.get("ignore", []) if key in remaining}
    for key in dropped:
        remaining.pop(key)
    values: dict[str, Any] = {}
    origin: dict[str, list[str]] = {}
    for key in entries:
        if key in remaining:
            values[key] = remaining.pop(key)
            origin[key] = [key]

    def value_of(leaf: str) -> Any:
        return remaining.pop(leaf) if leaf in remaining else values.get(leaf, MISSING)

    for section in sorted({k for k in entries if k.endswith(".*") and k not in values}, key=lambda k: -k.count(".")):
        scope = section[:-2]
        node = _subtree(params, scope.split("."))
        inside = [leaf for leaf in paths if leaf.startswith(f"{scope}.")]
        if node is MISSING or not inside:
            continue
        origin[section] = [leaf for leaf in inside if leaf in remaining or leaf in values]
        values[section] = _rebuild(node, scope, value_of)
    for key in remaining:
        dropped[key] = f"no entry of release {release}'s conversion names it (the release warns and drops it)"
    return _Taken(values, origin, dropped, paths)


def _restructure(trainer: dict[str, Any], tables: Mapping[str, Any], release: ReleaseKnowledge, source: str) -> Any:
    """The filled table made a trainer section: summaries, empty values out, schedule, callbacks, prune,
    optimizer, the convert command's defaults."""
    init = trainer["init"]
    if any(v for v in _pop_everywhere(init.get("sparsity"), "add_summaries") if _given(v)):
        for callback in init.get("callbacks", []):
            if "LogSparsity" in callback:
                callback["LogSparsity"] = True
                break
    trainer = _clean(trainer)
    _drop_empty_runs(trainer)
    init = trainer.setdefault("init", {})
    _convert_schedule(init)
    _convert_callbacks(init)
    for key in tables.get("prune", []):
        _prune(trainer, key.split("."))
    if "optimizer" in init:
        if not isinstance(init["optimizer"], dict):
            raise ConversionError(f"{source}: the optimizer section is not a mapping")
        optimizer = dict(init["optimizer"])
        if "optimizer_type" not in optimizer:
            raise ConversionError(f"{source}: the optimizer section has no optimizer_type")
        init["optimizer"] = {str(optimizer.pop("optimizer_type")): optimizer}
    for dotted_key, value in release.convert_defaults.items():
        *parents, leaf = dotted_key.split(".")
        node = trainer
        for part in parents:
            node = node.setdefault(part, {})
        node.setdefault(leaf, value)
    return _without_missing(trainer)


def _drop_empty_runs(trainer: dict[str, Any]) -> None:
    """A ``fit`` without training data, a ``validate`` without validation data: the release drops them."""
    if "fit" in trainer and "train_dataloader" not in trainer["fit"]:
        trainer.pop("fit")
    if "validate" in trainer and "val_dataloader" not in trainer["validate"]:
        trainer.pop("validate")


def _convert_schedule(init: dict[str, Any]) -> None:
    optimizer = init.get("optimizer")
    adjust = optimizer.get("adjust_learning_rate") if isinstance(optimizer, dict) else None
    if "schedulers" in init:
        init["schedulers"] = [scheduler_entry(copy.deepcopy(init["schedulers"]), adjust)]
    elif isinstance(optimizer, dict) and "learning_rate" in optimizer:
        try:
            rate = float(optimizer["learning_rate"])
        except (TypeError, ValueError):
            raise ConversionError(f"learning_rate {optimizer['learning_rate']!r} is not a number") from None
        init["schedulers"] = [scheduler_entry({"scheduler": "ConstantLR", "learning_rate": rate}, adjust)]


def _convert_callbacks(init: dict[str, Any]) -> None:
    callbacks: list[Any] = []
    for callback in init.get("callbacks", []):
        name = next(iter(callback))
        value = callback[name]
        value = {} if value is True else None if value is False else value
        if name == "Listener" and isinstance(value, dict) and isinstance(value.get("listeners"), list):
            for listener in value["listeners"]:
                if not isinstance(listener, dict) or "listener_type" not in listener:
                    raise ConversionError(f"a listener without listener_type: {listener!r}")
                rest = {k: v for k, v in listener.items() if k != "listener_type"}
                callbacks.append({listener["listener_type"]: rest})
        elif name in SCOPED_FLAGS and isinstance(value, dict) and _holds_only_itself(value.get(MICRO_BATCH_FLAG)):
            callbacks.append({name: {MICRO_BATCH_FLAG: value[MICRO_BATCH_FLAG][MICRO_BATCH_FLAG]}})
        else:
            callbacks.append({name: value})
    if callbacks:
        init["callbacks"] = callbacks


def _holds_only_itself(flag: Any) -> bool:
    """``{flag: value}`` under the flag's own name: how the table places a micro-batch size that is a number."""
    return isinstance(flag, dict) and list(flag) == [MICRO_BATCH_FLAG]


def _prune(trainer: dict[str, Any], path: list[str]) -> None:
    node: Any = trainer
    for part in path[:-1]:
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
    if isinstance(node, dict):
        node.pop(path[-1], None)


def _resolved(places: list[KeyPath], trainer: dict[str, Any]) -> list[KeyPath]:
    """Where the values placed by the table are in the converted data (``trainer`` at the root): a
    callback found by its class, the optimizer's keys under its class, the schedule as ``schedulers``;
    a place the later steps removed (pruned, empty) is left out."""
    optimizer = next(iter(trainer.get("init", {}).get("optimizer", {})), None)
    callbacks = trainer.get("init", {}).get("callbacks", [])
    found: list[KeyPath] = []
    for place in places:
        path: KeyPath = place
        if place[:2] == ("init", "callbacks") and len(place) > 3:
            index = next((i for i, c in enumerate(callbacks) if isinstance(c, dict) and place[3] in c), None)
            if index is None:
                continue
            path = ("init", "callbacks", index, *place[3:])
        elif place[:2] == ("init", "schedulers"):
            path = ("init", "schedulers")
        elif place[:2] == ("init", "optimizer") and optimizer is not None and len(place) > 2:
            path = ("init", "optimizer", optimizer, *([] if place[2] == "optimizer_type" else place[2:]))
        while path and not _exists(trainer, path):
            collapsed = len(path) > 1 and path[-1] == path[-2]  # a flag written {flag: {flag: value}}
            path = path[:-1] if collapsed else ()
        if path:
            found.append(("trainer", *path))
    return list(dict.fromkeys(found))


def _exists(data: Any, path: KeyPath) -> bool:
    node = data
    for part in path:
        in_mapping = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (in_mapping or in_list):
            return False
        node = node[part]
    return True


class _Dumper(yaml.SafeDumper):
    """Block style, keys in their order, a shared value written out again rather than as an alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(conversion: Conversion, header: str) -> str:
    body = yaml.dump(conversion.data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1 << 16)
    return f"# {header}\n{body}"
