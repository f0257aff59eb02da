"""What source cannot show: the user's training step run for a few iterations on CPU (``lint --run``).

:func:`lint_run` runs the script in a child process (:mod:`.process`, :mod:`.child`) with observers
in place: PyTorch's own graph capture of the step (:mod:`.capture`, also inside ``cstorch.trace``:
:mod:`.cstorch`), the mixed-precision calls, learning-rate writes and DataLoader batches
(:mod:`.calls`); the events (:mod:`.events`) become findings on the user's lines (:mod:`.judge`),
frames told apart by :mod:`.frames`. Rules CODE-101 to CODE-106 (``specs/user_code_run.yaml``).
"""

from csconform.usercode.runtime.process import lint_run

__all__ = ["lint_run"]
