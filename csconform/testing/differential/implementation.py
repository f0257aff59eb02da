"""An implementation under comparison, running in a process of its own (child.py).

A and B never share a process: an implementation that patches modules in place, leaks state,
exits, crashes the interpreter or hangs changes nothing of the other one or of the harness. Each
call has a time limit (and each program one in all): a call that does not answer in time is
``hung`` and its process is killed; a process that ends is ``ended``. Either is an outcome the
lockstep compares like any other, and the process is started again for the next program.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from csconform.errors import CsConformError, InterfaceError, InvalidInputError
from csconform.interface.load import check_module_name
from csconform.interface.validate import Declaration
from csconform.testing.differential.outcome import Outcome
from csconform.testing.differential.program import Statement


@dataclass(frozen=True)
class Limits:
    """How long an implementation may take, in seconds of wall clock."""

    call_s: float = 60.0
    """One statement (or the reset that starts a program)."""
    program_s: float = 600.0
    """A whole program."""
    import_s: float = 120.0
    """Importing the implementation (the vendor's package imports torch)."""


class ImplementationLost(CsConformError):
    """An implementation that ended or hung could not be started again."""


class Implementation:
    """A module that implements the interface (``--engine`` / ``--against``), in its own process."""

    def __init__(self, name: str, limits: Limits = Limits()) -> None:
        self.name = check_module_name(name)
        self.limits = limits
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self.declaration, self.version, self.package_folder = self._spawn()

    # --- the process ------------------------------------------------------------------------------

    def _spawn(self) -> tuple[Declaration, str, Path | None]:
        """Start the process and import the implementation in it; what it declares."""
        ours, theirs = Pipe()
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "csconform.testing.differential.child", str(theirs.fileno()), self.name],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            env=environment,
        )
        theirs.close()
        self._connection = ours
        answer = self.receive(time.monotonic() + self.limits.import_s, f"{self.limits.import_s:g} s")
        if isinstance(answer, Outcome):  # it hung or ended while importing
            self.close()
            raise InterfaceError(
                f"the implementation {self.name!r} {answer.describe()} while importing: {answer.message}"
            )
        if answer[0] == "refused":
            self.close()
            error = InvalidInputError if answer[1] == "InvalidInputError" else InterfaceError
            raise error(answer[2])
        _, declaration, version, folder = answer
        return declaration, version, Path(folder) if folder else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def close(self) -> None:
        """End the process (it ends by itself once its pipe closes; a stuck one is killed)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self.close()

    def _ended(self) -> Outcome:
        assert self._process is not None
        code = self._process.wait()
        self.close()
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return Outcome("ended", message=f"the process ended ({how})")

    def receive(self, deadline: float, limit: str) -> Any:
        """The answer to the last request: an Outcome (and the state after a statement), or the Outcome
        of a process that did not answer by ``deadline`` (``limit`` says which limit that is: it is
        killed) or ended."""
        assert self._connection is not None
        try:
            if not self._connection.poll(max(0.0, deadline - time.monotonic())):
                self._kill()
                return Outcome("hung", message=f"no answer within {limit}")
            return self._connection.recv()
        except (EOFError, OSError):
            return self._ended()

    def _send(self, request: tuple[Any, ...]) -> Outcome | None:
        """Send a request; the Outcome of a process that has ended, else None."""
        if not self.running or self._connection is None:
            return self._ended() if self._process is not None else Outcome("ended", message="not running")
        try:
            self._connection.send(request)
        except (BrokenPipeError, OSError):
            return self._ended()
        return None

    # --- what the lockstep asks -------------------------------------------------------------------

    def send_start(self, target: str, workdir: Path) -> Outcome | None:
        """Begin a program: reset the implementation on ``target`` in a fresh namespace (started again
        first if its process ended). Then :meth:`receive` the outcome."""
        if not self.running:
            self._restart()
        return self._send(("start", target, str(workdir)))

    def send_statement(self, statement: Statement, kinds: dict[str, str], compare_result: bool) -> Outcome | None:
        """Run one statement, then observe the objects of ``kinds`` (and what the statement binds). Then
        :meth:`receive` its outcome and the state after it."""
        request = ("run", statement, kinds, compare_result)
        return self._send(request)

    def _restart(self) -> None:
        self.close()
        try:
            declaration, _, _ = self._spawn()
        except CsConformError as error:
            raise ImplementationLost(
                f"the implementation {self.name!r} ended or hung and could not be started again: {error}"
            ) from None
        if declaration != self.declaration:
            raise ImplementationLost(f"the implementation {self.name!r} declared otherwise when started again")


class Workdirs:
    """Fresh directories for programs (``workdir``), removed together at the end of a run."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="csconform-diff-"))
        self.count = 0

    def new(self) -> Path:
        self.count += 1
        path = self.root / str(self.count)
        path.mkdir()
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Workdirs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_running: list[Implementation] = []


def start_implementation(name: str, limits: Limits = Limits()) -> Implementation:
    """An implementation in a new process of its own, ended when this process exits."""
    implementation = Implementation(name, limits)
    _running.append(implementation)
    return implementation


@atexit.register
def _close_all() -> None:
    for implementation in _running:
        implementation.close()
