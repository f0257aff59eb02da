"""One Cerebras system as the engine sees it: an identity, a wafer, and the program it runs.

pytorch-limitations#Static Graphs: the wafer may not be reprogrammed after its initial programming,
so a run programs a system exactly once and every later step must run the same graph.
estimator-limitations#Compilation differences: a program compiled for one system cannot run on
another. Both are limitations of the CS system; on the cpu target a new graph is simply recompiled
and reloaded. A :class:`System` object stands for one run on one system.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from csconform.arguments import check_text, check_type
from csconform.engine import context
from csconform.engine.artifact import CompiledArtifact
from csconform.engine.graph import Graph
from csconform.errors import ArtifactMismatchError, InvalidInputError, StaticGraphError, UnknownNameError

# On-chip SRAM per wafer (public-facts#Hardware).
WAFER_SRAM_BYTES = {"WSE-1": 18 * 10**9, "WSE-2": 40 * 10**9, "WSE-3": 44 * 10**9}

INSTALLATIONS = ("original", "appliance")
"""An "original" installation runs pipelined mode only; the appliance also streams weights
(pipelined-execution, appliance-mode-blog)."""


@dataclass
class System:
    system_id: str = "cs-0"
    wafer: str = "WSE-2"
    installation: str = "appliance"
    program: CompiledArtifact | None = field(default=None, init=False)
    programs_loaded: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.wafer, str) or not isinstance(self.installation, str):
            raise InvalidInputError(
                f"wafer and installation must be names (strings), got {self.wafer!r}, {self.installation!r}"
            )
        if self.wafer not in WAFER_SRAM_BYTES:
            raise UnknownNameError(f"unknown wafer {self.wafer!r}; known wafers: {', '.join(WAFER_SRAM_BYTES)}")
        if self.installation not in INSTALLATIONS:
            raise InvalidInputError(f"unknown installation {self.installation!r}; known: {', '.join(INSTALLATIONS)}")
        check_text("system_id", self.system_id)

    @property
    def sram_bytes(self) -> int:
        return WAFER_SRAM_BYTES[self.wafer]

    def load(self, artifact: CompiledArtifact) -> None:
        """Program the wafer with ``artifact`` (once per run on the CS system)."""
        check_type("artifact", artifact, CompiledArtifact, "a CompiledArtifact (compiler.compile_graph)")
        self._check_artifact_binding(artifact)
        self._check_not_programmed(artifact)
        self.program = artifact
        self.programs_loaded += 1

    def _check_artifact_binding(self, artifact: CompiledArtifact) -> None:
        if context.on_cs() and artifact.system_id != self.system_id:
            raise ArtifactMismatchError(
                f"artifact was compiled for system {artifact.system_id!r} and cannot run on system "
                f"{self.system_id!r}; compile the model for this system"
            )

    def _check_not_programmed(self, artifact: CompiledArtifact) -> None:
        if context.on_cs() and self.program is not None:
            raise StaticGraphError(
                "the wafer has already been programmed in this run and cannot be reprogrammed "
                f"(loaded {self.program.graph.fingerprint()}, asked to load {artifact.graph.fingerprint()}); "
                "multiple compiles are not supported"
            )

    def check_step_graph(self, graph: Graph) -> bool:
        """Check that a step's graph is the programmed one. Returns True when a reload is needed.

        On the CS system any difference is refused; on the cpu target a different graph means the
        caller recompiles and reloads.
        """
        if self.program is None:
            return True
        difference = self.program.graph.first_difference(graph)
        if difference is None:
            return False
        if context.on_cs():
            raise StaticGraphError(
                f"the compute graph changed between iterations ({difference}); the wafer cannot be "
                "reprogrammed, so every step must run the same graph (same shapes, dtypes and operations)"
            )
        return True
