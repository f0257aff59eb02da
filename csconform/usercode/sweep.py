"""The Model Zoo's own code through ``csconform lint``: every finding, and a verdict on each.

``python -m csconform.usercode.sweep CLONE --verdicts VERDICTS --out reports/modelzoo_lint`` reads the
Python files of the Model Zoo's training code at several releases from a clone of
https://github.com/Cerebras/modelzoo (1.x: the ``modelzoo`` package, its common runners and its
models; 2.x: the ``src/cerebras/modelzoo`` package, its trainer, models and input pipelines; offline
data preparation and checkpoint tools left out), lints each release's files as one run judged for
that release, and writes a JSON record and a Markdown page. The vendor's code ran on the system, so
every finding must be either true (the verdicts file says why) or a false positive, fixed in the
checker; a finding without a verdict is listed as such and fails the test that reruns the sweep
(``tests/unit/usercode/test_modelzoo_lint.py``, when ``CSCONFORM_MODELZOO`` names a clone).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from csconform.errors import InvalidInputError
from csconform.findings.config import ProjectConfig
from csconform.findings.finding import FileReport
from csconform.spec.loader import default_specs_dir, load_spec
from csconform.spec.releases import Release, load_catalogue
from csconform.usercode.lint import lint_paths

DEFAULT_RELEASES = ("1.6.0", "1.7.1", "1.8.0", "1.9.1", "2.0.2", "2.4.0", "2.10.0")
LEFT_OUT = ("data_preparation", "/tools/", "/cli/", "/scripts/", "/write_", "/test", "/tests/")
"""Paths (parts) that are not training code: offline data preparation (and the scripts writing
TFRecords), checkpoint tools and command lines, tests."""


def training_code(path: str) -> bool:
    """A Python file of the release's training code (1.x ``modelzoo/``, 2.x ``src/cerebras/modelzoo/``)."""
    if not path.endswith(".py") or not path.startswith(("modelzoo/", "src/cerebras/modelzoo/")):
        return False
    return not any(part in f"/{path}" for part in LEFT_OUT)


def extract(clone: Path, release: Release, into: Path, keep: Callable[[str], bool] = training_code) -> list[Path]:
    """Write the release's files that ``keep`` (default: its training code) under ``into``, their
    paths kept, through one git process."""
    listing = subprocess.run(
        ["git", "-C", str(clone), "ls-tree", "-r", release.commit], capture_output=True, check=False, text=True
    )
    if listing.returncode:
        raise InvalidInputError(f"git ls-tree {release.commit} failed in {clone}: {listing.stderr.strip()}")
    entries = [line.split(None, 3) for line in listing.stdout.splitlines()]
    wanted = [(obj, name) for _, kind, obj, name in entries if kind == "blob" and keep(name)]
    batch = subprocess.run(
        ["git", "-C", str(clone), "cat-file", "--batch"],
        input="".join(f"{obj}\n" for obj, _ in wanted).encode(),
        capture_output=True,
        check=False,
    )
    if batch.returncode:
        raise InvalidInputError(f"git cat-file failed in {clone}: {batch.stderr.decode(errors='replace').strip()}")
    data, offset, paths = batch.stdout, 0, []
    for _, name in wanted:
        header_end = data.index(b"\n", offset)
        header = data[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data[offset : offset + size])
        offset += size + 1
        paths.append(target)
    return paths


@dataclass(frozen=True)
class ReleaseSweep:
    release: str
    reports: tuple[FileReport, ...]
    root: Path

    def findings(self) -> list[dict[str, Any]]:
        """Every finding, with the code of its line (what a verdict is about, whatever its line number)."""
        found = []
        for report in self.reports:
            lines = Path(report.path).read_text(encoding="utf-8").splitlines() if report.findings else []
            for finding in report.findings:
                found.append(
                    {
                        "file": Path(report.path).relative_to(self.root).as_posix(),
                        "line": finding.line,
                        "column": finding.column,
                        "rule": finding.rule,
                        "severity": finding.severity,
                        "code": lines[finding.line - 1].strip() if finding.line else "",
                        "message": finding.message,
                    }
                )
        return found

    def summary(self) -> dict[str, Any]:
        findings = self.findings()
        return {
            "release": self.release,
            "files": len(self.reports),
            "read": sum(r.error is None for r in self.reports),
            "unreadable": [Path(r.path).relative_to(self.root).as_posix() for r in self.reports if r.error],
            "files_with_findings": sum(bool(r.findings) for r in self.reports),
            "findings": dict(Counter(f["rule"] for f in findings).most_common()),
        }


def sweep(clone: Path, release_name: str, workdir: Path) -> ReleaseSweep:
    """Lint the training code of one release, judged for that release."""
    specs_dir = default_specs_dir()
    spec, catalogue = load_spec(specs_dir), load_catalogue(specs_dir)
    release = catalogue.get(release_name)
    root = workdir / release.name
    if not root.exists():
        extract(clone, release, root)
    reports = lint_paths([str(root)], spec, release, ProjectConfig())
    return ReleaseSweep(release.name, tuple(reports), root)


def verdict_key(finding: dict[str, Any]) -> str:
    """What a verdict is keyed by: the file, the rule and the code of the line (so that one verdict
    holds for the same code in every release, wherever its line moved)."""
    return f"{finding['file']} {finding['rule']} {finding['code']}"


def record(sweeps: list[ReleaseSweep], verdicts: dict[str, str]) -> dict[str, Any]:
    """The JSON record: per release, the counts and every finding with its verdict (None: none yet)."""
    return {
        "releases": [
            {
                **s.summary(),
                "findings_judged": [{**f, "verdict": verdicts.get(verdict_key(f))} for f in s.findings()],
            }
            for s in sweeps
        ]
    }


def markdown(document: dict[str, Any]) -> str:
    lines = [
        "# The Model Zoo's own code through `csconform lint`",
        "",
        "The training code of each release (https://github.com/Cerebras/modelzoo at the commit in "
        "`specs/releases.yaml`: 1.x `modelzoo/`, 2.x `src/cerebras/modelzoo/`, without offline data preparation, "
        "tools, scripts and tests), linted as one run judged for its own release. The vendor's code ran on the "
        "system, so each finding is judged below: true (why), or a false positive that was fixed in the checker. "
        "Regenerate with `python -m csconform.usercode.sweep CLONE --verdicts "
        "tests/unit/usercode/modelzoo_verdicts.yaml --out reports/modelzoo_lint`; "
        "`tests/unit/usercode/test_modelzoo_lint.py` reruns the sweep against `modelzoo_lint.json` when "
        "`CSCONFORM_MODELZOO` names a clone.",
        "",
        "| release | files | read | with findings | findings | rules |",
        "|---|---|---|---|---|---|",
    ]
    for entry in document["releases"]:
        total = sum(entry["findings"].values())
        rules = ", ".join(f"{rule} x{count}" for rule, count in entry["findings"].items()) or "none"
        lines.append(
            f"| {entry['release']} | {entry['files']} | {entry['read']} | {entry['files_with_findings']} | "
            f"{total} | {rules} |"
        )
    for entry in document["releases"]:
        lines += ["", f"## {entry['release']}", ""]
        if entry["unreadable"]:
            lines += [f"Unreadable: {', '.join(entry['unreadable'])}", ""]
        if not entry["findings_judged"]:
            lines.append("No finding.")
            continue
        lines += ["| place | rule | finding | verdict |", "|---|---|---|---|"]
        for f in entry["findings_judged"]:
            message = f["message"].replace("|", "\\|")
            verdict = (f["verdict"] or "**not judged yet**").replace("|", "\\|")
            lines.append(f"| `{f['file']}:{f['line']}` | {f['rule']} | {message} | {verdict} |")
    return "\n".join(lines) + "\n"


def load_verdicts(path: Path) -> dict[str, str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    return {str(key): str(value) for key, value in (data or {}).get("verdicts", {}).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m csconform.usercode.sweep", description=__doc__)
    parser.add_argument("clone", type=Path, help="a clone of https://github.com/Cerebras/modelzoo")
    parser.add_argument("--verdicts", type=Path, required=True, help="the YAML file of verdicts on the findings")
    parser.add_argument("--out", type=Path, required=True, help="OUT.json and OUT.md are written")
    parser.add_argument("--releases", default=",".join(DEFAULT_RELEASES), help="releases whose code to lint")
    args = parser.parse_args(argv)
    verdicts = load_verdicts(args.verdicts)
    with tempfile.TemporaryDirectory() as tmp:
        sweeps = [sweep(args.clone, name, Path(tmp)) for name in args.releases.split(",")]
        document = record(sweeps, verdicts)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        args.out.with_suffix(".md").write_text(markdown(document), encoding="utf-8")
    judged = [f for entry in document["releases"] for f in entry["findings_judged"]]
    print(f"{len(judged)} findings, {sum(f['verdict'] is None for f in judged)} without a verdict")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
