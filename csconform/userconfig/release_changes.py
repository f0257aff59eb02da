"""What changes for one params file between two releases (``validate --release A --to B``).

Everything is read from what :mod:`.extract` recorded of each release's source and from the verdicts
of the spec's rules at both releases, never from a table typed here:

* **layout**: whether each release reads the trainer layout and converts a flat file on load, and
  where the conversion (:mod:`.convert`, with each release's tables) puts each key: the keys it
  renames, drops or places differently at B;
* **commands**: the console scripts and sub-commands B installs that A does not (``cszoo`` from
  2.4.0), and those it no longer installs;
* **aliases**: optimizer arguments one release reads under another name and the other does not
  (``learning_rate`` for ``lr`` from 2.4.0);
* **refused keys**: keys one release refuses on sight and the other does not (``use_bfloat16``);
* **optimizer and LR scheduler**: for a release that builds them the 1.x way (``PyTorchBaseModel``),
  the argument each key is passed to and the default of each key the file leaves out, against the
  other release's (the 1.x tables, or the vendor package's classes, whose defaults csconform does
  not record: the change says which value to write to keep A's);
* **findings**: a rule that B applies to the file and A does not, or the reverse (a key B does not
  know, a key B's model config class refuses, a limit that holds at one release only).

Each change names the key, its line in the file and what to do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from csconform.documents import KeyPath, dotted
from csconform.findings.finding import FileReport, Finding
from csconform.spec.model import Spec
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.convert import Conversion, ConversionError, convert
from csconform.userconfig.description import KeyUse, RunDescription
from csconform.userconfig.package_api import package_api
from csconform.userconfig.release_data import ReleaseKnowledge, knowledge
from csconform.userconfig.validate import ValidateOptions, read_run, validate_file

LAYOUT_RULES = ("CONFIG-004", "CONFIG-005")
"""Findings the layout change already says."""


@dataclass(frozen=True)
class Change:
    """One thing that differs for the file between the two releases."""

    kind: str
    """layout, moved, dropped, command, alias, refused key, optimizer, default, scheduler, finding, resolved."""
    message: str
    action: str | None = None
    key: str | None = None
    line: int | None = None
    rule: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class ReleaseChanges(FileReport):
    """The changes for one file from release ``source`` to release ``target``; its violations and
    warnings are the findings B gives and A does not (a new violation makes the exit status 1)."""

    source: str = ""
    target: str = ""
    layout: str | None = None
    changes: list[Change] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            **super().as_dict(),
            "from": self.source,
            "to": self.target,
            "layout": self.layout,
            "changes": [change.as_dict() for change in self.changes],
        }


def release_changes(path: Path | str, spec: Spec, before: ValidateOptions, after: ValidateOptions) -> ReleaseChanges:
    """What changes for the file at ``path`` from ``before.release`` to ``after.release``."""
    report = ReleaseChanges(str(path), source=before.release.name, target=after.release.name)
    read = read_run(path, before, report)
    if read is None:
        return report
    doc, run = read
    report.layout = run.layout
    a, b = knowledge(before.release.name), knowledge(after.release.name)
    verdict_a, verdict_b = validate_file(path, spec, before), validate_file(path, spec, after)
    changes = [*_layout(doc, run, a, b), *_commands(run, a, b)]
    if run.layout != "hf":
        changes += [*_aliases(run, a, b), *_refused_keys(run, a, b), *_optimizer(run, a, b), *_schedules(doc, a, b)]
    said = {change.key for change in changes if change.key is not None}
    changes += _findings(verdict_a.findings, verdict_b.findings, said, b.name)
    first = ("layout", "command")
    report.changes = sorted(changes, key=lambda c: (first.index(c.kind) if c.kind in first else 2, c.line or 0))
    gained = _gained(verdict_a.findings, verdict_b.findings)
    report.violations = [f for f in gained if f.severity == "violation"]
    report.warnings = [f for f in gained if f.severity == "warning"]
    return report


# --- layout -----------------------------------------------------------------------------------------


def _conversion(doc: ConfigFile, release: ReleaseKnowledge) -> Conversion | str | None:
    """The release's conversion of the file, the reason its converter stops, or None (no trainer layout)."""
    if not release.reads_trainer_layout:
        return None
    try:
        return convert(doc, release)
    except ConversionError as exc:
        return str(exc)


def _layout(doc: ConfigFile, run: RunDescription, a: ReleaseKnowledge, b: ReleaseKnowledge) -> Iterator[Change]:
    if run.layout == "trainer" and a.reads_trainer_layout != b.reads_trainer_layout:
        if b.reads_trainer_layout:
            yield Change("layout", f"release {b.name} reads the trainer layout, which release {a.name} refuses", None)
        else:
            yield Change(
                "layout",
                f"release {b.name} reads only the flat layout: it refuses this trainer-layout file",
                f"stay on a release that reads the trainer layout ({a.name}), or write the flat layout",
                "trainer",
                doc.line(("trainer",)),
            )
        return
    if run.layout != "flat" or not (a.reads_trainer_layout or b.reads_trainer_layout):
        return
    old, new = _conversion(doc, a), _conversion(doc, b)
    if isinstance(new, str):
        yield Change("layout", f"release {b.name}'s conversion to the trainer layout stops: {new}", "correct the file")
        return
    if new is None:
        yield Change(
            "layout",
            f"release {b.name} reads this flat-layout file as it is (release {a.name} converts it to the trainer "
            "layout)",
        )
        return
    if old is None or isinstance(old, str):
        command = f"{b.convert_command} FILE -o NEW, or " if b.convert_command else ""
        moved = sum(1 for places in new.destinations.values() if places)
        yield Change(
            "layout",
            f"release {b.name} converts this flat-layout file to the trainer layout on load ({moved} values move "
            f"under trainer:; the keys renamed or dropped follow)",
            f"convert it once: {command}csconform validate FILE --release {b.name} --fix --in-place",
            line=1,
        )
    yield from _moves(doc, old if isinstance(old, Conversion) else None, new, a.name, b.name)


def _moves(doc: ConfigFile, old: Conversion | None, new: Conversion, source: str, release: str) -> Iterator[Change]:
    """Keys the conversion drops or places under another name (``runconfig.num_wgt_servers`` ->
    ``...cluster_config.max_wgt_servers``); with two conversions, only where they differ. The values of
    the LR schedule are one change: the schedule becomes ``schedulers``."""
    schedule = ("trainer", "init", "schedulers")
    in_schedule = [p for p, places in new.destinations.items() if schedule in places and len(p) > 2]
    if in_schedule and (old is None or any(schedule not in old.destinations.get(p, []) for p in in_schedule)):
        section = in_schedule[0][:2]
        yield Change(
            "moved",
            f"release {release} reads the LR schedule as {dotted(schedule)}: one {{ClassName: {{arguments}}}} entry, "
            "several phases a SequentialLR",
            f"in the trainer layout write {dotted(schedule)}",
            dotted(section),
            doc.line(section),
        )
    for path in sorted({*new.destinations, *new.dropped} - set(in_schedule), key=lambda p: doc.line(p) or 0):
        key, line = dotted(path), doc.line(path)
        if (
            old is not None
            and (path in old.dropped) == (path in new.dropped)
            and old.destinations.get(path) == new.destinations.get(path)
        ):
            continue
        if path in new.dropped:
            yield Change("dropped", f"the conversion leaves it out: {new.dropped[path]}", "remove it", key, line)
            continue
        places = [dotted(p) for p in new.destinations[path]]
        renamed = [p for p in new.destinations[path] if str(p[-1]) != str(path[-1])]
        if old is None and not renamed:
            continue
        if not places:
            yield Change(
                "dropped", f"release {release}'s conversion prunes it after placing it", "remove it", key, line
            )
            continue
        was = "" if old is None else ", ".join(dotted(p) for p in old.destinations.get(path, [])) or "left out"
        yield Change(
            "moved",
            f"release {release} reads it as {', '.join(places)}" + (f" (release {source}: {was})" if was else ""),
            f"in the trainer layout write {places[0]}",
            key,
            line,
        )


# --- commands ---------------------------------------------------------------------------------------


def _commands(run: RunDescription, a: ReleaseKnowledge, b: ReleaseKnowledge) -> Iterator[Change]:
    for script in sorted(set(b.scripts) - set(a.scripts)):
        convert_it = f"{b.convert_command} FILE -o NEW converts this file once" if run.layout == "flat" else None
        yield Change(
            "command",
            f"release {b.name} installs the command {script} (release {a.name} none): "
            f"{len(b.subcommands)} sub-commands, {', '.join(b.subcommands)}",
            convert_it if b.convert_command else None,
        )
    for script in sorted(set(a.scripts) - set(b.scripts)):
        yield Change("command", f"release {b.name} no longer installs the command {script}", f"do not call {script}")
    if set(a.scripts) & set(b.scripts):
        added = sorted(set(b.subcommands) - set(a.subcommands))
        removed = sorted(set(a.subcommands) - set(b.subcommands))
        script = sorted(set(a.scripts) & set(b.scripts))[0]
        if added:
            yield Change("command", f"release {b.name}'s {script} adds the sub-commands {', '.join(added)}")
        if removed:
            yield Change("command", f"release {b.name}'s {script} drops the sub-commands {', '.join(removed)}")


# --- keys -------------------------------------------------------------------------------------------


def _optimizer_keys(run: RunDescription) -> list[KeyUse]:
    """The keys directly inside the optimizer section (flat: ``optimizer.*``; trainer: its class's)."""
    depth = 1 if run.layout == "flat" else 4
    section = "optimizer" if run.layout == "flat" else "trainer.init.optimizer"
    return [use for use in run.keys if use.path.startswith(f"{section}.") and use.path.count(".") == depth]


def _aliases(run: RunDescription, a: ReleaseKnowledge, b: ReleaseKnowledge) -> Iterator[Change]:
    if run.layout == "flat" and not b.reads_trainer_layout:
        return  # a flat file's optimizer keys are the release's own spellings until the trainer layout
    for use in _optimizer_keys(run):
        if run.layout == "flat" and use.name == "learning_rate":
            continue  # a flat file's learning_rate is its LR schedule; the conversion makes it schedulers
        before, after = a.optimizer_aliases.get(use.name), b.optimizer_aliases.get(use.name)
        if before == after:
            continue
        if after is not None:
            message = f"release {b.name} reads {use.name} as the optimizer's {after} (release {a.name} does not)"
            yield Change("alias", message, f"write {after} (both releases read it)", use.path, use.line)
        else:
            message = f"release {b.name} no longer reads {use.name} as {before}: the optimizer does not take it"
            yield Change("alias", message, f"write {before}", use.path, use.line)


def _in_section(use: KeyUse, section: str | None) -> bool:
    """Whether the key is in the section a refusal names (any section when it names none)."""
    parts = use.path.split(".")
    return section is None or (len(parts) > 1 and parts[-2] == section)


def _refused_keys(run: RunDescription, a: ReleaseKnowledge, b: ReleaseKnowledge) -> Iterator[Change]:
    for use in run.keys:
        before, after = a.refused_keys.get(use.name), b.refused_keys.get(use.name)
        refused_after = after is not None and _in_section(use, after["section"])
        refused_before = before is not None and _in_section(use, before["section"])
        if refused_after and not refused_before:
            message = f"release {b.name} refuses the key {use.name} on sight ({after['file']})"  # type: ignore[index]
            yield Change("refused key", message, "remove it", use.path, use.line)
        elif refused_before and not refused_after:
            yield Change("refused key", f"release {b.name} no longer refuses {use.name}", None, use.path, use.line)


# --- the optimizer and the LR schedule ----------------------------------------------------------------


def _optimizer(run: RunDescription, a: ReleaseKnowledge, b: ReleaseKnowledge) -> Iterator[Change]:
    """Arguments and defaults of a flat file's optimizer: each release's 1.x tables, or the package's
    class built from the keys as written."""
    if run.layout != "flat" or run.optimizer is None or not isinstance(run.optimizer.name.value, str):
        return
    kind = run.optimizer.name.value.lower()
    old, new = _arguments_1x(a, kind), _arguments_1x(b, kind)
    if old is None and new is None:
        return
    signature = package_api().optimizer(kind)
    package = {name: {"argument": name} for name in (signature.arguments if signature is not None else ())}
    built = f"the package's {signature.name if signature else kind} from the keys as written"
    given = {use.name: use for use in _optimizer_keys(run) if use.name not in ("optimizer_type", "learning_rate")}
    for name, use in given.items():
        before, after = _how_read(old, a, name, package), _how_read(new, b, name, package)
        if _argument(before) == _argument(after):
            continue
        if EVERY_TYPE in (_argument(before), _argument(after)):
            if None in (old, new) or (before and after):
                continue  # read by both, or the package's flat layout reads it outside the optimizer
            read = "reads" if after else "no longer reads"
            yield Change("optimizer", f"release {b.name} {read} {name}", "check the value", use.path, use.line)
        elif before is not None and after is None:
            keys = _keys_of(old or package, before["argument"])
            target = before["argument"] if new is None else next(iter(_keys_of(new, before["argument"])), None)
            action = f"write {target}" + (f": [{', '.join(keys)}]" if len(keys) > 1 else "") if target else "remove it"
            how = f"builds {built}" if new is None else "does not read it"
            message = f"release {a.name} passes {name} to the optimizer's {before['argument']}; release {b.name} {how}"
            yield Change("optimizer", message, action, use.path, use.line)
        elif before is None and after is not None:
            ignored = f"builds {built}, which takes no {name}" if old is None else f"ignores {name}"
            message = f"release {a.name} {ignored}; release {b.name} passes it to the optimizer's {after['argument']}"
            yield Change("optimizer", message, "check the value: it now takes effect", use.path, use.line)
        elif before is not None and after is not None:
            message = f"release {b.name} passes {name} to the optimizer's {after['argument']}, not {before['argument']}"
            yield Change("optimizer", message, "check the value", use.path, use.line)
    yield from _defaults(run, old, new, package, a, b, set(given))


def _defaults(
    run: RunDescription,
    old: Mapping[str, Mapping[str, Any]] | None,
    new: Mapping[str, Mapping[str, Any]] | None,
    package: Mapping[str, Mapping[str, Any]],
    a: ReleaseKnowledge,
    b: ReleaseKnowledge,
    given: set[str],
) -> Iterator[Change]:
    """An optimizer argument the file leaves to release A's default, where B's default is another or
    the package's (which csconform does not record): write A's to keep it."""
    where = run.optimizer.origin if run.optimizer is not None else None
    by_argument: dict[str, list[str]] = {}
    for name, how in (old or {}).items():
        if name not in given and "default" in how:
            by_argument.setdefault(how["argument"], []).append(name)
    for argument, names in by_argument.items():
        defaults = [old[name]["default"] for name in names]  # type: ignore[index]
        if new is not None:
            if all(new.get(name) == old[name] for name in names):  # type: ignore[index]
                continue
            theirs = [new.get(name, {}).get("default") for name in names]
            then = f"release {b.name} gives {_yaml(theirs[0] if len(theirs) == 1 else theirs)}"
            keys = names
        elif argument in package:
            then, keys = f"release {b.name} builds {argument} from the package's default", [argument]
        else:
            continue
        value = defaults[0] if len(defaults) == 1 else defaults
        shown = _yaml(value)
        yield Change(
            "default",
            f"release {a.name} gives the optimizer's {argument} {shown} when {', '.join(names)} is not set; {then}",
            f"write {', '.join(keys)}: {shown} to keep release {a.name}'s value"
            if len(keys) == 1
            else f"write {', '.join(f'{k}: {_yaml(d)}' for k, d in zip(keys, defaults, strict=True))} to keep them",
            f"{where.key}.{keys[0]}" if where is not None else None,
            where.line if where is not None else None,
        )


EVERY_TYPE = ""
"""How :func:`_argument` names a key a 1.x release reads for every optimizer type (loss scaling, ...)."""


def _argument(how: Mapping[str, Any] | None) -> str | None:
    """The argument a key is passed to; EVERY_TYPE when read for every type, None when not read."""
    if how is None:
        return None
    return EVERY_TYPE if how["argument"] is None else str(how["argument"])


def _how_read(
    arguments: Mapping[str, Mapping[str, Any]] | None,
    release: ReleaseKnowledge,
    name: str,
    package: Mapping[str, Mapping[str, Any]],
) -> Mapping[str, Any] | None:
    """How a release reads an optimizer key: ``{"argument": ...}`` (None: for every optimizer type, as
    the loss scaling and the learning rate), or None where it never reads it."""
    if arguments is None:
        return package.get(name)
    if name in arguments:
        return arguments[name]
    every_type = release.optimizers_1x["every_type"] if release.optimizers_1x else ()
    return {"argument": None} if name in every_type else None


def _keys_of(arguments: Mapping[str, Mapping[str, Any]], argument: str) -> list[str]:
    """The keys a release passes to ``argument`` (``beta1``, ``beta2`` for ``betas``)."""
    return [key for key, how in arguments.items() if how["argument"] == argument]


def _yaml(value: Any) -> str:
    """A value as a params file writes it (``1.0e-06``, ``false``, ``[0.9, 0.999]``)."""
    return yaml.safe_dump(value, default_flow_style=True).removesuffix("\n...\n").strip()


def _arguments_1x(release: ReleaseKnowledge, kind: str) -> Mapping[str, Mapping[str, Any]] | None:
    """The keys a 1.x release passes to optimizer ``kind`` (None: the release builds the package's class)."""
    if release.optimizer_arguments_1x is None:
        return None
    return release.optimizer_arguments_1x.get(kind, {})


def _schedules(doc: ConfigFile, a: ReleaseKnowledge, b: ReleaseKnowledge) -> Iterator[Change]:
    """The LR scheduler phases of a flat file where one release builds them the 1.x way and the other not."""
    if "trainer" in doc.data or (a.lr_schedulers_1x is None) == (b.lr_schedulers_1x is None):
        return
    schedule = doc.node(("optimizer", "learning_rate"))
    phases: list[KeyPath] = [("optimizer", "learning_rate")] if isinstance(schedule, Mapping) else []
    if isinstance(schedule, list):
        phases = [("optimizer", "learning_rate", i) for i, p in enumerate(schedule) if isinstance(p, Mapping)]
    old_release, package_release = (a, b) if a.lr_schedulers_1x is not None else (b, a)
    for path in phases:
        phase = doc.node(path)
        written = str(phase.get("scheduler", ""))
        tables: Mapping[str, Any] = old_release.lr_schedulers_1x  # type: ignore[assignment]
        branch = tables["names"].get(written.lower())
        signature = package_api().lr_scheduler(written) or package_api().lr_scheduler(f"{written}lr")
        if branch is None or signature is None:
            continue
        reads = tables["arguments"][branch]
        for name in phase:
            if name in ("scheduler", "main_scheduler") or name in signature.arguments:
                continue
            via = [name, *tables["copies"].get(name, [])]
            argument = next((reads[k]["argument"] for k in via if k in reads), None)
            then = f"passes it to its {branch} scheduler's {argument}" if argument else "does not read it"
            missing = [r for r in signature.required if r not in phase]
            action = f"{signature.name} takes {', '.join(signature.arguments)}" + (
                f"; it needs {', '.join(missing)}" if missing else ""
            )
            yield Change(
                "scheduler",
                f"release {package_release.name} builds the package's {signature.name}, which takes no {name}; "
                f"release {old_release.name} {then}",
                action,
                dotted((*path, name)),
                doc.line((*path, name)),
            )


# --- findings -----------------------------------------------------------------------------------------


def _identity(finding: Finding) -> tuple[str, str | None, int | None]:
    return finding.rule, finding.key, finding.line


def _gained(before: list[Finding], after: list[Finding]) -> list[Finding]:
    seen = {_identity(f) for f in before}
    return [f for f in after if _identity(f) not in seen]


def _findings(before: list[Finding], after: list[Finding], said: set[str], release: str) -> Iterator[Change]:
    """A rule the file breaks (or comes close to) at one release only; not where a change above names the key."""
    for finding in _gained(before, after):
        if finding.rule in LAYOUT_RULES or finding.key in said:
            continue
        kind = "refused" if finding.severity == "violation" else "warned"
        yield Change(f"finding ({kind})", finding.message, finding.fix, finding.key, finding.line, finding.rule)
    for finding in _gained(after, before):
        if finding.rule in LAYOUT_RULES or finding.key in said:
            continue
        message = f"release {release} no longer reports: {finding.message}"
        yield Change("resolved", message, None, finding.key, finding.line, finding.rule)
