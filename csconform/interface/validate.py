"""Check an implementation against the interface, and name everything it lacks.

For every declared capability, each submodule must exist and offer every name of its Protocol:
annotated attributes, and functions whose signature accepts the Protocol's parameter names. A
name annotated ``type[P]`` must be a class offering the methods of ``P``. Names an implementation
offers beyond the contract are its own business.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, get_args, get_origin, get_type_hints

from csconform.errors import InterfaceError
from csconform.interface.capabilities import CAPABILITY_NAMES, TARGETS, get_capability
from csconform.interface.core import ImplementationModule
from csconform.interface.load import module_attribute, where_it_failed

_MISSING = object()
SHOWN_PROBLEMS = 5
"""Problems a refusal lists (a refusal is a few lines; ``csconform interface`` lists every problem)."""
_PROTOCOL_DUNDERS = {"__init__", "__call__", "__iter__", "__next__", "__mul__"}


@dataclass(frozen=True)
class Declaration:
    """What an implementation says it offers."""

    capabilities: frozenset[str]
    targets: tuple[str, ...]
    emulations: Mapping[str, str] = field(default_factory=dict)

    @property
    def default_target(self) -> str:
        return self.targets[0]


def declaration_of(module: ModuleType) -> tuple[Declaration | None, list[str]]:
    """The module's declaration, or the problems that keep it from being one."""
    problems = []
    capabilities = module_attribute(module, "CAPABILITIES")
    targets = module_attribute(module, "TARGETS")
    emulations = module_attribute(module, "EMULATIONS") or {}
    if not isinstance(capabilities, frozenset | set | tuple | list) or not all(
        isinstance(c, str) for c in capabilities
    ):
        problems.append("CAPABILITIES must be a set of capability names")
        capabilities = ()
    unknown = sorted(set(capabilities) - set(CAPABILITY_NAMES))
    if unknown:
        problems.append(f"CAPABILITIES names unknown capabilities {unknown}; known: {', '.join(CAPABILITY_NAMES)}")
    if not isinstance(targets, tuple | list) or not targets or not set(targets) <= set(TARGETS):
        problems.append(f"TARGETS must be a non-empty sequence of {', '.join(TARGETS)}")
        targets = ()
    if not isinstance(emulations, Mapping) or not all(
        name in set(capabilities) and isinstance(text, str) and text.strip() for name, text in emulations.items()
    ):
        problems.append("EMULATIONS must map declared capabilities to a description of the emulation")
        emulations = {}
    if problems:
        return None, problems
    return Declaration(frozenset(capabilities), tuple(targets), dict(emulations)), []


def protocol_members(protocol: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """(annotated attributes -> type, methods -> function) that a Protocol class lists."""
    attributes = dict(get_type_hints(protocol))
    methods: dict[str, Any] = {}
    for base in reversed(protocol.__mro__):  # a Protocol extending another one lists the other's methods too
        if base is protocol or getattr(base, "_is_protocol", False) and base.__module__ != "typing":
            methods.update(
                (name, value)
                for name, value in vars(base).items()
                if (callable(value) or isinstance(value, staticmethod | classmethod | property))
                and (not name.startswith("_") or name in _PROTOCOL_DUNDERS)
            )
    for name in methods:
        attributes.pop(name, None)
    return attributes, methods


def _required_parameters(function: Any) -> list[inspect.Parameter]:
    parameters = list(inspect.signature(function).parameters.values())
    if parameters and parameters[0].name in ("self", "cls"):
        parameters = parameters[1:]
    return [p for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _signature_problem(where: str, expected: Any, actual: Any) -> str | None:
    """None if ``actual`` accepts every named parameter of ``expected``, else what is wrong."""
    if isinstance(expected, property) or isinstance(actual, property):
        return None
    expected = expected.__func__ if isinstance(expected, staticmethod | classmethod) else expected
    try:
        actual_parameters = inspect.signature(actual).parameters
    except (TypeError, ValueError):
        return None  # builtins without a signature: trust them
    takes_any_keyword = any(p.kind is p.VAR_KEYWORD for p in actual_parameters.values())
    takes_any_position = any(p.kind is p.VAR_POSITIONAL for p in actual_parameters.values())
    missing = [
        p.name
        for p in _required_parameters(expected)
        if p.name not in actual_parameters
        and not takes_any_keyword
        and not (takes_any_position and p.default is p.empty)
    ]
    if missing:
        return f"{where} does not accept parameter(s) {', '.join(missing)}"
    return None


def class_protocol(annotation: Any) -> type | None:
    """The Protocol ``P`` of a name annotated ``type[P]`` (a class the implementation offers), else None."""
    if get_origin(annotation) is not type:
        return None
    (argument,) = get_args(annotation)
    return argument if isinstance(argument, type) else None


def _check_object(where: str, value: Any, protocol: type, problems: list[str]) -> None:
    attributes, methods = protocol_members(protocol)
    instance_attributes = inspect.isclass(value)  # a class may set attributes in __init__
    for name, annotation in attributes.items():
        member = module_attribute(value, name, _MISSING)
        if member is _MISSING:
            if not instance_attributes:
                problems.append(f"{where}.{name} is missing")
            continue
        if get_origin(annotation) is type:
            member_protocol = class_protocol(annotation)
            if not inspect.isclass(member):
                problems.append(f"{where}.{name} must be a class")
            elif member_protocol is not None:
                _check_object(f"{where}.{name}", member, member_protocol, problems)
    for name, expected in methods.items():
        member = module_attribute(value, name)
        if member is None or not (callable(member) or isinstance(inspect.getattr_static(value, name), property)):
            problems.append(f"{where}.{name} is missing")
            continue
        problem = _signature_problem(f"{where}.{name}", expected, member)
        if problem:
            problems.append(problem)


def _resolve(module: ModuleType, path: str) -> Any:
    value: Any = module
    for part in path.split("."):
        value = getattr(value, part)
    return value


def validate(module: ModuleType, name: str | None = None) -> list[str]:
    """Every problem that keeps ``module`` from being an implementation of what it declares."""
    label = name or module.__name__
    declaration, problems = declaration_of(module)
    problems = [f"{label}: {problem}" for problem in problems]
    _check_object(label, module, ImplementationModule, problems)
    if declaration is None:
        return problems
    for capability_name in sorted(declaration.capabilities):
        for path, protocol in get_capability(capability_name).modules.items():
            try:
                submodule = _resolve(module, path)
            except AttributeError:
                problems.append(f"{label}.{path} is missing (capability {capability_name})")
                continue
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - a lazily imported submodule may raise anything
                problems.append(
                    f"{label}.{path} failed to import (capability {capability_name}): "
                    f"{type(exc).__name__}: {exc}{where_it_failed(exc)}"
                )
                continue
            _check_object(f"{label}.{path}", submodule, protocol, problems)
    return problems


def checked_declaration(module: ModuleType, name: str) -> Declaration:
    """What ``module`` declares, once it is known to implement it; else an InterfaceError naming the
    first problems, so a wrong implementation stops a run before anything runs on it."""
    problems = validate(module, name)
    declaration, _ = declaration_of(module)
    if problems or declaration is None:
        shown = problems[:SHOWN_PROBLEMS]
        if len(problems) > SHOWN_PROBLEMS:
            shown.append(
                f"... and {len(problems) - SHOWN_PROBLEMS} more: csconform interface --engine {name} lists them"
            )
        raise InterfaceError(
            f"{name!r} does not implement the interface it declares (see csconform/interface/):\n  "
            + "\n  ".join(shown)
        )
    return declaration
