"""The typed error family of csconform.

Every refusal made by the harness or by an implementation under test is a subclass of
:class:`CsConformError`, so that a test can say exactly which documented limitation it expects,
and a user never meets a bare traceback from deep inside a library. Several classes also derive
from the built-in exception the original Cerebras code raises (``ValueError``, ``RuntimeError``),
so code written against the real stack keeps catching what it used to catch.
"""

from __future__ import annotations

import unittest


class CsConformError(Exception):
    """Base of every error csconform raises on purpose."""


# --- the harness itself -------------------------------------------------------------------------


class SpecError(CsConformError):
    """A spec file or rule is malformed; the message names the file and the rule."""


class InvalidInputError(CsConformError, ValueError):
    """An argument or a user file is not acceptable."""


class InputFileError(InvalidInputError):
    """A file the user named cannot be used: missing, not a regular file, too large, not UTF-8, or
    malformed (nested too deeply, a non-finite number, a repeated key, a value of the wrong type).
    The message names the file, then the line or the key, then what was expected."""


class UnreadableDocumentError(InputFileError):
    """A file cannot be read as the document asked for (:mod:`csconform.documents`): missing, not a
    regular file, too large, not UTF-8, not valid YAML or JSON, nested too deeply, a non-finite
    number, a key given twice where the reader refuses repeats, aliases that expand past the file's
    size, or a top level of the wrong kind.

    ``source`` is the file, ``line`` the 1-based line when known, ``key`` the key path at fault
    when there is one; the message is one line: ``source: line N: problem``.
    """

    def __init__(self, problem: str, *, source: str, line: int | None = None, key: str | None = None) -> None:
        self.problem, self.source, self.line, self.key = problem, source, line, key
        super().__init__(f"{source}: " + (f"line {line}: " if line is not None else "") + problem)


class InstanceFormatError(InputFileError):
    """A malformed input file; the message names the file and the line."""


class ConflictingTriageError(InstanceFormatError):
    """Two places of a triage name one rule, test or class (and may give it two verdicts), or two triage
    files hold the verdicts for one release. ``key`` is what they both name, ``places`` the two entries
    (``rules entry 3``) or files; the message names the file, the key and both places."""

    def __init__(self, message: str, *, key: str, places: tuple[str, str]) -> None:
        self.key, self.places = key, places
        super().__init__(message)


class TriageMismatchError(InvalidInputError):
    """A triage holds the verdicts for another implementation, or for another release of its package
    than the one installed: verdicts are never inherited."""


class OutputPathError(InvalidInputError):
    """An output path the command may not write: it resolves to one of the command's inputs (by name,
    link or hard link) or to a file the package ships, or it cannot be a file of the kind asked for."""


class TimeLimitError(CsConformError):
    """The time limit ran out before the command had a result to give."""


class ScriptRunError(CsConformError):
    """A user's training script, run on CPU to observe its step (``lint --run``), stopped before its
    first step or never called a step that could be observed; the message names the script, where
    it stopped and why."""


class UnknownNameError(InvalidInputError):
    """An unknown model, wafer, engine, ... name; the message lists the known names."""


class ModelConfigError(InvalidInputError):
    """A model config (a ``config.json``, a Model Zoo ``model:`` section) cannot be read or is wrong.

    ``source`` names the file or section, ``key`` the dotted path of the field at fault (``None``
    when no single field is); the one-line message names both, so a caller can point at the line.
    """

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None) -> None:
        self.message, self.source, self.key = message, source, key
        super().__init__(f"{source}: {message}" if source else message)

    def located(self, source: str) -> ModelConfigError:
        """The same error naming ``source`` (a reader that did not know its file learns it here)."""
        return type(self)(self.message, source=source, key=self.key)


class UnsupportedModelError(ModelConfigError):
    """The config describes an architecture the performance model does not model (an
    encoder-decoder model, cross-attention, ...); the message says what and why."""


class ModelSourceError(ModelConfigError):
    """What a model is built from outside its own model section cannot be used where the release would
    read it: a 1.x TensorFlow BERT fine-tuning file's pre-training params file
    (``model.pretrain_params_path``) or its vocabulary (``train_input.vocab_size``, or the file
    ``train_input.vocab_file`` names). ``key`` is the key's dotted path from the file's top; the message
    names the key, the path tried and what would make the model plannable."""


class InterfaceError(CsConformError):
    """An implementation under test does not offer what it declares (names, signatures, targets)."""


class Unsupported(unittest.SkipTest):
    """The implementation under test does not offer a capability, a target or a feature a check needs.

    Raised by the harness (an undeclared capability or target) or by an adapter (a feature its
    package cannot show on this backend, e.g. cbfloat16 values on a CPU). The conformance matrix
    reports such a check as ``unsupported``, with this message as the reason: never as passed.
    It is deliberately not a :class:`CsConformError` (it is not a refusal a rule could demand) but a
    kind of ``SkipTest``, so pytest and Hypothesis stop the check at once instead of shrinking it.
    """


# --- documented limitations of the CS system ------------------------------------------------------


class UnsupportedOnSystemError(CsConformError):
    """Base of every documented limitation that applies on the CS system only."""


class PrecisionError(UnsupportedOnSystemError, ValueError):
    """A precision mode other than mixed precision was requested on the CS system."""


class StaticGraphError(UnsupportedOnSystemError, RuntimeError):
    """The compiled graph would change, or the wafer would be programmed a second time."""


class ExecutionModeError(UnsupportedOnSystemError, ValueError):
    """An unsupported run mode (e.g. train_and_eval) or execution mode was requested."""


class LRSchedulerError(UnsupportedOnSystemError, RuntimeError):
    """A learning rate was set as a scalar mid-run instead of as a function of the global step."""


class MetricError(UnsupportedOnSystemError, ValueError):
    """An eval metric returned more than one final value."""


class UnsupportedTensorFlowError(UnsupportedOnSystemError, RuntimeError):
    """A TensorFlow Estimator feature the CerebrasEstimator refuses on the CS system."""


class RunConfigError(UnsupportedOnSystemError, ValueError):
    """A run configuration parameter or environment setting the CS system does not accept."""


# --- compilation, capacity, placement ---------------------------------------------------------------


class CompilationError(CsConformError):
    """The program cannot be compiled for the target."""


class UnsupportedOperationError(CompilationError):
    """An operation maps to no supported kernel; the message names the operation."""


class ArtifactMismatchError(CompilationError):
    """A compiled artifact was used on a system other than the one it was compiled for."""


class CapacityError(CsConformError):
    """The model does not fit the chosen execution mode (e.g. pipelined on-chip memory)."""


class PlacementError(CsConformError):
    """The placement optimizer could not produce a legal placement."""


class InfeasibleError(PlacementError):
    """No placement can satisfy the constraints (area, memory, bandwidth)."""


# --- loss scaling, numerics, checkpoints ------------------------------------------------------------


class GradScalerError(CsConformError):
    """Misconfiguration or misuse of the GradScaler."""


class GradScalerConfigError(GradScalerError, ValueError):
    """An invalid GradScaler constructor argument."""


class GradScalerUsageError(GradScalerError, RuntimeError):
    """GradScaler methods called in an order the documented protocol forbids."""


class NonRecoverableNaNError(CsConformError, FloatingPointError):
    """Gradients stay non-finite although the loss scale has reached its minimum."""


class ExecutionContextError(CsConformError, RuntimeError):
    """The execution API was used outside the context it needs (a second compiled model in one
    step, the current executor asked for outside a run)."""


class CheckpointError(CsConformError):
    """A checkpoint is missing, truncated, corrupted or does not match the run."""


class WeightFetchError(UnsupportedOnSystemError, RuntimeError):
    """Weights were requested from the CS system on a step that is not a checkpoint step."""
