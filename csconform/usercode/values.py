"""What the checker knows about a value: a tensor, a batch, a compiled model, a GradScaler, a Dataset.

The checks ask questions such as "is this ``if`` testing a tensor?" or "is this object a GradScaler?"
of values that flow through assignments, calls and attributes. A :class:`Value` is the answer,
kept deliberately coarse: a ``tensor`` is known to be a tensor (a torch function's result, a
tensor's method, arithmetic with one); a ``tree`` is a tensor or a structure of tensors (a batch,
a model's outputs), which may be a dict, so its truth value is not a tensor's; everything not known
is ``unknown`` and never reported on. Joining two values (two branches of an ``if``) keeps what
either knows, so a name that may be a tensor counts as one.

The tables below say which names of the vendor's and PyTorch's APIs make which values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def _names(*groups: str) -> frozenset[str]:
    """Names written as text, separated by spaces (a long table stays a few lines)."""
    return frozenset(name for group in groups for name in group.split())


UNKNOWN = "unknown"
NONE = "none"
TENSOR = "tensor"
TREE = "tree"
"""A tensor or a structure (dict, tuple, dataclass) of tensors: a batch, a model's outputs."""
TREE_ITEMS = "tree-items"
"""``outputs.items()``: pairs of a key and a tree."""
MODULE = "module"
"""A torch.nn.Module instance; ``ref`` is its class in the run, when known."""
COMPILED = "compiled"
"""The result of cstorch.compile; ``ref`` is the compile call (its identity), ``cls`` the model's class."""
SCALER = "scaler"
OPTIMIZER = "optimizer"
PARAM_GROUPS = "param-groups"
PARAM_GROUP = "param-group"
LEARNING_RATE = "learning-rate"
"""A param group's "lr" entry."""
TORCH_LOADER = "torch-dataloader"
CS_LOADER = "cstorch-dataloader"
EXECUTOR = "data-executor"
DATASET = "tf-dataset"
ESTIMATOR = "estimator"
INSTANCE = "instance"
"""An instance of a class of the run that is not a module; ``ref`` is the class."""
HOST_VALUE_READ = "host-value"
"""A Python number read from a tensor (``loss.item()``, ``float(loss)``): it depends on the data."""
TUPLE = "tuple"
ITERABLE = "iterable"
"""Something iterated: ``items[0]`` is what each iteration gives."""
TENSORISH = (TENSOR, TREE)


@dataclass(frozen=True)
class Value:
    kind: str = UNKNOWN
    ref: Any = None
    items: tuple[Value, ...] = ()

    @property
    def tensorish(self) -> bool:
        return self.kind in TENSORISH

    @property
    def is_tensor(self) -> bool:
        return self.kind == TENSOR

    @property
    def depends_on_data(self) -> bool:
        """A tensor, or a number read from one: a branch on it depends on the data."""
        return self.kind in (TENSOR, HOST_VALUE_READ)


UNKNOWN_VALUE = Value()
NONE_VALUE = Value(NONE)
TENSOR_VALUE = Value(TENSOR)
TREE_VALUE = Value(TREE)
SCALED_LOSS = Value(TENSOR, ref="scaled by a GradScaler")
"""What ``scaler.scale(loss)`` gives: its backward() is the scaled one."""


def join(a: Value, b: Value) -> Value:
    """What a name holds when it may hold ``a`` or ``b``: what either knows (a tensor over a tree)."""
    if a == b:
        return a
    if a.kind in (UNKNOWN, NONE):
        return b
    if b.kind in (UNKNOWN, NONE):
        return a
    if a.tensorish and b.tensorish:
        return TENSOR_VALUE
    if a.kind == b.kind == TUPLE and len(a.items) == len(b.items):
        return Value(TUPLE, items=tuple(join(x, y) for x, y in zip(a.items, b.items, strict=True)))
    if a.kind == b.kind:
        return Value(a.kind, a.ref if a.ref is b.ref else None, a.items if a.items == b.items else ())
    return UNKNOWN_VALUE


def element(value: Value) -> Value:
    """What iterating ``value`` gives."""
    if value.kind == TENSOR:
        return TENSOR_VALUE
    if value.kind in (EXECUTOR, TORCH_LOADER, CS_LOADER):
        return TREE_VALUE
    if value.kind == PARAM_GROUPS:
        return Value(PARAM_GROUP)
    if value.kind == ITERABLE and value.items:
        return value.items[0]
    if value.kind == TUPLE and value.items:
        result = value.items[0]
        for item in value.items[1:]:
            result = join(result, item)
        return result
    if value.kind == TREE_ITEMS:
        return Value(TUPLE, items=(UNKNOWN_VALUE, TREE_VALUE))
    return UNKNOWN_VALUE


# --- PyTorch -----------------------------------------------------------------------------------

TORCH_FUNCTION_MODULES = ("torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special")
"""Modules whose lower-case functions return tensors (but for :data:`TORCH_NON_TENSOR_FUNCTIONS`)."""

TORCH_NON_TENSOR_FUNCTIONS = _names(
    "is_tensor is_storage is_floating_point is_complex is_grad_enabled is_inference_mode_enabled",
    "numel no_grad enable_grad set_grad_enabled inference_mode device get_default_dtype",
    "set_default_dtype set_default_tensor_type manual_seed seed initial_seed get_rng_state",
    "set_rng_state autocast compile load save broadcast_shapes promote_types result_type can_cast",
    "typename use_deterministic_algorithms set_printoptions get_num_threads set_num_threads finfo",
    "iinfo empty_cache cuda get_device set_float32_matmul_precision",
)

TENSOR_ATTRIBUTES = _names("T mT H mH data grad real imag")
"""Attributes of a tensor that are tensors (``shape``, ``dtype``, ``device``, ``ndim``, ... are not)."""

TENSOR_METADATA = _names(
    "shape dtype device ndim is_cuda is_leaf requires_grad layout names is_sparse is_quantized",
    "is_meta grad_fn",
)
"""Attributes known while tracing, without the tensor's value."""

TENSOR_METADATA_METHODS = _names(
    "size dim numel nelement element_size is_floating_point is_complex is_contiguous get_device",
    "stride storage_offset data_ptr has_names backward register_hook retain_grad requires_grad_",
    "__len__",
)
"""Methods of a tensor that neither give a tensor nor need its value."""

VALUE_READS = frozenset({"item", "tolist", "numpy"})
"""Methods that copy a tensor's value to the host."""

TENSOR_METHODS = _names(
    "abs add all any argmax argmin bfloat16 bmm ceil clamp clamp_min clamp_max clone contiguous cos",
    "cpu cuda cumsum detach div double eq exp expand expand_as float floor flatten gather ge gt half",
    "index_select int isfinite isinf isnan le log log_softmax logical_and logical_not logical_or long",
    "lt masked_fill matmul max mean min mul ne neg norm permute pow prod reshape round rsqrt sigmoid",
    "sign sin softmax sqrt square squeeze std sub sum t tanh to transpose type_as unsqueeze var view",
    "view_as where",
)
"""Methods that tell a tensor inside a structure of tensors (``batch["x"].sum()``): they give a tensor."""

TORCH_LAYERS_WITH_TUPLES = frozenset({"RNN", "LSTM", "GRU", "MultiheadAttention"})
"""torch.nn layers whose call gives a tuple; every other torch.nn module gives a tensor."""
TORCH_LAYER = "torch.nn layer"
"""The ``ref`` of a torch.nn module whose call gives a tensor."""

SCALER_CLASSES = frozenset(
    {"cerebras.pytorch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.cpu.amp.GradScaler"}
)
COMPILE_FUNCTIONS = frozenset({"cerebras.pytorch.compile", "torch.compile"})
TRACE_DECORATORS = frozenset({"cerebras.pytorch.trace"})
CLOSURE_DECORATORS = ("step_closure", "checkpoint_closure")
"""Decorators (by last name: cstorch's, and the 1.x ``cm.step_closure``) of functions run after the step."""
TORCH_DATALOADER = "torch.utils.data.DataLoader"
CS_DATALOADER = "cerebras.pytorch.utils.data.DataLoader"
DATA_EXECUTOR = "cerebras.pytorch.utils.data.DataExecutor"
CLIPPING_FUNCTIONS = frozenset(
    {"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad_norm"}
)
AMP_OPTIMIZER_STEP = "cerebras.pytorch.amp.optimizer_step"
TORCH_LR_SCHEDULERS = "torch.optim.lr_scheduler"
CSTORCH_LR_SCHEDULERS = _names(
    "ConstantLR PolynomialLR LinearLR ExponentialLR InverseExponentialTimeDecayLR",
    "InverseSquareRootDecayLR CosineDecayLR SequentialLR PiecewiseConstantLR MultiStepLR StepLR",
    "CosineAnnealingLR LambdaLR CosineAnnealingWarmRestarts MultiplicativeLR ChainedScheduler",
    "CyclicLR OneCycleLR",
)
"""The schedulers of cerebras.pytorch.optim.lr_scheduler (2.10.0), functions of the global step."""
DOUBLE_DTYPES = frozenset({"torch.float64", "torch.double"})
HALF_DTYPES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})

# --- TensorFlow --------------------------------------------------------------------------------

DATASET_METHODS = _names(
    "apply batch cache concatenate enumerate filter flat_map interleave map padded_batch prefetch",
    "rebatch repeat shard shuffle skip take unbatch window with_options zip",
    "filter_with_legacy_function map_with_legacy_function ignore_errors take_while unique",
    "prefetch_to_device",
)
"""Dataset methods that give a Dataset."""
DATASET_FACTORIES = ("tensorflow.data.", "tensorflow.compat.v1.data.", "tensorflow.compat.v2.data.")
"""Qualified-name prefixes whose calls make a Dataset (tf.data.Dataset.from_tensor_slices, TFRecordDataset...)."""
ESTIMATOR_CLASSES = ("Estimator", "CerebrasEstimator")
ESTIMATOR_SPEC_CLASSES = ("EstimatorSpec", "CSEstimatorSpec")
RUN_CONFIG_CLASSES = ("RunConfig", "CSRunConfig")
SEED_FUNCTIONS = frozenset(
    {"tensorflow.random.set_seed", "tensorflow.compat.v1.set_random_seed", "tensorflow.set_random_seed"}
)


def torch_function_returns_tensor(qualified: str) -> bool:
    """Whether ``torch.<name>(...)`` (or torch.nn.functional.<name>, ...) gives a tensor."""
    module, _, name = qualified.rpartition(".")
    if module not in TORCH_FUNCTION_MODULES or not name or name.startswith("_"):
        return False
    if name in TORCH_NON_TENSOR_FUNCTIONS:
        return False
    return name[0].islower() or name.endswith("Tensor")


def is_dataset_factory(qualified: str) -> bool:
    return qualified.startswith(DATASET_FACTORIES) and qualified.rpartition(".")[2] not in ("Options",)


def is_closure_decorator(qualified: str) -> bool:
    return qualified.rpartition(".")[2] in CLOSURE_DECORATORS
