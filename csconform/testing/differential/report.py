"""The differential report: ``differential_<implementation>.json`` and ``.md``, and two CSV tables.

The JSON holds everything (the areas' counts and speeds, every class with its verdict, triage entry
and minimal repro); the markdown page and the CSV tables (``_areas.csv``, ``_classes.csv``, which the
HTML report shows under the page) are rendered from the JSON alone, so ``csconform report`` can
render them again from a JSON that a run elsewhere (``tox -e cstorch``) wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from csconform.errors import CsConformError
from csconform.testing.differential.campaign import Campaign
from csconform.testing.differential.program import Program
from csconform.testing.differential.verdicts import FAILING, Verdict
from csconform.triage import VERDICTS as TRIAGE_VERDICTS

VERDICTS = ("triaged", "untriaged", "stale", "regression", "fixed", "flaky")


def _class_row(verdict: Verdict, against: str) -> dict[str, Any]:
    entry, found = verdict.entry, verdict.found
    program = found.repro if found is not None else entry.repro  # type: ignore[union-attr]
    row: dict[str, Any] = {
        "signature": str(verdict.signature),
        "area": verdict.signature.area,
        "call": verdict.signature.call,
        "observable": verdict.signature.observable,
        "kind": verdict.signature.kind,
        "verdict": verdict.verdict,
        "note": verdict.note,
        "category": entry.verdict if entry else "",  # the triage's verdict ("verdict" is the judgement)
        "cause": entry.cause if entry else "",
        "finding": entry.finding if entry else "",
        "resolution": entry.resolution if entry else "",
        "reason": entry.reason if entry else "",
        "found": found is not None,
        "target": program.target,
        "statements": list(program.source),
        "repro": program.repro(against),
    }
    if found is not None:
        row.update(
            first={"seed": found.first.seed, "example": found.first.example},
            programs=found.programs,
            statement=found.difference.statement,
            a=found.difference.a,
            b=found.difference.b,
            shrink_seconds=round(found.shrink_seconds, 2),
            repro_from="shrunk in this run" if found.shrunk else "its triage entry (shown again in this run)",
        )
    return row


def shown_path(path: str | None) -> str | None:
    """A path under the current directory as a relative one (the report does not name the machine)."""
    if path is None:
        return None
    resolved = Path(path).resolve()
    return str(resolved.relative_to(Path.cwd())) if resolved.is_relative_to(Path.cwd()) else path


def report_data(campaign: Campaign, verdicts: list[Verdict], triage_path: str | None) -> dict[str, Any]:
    """The JSON document of a judged campaign."""
    rows = [_class_row(verdict, campaign.pair.against) for verdict in verdicts]
    areas = []
    for name, summary in campaign.areas.items():
        mine = [row for row in rows if row["area"] == name]
        areas.append(
            {
                "area": name,
                "title": summary.title,
                "compared": not summary.not_compared,
                "not_compared": summary.not_compared,
                "examples": summary.examples,
                "statements": summary.statements,
                "unsupported": summary.unsupported,
                "seconds": round(summary.seconds, 2),
                "examples_per_s": round(summary.examples_per_s, 1),
                "classes": sum(row["found"] for row in mine),
                **{verdict: sum(row["verdict"] == verdict for row in mine) for verdict in VERDICTS},
            }
        )
    failing = [row for row in rows if row["verdict"] in FAILING]
    categories: dict[str, int] = {}
    for row in rows:
        if row["category"] and (row["found"] or row["verdict"] in ("triaged", "fixed")):
            categories[row["category"]] = categories.get(row["category"], 0) + 1
    return {
        "engine": campaign.pair.engine,
        "against": campaign.pair.against,
        "versions": {"engine": campaign.versions[0], "against": campaign.versions[1]},
        "triage": shown_path(triage_path),
        "profile": campaign.profile,
        "seeds": list(campaign.seeds),
        "seconds": round(campaign.seconds, 1),
        "passed": not failing,
        "summary": {
            "examples": sum(area["examples"] for area in areas),
            "classes_found": sum(row["found"] for row in rows),
            "verdicts": {verdict: sum(row["verdict"] == verdict for row in rows) for verdict in VERDICTS},
            "categories": categories,
        },
        "areas": areas,
        "classes": rows,
    }


def report_stem(against: str) -> str:
    return f"differential_{against.rpartition('.')[2]}"


def report_files(out: Path, against: str) -> list[Path]:
    """Every file a differential report of ``against`` writes into ``out``: the JSON, the page, the tables."""
    stem = report_stem(against)
    return [out / f"{stem}.json", out / f"{stem}.md", out / f"{stem}_areas.csv", out / f"{stem}_classes.csv"]


def read_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise CsConformError(f"{path}: not a readable differential report ({error})") from error
    if not isinstance(data, dict) or not {"areas", "classes", "summary"} <= set(data):
        raise CsConformError(f"{path}: not a differential report (rerun csconform diff)")
    return data


def _summary_line(data: dict[str, Any]) -> str:
    verdicts = data["summary"]["verdicts"]
    failing = ", ".join(f"{verdicts[v]} {v}" for v in FAILING if verdicts[v])
    outcome = "passed" if data["passed"] else f"FAILED ({failing})"
    by_repro = sum(1 for row in data["classes"] if row["verdict"] == "triaged" and not row["found"])
    return (
        f"{data['summary']['examples']} examples, {data['summary']['classes_found']} classes found; "
        f"{verdicts['triaged']} triaged ({by_repro} of them not met by this run's examples but shown by the "
        f"repro their entry keeps), {verdicts['fixed']} fixed engine bugs; {outcome}"
    )


def _table(frame: pd.DataFrame) -> str:
    from tabulate import tabulate

    return tabulate(frame.values.tolist(), headers=list(frame.columns), tablefmt="github", floatfmt=".4g")


def area_frame(data: dict[str, Any]) -> pd.DataFrame:
    columns = ["area", "examples", "examples_per_s", "classes", *VERDICTS, "unsupported", "not_compared"]
    return pd.DataFrame(data["areas"]).reindex(columns=columns)


def class_frame(data: dict[str, Any]) -> pd.DataFrame:
    columns = ["signature", "verdict", "category", "cause", "note"]
    return pd.DataFrame(data["classes"]).reindex(columns=columns).fillna("")


def write_report_files(out: Path, data: dict[str, Any]) -> list[Path]:
    """The markdown page and the CSV tables of a differential report (the JSON is the caller's)."""
    _, page, areas_csv, classes_csv = report_files(out, data["against"])
    areas, classes = area_frame(data), class_frame(data)
    areas.to_csv(areas_csv, index=False)
    classes.to_csv(classes_csv, index=False)
    lines = [
        f"# Differential: {data['against']} against {data['engine']}",
        "",
        f"A is {data['engine']} ({data['versions']['engine']}), "
        f"B is {data['against']} ({data['versions']['against']}). "
        f"Profile {data['profile']}, seeds {', '.join(map(str, data['seeds']))}; {data['seconds']} s. "
        f"{_summary_line(data)}. Triage: {data['triage'] or 'none'}.",
        "",
        "Both implementations run the same programs, call by call; every class of difference (area, call, "
        "observable, kind) gets a minimal repro (its triage entry's when that still shows it, else one shrunk "
        "in this run) and is judged against B's triage for its release.",
        "",
        "## Areas",
        "",
        _table(areas),
        "",
        "## Classes",
        "",
        _table(classes) if len(classes) else "No class of difference.",
        "",
    ]
    for index, row in enumerate(data["classes"], start=1):
        lines += [f"### {index}. {row['signature']}", ""]
        verdict = f"**{row['verdict']}**" + (f": {row['note']}" if row["note"] else "")
        lines.append(verdict + ".")
        if row["category"]:
            lines.append(f"Category: {TRIAGE_VERDICTS[row['category']].title}. Cause: {row['cause']}.")
            lines.append(f"{row['finding']} {row['reason']} Resolution: {row['resolution']}".strip())
        lines.append("")
        program = Program(row["area"], row["target"], tuple(row["statements"]))
        notes = {row["statement"]: f"A: {row['a']} | B: {row['b']}"} if row.get("found") else {}
        lines += ["```python", program.repro(data["against"], notes), "```", ""]
    page.write_text("\n".join(lines), encoding="utf-8")
    return [page, areas_csv, classes_csv]


def write_report(out: Path, data: dict[str, Any]) -> list[Path]:
    """``differential_<implementation>.json`` and the files :func:`write_report_files` renders from it."""
    out.mkdir(parents=True, exist_ok=True)
    path = report_files(out, data["against"])[0]
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return [path, *write_report_files(out, data)]


def triage_skeleton(row: dict[str, Any]) -> str:
    """A triage entry to fill in for an untriaged class, under ``differential:`` (the CLI prints it)."""
    repro = "\n".join(f"      {line}" for line in row["statements"])
    return (
        f"  - signature: {json.dumps(row['signature'])}\n"
        f"    verdict: {'|'.join(TRIAGE_VERDICTS)}\n"
        "    finding: what differs\n"
        "    cause: file:line in the implementation's source\n"
        "    resolution: what was done\n"
        f"    target: {row['target']}\n"
        f"    repro: |\n{repro}"
    )
