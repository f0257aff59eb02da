"""Every params file of a Model Zoo release through ``validate``: counts, and what the vendor's files break.

``python -m csconform.userconfig.sweep CLONE --out reports/modelzoo_validation`` reads every params
file under the model folders of the releases named (default: every release of ``specs/releases.yaml``)
from a clone of https://github.com/Cerebras/modelzoo at each release's commit, judges each for its own
release (and 1.9.1's, the last flat-layout release users migrate from, for the newest too), and writes
a JSON record and a Markdown page. ``tests/unit/validate`` runs the same
sweep when a clone is given (``CSCONFORM_MODELZOO``) and compares it with the committed record.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.spec.loader import default_specs_dir, load_spec
from csconform.spec.releases import Release, load_catalogue
from csconform.userconfig.read_flat import framework_of
from csconform.userconfig.tf_bert import vocabulary_file
from csconform.userconfig.validate import Verdict, release_options, validate_file
from csconform.userconfig.vocabulary import git, is_model_params_file, release_files

ALSO_FOR_NEWEST = ("1.9.1",)
"""Releases whose files are judged for the newest release as well as their own."""
VENDOR_DEFECTS = {
    "CONFIG-066": "the extractive-summarization (BertSum) files of 1.9.1 to 2.1.1 train on 1532- and 768-token "
    "sequences over a learned position table of 512 rows, whose lookup reads past its end; 2.2.0's files set "
    "max_position_embeddings to the sequence length",
}
"""The rules the vendor's own files break at their own release, each a defect of the files: why."""
TOP = 8


def extract(mirror: Path, release: Release, into: Path) -> list[Path]:
    """Write every params file of the release's model folders under ``into``, keeping their paths (so that
    a 1.x TensorFlow BERT fine-tuning file finds its pre-training file), and the vocabulary files the
    TensorFlow BERT files count (``train_input.vocab_file``) where the release holds them; the params
    files written."""
    names = release_files(mirror, release)
    paths = [_write(mirror, release, name, into) for name in names if is_model_params_file(name)]
    held = set(names)
    for path in paths:
        vocabulary = vocabulary_file(path) if framework_of(path.relative_to(into)) == "tensorflow" else None
        name = None if vocabulary is None else Path(os.path.relpath(vocabulary, into)).as_posix()
        if name in held and not (into / name).exists():
            _write(mirror, release, name, into)
    return paths


def _write(mirror: Path, release: Release, name: str, into: Path) -> Path:
    target = into / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(git(mirror, "show", f"{release.commit}:{name}"), encoding="utf-8")
    return target


@dataclass(frozen=True)
class Sweep:
    """The verdicts on one release's files, judged for one release."""

    files_of: str
    judged_for: str
    verdicts: tuple[Verdict, ...]

    def summary(self) -> dict[str, Any]:
        outcomes = Counter(v.outcome for v in self.verdicts)
        violations = Counter(f.rule for v in self.verdicts for f in v.violations)
        warnings = Counter(f.rule for v in self.verdicts for f in v.warnings)
        files_with = Counter(rule for v in self.verdicts for rule in {f.rule for f in v.violations})
        return {
            "files_of": self.files_of,
            "judged_for": self.judged_for,
            "files": len(self.verdicts),
            "read": sum(v.outcome != "unreadable" for v in self.verdicts),
            "conform": outcomes["conforms"],
            "with_violations": outcomes["violations"],
            "unreadable": outcomes["unreadable"],
            "planned": sum(v.plan is not None for v in self.verdicts),
            "planned_by_family": dict(
                Counter(v.plan.family for v in self.verdicts if v.plan is not None).most_common()
            ),
            "violations": dict(violations.most_common()),
            "files_with_violation": dict(files_with.most_common()),
            "warnings": dict(warnings.most_common()),
        }


def sweep(mirror: Path, files_of: str, judged_for: str, workdir: Path) -> Sweep:
    """Validate every params file of release ``files_of`` for release ``judged_for``."""
    specs_dir = default_specs_dir()
    spec, catalogue = load_spec(specs_dir), load_catalogue(specs_dir)
    options = release_options(catalogue, judged_for)
    root = workdir / files_of  # extracted once, then judged for as many releases as asked
    paths = extract(mirror, catalogue.get(files_of), root) if not root.exists() else sorted(root.rglob("*.y*ml"))
    verdicts = tuple(validate_file(path, spec, options) for path in sorted(paths))
    return Sweep(files_of, options.release.name, verdicts)


def markdown(sweeps: list[Sweep], examples: dict[str, list[str]]) -> str:
    """The page: one table of counts, then the rules the vendor's own files break or come close to."""
    lines = [
        "# The Model Zoo's own params files through `csconform validate`",
        "",
        "Every params file under the model folders of each release (https://github.com/Cerebras/modelzoo at the "
        "commit in `specs/releases.yaml`), judged for its own release (1.9.1's also for the newest). Regenerate with "
        "`python -m csconform.userconfig.sweep CLONE --out reports/modelzoo_validation`; "
        "`tests/unit/validate/test_modelzoo_sweep.py` compares a fresh sweep with `modelzoo_validation.json` "
        "when `CSCONFORM_MODELZOO` names a clone.",
        "",
        "| files of | judged for | files | read | conform | with violations | unreadable | model planned |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in (sweep.summary() for sweep in sweeps):
        lines.append(
            f"| {s['files_of']} | {s['judged_for']} | {s['files']} | {s['read']} | {s['conform']} | "
            f"{s['with_violations']} | {s['unreadable']} | {s['planned']} |"
        )
    for sweep_ in sweeps:
        s = sweep_.summary()
        lines += ["", f"## Files of {s['files_of']} judged for {s['judged_for']}", ""]
        own = s["files_of"] == s["judged_for"]
        if s["files_with_violation"]:
            lines.append("Violations (rule: files breaking it):")
            lines += [
                f"- {rule}: {count}" + (f" ({VENDOR_DEFECTS[rule]})" if own and rule in VENDOR_DEFECTS else "")
                for rule, count in list(s["files_with_violation"].items())[:TOP]
            ]
        else:
            lines.append("No violation in any file.")
        lines += ["", "Planned by family: " + ", ".join(f"{name} {n}" for name, n in s["planned_by_family"].items())]
        lines += ["", "Warnings (rule: findings):"]
        lines += [f"- {rule}: {count}" for rule, count in list(s["warnings"].items())[:TOP]]
        key = f"{s['files_of']}@{s['judged_for']}"
        if examples.get(key):
            lines += ["", "For example:"] + [f"- {example}" for example in examples[key]]
    return "\n".join(lines) + "\n"


def _examples(sweep_: Sweep, root: Path) -> list[str]:
    """One finding per rule, the most common rules first, with the file it is in (paths in the message
    relative to the release's tree, as the file's own is)."""
    seen: dict[str, str] = {}
    tree = f"{root / sweep_.files_of}{os.sep}"
    for verdict in sweep_.verdicts:
        for finding in (*verdict.violations, *verdict.warnings):
            if finding.rule not in seen:
                name = Path(verdict.path).relative_to(root / sweep_.files_of).as_posix()
                where = (finding.key or "") + (f" (line {finding.line})" if finding.line else "")
                seen[finding.rule] = f"{finding.rule} in `{name}` at `{where}`: {finding.message.replace(tree, '')}"
    order = list(sweep_.summary()["files_with_violation"]) + list(sweep_.summary()["warnings"])
    return [seen[rule] for rule in dict.fromkeys(order) if rule in seen][:TOP]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m csconform.userconfig.sweep", description=__doc__)
    parser.add_argument("clone", type=Path, help="a clone of https://github.com/Cerebras/modelzoo")
    parser.add_argument("--out", type=Path, required=True, help="OUT.json and OUT.md are written")
    parser.add_argument("--releases", help="releases whose files to read (default: every release)")
    args = parser.parse_args(argv)
    catalogue = load_catalogue(default_specs_dir())
    newest = catalogue.newest.name
    releases = args.releases.split(",") if args.releases else [release.name for release in catalogue.releases]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sweeps, examples = [], {}
        for files_of in releases:
            for judged_for in dict.fromkeys((files_of, newest) if files_of in ALSO_FOR_NEWEST else (files_of,)):
                result = sweep(args.clone, files_of, judged_for, root)
                sweeps.append(result)
                examples[f"{files_of}@{result.judged_for}"] = _examples(result, root)
        record = {"sweeps": [s.summary() for s in sweeps]}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        args.out.with_suffix(".md").write_text(markdown(sweeps, examples), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
