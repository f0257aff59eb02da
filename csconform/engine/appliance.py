"""Appliance mode: the user names a model and a number of systems; the appliance does the rest.

appliance-mode-blog#Introduction: an appliance-mode user describes the model and says how many
CS-2 systems to use; the appliance assembles the systems, the SwarmX broadcast/reduce fabric and
MemoryX, and runs the job.
The user's code is the same for every cluster size (data parallel, no sharding of the model by
hand), clusters reach up to 192 systems, and a train-then-eval loop is plain Python: each call of
:meth:`Appliance.runner` is one job (one run, compiled and programmed once). The original
installation (:data:`ORIGINAL`) has a single system and runs pipelined mode only
(pipelined-execution#Pipelined Execution).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from csconform.arguments import check_integer
from csconform.engine.runner import Runner
from csconform.errors import ExecutionModeError, InvalidInputError

MAX_SYSTEMS = 192
"""Largest Wafer-Scale Cluster of CS-2 systems (appliance-mode-blog#Introduction)."""

APPLIANCE = "appliance"
ORIGINAL = "original"


@dataclass(frozen=True)
class Resources:
    """What the appliance assembles for one job."""

    systems: int
    execution: str
    memoryx: bool
    swarmx: bool


class Appliance:
    """A cluster the user submits jobs to from plain Python."""

    def __init__(self, num_systems: int = 1, *, installation: str = APPLIANCE, wafer: str = "WSE-2") -> None:
        self.num_systems = self.check_num_systems(num_systems, installation)
        self.installation = installation
        self.wafer = wafer
        self.jobs: list[Runner] = []

    @staticmethod
    def check_num_systems(num_systems: int, installation: str) -> int:
        if not isinstance(installation, str):
            raise InvalidInputError(f"installation must be a name (a string), got {installation!r}")
        check_integer("num_systems", num_systems, minimum=1)
        if num_systems > MAX_SYSTEMS:
            raise InvalidInputError(
                f"a Wafer-Scale Cluster has at most {MAX_SYSTEMS} CS-2 systems; {num_systems} were requested"
            )
        if installation == ORIGINAL and num_systems != 1:
            raise ExecutionModeError("the original Cerebras installation drives a single CS-2 system")
        return num_systems

    def default_execution(self) -> str:
        """Weight streaming across the cluster; pipelined where only one system or the original setup exists."""
        return "pipelined" if self.installation == ORIGINAL else "weight_streaming"

    def resources(self, execution: str | None = None) -> Resources:
        """The hardware a job with this execution mode is given."""
        execution = execution or self.default_execution()
        streaming = execution == "weight_streaming"
        return Resources(
            systems=self.num_systems if streaming else 1, execution=execution, memoryx=streaming, swarmx=streaming
        )

    def runner(
        self,
        model: Any,
        loss_fn: Callable[..., Any],
        optimizer: Any = None,
        *,
        execution: str | None = None,
        **options: Any,
    ) -> Runner:
        """Start one job for ``model`` on this cluster; the user code is the same for any cluster size."""
        execution = execution or self.default_execution()
        resources = self.resources(execution)
        if execution == "pipelined" and self.num_systems != 1:
            raise ExecutionModeError(
                f"pipelined execution keeps the whole model on one wafer; this appliance was given "
                f"{self.num_systems} systems, so use weight streaming"
            )
        job = Runner(
            model,
            loss_fn,
            optimizer,
            execution=execution,
            num_systems=resources.systems,
            installation=self.installation,
            wafer=self.wafer,
            **options,
        )
        self.jobs.append(job)
        return job
