"""``csconform spec list | show ID | check``: read the executable spec from the command line."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from tabulate import tabulate, tabulate_formats

from csconform.spec.loader import check_spec, default_specs_dir, load_spec, uncovered_sections
from csconform.spec.model import LEVELS, STATUSES, Spec
from csconform.spec.releases import holds_for, load_catalogue
from csconform.spec.sources import load_registry
from csconform.spec.traceability import count_checks, suite_dir_for


def _specs_dir(args: argparse.Namespace) -> Path:
    return Path(args.specs_dir) if args.specs_dir else default_specs_dir()


def _check_counts(specs_dir: Path) -> dict[str, int] | None:
    tests_dir = suite_dir_for(specs_dir)
    return dict(count_checks(tests_dir)) if tests_dir else None


def _level_summary(spec: Spec) -> str:
    counts = spec.level_counts()
    return ", ".join(f"{counts[level]} {level}" for level in LEVELS)


def list_rules(args: argparse.Namespace) -> int:
    specs_dir = _specs_dir(args)
    spec = load_spec(specs_dir)
    rules = spec.by_area(args.area) if args.area else list(spec)
    if args.status:
        rules = [rule for rule in rules if rule.status == args.status]
    if args.level:
        rules = [rule for rule in rules if rule.level == args.level]
    if args.release:
        release = load_catalogue(specs_dir).get(args.release)
        rules = [rule for rule in rules if holds_for(rule.releases, release)]
    checks = _check_counts(specs_dir)
    rows = [
        [
            rule.id,
            textwrap.shorten(rule.title, 60),
            textwrap.shorten(rule.source_text, 58),
            rule.level,
            rule.status,
            "-" if checks is None else checks.get(rule.id, 0),
        ]
        for rule in rules
    ]
    print(tabulate(rows, headers=["id", "title", "source", "level", "status", "checks"], tablefmt=args.format))
    counts = spec.counts()
    print(
        f"\n{len(rules)} of {len(spec)} rules shown; spec: {counts['checked']} checked, "
        f"{counts['pending']} pending, {counts['retired']} retired; in force: {_level_summary(spec)}"
    )
    return 0


def show_rule(args: argparse.Namespace) -> int:
    specs_dir = _specs_dir(args)
    rule = load_spec(specs_dir).get(args.rule_id)
    checks = _check_counts(specs_dir)
    fields = [
        ("id", rule.id),
        ("title", rule.title),
        ("area", f"{rule.area} ({rule.file})"),
        ("kind", rule.kind),
        ("level", rule.level),
        ("scope", f"target {rule.scope.target}, mode {rule.scope.mode}"),
        ("status", rule.status + (f" — {rule.reason}" if rule.reason else "")),
        ("source", "\n".join(str(s) for s in rule.sources)),
        ("statement", textwrap.fill(rule.statement, 88)),
    ]
    if rule.releases:
        fields.append(("releases", rule.releases))
    if rule.error:
        fields.append(("error", rule.error.type + (f': "{rule.error.message}"' if rule.error.message else "")))
    if rule.notes:
        fields.append(("notes", textwrap.fill(rule.notes, 88)))
    if checks is not None:
        fields.append(("checks", str(checks.get(rule.id, 0))))
    width = max(len(name) for name, _ in fields)
    for name, value in fields:
        lines = value.splitlines() or [""]
        print(f"{name:<{width}}  {lines[0]}")
        for line in lines[1:]:
            print(f"{'':<{width}}  {line}")
    return 0


def check(args: argparse.Namespace) -> int:
    """Validate every spec file, the section coverage and the checked/pending bookkeeping."""
    specs_dir = _specs_dir(args)
    report = check_spec(specs_dir)
    problems = list(report.problems)
    if report.spec is not None:
        registry = load_registry(specs_dir)
        problems += [f"no active rule cites {section}" for section in uncovered_sections(report.spec, registry)]
        checks = _check_counts(specs_dir)
        if checks is not None:
            for rule in report.spec:
                if rule.status == "checked" and not checks.get(rule.id):
                    problems.append(f"{rule.file}: rule {rule.id} is checked but no test names it")
                if rule.status != "checked" and checks.get(rule.id):
                    problems.append(f"{rule.file}: rule {rule.id} is {rule.status} but a test names it")
            known = {rule.id for rule in report.spec}
            problems += [f"a test names unknown rule {rule_id}" for rule_id in sorted(set(checks) - known)]
    for problem in problems:
        print(problem)
    if problems or report.spec is None:
        print(f"\n{len(problems)} problem(s) in {specs_dir}")
        return 1
    counts = report.spec.counts()
    print(
        f"spec OK: {len(report.spec)} rules in {len(report.spec.areas)} areas "
        f"({counts['checked']} checked, {counts['pending']} pending, {counts['retired']} retired; "
        f"in force: {_level_summary(report.spec)}); every documented section has a rule"
    )
    return 0


def add_arguments(spec: argparse.ArgumentParser) -> None:
    spec.add_argument("--specs-dir", default=None, help="spec directory (default: the bundled specs)")
    commands = spec.add_subparsers(dest="spec_command", metavar="SUBCOMMAND", required=True)

    listing = commands.add_parser("list", help="a table of rules: id, title, source, level, status, checks")
    listing.add_argument("--area", help="only this area (spec file stem), e.g. grad_scaler")
    listing.add_argument("--status", choices=STATUSES, help="only rules with this status")
    listing.add_argument(
        "--level",
        choices=LEVELS,
        help="only rules this binding: documented (seed documents), public (vendor's source), reference",
    )
    listing.add_argument("--release", help="only rules in force in this release (e.g. 1.9.1, 2.10)")
    listing.add_argument(
        "--format",
        default="simple",
        choices=sorted(tabulate_formats),
        metavar="FORMAT",
        help="table format (tabulate), e.g. github",
    )
    listing.set_defaults(handler=list_rules)

    show = commands.add_parser("show", help="everything about one rule")
    show.add_argument("rule_id", metavar="ID")
    show.set_defaults(handler=show_rule)

    checking = commands.add_parser("check", help="validate the spec files; non-zero exit on problems")
    checking.set_defaults(handler=check)
