"""Load and validate ``specs/*.yaml`` into a :class:`~csconform.spec.model.Spec`.

Validation is strict because the spec is the contract: an unknown key, a duplicate id, a badly
formed id, a missing or unregistered source all stop loading with a :class:`SpecError` naming the
file and the rule. ``check_spec`` collects every problem instead of stopping at the first, which is
what ``csconform spec check`` prints.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import csconform.errors as error_family
from csconform.documents import read_document
from csconform.errors import SpecError, UnreadableDocumentError
from csconform.spec.model import KINDS, LEVELS, MODES, STATUSES, TARGETS, Area, ErrorSpec, Rule, Scope, Source, Spec
from csconform.spec.releases import RELEASES_FILE, Catalogue, load_catalogue
from csconform.spec.sources import SOURCES_FILE, Registry, load_registry

AREA_KEYS = {"area", "title", "rules"}
RULE_KEYS = {
    "id",
    "title",
    "statement",
    "source",
    "kind",
    "level",
    "scope",
    "status",
    "error",
    "reason",
    "notes",
    "releases",
    "fix",
}
REQUIRED_RULE_KEYS = ("id", "title", "statement", "source", "kind", "level", "scope", "status")
KEY_HINTS = {"level": f" (how binding the rule is: {', '.join(LEVELS)})"}
SCOPE_KEYS = {"target", "mode"}
ERROR_KEYS = {"type", "message"}
ID_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*-\d{3}$")


def default_specs_dir() -> Path:
    """``$CSCONFORM_SPECS``, else the repository's ``specs/``, else the copy inside the wheel."""
    override = os.environ.get("CSCONFORM_SPECS")
    if override:
        return Path(override)
    package = Path(__file__).resolve().parent.parent
    for candidate in (package.parent / "specs", package / "_specs"):
        if (candidate / SOURCES_FILE).is_file():
            return candidate
    raise SpecError(
        f"no spec directory found (looked for {package.parent / 'specs'} and {package / '_specs'}); set CSCONFORM_SPECS"
    )


@dataclass
class SpecReport:
    """The outcome of validating a spec directory: the spec (if it loaded) and every problem."""

    spec: Spec | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: Path | str, rule_id: object, message: str) -> None:
        where = f"{path}: rule {rule_id}" if rule_id is not None else f"{path}"
        self.items.append(f"{where}: {message}")


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _known_error_type(name: str) -> bool:
    candidate = getattr(error_family, name, None) or getattr(builtins, name, None)
    return isinstance(candidate, type) and issubclass(candidate, BaseException)


def _parse_sources(value: Any, registry: Registry) -> tuple[tuple[Source, ...], list[str]]:
    raw = value if isinstance(value, list) else [value]
    sources, problems = [], []
    if not raw or not all(_is_text(item) for item in raw):
        return (), ["'source' must be 'ID#Section' or a non-empty list of them"]
    for item in raw:
        document, sep, section = item.partition("#")
        document, section = document.strip(), section.strip()
        registered = registry.document(document)
        if not sep or not section:
            problems.append(f"source {item!r} must name a section: 'ID#Section'")
        elif registered is None:
            problems.append(f"source {item!r} names no known document; known: {', '.join(registry.ids)}")
        elif section not in registered.sections:
            problems.append(
                f"source {item!r}: {document} has no section {section!r}; sections: {', '.join(registered.sections)}"
            )
        else:
            sources.append(Source(document, section))
    return tuple(sources), problems


def _cites_seed(source: Source, registry: Registry) -> bool:
    document = registry.document(source.document)
    return document is not None and document.seed


def _parse_scope(value: Any) -> tuple[Scope | None, list[str]]:
    if not isinstance(value, dict):
        return None, ["'scope' must be a mapping {target: cs|cpu|both, mode: pipelined|weight_streaming|any}"]
    problems = [f"unknown scope key {key!r}" for key in value if key not in SCOPE_KEYS]
    target, mode = value.get("target", "both"), value.get("mode", "any")
    if target not in TARGETS:
        problems.append(f"scope target {target!r} is not one of {', '.join(TARGETS)}")
    if mode not in MODES:
        problems.append(f"scope mode {mode!r} is not one of {', '.join(MODES)}")
    return (None, problems) if problems else (Scope(target, mode), [])


def _parse_error(value: Any) -> tuple[ErrorSpec | None, list[str]]:
    if not isinstance(value, dict) or not _is_text(value.get("type")):
        return None, ["'error' must be a mapping with a 'type' (and optionally the documented 'message')"]
    problems = [f"unknown error key {key!r}" for key in value if key not in ERROR_KEYS]
    if not _known_error_type(value["type"]):
        problems.append(f"error type {value['type']!r} is neither in csconform.errors nor a builtin exception")
    message = value.get("message")
    if message is not None and not _is_text(message):
        problems.append("error message must be non-empty text")
    return (None, problems) if problems else (ErrorSpec(value["type"], message), [])


def _parse_releases(value: Any, catalogue: Catalogue) -> tuple[str | None, list[str]]:
    """A rule's ``releases``: a version range that selects at least one known release."""
    if not _is_text(value):
        return None, ["'releases' must be a version range such as '>=1.8.0,<2.2.1'"]
    try:
        selected = catalogue.selected(value.strip())
    except SpecError as exc:
        return None, [str(exc)]
    if not selected:
        known = ", ".join(catalogue.names) or f"none: {RELEASES_FILE} is missing"
        return None, [f"releases {value!r} selects no known release (known: {known})"]
    return value.strip(), []


def _parse_rule(
    data: Any, area: str, path: Path, registry: Registry, catalogue: Catalogue, problems: _Problems
) -> Rule | None:
    if not isinstance(data, dict):
        problems.add(path, None, f"every rule must be a mapping, got {type(data).__name__}")
        return None
    rule_id = data.get("id")
    label = rule_id if isinstance(rule_id, str) else "<no id>"
    before = len(problems.items)
    for key in data:
        if key not in RULE_KEYS:
            problems.add(path, label, f"unknown key {key!r}; allowed: {', '.join(sorted(RULE_KEYS))}")
    for key in REQUIRED_RULE_KEYS:
        if key not in data:
            problems.add(path, label, f"missing required key {key!r}{KEY_HINTS.get(key, '')}")
    if "id" in data and not (isinstance(rule_id, str) and ID_PATTERN.match(rule_id)):
        problems.add(path, label, f"bad id {rule_id!r}: expected AREA-NNN, e.g. GRADSCALER-004")
    for key in ("title", "statement"):
        if key in data and not _is_text(data[key]):
            problems.add(path, label, f"'{key}' must be non-empty text")
    for key in ("reason", "notes", "fix"):
        if data.get(key) is not None and not _is_text(data[key]):
            problems.add(path, label, f"'{key}' must be non-empty text")
    if "kind" in data and data["kind"] not in KINDS:
        problems.add(path, label, f"kind {data['kind']!r} is not one of {', '.join(KINDS)}")
    level = data.get("level")
    if "level" in data and level not in LEVELS:
        problems.add(path, label, f"level {level!r} is not one of {', '.join(LEVELS)}")
    status = data.get("status")
    if "status" in data and status not in STATUSES:
        problems.add(path, label, f"status {status!r} is not one of {', '.join(STATUSES)}")
    if status in ("pending", "retired") and not _is_text(data.get("reason")):
        problems.add(path, label, f"a {status} rule needs a 'reason'")
    sources: tuple[Source, ...] = ()
    if "source" in data:
        sources, messages = _parse_sources(data["source"], registry)
        for message in messages:
            problems.add(path, label, message)
    if level == "documented" and sources and not any(_cites_seed(source, registry) for source in sources):
        cited = " and ".join(dict.fromkeys(source.document for source in sources))
        problems.add(path, label, f"a documented rule must cite a seed document; {cited} alone makes it public")
    scope = None
    if "scope" in data:
        scope, messages = _parse_scope(data["scope"])
        for message in messages:
            problems.add(path, label, message)
    error = None
    if data.get("error") is not None:
        error, messages = _parse_error(data["error"])
        for message in messages:
            problems.add(path, label, message)
    releases = None
    if "releases" in data:
        releases, messages = _parse_releases(data["releases"], catalogue)
        for message in messages:
            problems.add(path, label, message)
    if len(problems.items) > before or scope is None:
        return None
    return Rule(
        id=str(rule_id),
        title=data["title"].strip(),
        statement=" ".join(data["statement"].split()),
        sources=sources,
        kind=data["kind"],
        scope=scope,
        status=str(status),
        level=str(level),
        area=area,
        file=path.name,
        error=error,
        reason=data.get("reason"),
        notes=data.get("notes"),
        releases=releases,
        fix=" ".join(data["fix"].split()) if data.get("fix") else None,
    )


def _parse_area(path: Path, registry: Registry, catalogue: Catalogue, problems: _Problems) -> Area | None:
    try:
        data = read_document(path, what="spec file", top="any").data
    except UnreadableDocumentError as exc:
        problems.items.append(str(exc))
        return None
    if not isinstance(data, dict):
        problems.add(path, None, "expected a mapping with 'area', 'title' and 'rules'")
        return None
    for key in data:
        if key not in AREA_KEYS:
            problems.add(path, None, f"unknown top-level key {key!r}; allowed: area, title, rules")
    if data.get("area") != path.stem:
        problems.add(path, None, f"'area' must equal the file name stem {path.stem!r}, got {data.get('area')!r}")
    if not _is_text(data.get("title")):
        problems.add(path, None, "'title' must be non-empty text")
    if not isinstance(data.get("rules"), list) or not data["rules"]:
        problems.add(path, None, "'rules' must be a non-empty list")
        return None
    rules = [_parse_rule(item, path.stem, path, registry, catalogue, problems) for item in data["rules"]]
    valid = [rule for rule in rules if rule is not None]
    prefixes = sorted({rule.prefix for rule in valid})
    if len(prefixes) > 1:
        problems.add(path, None, f"all ids in one file share one prefix; found {', '.join(prefixes)}")
    if len(valid) != len(rules) or not isinstance(data.get("title"), str):
        return None
    return Area(path.stem, data["title"].strip(), path.name, tuple(valid))


def check_spec(specs_dir: Path | str | None = None) -> SpecReport:
    """Validate every spec file, collecting all problems rather than stopping at the first."""
    directory = Path(specs_dir) if specs_dir is not None else default_specs_dir()
    if not directory.is_dir():
        return SpecReport(None, [f"{directory}: spec directory not found"])
    problems = _Problems()
    try:
        registry = load_registry(directory)
        catalogue = load_catalogue(directory)
    except (SpecError, UnreadableDocumentError) as exc:
        return SpecReport(None, [str(exc)])
    files = sorted(p for p in directory.glob("*.yaml") if p.name not in (SOURCES_FILE, RELEASES_FILE))
    if not files:
        return SpecReport(None, [f"{directory}: no spec files (*.yaml)"])
    areas = [_parse_area(path, registry, catalogue, problems) for path in files]
    seen: dict[str, str] = {}
    for area in (a for a in areas if a is not None):
        for rule in area.rules:
            if rule.id in seen:
                problems.add(area.file, rule.id, f"duplicate id (also in {seen[rule.id]})")
            seen.setdefault(rule.id, area.file)
    if problems.items:
        return SpecReport(None, problems.items)
    return SpecReport(Spec(tuple(a for a in areas if a is not None)))


def spec_digest(specs_dir: Path | str | None = None) -> str:
    """The sha256 of the spec files (every ``*.yaml``, by name): which spec a published matrix describes."""
    digest = hashlib.sha256()
    for path in sorted(Path(specs_dir or default_specs_dir()).glob("*.yaml")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def load_spec(specs_dir: Path | str | None = None) -> Spec:
    """Load the spec, or raise :class:`SpecError` listing every problem found."""
    report = check_spec(specs_dir)
    if report.spec is None:
        shown = report.problems[:20]
        more = len(report.problems) - len(shown)
        tail = f"\n  ... and {more} more" if more > 0 else ""
        raise SpecError("invalid spec:\n  " + "\n  ".join(shown) + tail)
    return report.spec


def uncovered_sections(spec: Spec, registry: Registry) -> list[str]:
    """``ID#Section`` for every registered section that no active rule cites."""
    cited = {str(source) for rule in spec.active() for source in rule.sources}
    return [
        f"{document.id}#{section}"
        for document in registry.documents
        for section in document.sections
        if f"{document.id}#{section}" not in cited
    ]
