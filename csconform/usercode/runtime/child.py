"""The child process of ``lint --run``: the observers installed, the user's script run as ``__main__``.

    python -m csconform.usercode.runtime.child RUN.json

``RUN.json`` (written by :mod:`.process`) names the script, its arguments, the steps to run, the
step named with ``--step`` (if any), the events file and the time limit. The script runs as
``python SCRIPT ARGS`` would run it (``sys.argv``, ``sys.path[0]``, ``__name__ == "__main__"``),
with the observers of :mod:`.capture`, :mod:`.calls` and :mod:`.cstorch` in place. Whatever ends it
(the steps asked for, its end, ``sys.exit``, an exception, the time limit) is written as the last
event, and the process leaves with ``os._exit`` so that nothing the script registered runs after.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import sys
import threading
import types
from pathlib import Path
from typing import Any, NoReturn

from csconform.usercode.runtime import frames
from csconform.usercode.runtime.events import EventLog, RunEnd, Where

STEP_WRAPPER = "__csconform_step__"
"""The name under which a script-level ``--step`` function is handed to the step's wrapper."""


class Child:
    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.iterations_done = 0
        self._lock = threading.Lock()
        self.iterations: Any = None

    def finish(self, status: str, at: Where | None = None, detail: str = "") -> NoReturn:
        """Write how the run ended and leave at once (one ending wins: the watchdog or the script)."""
        with self._lock:
            count = self.iterations.count if self.iterations is not None else 0
            self.log.write(RunEnd(status, count, at, detail))
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(0)

    def watch_time(self, seconds: float) -> None:
        """After ``seconds``, end the run where the script's main thread is."""
        main = threading.main_thread().ident

        def expire() -> None:
            frame = sys._current_frames().get(main) if main is not None else None
            self.finish("timeout", frames.caller(frame) if frame is not None else None, f"{seconds:g} s")

        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        timer.start()


def script_code(script: Path, step: str | None) -> types.CodeType:
    """The script compiled as it is, except that a module-level ``def STEP`` is followed by
    ``STEP = __csconform_step__(STEP)`` (on the def's line, so every line number stays)."""
    tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
    if step is not None and ":" not in step:
        body: list[ast.stmt] = []
        for statement in tree.body:
            body.append(statement)
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and statement.name == step:
                wrap = ast.parse(f"{step} = {STEP_WRAPPER}({step})").body[0]
                body.append(ast.copy_location(wrap, statement))
        tree.body = body
        ast.fix_missing_locations(tree)
    return compile(tree, str(script), "exec")


def _install(child: Child, steps: int) -> tuple[Any, Any]:
    """The observers; returns the iterations and the recorder (for a ``--step`` function)."""
    from csconform.usercode.runtime import calls, capture, cstorch

    iterations = capture.Iterations(child.log, steps, lambda status: child.finish(status))
    child.iterations = iterations
    recorder = capture.GraphRecorder(child.log, iterations)
    capture.skip_in_capture("csconform")
    torch_compile = capture.install_compile(recorder, iterations)
    capture.watch_graph_breaks(child.log, iterations)
    amp = calls.AmpObserver(child.log, iterations)
    amp.install()
    learning_rates = calls.LearningRates(child.log, iterations)
    learning_rates.install()
    iterations.compiled_region = learning_rates.plain_groups
    calls.watch_data_loaders(child.log, iterations)
    cstorch.install(recorder, iterations, amp, torch_compile)
    return iterations, lambda fn: iterations.wrap(capture.compile_for_observation(fn, recorder, torch_compile))


def _named_step(step: str, observe: Any, iterations: Any) -> Any:
    """The ``--step`` wrapper: for ``module:function``, installed in the module now."""
    import importlib

    def wrap(fn: Any) -> Any:
        wrapped = observe(fn)
        iterations.claim(wrapped)
        return wrapped

    if ":" in step:
        module_name, _, name = step.partition(":")
        module = importlib.import_module(module_name)
        setattr(module, name, wrap(getattr(module, name)))
    return wrap


def run(config: dict[str, Any]) -> NoReturn:
    script = Path(config["script"])
    with open(config["events"], "a", encoding="utf-8") as stream:
        child = Child(EventLog(stream))
        child.watch_time(float(config["timeout_s"]))
        sys.argv = [str(script), *config["args"]]
        sys.path[0] = str(script.parent)
        try:
            import torch  # noqa: F401 - the run observes PyTorch; without it there is nothing to run
        except ImportError as exc:
            child.finish("no_torch", detail=str(exc))
        iterations, observe = _install(child, int(config["steps"]))
        module = types.ModuleType("__main__")
        module.__dict__.update(__file__=str(script), __builtins__=__builtins__, __spec__=None)
        sys.modules["__main__"] = module
        try:
            if config.get("step"):
                module.__dict__[STEP_WRAPPER] = _named_step(config["step"], observe, iterations)
            exec(script_code(script, config.get("step")), module.__dict__)
        except SystemExit as stop:
            if stop.code in (None, 0):
                child.finish("finished")
            child.finish("exit", frames.raised_at(stop.__traceback__), f"exit status {stop.code}")
        except BaseException as exc:  # noqa: BLE001 - whatever the script raises is an observation
            detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:400] if str(exc) else type(exc).__name__
            child.finish("raised", frames.raised_at(exc.__traceback__), detail)
        child.finish("finished")


def main() -> NoReturn:
    run(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")))


if __name__ == "__main__":
    main()
