"""``lint_run``: the user's script run in a process of its own, and its observations judged.

The script runs in a child process (:mod:`.child`) with the same interpreter, in the current
directory, its output kept aside: it cannot touch csconform's state, and whatever it does (raise,
exit, hang, crash the interpreter) ends only the child. The child writes its observations as it
goes and stops itself at the time limit (a thread notes where the script was); the parent kills the
child's whole process group a few seconds later if it did not, and after it ends (DataLoader
workers). A script that cannot be read or compiled is an unreadable file (exit 2); one that stops
before its first step, or never calls a step that can be observed, is a :class:`ScriptRunError`.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import csconform
from csconform.arguments import check_integer, check_real
from csconform.documents import read_text
from csconform.errors import InvalidInputError, ScriptRunError, UnreadableDocumentError
from csconform.findings.finding import FileReport
from csconform.spec.model import Spec
from csconform.spec.releases import Release
from csconform.usercode.runtime.events import Event, RunEnd, StepCall, read_events
from csconform.usercode.runtime.judge import judge

KILL_GRACE_S = 10.0
"""How long after its own time limit the child is killed (its thread cannot run while C code holds the GIL)."""
STDERR_TAIL_BYTES = 4000


def lint_run(
    script: Path,
    script_args: list[str],
    *,
    spec: Spec,
    release: Release,
    steps: int,
    timeout_s: float,
    step: str | None = None,
) -> list[FileReport]:
    """Run ``script`` with ``script_args`` for ``steps`` iterations of its step on CPU within
    ``timeout_s`` seconds; one report for the script, then one per other user file with findings.

    The step is the first callable the script compiles with ``torch.compile`` or traces with
    ``cstorch.trace`` and then calls, unless ``step`` names it: ``FUNCTION`` (a function defined at
    the top level of the script) or ``MODULE:FUNCTION`` (a function of a module the script imports).
    """
    steps = check_integer("--steps", steps, minimum=1)
    timeout_s = check_real("--timeout", timeout_s, minimum=0.0, exclusive_minimum=True)
    shown = str(script)
    try:
        tree = ast.parse(read_text(script, what="script"), filename=shown)
    except UnreadableDocumentError as exc:
        return [FileReport(shown, error=str(exc))]
    except SyntaxError as exc:
        return [FileReport(shown, error=f"{shown}: line {exc.lineno}: not Python: {exc.msg}")]
    if step is not None:
        _check_step(step, tree, shown)
    events = _run_child(script, script_args, steps, timeout_s, step)
    end = _end_of(events)
    if not any(isinstance(event, StepCall) for event in events):
        raise ScriptRunError(_no_step(end, shown, timeout_s))
    absolute = os.path.realpath(script)
    verdicts = judge(events, absolute, spec, release, lambda file: _shown(file, absolute, shown))
    reports = []
    for path, findings in sorted(verdicts.files.items(), key=lambda item: (item[0] != shown, item[0])):
        reports.append(FileReport(path, violations=findings.violations, warnings=findings.warnings))
    return reports


def _check_step(step: str, tree: ast.Module, shown: str) -> None:
    module, colon, name = step.rpartition(":")
    if not name.isidentifier() or (colon and not all(part.isidentifier() for part in module.split("."))):
        raise InvalidInputError(f"--step takes FUNCTION or MODULE:FUNCTION, got {step!r}")
    defined = {
        statement.name for statement in tree.body if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    if not colon and name not in defined:
        raise InvalidInputError(f"{shown}: --step {step}: no function {name} is defined at the top level of the script")


def _run_child(script: Path, script_args: list[str], steps: int, timeout_s: float, step: str | None) -> list[Event]:
    with tempfile.TemporaryDirectory(prefix="csconform-run-") as folder:
        work = Path(folder)
        events_path, config_path, stderr_path = work / "events.jsonl", work / "run.json", work / "stderr.txt"
        events_path.touch()
        config = {
            "script": os.path.realpath(script),
            "args": list(script_args),
            "steps": steps,
            "step": step,
            "events": str(events_path),
            "timeout_s": timeout_s,
        }
        config_path.write_text(json.dumps(config), encoding="utf-8")
        package_root = str(Path(csconform.__file__).resolve().parent.parent)
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, environment.get("PYTHONPATH")]))
        with open(stderr_path, "wb") as stderr:
            child = subprocess.Popen(
                [sys.executable, "-m", "csconform.usercode.runtime.child", str(config_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=environment,
                start_new_session=True,
            )
            try:
                child.wait(timeout=timeout_s + KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _kill_group(child)
                child.wait()
            finally:
                _kill_group(child)  # what the script started (DataLoader workers) ends with it
        events = read_events(events_path)
        if not any(isinstance(event, RunEnd) for event in events):
            steps_seen = sum(isinstance(event, StepCall) for event in events)
            events.append(RunEnd("killed", steps_seen, None, _killed_detail(child.returncode, stderr_path, timeout_s)))
        return events


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)


def _killed_detail(returncode: int | None, stderr_path: Path, timeout_s: float) -> str:
    if returncode == -signal.SIGKILL:
        return f"killed after the time limit of {timeout_s:g} s"
    data = stderr_path.read_bytes()[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace").strip()
    last = data.splitlines()[-1] if data else "nothing on stderr"
    return f"status {returncode}: {last}"


def _end_of(events: list[Event]) -> RunEnd:
    ends = [event for event in events if isinstance(event, RunEnd)]
    return ends[-1]


def _no_step(end: RunEnd, shown: str, timeout_s: float) -> str:
    where = f"{shown}: line {end.at.line}: " if end.at is not None else f"{shown}: "
    if end.status == "no_torch":
        return f"{shown}: PyTorch cannot be imported by {sys.executable} ({end.detail}); lint --run needs it"
    if end.status == "raised":
        return f"{where}the script raised {end.detail} before its first step"
    if end.status == "exit":
        return f"{where}the script exited ({end.detail}) before its first step"
    if end.status == "timeout":
        return f"{where}the time limit of {timeout_s:g} s ran out before the script's first step"
    if end.status == "killed":
        return f"{shown}: the script's process ended before its first step ({end.detail})"
    return (
        f"{shown}: the script ran to its end without calling a step csconform can observe: compile the step with "
        f"torch.compile, trace it with cstorch.trace, or name it with --step"
    )


def _shown(file: str, script: str, shown_script: str) -> str:
    """The path a finding names: the script as the user gave it; another file relative to the
    current directory when it is under it."""
    if file == script:
        return shown_script
    try:
        return os.path.relpath(file) if not os.path.relpath(file).startswith("..") else file
    except ValueError:
        return file
