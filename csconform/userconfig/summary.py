"""Verdicts as text a person reads: one block per file, and a table for several files."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from csconform.findings.render import finding_text
from csconform.userconfig.release_changes import Change, ReleaseChanges
from csconform.userconfig.validate import Verdict

UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("d", 86400.0))


def unit_for(seconds: float) -> tuple[str, float]:
    """The unit a duration reads best in: seconds below 2 min, minutes below 2 h, hours below 3 d, days."""
    if seconds < 120:
        return UNITS[0]
    if seconds < 2 * 3600:
        return UNITS[1]
    if seconds < 3 * 86400:
        return UNITS[2]
    return UNITS[3]


def duration(seconds: float, unit: tuple[str, float] | None = None) -> str:
    """``532 s``, ``3.4 h``, ``12.5 d``: a duration in ``unit``, by default the one it reads best in."""
    name, size = unit or unit_for(seconds)
    return f"{seconds / size:.0f} s" if name == "s" else f"{seconds / size:.1f} {name}"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _schedule_lines(verdict: Verdict) -> list[str]:
    points = verdict.schedule
    if points is None:
        return []
    text = f"  LR schedule over {points.steps} steps (reference engine): first {points.first:.6g}"
    if points.warmup_end is not None:
        text += f"; warm-up ends at step {points.warmup_end[0]} ({points.warmup_end[1]:.6g})"
    for step, name, rate in points.boundaries:
        text += f"; step {step} {name} {rate:.6g}"
    text += f"; last (step {points.steps - 1}) {points.last:.6g}"
    if points.evaluated_steps < points.steps:
        text += f" [every step not evaluated: {points.evaluated_steps} evenly spaced steps and the boundaries]"
    return [text]


def _layer_rate_lines(verdict: Verdict) -> list[str]:
    """The layers that train at a multiple of the schedule: their factor, where it comes from, and the
    rates they see (the schedule's peak and last, and the steps --lr-at asked for)."""
    lines = []
    for rate in verdict.layer_rates:
        text = f"  {rate.layers}: the schedule's rate x {rate.factor:.4g} ({rate.source})"
        seen = rate.rates(verdict.schedule, verdict.learning_rate)
        if "max" in seen:
            text += f": peak {seen['max']:.6g}, last {seen['last']:.6g}"
        if seen["learning_rate"]:
            text += "; " + ", ".join(f"step {s}: {r:.6g}" for s, r in seen["learning_rate"].items())
        lines.append(text)
    return lines


def _plan_lines(verdict: Verdict) -> list[str]:
    plan = verdict.plan
    if plan is None:
        return [f"  parameters: {verdict.parameters:,}"] if verdict.parameters is not None else []
    active = f" ({plan.active_parameters:,} active per token)" if plan.active_parameters != plan.parameters else ""
    sequence = f", sequence {plan.seq_len}" if plan.seq_len else ""
    tokens = f", {plan.tokens_per_s:,.0f} tokens/s" if plan.tokens_per_s else ""
    lines = [
        f"  model: {plan.family}, {plan.parameters:,} parameters{active}",
        f"  plan: {plan.systems} x {plan.wafer} ({plan.mode}), global batch {plan.batch}{sequence}: "
        f"{plan.samples_per_s:,.4g} samples/s{tokens}; {plan.model_flops_per_step:.3g} model FLOPs per step",
        f"  bound by: {plan.binding_limit} ({plan.binding_detail}); systems: {plan.systems} ({plan.systems_source}); "
        f"mode: {plan.mode_source}",
    ]
    if plan.time_to_train_s is not None and plan.band is not None and plan.worst_band is not None:
        band, worst, unit = plan.band, plan.worst_band, unit_for(plan.time_to_train_s)
        widened = f"; the slow ends x{band.slower_by:.3g} further out on a {plan.wafer}" if band.slower_by > 1 else ""
        lines.append(
            f"  time to train: {plan.steps} steps x {plan.batch} / {plan.samples_per_s:,.4g} samples/s = "
            f"{duration(plan.time_to_train_s, unit)} (model error band x{band.factor:g}: "
            f"{duration(band.low_s, unit)} to {duration(band.high_s, unit)}; worst held-out run x{worst.factor:g}: "
            f"{duration(worst.low_s, unit)} to {duration(worst.high_s, unit)}{widened})"
        )
    return lines + [f"  plan note: {note}" for note in plan.notes]


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def render(verdict: Verdict) -> str:
    """The verdict on one file as a short report."""
    chosen = " (default: the newest release the spec knows)" if verdict.release_is_default else ""
    head = f"{verdict.path}: judged for release {verdict.release}{chosen}"
    if verdict.error:
        return f"{head}\n  cannot read: {verdict.error}\n  verdict: unreadable"
    lines = [f"{head}; {verdict.layout} layout"]
    lines.append(f"  violations ({len(verdict.violations)})")
    lines += [_indented(finding_text(f)) for f in verdict.violations]
    lines.append(f"  warnings ({len(verdict.warnings)})")
    lines += [_indented(finding_text(f)) for f in verdict.warnings]
    lines += _plan_lines(verdict)
    lines += _schedule_lines(verdict)
    if verdict.learning_rate:
        lines.append("  learning rate: " + ", ".join(f"step {s}: {r:.6g}" for s, r in verdict.learning_rate.items()))
    lines += _layer_rate_lines(verdict)
    if verdict.plot:
        lines.append(f"  plot: {verdict.plot}")
    lines += [f"  note: {note}" for note in verdict.notes]
    if verdict.suppressed:
        lines.append(f"  silenced: {verdict.suppressed} (csconform: ignore comments or [tool.csconform])")
    outcome = "conforms" if not verdict.violations else "breaks the rules above"
    counts = f"{plural(len(verdict.violations), 'violation')}, {plural(len(verdict.warnings), 'warning')}"
    lines.append(f"  verdict: {outcome} ({counts})")
    return "\n".join(lines)


def table(verdicts: Sequence[Verdict]) -> str:
    """One row per file: layout, outcome, counts, parameters, time to train."""
    rows = [
        [
            v.path,
            v.layout or "-",
            v.outcome,
            len(v.violations),
            len(v.warnings),
            "-" if v.parameters is None else f"{v.parameters:,}",
            "-" if v.plan is None or v.plan.time_to_train_s is None else duration(v.plan.time_to_train_s),
        ]
        for v in verdicts
    ]
    headers = ["file", "layout", "verdict", "violations", "warnings", "parameters", "time to train"]
    counts = {
        outcome: sum(v.outcome == outcome for v in verdicts) for outcome in ("conforms", "violations", "unreadable")
    }
    tail = (
        f"\n{len(verdicts)} files: {counts['conforms']} conform, {counts['violations']} with violations, "
        f"{counts['unreadable']} unreadable"
    )
    return tabulate(rows, headers=headers) + tail


def change_text(path: str, change: Change) -> str:
    """One change as a finding is printed: ``path:line: kind key: message``, what to do below."""
    where = f"{path}:{change.line}" if change.line else path
    rule = f" {change.rule}" if change.rule else ""
    key = f" {change.key}:" if change.key else ":"
    text = f"{where}: {change.kind}{rule}{key} {change.message}"
    return text + (f"\n    do: {change.action}" if change.action else "")


def render_changes(report: ReleaseChanges) -> str:
    """What changes for one file from one release to another, one change a line."""
    head = f"{report.path}: from release {report.source} to {report.target}"
    if report.error:
        return f"{head}\n  cannot read: {report.error}"
    lines = [f"{head}; {report.layout} layout; {plural(len(report.changes), 'change')}"]
    lines += [_indented(change_text(report.path, change)) for change in report.changes]
    if report.violations:
        lines.append(f"  release {report.target} refuses what release {report.source} accepts: exit status 1")
    return "\n".join(lines)
