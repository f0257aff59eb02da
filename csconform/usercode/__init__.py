"""``csconform lint``: the limitations the documents put in a user's own training code, found in its
source and, with ``--run``, in a few steps of it on CPU.

:mod:`.source` reads a file into a syntax tree; :mod:`.files` finds the files of a run;
:mod:`.names` and :mod:`.project` resolve names and imports across the run's files;
:mod:`.values`, :mod:`.infer` and :mod:`.analysis` work out which names hold tensors, compiled
models, GradScalers or Datasets, and which functions run inside the traced step; :mod:`.scope` is
what a check sees of one function; :mod:`.checks` holds the checks, one module per family of rules
(``specs/user_code.yaml``); :mod:`.fixes` the edits of the mechanical fixes; :mod:`.lint` runs it all.
:mod:`.runtime` runs the user's step for a few iterations in a process of its own under PyTorch's
graph capture and reports what source cannot show (``specs/user_code_run.yaml``).
"""
