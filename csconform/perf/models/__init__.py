"""What a model is to the performance model, and the readers that build one.

A model is a list of :class:`~csconform.perf.models.layer.Layer` records (each knows its FLOPs,
parameters and bytes), fused into :mod:`~csconform.perf.models.kernels` (one per pipeline stage) and
wrapped with its published figures in a :class:`~csconform.perf.models.model_spec.ModelSpec`.
Readers build one from a Hugging Face config (:mod:`~csconform.perf.models.hf_config`: the file in
:mod:`~csconform.perf.models.config_file`, the fields in :mod:`~csconform.perf.models.fields`, the
families and how they spell their sizes in :mod:`~csconform.perf.models.hf_families`), from a Model
Zoo ``model:`` section (:mod:`~csconform.perf.models.zoo_section`) or by name from the bundled zoo
(:mod:`~csconform.perf.models.zoo`); both readers describe transformers through
:mod:`~csconform.perf.models.transformer`.
"""
