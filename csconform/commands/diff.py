"""``csconform diff``: drive two implementations through the same random call sequences (Hypothesis),
compare every observable, shrink each class of difference to a minimal repro and judge it against B's
triage. Exits 1 when a class is untriaged, a triage entry is stale, a fixed engine bug shows again or a
class does not show twice."""

from __future__ import annotations

import argparse
from pathlib import Path

from csconform import output_guard
from csconform.arguments import positive_count, positive_seconds
from csconform.errors import InvalidInputError


def _areas(text: str) -> list[str]:
    from csconform.testing.differential.areas import AREA_NAMES

    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in AREA_NAMES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"unknown areas {unknown}; known: {', '.join(AREA_NAMES)}")
    return names


def run(args: argparse.Namespace) -> int:
    from csconform.interface.load import check_module_name, implementation_sources
    from csconform.testing.differential.report import report_files

    if args.engine == args.against and args.triage:
        raise InvalidInputError("an implementation compared with itself has no triage: leave --triage out")
    if args.shrink_examples is not None and args.shrink_examples < 0:
        raise InvalidInputError(f"--shrink-examples must be >= 0, got {args.shrink_examples}")
    names = {"--engine": check_module_name(args.engine), "--against": check_module_name(args.against)}
    sources = [(option, source) for option, name in names.items() for source in implementation_sources(name)]
    with output_guard.protect(sources):  # the implementations' own source files are inputs too
        for path in report_files(Path(args.out), args.against):  # refused before the run, not after it
            output_guard.check_output(path, "--out")
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from csconform.testing.differential.campaign import PROFILES, parse_seeds, run_campaign
    from csconform.testing.differential.explore import Pair, implementations
    from csconform.testing.differential.implementation import Limits
    from csconform.testing.differential.report import report_data, shown_path, triage_skeleton, write_report
    from csconform.testing.differential.verdicts import FAILING, judge
    from csconform.triage import triage_for

    pair = Pair(args.engine, args.against, Limits(call_s=args.call_timeout, program_s=args.program_timeout))
    _a, b = implementations(pair)
    triage = triage_for(b.name, b.package_folder, Path(args.triage) if args.triage else None)
    triage_path = triage.path if triage else None
    seeds = parse_seeds(args.seeds) if args.seeds else None
    say = (lambda line: None) if args.quiet else (lambda line: print(f"  {line}", flush=True))
    print(
        f"csconform diff: {args.engine} (A) against {args.against} (B, {b.version}), profile {args.profile}, "
        f"triage {shown_path(str(triage_path)) if triage_path else 'none (every class found is untriaged)'}"
    )
    campaign = run_campaign(
        pair,
        PROFILES[args.profile],
        areas=args.areas,
        seeds=seeds,
        examples=args.examples,
        scheduler=args.scheduler,
        jobs=args.jobs,
        progress=say,
        scheduler_timeout_s=args.scheduler_timeout,
        shrink_examples=args.shrink_examples,
        known_repros={entry.signature: entry.repro for entry in (triage.differential if triage else ())},
    )
    data = report_data(campaign, judge(campaign, triage), str(triage_path) if triage_path else None)
    files = write_report(Path(args.out), data)
    for area in data["areas"]:
        if area["not_compared"]:
            print(f"{area['area']:12} not compared: {area['not_compared']}")
        else:
            print(
                f"{area['area']:12} {area['examples']:6} examples {area['examples_per_s']:7.1f}/s "
                f"{area['classes']:3} classes ({area['triaged']} triaged, {area['untriaged']} untriaged, "
                f"{area['stale']} stale, {area['regression']} regressions, {area['flaky']} flaky)"
            )
    for row in data["classes"]:
        if row["verdict"] in FAILING:
            print(f"\n{row['verdict'].upper()}: {row['signature']}\n  {row['note']}")
            print("\n".join(f"    {line}" for line in row["repro"].splitlines()))
            if row.get("found"):
                print(f"  A: {row['a']}\n  B: {row['b']}")
            if row["verdict"] == "untriaged":
                where = triage_path or f"a new triage file for this release, under triage/ beside {args.against}"
                print(f"  an entry to fill in under differential: ({where}):")
                print(triage_skeleton(row))
    verdicts = data["summary"]["verdicts"]
    print(
        f"\n{data['summary']['examples']} examples, {data['summary']['classes_found']} classes: "
        f"{verdicts['triaged']} triaged, {verdicts['untriaged']} untriaged, {verdicts['stale']} stale, "
        f"{verdicts['regression']} regressions, {verdicts['flaky']} flaky, {verdicts['fixed']} fixed engine bugs; "
        f"{data['seconds']} s -> {', '.join(str(f) for f in files[:2])}"
    )
    return 0 if data["passed"] else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from csconform.testing.differential.areas import AREA_NAMES
    from csconform.testing.differential.campaign import PROFILES

    parser.add_argument(
        "--engine", default="csconform.engine", metavar="MODULE", help="implementation A (default: csconform.engine)"
    )
    parser.add_argument(
        "--against", required=True, metavar="MODULE", help="implementation B, e.g. csconform.adapters.cstorch"
    )
    parser.add_argument(
        "--profile", choices=sorted(PROFILES), default="ci", help="ci (bounded, fixed seeds; default) or nightly"
    )
    parser.add_argument(
        "--areas", type=_areas, default=list(AREA_NAMES), help=f"comma-separated, default all: {','.join(AREA_NAMES)}"
    )
    parser.add_argument("--seeds", default=None, help="seeds to explore, e.g. 0-99 or 3,5 (default: the profile's)")
    parser.add_argument(
        "--examples", type=positive_count, default=None, help="examples per area and seed (default: the profile's)"
    )
    parser.add_argument(
        "--triage",
        default=None,
        metavar="FILE",
        help="B's triage for the release installed (default: the one in the triage/ folder beside B)",
    )
    parser.add_argument(
        "--shrink-examples",
        type=int,
        default=None,
        metavar="N",
        help="programs Hypothesis may run to shrink each class (default: the profile's)",
    )
    parser.add_argument(
        "--call-timeout",
        type=positive_seconds,
        default=60.0,
        metavar="S",
        help="seconds one call may take before the side that has not answered is called hung (default 60)",
    )
    parser.add_argument(
        "--program-timeout",
        type=positive_seconds,
        default=600.0,
        metavar="S",
        help="seconds one program may take (default 600)",
    )
    parser.add_argument("--out", default="reports", help="directory for differential_<B>.{json,md} (default reports)")
    parser.add_argument("--jobs", type=positive_count, default=1, help="local worker processes (default 1)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address (tcp://host:port)")
    parser.add_argument("--scheduler-timeout", type=float, default=10.0, help="seconds to wait for the Dask scheduler")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(handler=run, reads=("triage",), writes_into=("out",))
