"""The implementation interface: what an implementation under test offers, capability by capability.

The conformance suite reaches an implementation only through this contract, the way the array API
standard is the contract ``array-api-tests`` checks. An implementation is a Python module that

* declares what it offers: ``CAPABILITIES`` (names from :data:`CAPABILITY_NAMES`), ``TARGETS``
  (``"cs"`` and/or ``"cpu"``) and ``EMULATIONS`` (capability -> how the adapter stands in for a
  backend the package only runs on the real system; empty for a native implementation);
* offers the four target functions of :class:`~csconform.interface.core.ImplementationModule`;
* offers, for every declared capability, the submodules and names its Protocols list
  (:mod:`csconform.interface.precision`, :mod:`~csconform.interface.amp`, ...).

Values cross the interface as NumPy: weights, gradients and batches are ``float32`` arrays, steps
are Python or NumPy integers, losses and loss scales are Python floats. Refusals are
:class:`~csconform.errors.CsConformError` subclasses; an adapter translates its package's own
exceptions into them, keeping the package's message. A check that needs something the
implementation does not declare is reported ``unsupported``, never passed.

``csconform interface`` prints this contract; :func:`validate` names what an implementation lacks.
What implementations would otherwise each write again (module trees, ``Sequential``, the ``Loss``
arithmetic, a runner's arguments, checkpoint sections) is the kit, :mod:`csconform.interface.kit`.
"""

from csconform.interface.capabilities import CAPABILITIES, CAPABILITY_NAMES, TARGETS, Capability, capability_of_path
from csconform.interface.validate import Declaration, declaration_of, validate

__all__ = [
    "CAPABILITIES",
    "CAPABILITY_NAMES",
    "TARGETS",
    "Capability",
    "Declaration",
    "capability_of_path",
    "declaration_of",
    "validate",
]
