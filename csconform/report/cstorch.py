"""The vendor's matrix beside ours: cerebras.pytorch 2.10 against the spec, with its triage table.

``tox -e cstorch`` runs the conformance suite against :mod:`csconform.adapters.cstorch` in an
environment of its own (the package pins torch 2.4 and numpy 1.25) and writes
``conformance_cstorch.json``; this module turns that matrix, the reference engine's matrix
(``conformance.json``, when the report folder has one) and the rules of the adapter's triage into
``conformance_cstorch.md`` and ``.csv``: outcomes per level for both implementations, every rule
side by side, and every triaged disagreement with its verdict and evidence.

Run as ``python -m csconform.report.cstorch --out reports`` (the tox env does), or as the
``cstorch`` section of ``csconform report``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from csconform.conformance import SUITE_DIR
from csconform.documents import read_document
from csconform.errors import CsConformError
from csconform.output_guard import write_csv, write_text
from csconform.report.conformance import OUTCOMES, check_matrix, matrix_frame, provenance, summary_line
from csconform.spec import LEVELS, Spec, load_spec
from csconform.spec.traceability import rules_by_test
from csconform.spec.verdict import BINDING_LEVELS, conforms
from csconform.triage import Triage, load_triage

MATRIX_FILE = "conformance_cstorch.json"
REFERENCE_MATRIX_FILE = "conformance.json"
TRIAGE_FILE = Path(__file__).resolve().parents[1] / "adapters" / "cstorch" / "triage" / "2.10.0.yaml"
PRODUCED_BY = "tox -e cstorch (installs cerebras-pytorch 2.10.0 in its own environment, about 2.5 GB)"


def read_matrix(path: Path) -> dict:
    """A matrix JSON the plugin wrote; anything else is a clear error."""
    matrix = read_document(path, what="conformance matrix (JSON)").data
    return check_matrix(matrix, str(path), f"rerun: {PRODUCED_BY}")


def triaged_rules(triage: Triage, spec: Spec) -> dict[str, list[str]]:
    """Rule id -> the verdicts of the triage entries about it (named directly or through a test)."""
    by_test = rules_by_test(SUITE_DIR)
    verdicts: dict[str, list[str]] = {}
    for entry in triage.rules:
        for triaged_id in entry.ids:
            rule_ids = {triaged_id} if triaged_id in spec else by_test.get(triaged_id.split("[")[0], set())
            for rule_id in rule_ids:
                verdicts.setdefault(rule_id, [])
                if entry.verdict not in verdicts[rule_id]:
                    verdicts[rule_id].append(entry.verdict)
    return verdicts


def level_frame(matrices: dict[str, dict]) -> pd.DataFrame:
    """Per implementation and level: applicable rules, how many pass, and every outcome's count."""
    rows = []
    for name, matrix in matrices.items():
        for level in LEVELS:
            entry = matrix["levels"][level]
            rows.append(
                {
                    "implementation": name,
                    "level": f"{level} ({'binding' if level in BINDING_LEVELS else 'informative'})",
                    "applicable": entry["applicable"],
                    **{outcome: entry["outcomes"].get(outcome, 0) for outcome in OUTCOMES},
                }
            )
    return pd.DataFrame(rows)


def side_by_side(matrix: dict, reference: dict | None, verdicts: dict[str, list[str]], spec: Spec) -> pd.DataFrame:
    """The vendor's matrix (:func:`matrix_frame`) with our outcome, the triage verdicts and the reasons."""
    frame = matrix_frame(matrix, spec).rename(columns={"outcome": "cerebras.pytorch"})
    reference_rules = reference["rules"] if reference else {}
    frame["reference engine"] = [reference_rules.get(r, {}).get("outcome", "") for r in frame["rule"]]
    frame["triage"] = [", ".join(verdicts.get(r, ())) for r in frame["rule"]]
    frame["unsupported because"] = ["; ".join(matrix["rules"][r].get("unsupported_reasons", ())) for r in frame["rule"]]
    columns = ["rule", "level", "title", "reference engine", "cerebras.pytorch", "emulated", "triage"]
    return frame[[*columns, "unsupported because"]]


def expectations_section(matrix: dict) -> str:
    """The run's expected failures: for which release, and every one that went stale (which fails the run)."""
    expected = matrix.get("expected_failures")
    if not isinstance(expected, dict):
        return "## Expected failures\n\nThis matrix was written without a triage file.\n\n"
    stale = [
        f"- `{test}` passed although expected to fail ({', '.join(entries)})"
        for test, entries in expected.get("unexpected_passes", {}).items()
    ] + [f"- `{entry}` matches no test" for entry in expected.get("unmatched", [])]
    stale += [
        f"- `{entry}` failed in no test: its {count} test(s) were skipped or unsupported"
        for entry, count in expected.get("not_applied", {}).items()
    ]
    stale += [
        f"- `{test}` passed although its verdict says it cannot be observed ({', '.join(entries)})"
        for test, entries in expected.get("observed", {}).items()
    ]
    lines = "\n".join(stale) if stale else "None: every expected failure failed, and every entry matched a test."
    return (
        "## Expected failures\n\n"
        f"{expected.get('entries', 0)} entries of `{Path(str(expected.get('file', ''))).name}`, the verdicts for "
        f"{expected.get('release') or 'an unversioned list'}. Stale expectations (each fails the run):\n\n"
        f"{lines}\n\n"
    )


def _table(frame: pd.DataFrame) -> str:
    from tabulate import tabulate

    return tabulate(frame.values.tolist(), headers=list(frame.columns), tablefmt="github")


def write_cstorch_report(out_dir: Path, triage_path: Path = TRIAGE_FILE) -> list[Path]:
    """``conformance_cstorch.md`` and ``.csv`` from the matrices in ``out_dir`` and the triage file."""
    matrix_path = out_dir / MATRIX_FILE
    matrix = read_matrix(matrix_path)
    reference_path = out_dir / REFERENCE_MATRIX_FILE
    reference, reference_note = None, " (not in this folder: run csconform report)"
    if reference_path.is_file():
        try:
            reference, reference_note = read_matrix(reference_path), ""
        except CsConformError:  # written by an older csconform: the vendor's page stands without it
            reference_note = " (the one in this folder has no per-level results: run csconform report)"
    spec = load_spec()
    triage = load_triage(triage_path)
    verdicts = triaged_rules(triage, spec)
    release = f"{triage.package} {triage.version}"
    matrices = {release: matrix, **({"reference engine": reference} if reference else {})}
    levels, rules = level_frame(matrices), side_by_side(matrix, reference, verdicts, spec)
    triage_rows = pd.DataFrame(
        [
            {
                "ids": ", ".join(e.ids),
                "verdict": e.verdict,
                "finding": e.finding,
                "evidence": e.evidence,
                "resolution": e.resolution,
            }
            for e in triage.rules
        ]
    )
    verdict = "conforms" if conforms(matrix["levels"]) else "does not conform"
    csv_path, md_path = out_dir / "conformance_cstorch.csv", out_dir / "conformance_cstorch.md"
    write_csv(rules, csv_path, index=False)
    write_csv(levels, out_dir / "conformance_cstorch_levels.csv", index=False)
    write_text(
        md_path,
        f"# Conformance of {release}\n\n"
        f"The vendor's package on its CPU backend, through {provenance(matrix)}; triaged for "
        f"{triage.implementation}. {summary_line(matrix)}. On the binding levels (documented, public) "
        f"it {verdict}, counting its expected failures (`xfailed`: triaged departures from its own "
        "documents, and reference choices it makes otherwise) as not passing. Produced by "
        f"`{PRODUCED_BY.split(' (')[0]}`; the reference engine's column is `{REFERENCE_MATRIX_FILE}`"
        f"{reference_note}.\n\n"
        "`unsupported`: the capability or target is not in the package, or cannot be observed on its CPU "
        "backend (the reason is in the rule's row). `emulated`: the rule was driven through the adapter's "
        "emulation of the CS backend's duties around a component (see the adapter's README).\n\n"
        "## Per level\n\n"
        + _table(levels)
        + "\n\n"
        + expectations_section(matrix)
        + "## Triage: every disagreement, with its verdict and evidence\n\n"
        "Paths are relative to site-packages. *departs-from-docs*: the package does not do what its own "
        "documents say (expected failure); *reference-choice*: a reference rule (our own choice) the package "
        "decides otherwise (expected failure, informative); *spec-claims-too-much*: our rule said more than "
        "the documents and was fixed; *not-observable*: unsupported on this backend.\n\n"
        + _table(triage_rows)
        + "\n\n## Every rule, side by side\n\n"
        + _table(rules)
        + "\n",
        encoding="utf-8",
    )
    return [csv_path, out_dir / "conformance_cstorch_levels.csv", md_path]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write conformance_cstorch.md from the matrices in --out")
    parser.add_argument("--out", required=True, type=Path, help=f"the folder holding {MATRIX_FILE}")
    args = parser.parse_args(argv)
    try:
        written = write_cstorch_report(args.out)
    except CsConformError as error:
        parser.exit(1, f"csconform: {error}\n")
    print("\n".join(str(path) for path in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
