"""Other implementations behind the implementation interface (:mod:`csconform.interface`).

An adapter makes a package that was not written for csconform answer the same checks as the
reference engine: it declares the capabilities and targets the package has, converts values at
the interface (NumPy in, NumPy out), translates the package's refusals into the typed error family
(keeping the package's message), and lists every place where it stands in for a backend the
package only runs on the real system (``EMULATIONS``). It never changes the package's own code.
Each adapter ships its triage, one file per release of its package in ``triage/`` beside it
(:mod:`csconform.triage`): the disagreements found, triaged with evidence.

- :mod:`csconform.adapters.cstorch`: the vendor's ``cerebras.pytorch`` 2.10 on its CPU backend.
"""
