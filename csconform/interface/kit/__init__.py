"""The kit for implementations: code every implementation of the interface needs and writes the same way.

The Protocols of :mod:`csconform.interface` say what an implementation offers; this package holds
what the reference engine (:mod:`csconform.engine`) and an adapter over a vendor's package
(:mod:`csconform.adapters.cstorch`) would otherwise each write again, so that an adapter holds only
what is its package's:

* :mod:`~csconform.interface.kit.package`: the target switch and the submodules imported on first use;
* :mod:`~csconform.interface.kit.modules`: a module tree (children, named parameters, train/eval,
  state dicts and what ``load_state_dict`` refuses), ``Sequential``, and a compiled model's view of
  its model;
* :mod:`~csconform.interface.kit.loss`: the ``Loss`` value's arithmetic (value, ``item``, scaling);
* :mod:`~csconform.interface.kit.batching`: stacking the elements of a batch;
* :mod:`~csconform.interface.kit.runs`: a runner's arguments and what it refuses of them, and the
  step output it yields;
* :mod:`~csconform.interface.kit.checkpoint_sections`: the model, optimizer and GradScaler sections
  of a runner's checkpoint.

Using the kit is optional: an implementation is judged by the interface alone. Where implementations
may differ by design, the kit names the choice instead of hiding it (``ModuleTree.refuses_non_finite_weights``).
"""
