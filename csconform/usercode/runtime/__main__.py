"""Run a training script's step on CPU and print the findings (until ``csconform lint --run`` has it).

    python -m csconform.usercode.runtime SCRIPT [--steps N] [--timeout S] [--step NAME] [--release R] -- ARGS

Exit status 0: no violation (warnings allowed); 1: a violation; 2: the script could not be read or
run far enough (the reason on one line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from csconform.errors import CsConformError
from csconform.findings import render
from csconform.spec.loader import default_specs_dir, load_spec
from csconform.spec.releases import load_catalogue
from csconform.usercode.runtime.process import lint_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m csconform.usercode.runtime", description=__doc__.splitlines()[0])
    parser.add_argument("script", type=Path)
    parser.add_argument("--steps", type=int, default=5, help="iterations of the step to run (default 5)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds the run may take (default 120)")
    parser.add_argument("--step", help="the step: FUNCTION of the script or MODULE:FUNCTION (default: found)")
    parser.add_argument("--release", help="the release to judge for (default: the newest)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="-- then the script's own arguments")
    arguments = parser.parse_args(argv)
    script_args = arguments.script_args[1:] if arguments.script_args[:1] == ["--"] else arguments.script_args
    try:
        specs_dir = default_specs_dir()
        catalogue = load_catalogue(specs_dir)
        release = catalogue.get(arguments.release) if arguments.release else catalogue.newest
        reports = lint_run(
            arguments.script,
            script_args,
            spec=load_spec(specs_dir),
            release=release,
            steps=arguments.steps,
            timeout_s=arguments.timeout,
            step=arguments.step,
        )
    except CsConformError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render.text(reports))
    return max((report.exit_code for report in reports), default=0)


if __name__ == "__main__":
    sys.exit(main())
