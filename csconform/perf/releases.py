"""What a software release changes in a plan: the documented changes between releases, and its generation.

Two changes are documented (the Model Zoo 1.9.1 RELEASE-NOTES.md, on 1.9.0):

* before 1.9.0 a params file's ``batch_size`` was the batch of each system; from 1.9.0 it is the
  global batch, divided evenly across the ``num_csx`` systems;
* 1.9.0 deprecated pipelined mode: every model runs in weight streaming from then on.

The measured runs also differ by release beyond those (the same GPT-J 6B configuration ran 1.6 times
faster per system in 2.0.3 than in 1.7.1), so the calibration may fit a compute efficiency per
*release generation* (:func:`generation`, a minor release: ``1.8``, ``2.0``), relative to the
reference: the runs that state no release, the largest set, on which the system figures are fitted.
A release the calibration has no figure for takes the figure of the nearest later generation that
has one (:func:`stand_in`), or the reference when none is later.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from csconform.errors import InvalidInputError

REFERENCE_GENERATION = "not stated"
"""The generation the system figures describe: the runs that state no release."""
GLOBAL_BATCH_FROM = Version("1.9.0")
"""From this release a params file's batch_size is global (before it: per system)."""
PIPELINED_UNTIL = Version("1.9.0")
"""Pipelined mode is deprecated from this release on: runs before it only may use it."""


def parse(release: str) -> Version:
    """A release number such as ``1.8.0``, ``1.9.2`` or ``2.5``; anything else is refused."""
    try:
        return Version(str(release).strip().removeprefix("v"))
    except InvalidVersion:
        raise InvalidInputError(f"{release!r} is not a release number such as 1.8.0 or 2.4") from None


def generation(release: str | None) -> str:
    """The release generation the calibration knows a release by, its minor release (``1.8``, ``2.0``),
    or :data:`REFERENCE_GENERATION` for a run that states no release (``None`` or empty)."""
    if release is None or not str(release).strip():
        return REFERENCE_GENERATION
    version = parse(release)
    return f"{version.major}.{version.minor}"


def stand_in(release: str | None, known: Iterable[str]) -> str | None:
    """The generation among ``known`` (generations with a figure) whose figure a release uses: its own,
    else the nearest later one, else None (the reference). Releases only got faster in the measured
    runs, so a later release's figure is the closer guess; the leave-one-release-out cross-validation
    of the calibration set measures how close (``reports/performance_parity.md``)."""
    own = generation(release)
    if own == REFERENCE_GENERATION:
        return None
    later = sorted((g for g in known if g != REFERENCE_GENERATION and parse(g) >= parse(own)), key=parse)
    return later[0] if later else None


def batch_is_per_system(release: str | None) -> bool:
    """Whether a params file's ``batch_size`` is the batch of each system (releases before 1.9.0)."""
    return release is not None and bool(str(release).strip()) and parse(release) < GLOBAL_BATCH_FROM


def pipelined_supported(release: str | None) -> bool:
    """Whether the release still runs pipelined mode (before 1.9.0; any release when none is named)."""
    return release is None or not str(release).strip() or parse(release) < PIPELINED_UNTIL
