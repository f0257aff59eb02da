"""One adversarial case of the ``csconform`` command line, and the properties every case must keep.

A case is a set of files (written into a fresh folder) and a command line run in that folder. The
command runs in-process through :func:`csconform.cli.main`, with stdout and stderr captured; a case
marked ``subprocess`` runs the console entry point in a child process instead. After the run:

- the exit status is 0, 1 or 2 (and one the case allows);
- stderr holds at most :data:`MAX_STDERR_LINES` lines, no traceback and no Python warning, and a
  refusal (status 2) ends with a ``csconform`` line saying what was wrong;
- every ``.json`` file the command wrote is strict JSON (no NaN, no Infinity);
- every file the case brought into the folder is byte-identical afterwards (and keeps its mode),
  whatever the outputs are named (an output that is an input, or a link to one, must be refused);
  new files appear only at or under the named outputs; the files the package ships (specs,
  calibration, configs) are unchanged too;
- the run finished within the case's time limit.

Cases come from two places: the corpus (``corpus/*.json``, the cases found so far, replayed every
run) and the Hypothesis strategies of :mod:`adversarial_strategies`. Both are :class:`Case` values.
"""

from __future__ import annotations

import base64
import contextlib
import faulthandler
import hashlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
MAX_STDERR_LINES = 8
CLASSES = (
    "output-path",  # an output that resolves to an input, an unwritable destination
    "reader",  # malformed, oversized, nested, non-finite, wrongly typed or wrongly encoded files
    "resource",  # fabric size, instance size, file size
    "time-limit",  # limits honoured; no hang
    "restore",  # checkpoints: all-or-nothing restores, temporary files
    "non-finite",  # NaN and infinities in data and weights
    "api-types",  # engine API arguments of the wrong type
    "usage",  # command-line options: empty, bogus, unknown
)
# files shipped with the package: no command may change them unless a case names them as outputs
SHIPPED = ("specs", "csconform/perf/calibration/calibration.json", "csconform/perf/configs", "csconform/perf/measured")


@dataclass
class Case:
    """Files, a command line and what the run may do."""

    name: str
    kind: str  # one of CLASSES
    argv: list[str]
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)  # folder-relative paths (a folder covers its contents)
    exit_codes: tuple[int, ...] = (0, 1, 2)
    stderr: str | None = None  # a phrase a refusal must contain (case-insensitive)
    time_limit_s: float = 60.0
    subprocess: bool = False
    found: str = ""  # what the command did before the fix
    env: dict[str, str] = field(default_factory=dict)  # environment variables for the run ({dir}: the folder)

    @classmethod
    def from_json(cls, path: Path) -> Case:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            name=path.stem,
            kind=data["class"],
            argv=list(data["argv"]),
            files=dict(data.get("files", {})),
            outputs=list(data.get("outputs", [])),
            exit_codes=tuple(data.get("exit", (0, 1, 2))),
            stderr=data.get("stderr"),
            time_limit_s=float(data.get("time_limit_s", 60.0)),
            subprocess=bool(data.get("subprocess", False)),
            found=data["found"],
            env=dict(data.get("env", {})),
        )


def corpus() -> list[Case]:
    return [Case.from_json(path) for path in sorted(CORPUS.glob("*.json"))]


# --- materialising the files -------------------------------------------------------------------------


def nested_json(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def nested_yaml(depth: int) -> str:
    return "a: " + "[" * depth + "1" + "]" * depth + "\n"


def kgraph(kernels: int, width: int = 633, height: int = 633, fields: str = "W=8 H=8 R=3 S=3 C=16 K=16 T=1 U=1") -> str:
    """An instance of ``kernels`` identical small convolutions in a chain."""
    lines = [f"(*\nwidth={width}\nheight={height}\nmemlimit=24576\n*)"]
    lines += [f"conv[{i}] {fields} name='k{i}'" for i in range(1, kernels + 1)]
    lines += [f"conv[{i}]:o -> conv[{i + 1}]:i, shape:[8][8][16]" for i in range(1, kernels)]
    return "\n".join(lines) + "\n"


def alias_bomb(levels: int, width: int) -> str:
    """A YAML "billion laughs": each anchor a list of ``width`` aliases of the one before."""
    lines = ["l0: &l0 [lol]"]
    for level in range(1, levels + 1):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


GENERATORS = {
    "alias_bomb": lambda spec: alias_bomb(int(spec["levels"]), int(spec["width"])),
    "kgraph": lambda spec: kgraph(int(spec["kernels"]), int(spec.get("width", 633)), int(spec.get("height", 633))),
    "nested_json": lambda spec: nested_json(int(spec["depth"]), spec.get("leaf", "1")),
    "nested_yaml": lambda spec: nested_yaml(int(spec["depth"])),
    "repeat": lambda spec: spec.get("prefix", "") + spec["text"] * int(spec["times"]) + spec.get("suffix", ""),
}


def file_bytes(spec: Mapping[str, Any]) -> bytes:
    """The contents a file spec describes (before its encoding and edits)."""
    if "text" in spec:
        text = spec["text"]
    elif "base64" in spec:
        return base64.b64decode(spec["base64"])
    elif "package" in spec:
        text = (ROOT / spec["package"]).read_text(encoding="utf-8")
    elif "generate" in spec:
        text = GENERATORS[spec["generate"]](spec)
    else:
        raise ValueError(f"a file spec needs text, base64, package or generate: {spec}")
    for old, new in spec.get("replace", []):
        if isinstance(new, dict):  # {"prefix": ..., "text": ..., "times": n, "suffix": ...}: a long run
            new = new.get("prefix", "") + new["text"] * int(new["times"]) + new.get("suffix", "")
        if old not in text:
            raise ValueError(f"{old!r} is not in the file (a stale corpus case?)")
        text = text.replace(old, new, 1)
    if "keep_lines" in spec:
        text = "".join(text.splitlines(keepends=True)[: int(spec["keep_lines"])])
    data = text.encode(spec.get("encoding", "utf-8"))
    if "truncate" in spec:
        data = data[: int(spec["truncate"])]
    return data


def materialise(files: Mapping[str, Mapping[str, Any]], folder: Path) -> None:
    """Create the files of a case in ``folder``: contents, folders, links, FIFOs, sparse files, modes."""
    later_modes = []
    for name, spec in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if spec.get("dir"):
            path.mkdir(exist_ok=True)
        elif "symlink" in spec:
            path.symlink_to(spec["symlink"])
        elif "hardlink" in spec:
            os.link(folder / spec["hardlink"], path)
        elif spec.get("fifo"):
            os.mkfifo(path)
        elif "sparse" in spec:
            with open(path, "wb") as stream:
                stream.truncate(int(spec["sparse"]))
        else:
            path.write_bytes(file_bytes(spec))
        if "mode" in spec:
            later_modes.append((path, int(spec["mode"], 8)))
    for path, mode in later_modes:  # after the contents: a read-only folder is filled first
        path.chmod(mode)


# --- snapshots -----------------------------------------------------------------------------------------


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: kind, mode and content digest (a link: its target)."""
    entries: dict[str, tuple] = {}
    for path in sorted(_walk(folder)):
        info = path.lstat()
        relative = path.relative_to(folder).as_posix()
        if stat.S_ISLNK(info.st_mode):
            entries[relative] = ("link", os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            entries[relative] = ("dir", stat.S_IMODE(info.st_mode))
        elif stat.S_ISREG(info.st_mode):
            digest = hashlib.blake2b()
            with open(path, "rb") as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(block)
            entries[relative] = ("file", stat.S_IMODE(info.st_mode), digest.hexdigest())
        else:
            entries[relative] = ("other", stat.S_IFMT(info.st_mode))
    return entries


def _walk(folder: Path) -> Iterator[Path]:
    for path in folder.iterdir():
        yield path
        if path.is_dir() and not path.is_symlink():
            yield from _walk(path)


def under_test() -> Path:
    """The checkout whose csconform this process imports (its shipped files are watched, and
    ``{root}`` in a case names it)."""
    import csconform

    return Path(csconform.__file__).resolve().parents[1]


def shipped_snapshot() -> dict[str, tuple]:
    entries: dict[str, tuple] = {}
    for name in SHIPPED:
        path = under_test() / name
        if path.is_dir():
            entries.update({f"{name}/{key}": value for key, value in snapshot(path).items()})
        elif path.exists():
            entries[name] = snapshot(path.parent)[path.name]
    return entries


def changes(before: Mapping[str, tuple], after: Mapping[str, tuple]) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def _covered(path: str, outputs: list[str], after: Mapping[str, tuple]) -> bool:
    """``path`` is a named output, lies inside one, or is a folder made to hold one."""
    for out in outputs:
        out = os.path.normpath(out)
        if path == out or path.startswith(out + "/"):
            return True
        if after.get(path, ("",))[0] == "dir" and out.startswith(path + "/"):
            return True
    return False


# --- running -------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    status: int | None
    stdout: str
    stderr: str
    seconds: float
    crash: str | None = None  # a traceback that escaped main()


class _TimeLimit(BaseException):
    """Raised by the alarm when an in-process case runs past its limit (a BaseException, so no
    ``except Exception`` in the code under test swallows it)."""


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Stop a case that runs past ``seconds``; one stuck inside C code (where no signal handler
    runs) ends the whole process after twice as long, with every thread's stack on stderr, so a
    hang fails the run instead of stalling it."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return
    faulthandler.dump_traceback_later(2 * seconds, exit=True, file=sys.__stderr__)

    def ring(signum: int, frame: Any) -> None:
        raise _TimeLimit()

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """Set ``env`` for an in-process run; a PYTHONPATH also goes to the front of sys.path."""
    saved = {name: os.environ.get(name) for name in env}
    saved_path = list(sys.path)
    os.environ.update(env)
    if "PYTHONPATH" in env:  # in front of the one in force (which names the csconform under test)
        sys.path[:0] = env["PYTHONPATH"].split(os.pathsep)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (env["PYTHONPATH"], saved["PYTHONPATH"]) if p)
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_in_process(argv: list[str], folder: Path, hard_limit_s: float, env: Mapping[str, str]) -> Outcome:
    from csconform.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    crash = None
    status: int | None = None
    started = time.perf_counter()
    previous = Path.cwd()
    os.chdir(folder)
    modules = set(sys.modules)
    try:
        with (
            _environment(env),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
            _alarm(hard_limit_s),
        ):
            try:
                status = main(argv)
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except _TimeLimit:
        crash = f"still running after {hard_limit_s:.0f} s (stopped)"
    except BaseException:  # noqa: BLE001 - whatever escaped main() is the finding
        crash = traceback.format_exc()
    finally:
        os.chdir(previous)
        for name in set(sys.modules) - modules:  # a case's own modules (broken engines) are imported afresh
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(folder)):
                del sys.modules[name]
    return Outcome(status, stdout.getvalue(), stderr.getvalue(), time.perf_counter() - started, crash)


def run_subprocess(argv: list[str], folder: Path, hard_limit_s: float, env: Mapping[str, str]) -> Outcome:
    paths = [env.get("PYTHONPATH", ""), str(under_test()), os.environ.get("PYTHONPATH", "")]
    environment = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    started = time.perf_counter()
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "csconform.cli", *argv],
            cwd=folder,
            env=environment,
            capture_output=True,
            text=True,
            timeout=hard_limit_s,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else expired.stdout or ""
        return Outcome(None, out, "", time.perf_counter() - started, f"still running after {hard_limit_s:.0f} s")
    return Outcome(completed.returncode, completed.stdout, completed.stderr, time.perf_counter() - started)


def check_case(case: Case, folder: Path) -> Outcome:
    """Run ``case`` in ``folder`` (fresh) and assert every property; returns what happened."""
    materialise(case.files, folder)
    before, shipped_before = snapshot(folder), shipped_snapshot()
    hard_limit_s = 2 * case.time_limit_s + 10
    runner = run_subprocess if case.subprocess else run_in_process
    argv = [word.replace("{dir}", str(folder)).replace("{root}", str(under_test())) for word in case.argv]
    env = {name: value.replace("{dir}", str(folder)) for name, value in case.env.items()}
    outcome = runner(argv, folder, hard_limit_s, env)
    after, shipped_after = snapshot(folder), shipped_snapshot()
    _restore_permissions(folder)
    # a file the case brought is never to change (whatever the outputs say: an output named like an
    # input, or a link to one, must be refused); new files may appear only where outputs are named
    changed = [path for path in changes(before, after) if path in before or not _covered(path, case.outputs, after)]
    problems = violations(case, outcome, changed, changes(shipped_before, shipped_after))
    written = [
        path for path in changes(before, after) if path.endswith(".json") and after.get(path, ("",))[0] == "file"
    ]
    problems += [f"{path}: {why}" for path in written if (why := not_strict_json((folder / path).read_bytes()))]
    assert not problems, f"case {case.name} ({case.kind}) {case.argv}:\n  " + "\n  ".join(problems)
    return outcome


def not_strict_json(data: bytes) -> str:
    """Why ``data`` is not strict JSON (NaN and Infinity are not JSON), or ''."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    try:
        json.loads(data.decode("utf-8"), parse_constant=refuse)
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not strict JSON: {exc}"
    return ""


def violations(case: Case, outcome: Outcome, changed: list[str], shipped_changed: list[str]) -> list[str]:
    """Every property ``outcome`` breaks; ``changed``: paths changed outside the named outputs."""
    problems = []
    if outcome.crash is not None:
        problems.append(f"no clean exit: {outcome.crash.strip().splitlines()[-1]}\n{outcome.crash}")
    elif outcome.status not in (0, 1, 2):
        problems.append(f"exit status {outcome.status}, not 0, 1 or 2")
    elif outcome.status not in case.exit_codes:
        problems.append(f"exit status {outcome.status}, expected one of {case.exit_codes}")
    # a progress line rewritten in place (carriage returns) is one line on the terminal: its last state
    lines = [line.split("\r")[-1] for line in outcome.stderr.split("\n")]
    lines = [line for line in lines if line.strip()]
    if len(lines) > MAX_STDERR_LINES:
        problems.append(f"{len(lines)} lines on stderr (at most {MAX_STDERR_LINES})")
    text = outcome.stderr + outcome.stdout
    if "Traceback (most recent call last)" in text:
        problems.append("a traceback was printed")
    warnings = [line for line in lines if "Warning: " in line and not line.startswith("csconform")]
    if warnings:
        problems.append(f"a Python warning reached the user: {warnings[0]}")
    if outcome.status == 2 and outcome.crash is None:
        said = any(line.startswith("csconform") and "error:" in line for line in lines)
        if case.argv[:1] in (["validate"], ["lint"]):
            # their documented exit 2: a file's verdict "unreadable" (the text form's "cannot read", the
            # SARIF form's notification), with why, in the report (printed in any format, or written to
            # the --output file)
            report = outcome.stdout.lower()
            named = ("unreadable", "cannot read", "not found")
            said = said or any(word in report for word in named) or "--output" in case.argv
        if not said:
            problems.append(
                "a refusal must say 'csconform ... error: ...' (validate, lint: 'unreadable' in the report)"
            )
        elif case.stderr and case.stderr.lower() not in (outcome.stderr + outcome.stdout).lower():
            problems.append(f"the refusal does not say {case.stderr!r}")
    if changed:
        problems.append(f"changed outside the named outputs: {changed[:5]}")
    if shipped_changed:
        problems.append(f"changed the files the package ships: {shipped_changed[:5]}")
    if outcome.seconds > 1.1 * case.time_limit_s + 1.0:
        problems.append(f"took {outcome.seconds:.1f} s, limit {case.time_limit_s} s")
    if problems:
        problems.append(f"stderr: {outcome.stderr[-1500:]}")
    return problems


def _restore_permissions(folder: Path) -> None:
    """Let pytest remove the folder afterwards (a case may have made parts of it read-only)."""
    for path in [folder, *_walk(folder)]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
