"""The spec's rules applied to a run description: each check reads the description, never the file.

Where a behaviour changes between releases, a check asks the release's extracted knowledge
(:mod:`.release_data`: what each release's own source does) rather than comparing version numbers.
Where the reference engine decides a refusal (the GradScaler's arguments, the SGD/Adam/AdamW
hyperparameters, the LR schedule's values), the check builds the engine's own object and reports its
typed refusal, so that validate and the engine never disagree. Each check reports through
:class:`~csconform.findings.collect.Findings`, which drops the rules whose releases leave out the
release being judged.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from csconform.arguments import integer_problem, is_finite_real, is_integer
from csconform.engine import amp, context
from csconform.engine.context import HALF_DTYPES
from csconform.engine.estimator_config import DEFAULT_MIN_SAVE_CHECKPOINT_STEPS
from csconform.engine.nn.parameter import Parameter
from csconform.engine.optim import optimizers as engine_optimizers
from csconform.errors import CsConformError, InvalidInputError
from csconform.findings.collect import Findings
from csconform.findings.finding import Location
from csconform.perf.hardware import check_cluster_size, get_wafer
from csconform.perf.models.zoo_section import position_table_length
from csconform.userconfig.description import RunDescription, SchedulerConfig, Setting
from csconform.userconfig.package_api import package_api
from csconform.userconfig.performance import model_family
from csconform.userconfig.release_data import ModelConfigClass, ReleaseKnowledge, first_release, knowledge
from csconform.userconfig.schedule import SEQUENTIAL, Schedule, ScheduleNotRunnable, build, evaluation_steps
from csconform.userconfig.schedulers import class_name
from csconform.userconfig.vocabulary import SIMILARITY, did_you_mean

MAX_CSX_STEPS = (1 << 31) - 1
SUGGESTED_KEYS = 100
"""Unknown keys of one file that get a did-you-mean (the first ones; each scan costs milliseconds)."""
# The engine's RunConfig parameters refused on the CS system (UNSUPPORTED_PARAMETERS), each with its rule
# (estimator-limitations#Parameters not supported).
ESTIMATOR_RULES = {
    "save_checkpoint_secs": "ESTIMATOR-007",
    "train_distribute": "ESTIMATOR-008",
    "device_fn": "ESTIMATOR-009",
    "protocol": "ESTIMATOR-010",
    "eval_distribute": "ESTIMATOR-011",
    "experimental_distribute": "ESTIMATOR-012",
    "experimental_max_worker_delay_secs": "ESTIMATOR-013",
}
CLUSTER_RULES = {"wse1": "HW-015", "wse2": "HW-009", "wse3": "HW-010"}


def _release(run: RunDescription) -> ReleaseKnowledge:
    return knowledge(run.release.name)


def trains(run: RunDescription) -> bool:
    """Whether the file describes training (not an evaluation-only run)."""
    mode = run.loop.mode.value if run.loop.mode is not None else None
    if mode in ("eval", "eval_all"):
        return False
    return run.batch.train is not None or run.optimizer is not None or run.schedule is not None


def _train_origin(run: RunDescription) -> Location:
    return Location("trainer.fit.train_dataloader" if run.layout == "trainer" else "train_input")


# --- layout and keys ---------------------------------------------------------------------------------


def check_layout(run: RunDescription, found: Findings) -> None:
    release = _release(run)
    if run.layout == "trainer" and not release.reads_trainer_layout:
        since = first_release(lambda r: r.reads_trainer_layout)
        found.refuse(
            "CONFIG-004",
            Location("trainer", 1),
            f"the trainer layout is read from release {since} on, not {run.release}",
        )
    elif run.layout == "flat" and release.reads_trainer_layout:
        command = release.convert_command
        once = (
            f"{command} FILE -o NEW converts it once"
            if command
            else f"release {run.release} ships no command that converts it once"
        )
        found.warn(
            "CONFIG-005",
            Location(),
            f"flat-layout params file: release {run.release} converts it to the trainer layout on load ({once})",
            fix=f"convert it with {command}"
            if command
            else "keep it (the release converts it on load) or write the trainer layout",
        )


def check_keys(run: RunDescription, found: Findings) -> None:
    """Unknown (CONFIG-002), repeated (CONFIG-003) and text-number (CONFIG-007) keys; runs last, so that
    a key another rule already reports (use_bfloat16 from 2.1.0) is not reported again as unknown."""
    if run.layout == "hf":
        return
    reported = {f.key for f in (*found.violations, *found.warnings)}
    unknown = [
        use
        for use in run.keys
        if use.name not in _vocabulary(run) and use.path not in reported and not _in_model_section(run, use.path)
    ]
    for index, use in enumerate(unknown):
        # a did-you-mean scans the whole vocabulary: only the first keys get one (a file of thousands
        # of unknown keys is not a typo, and must not take minutes)
        suggestion = did_you_mean(use.name, run.release.name) if index < SUGGESTED_KEYS else None
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        found.warn(
            "CONFIG-002",
            Location(use.path, use.line),
            f"release {run.release} does not know the key {use.name!r}{hint}",
        )
    for use in run.duplicate_keys:
        found.warn(
            "CONFIG-003", Location(use.path, use.line), f"key {use.name!r} is given twice; the second value wins"
        )
    for use in run.text_numbers:
        mantissa, exponent = re.split("[eE]", use.name)
        found.warn(
            "CONFIG-007",
            Location(use.path, use.line),
            f"{use.name} is read as the text {use.name!r} by YAML 1.1 (PyYAML); write {mantissa}.0e{exponent} "
            "so that every release reads a number",
        )


def _in_model_section(run: RunDescription, path: str) -> bool:
    """Whether ``path`` is a key of a model section whose config class judges its keys (CONFIG-008)."""
    config = _model_config(run)
    return config is not None and config.extra == "forbid" and path.startswith(f"{run.model.fields.origin.key}.")  # type: ignore[union-attr]


def _model_config(run: RunDescription) -> ModelConfigClass | None:
    if run.model is None or run.model.kind != "zoo" or run.model.family is None:
        return None
    return _release(run).model_config(run.model.family.value)


def check_model_keys(run: RunDescription, found: Findings) -> None:
    """CONFIG-008: a key of the model section that the model's config class does not define, where the
    class forbids extra keys (the release's pydantic configs, from 2.4.0)."""
    config = _model_config(run)
    if config is None or config.extra != "forbid" or run.model is None:
        return
    section = run.model.fields.origin.key
    moved = _moved_out_of_model(run)
    for key in run.model.fields.value:
        if str(key) in config.fields or str(key) in moved:
            continue
        path = f"{section}.{key}"
        line = next((use.line for use in run.keys if use.path == path), None)
        close = difflib.get_close_matches(str(key), sorted(config.fields), n=1, cutoff=SIMILARITY)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        found.refuse(
            "CONFIG-008",
            Location(path, line),
            f"{config.class_name} ({run.model.family.value!r}, release {run.release}) has no field {str(key)!r} "  # type: ignore[union-attr]
            f"and refuses it{hint}",
        )


def _moved_out_of_model(run: RunDescription) -> set[str]:
    """Model keys of a flat-layout file that the release's conversion moves to another section
    (``model.mixed_precision`` to ``precision.enabled``); the model's config class never sees them."""
    conversion = _release(run).legacy_conversion
    if run.layout != "flat" or conversion is None:
        return set()
    moved: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and node.startswith("model.") and node != "model.*":
            moved.add(node.split(".")[1])

    walk(conversion["to_trainer"])
    return moved


def _vocabulary(run: RunDescription) -> frozenset[str]:
    return _vocabulary_of(run.release.name)


def _vocabulary_of(release: str) -> frozenset[str]:
    from csconform.userconfig.vocabulary import accepted_keys

    return accepted_keys(release)


# --- batch and cluster -------------------------------------------------------------------------------


def check_batch(run: RunDescription, found: Findings) -> None:
    batch = run.batch
    if trains(run) and batch.train is None and run.framework == "pytorch":
        found.refuse("CONFIG-010", _train_origin(run), "a training run needs a batch_size for its training data")
    for setting in (batch.train, batch.eval):
        problem = None if setting is None else integer_problem("batch_size", setting.value, minimum=1)
        if setting is not None and problem is not None:
            found.refuse("CONFIG-010", setting.origin, problem)
    if batch.drop_last is not None and batch.drop_last.value is False:
        found.warn(
            "CONFIG-015", batch.drop_last.origin, "drop_last is false: the last batch of a finite dataset is short"
        )
    if batch.train is None or integer_problem("batch_size", batch.train.value, minimum=1) is not None:
        return
    size, systems = int(batch.train.value), run.systems
    if size % systems:
        found.refuse("CONFIG-011", batch.train.origin, batch_size=size, num_csx=systems)
    if size < systems:
        found.refuse("CONFIG-012", batch.train.origin, batch_size=size, num_csx=systems)
    micro = batch.micro_batch
    if micro is None or micro.value in ("auto", "explore") or isinstance(micro.value, dict):
        return
    if not is_integer(micro.value) or not 1 <= micro.value <= size:
        found.refuse("CONFIG-014", micro.origin, micro_batch_size=micro.value, batch_size=size)
    if is_integer(micro.value) and size % systems == 0:
        per_csx = size // systems
        if micro.value < 1 or per_csx % micro.value:
            found.refuse(
                "CONFIG-013",
                micro.origin,
                batch_size=size,
                num_csx=systems,
                per_csx=per_csx,
                micro_batch_size=micro.value,
            )


def check_cluster(run: RunDescription, found: Findings, wafer: str) -> None:
    """num_csx against the cluster sizes of the wafer's systems, as the performance model checks them."""
    setting = run.batch.num_csx
    if setting is not None:
        preset = get_wafer(wafer)
        try:
            check_cluster_size(preset, setting.value)
        except InvalidInputError as exc:
            found.refuse(CLUSTER_RULES.get(preset.name, "HW-009"), setting.origin, f"num_csx: {exc}")
    strategy = run.loop.execution_strategy
    if strategy is not None and run.asked_mode == "pipelined" and run.systems > 1:
        found.refuse("PERF-018", strategy.origin, f"pipelined execution runs on one system, not num_csx={run.systems}")


# --- precision and loss scaling ------------------------------------------------------------------------


def reads_use_bfloat16(release: str) -> bool:
    """Whether the release chooses the half dtype with ``use_bfloat16`` (1.x to 2.0.3): its code or files
    use the key and it does not refuse it (2.1.0 to 2.3.1 refuse it; later releases never name it)."""
    return "use_bfloat16" in _vocabulary_of(release) and "use_bfloat16" not in knowledge(release).refused_keys


def _half_dtype(run: RunDescription) -> str:
    """The half dtype the run computes in, as the release reads the file: ``use_bfloat16`` where the
    release reads it, else ``fp16_type`` (default float16; bfloat16 in the trainer layout)."""
    precision = run.precision
    if reads_use_bfloat16(run.release.name):
        use_bfloat16 = precision.use_bfloat16 is not None and precision.use_bfloat16.value is True
        return "bfloat16" if use_bfloat16 else "float16"
    if precision.fp16_type is not None:
        return str(precision.fp16_type.value)
    return "bfloat16" if run.layout == "trainer" else "float16"


def check_precision(run: RunDescription, found: Findings) -> None:
    precision, scaling = run.precision, run.loss_scaling
    mixed = precision.mixed_precision
    if mixed is not None and mixed.value is False and trains(run):
        found.refuse(
            "PRECISION-001", mixed.origin, "mixed precision is the only precision for training on the CS system"
        )
        found.warn(
            "CONFIG-020", mixed.origin, f"mixed precision disabled: release {run.release} enables it anyway on CS-X"
        )
    if precision.fp16_type is not None and precision.fp16_type.value not in HALF_DTYPES:
        found.refuse("CONFIG-021", precision.fp16_type.origin, fp16_type=precision.fp16_type.value)
    if precision.use_bfloat16 is not None:
        found.refuse("CONFIG-023", precision.use_bfloat16.origin)
    factor = scaling.factor.value if scaling.factor is not None else None
    if _half_dtype(run) == "cbfloat16" and factor != "dynamic":
        at = scaling.factor.origin if scaling.factor is not None else precision.fp16_type.origin  # type: ignore[union-attr]
        found.refuse("CONFIG-022", at)
    if _half_dtype(run) == "bfloat16" and scaling.factor is not None and factor not in (None, 1, 1.0):
        found.warn(
            "CONFIG-024",
            scaling.factor.origin,
            f"loss_scaling_factor {factor!r} is ignored: bfloat16 needs no loss scaling",
        )


def _grad_scaler_arguments(run: RunDescription) -> dict[str, Setting[Any]]:
    scaling = run.loss_scaling
    named = {
        "loss_scale": scaling.factor,
        "init_scale": scaling.initial_scale,
        "steps_per_increase": scaling.steps_per_increase,
        "min_loss_scale": scaling.min_scale,
        "max_loss_scale": scaling.max_scale,
        "overflow_tolerance": scaling.overflow_tolerance,
    }
    return {name: setting for name, setting in named.items() if setting is not None}


def check_loss_scaling(run: RunDescription, found: Findings) -> None:
    factor = run.loss_scaling.factor
    arguments = _grad_scaler_arguments(run)
    if factor is not None and not (is_finite_real(factor.value) or factor.value == "dynamic"):
        found.refuse("CONFIG-030", factor.origin, loss_scaling_factor=factor.value)
        del arguments["loss_scale"]  # refused already, by the release's own rule
    dynamic = factor is not None and factor.value == "dynamic"
    # Each argument alone with the configured mode, so that a refusal points at its own key. The half
    # dtype decides the default maximum scale; the engine's global state is restored afterwards.
    previous = context.half_dtype_name()
    half = _half_dtype(run)
    try:
        if half in HALF_DTYPES:
            context.set_half_dtype_name(half)
        for name, setting in arguments.items():
            mode = {"loss_scale": "dynamic" if dynamic else None}
            try:
                amp.GradScaler(**(mode | {name: setting.value}))
            except CsConformError as exc:
                rule = "GRADSCALER-034" if "too small" in str(exc) and dynamic else "GRADSCALER-040"
                found.refuse(
                    rule,
                    setting.origin,
                    None if rule == "GRADSCALER-034" else f"the reference engine's GradScaler refuses it: {exc}",
                )
    finally:
        context.set_half_dtype_name(previous)


def check_clipping(run: RunDescription, found: Findings) -> None:
    norm, value = run.loss_scaling.max_gradient_norm, run.loss_scaling.max_gradient_value
    positive_required = _release(run).zero_clipping_threshold == "refused"
    for setting in (norm, value):
        if setting is None:
            continue
        if not is_finite_real(setting.value) or setting.value < 0 or (positive_required and setting.value <= 0):
            bound = "a number above 0" if positive_required else "a number of at least 0 (0: no clipping)"
            found.refuse(
                "CONFIG-032",
                setting.origin,
                f"{_key(setting)} must be {bound}, got {setting.value!r}",
            )
    if norm is None or value is None:
        return
    if positive_required or (
        is_finite_real(norm.value) and is_finite_real(value.value) and norm.value > 0 and value.value > 0
    ):
        found.refuse("CONFIG-031", value.origin, max_gradient_norm=norm.value, max_gradient_value=value.value)


# --- optimizer -----------------------------------------------------------------------------------------


def pytorch_only(check: Callable[[RunDescription, Findings], None]) -> Callable[[RunDescription, Findings], None]:
    """A check of the PyTorch stack's names and loop, skipped for a TensorFlow params file."""

    def checked(run: RunDescription, found: Findings) -> None:
        if run.framework == "pytorch":
            check(run, found)

    checked.__name__, checked.__doc__ = check.__name__, check.__doc__
    return checked


@pytorch_only
def check_optimizer(run: RunDescription, found: Findings) -> None:
    optimizer = run.optimizer
    if optimizer is None:
        if trains(run) and run.layout != "hf":
            rule = "CONFIG-040" if _release(run).builds_1x_optimizers else "CONFIG-041"
            found.refuse(
                rule,
                Location("optimizer" if run.layout == "flat" else "trainer.init.optimizer"),
                "a training run needs an optimizer",
            )
        return
    name = optimizer.name.value
    supported = _release(run).supported_optimizers
    if supported and (not isinstance(name, str) or name.lower() not in {n.lower() for n in supported}):
        found.refuse("CONFIG-040", optimizer.name.origin, optimizer_type=name, supported=list(supported))
        return
    if isinstance(name, str):
        _check_1x_optimizer_keys(run, name, found)
    signature = package_api().optimizer(name) if isinstance(name, str) else None
    if signature is None:
        known = ", ".join(sorted(package_api().optimizers))
        found.refuse(
            "CONFIG-041", optimizer.name.origin, f"unknown optimizer {name!r}; the package's optimizers: {known}"
        )
        return
    release = _release(run)
    arguments = {release.argument_name(a, signature.arguments): s for a, s in optimizer.arguments.items()}
    if run.layout == "trainer":
        for argument, setting in optimizer.arguments.items():
            named = release.argument_name(argument, signature.arguments)
            if named not in signature.arguments and argument not in release.param_group_keys:
                found.warn(
                    "CONFIG-041",
                    setting.origin,
                    f"{signature.name} takes no argument {argument!r}; the release ignores it",
                )
    _check_with_engine_optimizer(signature.name, arguments, found)


def _check_1x_optimizer_keys(run: RunDescription, name: str, found: Findings) -> None:
    """CONFIG-042: an optimizer-section key the 1.x release reads for no optimizer of this type."""
    reads = _release(run).optimizer_reads(name)
    if reads is None or run.layout != "flat":
        return
    for use in run.keys:
        if use.section == "optimizer" and use.path.count(".") == 1 and use.name not in reads:
            found.warn(
                "CONFIG-042",
                Location(use.path, use.line),
                f"release {run.release} reads no key {use.name!r} for optimizer {name}: it is silently ignored "
                f"(it reads {', '.join(sorted(reads - {'optimizer_type', 'state'}))})",
            )


def _check_with_engine_optimizer(name: str, arguments: Mapping[str, Setting[Any]], found: Findings) -> None:
    """Hyperparameters of SGD, Adam and AdamW as the reference engine's constructors judge them."""
    cls = getattr(engine_optimizers, name, None)
    if cls not in (engine_optimizers.SGD, engine_optimizers.Adam, engine_optimizers.AdamW):
        return
    accepted = {"lr", "momentum", "weight_decay", "nesterov", "betas", "eps"}
    for argument, setting in arguments.items():
        if argument not in accepted:
            continue
        value = tuple(setting.value) if argument == "betas" and isinstance(setting.value, list) else setting.value
        keywords = {argument: value}
        if argument == "nesterov" and value:
            keywords["momentum"] = arguments["momentum"].value if "momentum" in arguments else 0.0
        try:
            cls([Parameter([0.0])], **({"lr": 0.0} | keywords))
        except InvalidInputError as exc:
            found.refuse("OPTIM-011", setting.origin, f"the reference engine's {name} refuses it: {exc}")


# --- LR schedule ---------------------------------------------------------------------------------------


def _scheduler_name_message(run: RunDescription, written: str) -> str:
    """The refusal of the release's own reader: the 1.x PyTorchBaseModel, the trainer's conversion of a
    flat file, or (2.0.2 to 2.2.1 and the trainer layout) the package's classes."""
    if run.layout == "flat" and _release(run).builds_1x_optimizers:
        return f"Unsupported LR scheduler {written.lower()}"
    if run.layout == "flat" and _release(run).reads_trainer_layout:
        known = [n.lower() for n in package_api().lr_schedulers]
        return f"Invalid lr_scheduler type. Expected one of {known}. Got: {written.lower()}"
    return (
        f"unknown LR scheduler {written!r}; the package's schedulers: {', '.join(sorted(package_api().lr_schedulers))}"
    )


def _check_scheduler(config: SchedulerConfig, run: RunDescription, found: Findings) -> None:
    api = package_api()
    signature = api.lr_scheduler(config.name.value) if class_name(config.name.value) else None
    if signature is None:
        found.refuse("CONFIG-050", config.name.origin, _scheduler_name_message(run, config.written))
        return
    structural = (
        {"schedulers", "milestones", "scheduler"} if signature.name in (SEQUENTIAL, "ScalePerParamLR") else set()
    )
    missing = [a for a in signature.required if a not in config.arguments and a not in structural]
    if missing:
        found.refuse("CONFIG-051", config.name.origin, f"{signature.name} needs {', '.join(missing)}")
    if run.layout == "trainer":
        for argument, setting in config.arguments.items():
            if argument not in signature.arguments:
                found.refuse("CONFIG-052", setting.origin, f"{signature.name} takes no argument {argument!r}")
    if signature.name == SEQUENTIAL or (run.layout == "flat" and config.children):
        _check_sequence(config, run, found)
    for child in config.children:
        _check_scheduler(child, run, found)


def _phase_length(phase: SchedulerConfig) -> int | None:
    setting = phase.arguments.get("total_iters")
    if setting is None or integer_problem("total_iters", setting.value, minimum=1) is not None:
        return None
    return int(setting.value)


def _check_sequence(config: SchedulerConfig, run: RunDescription, found: Findings) -> None:
    """Phase lengths and milestones (CONFIG-053), phases the run never reaches or cuts (CONFIG-054),
    and a rate that jumps where one phase hands over to the next (CONFIG-055)."""
    lengths = [_phase_length(phase) for phase in config.children]
    for phase, length in zip(config.children[:-1], lengths, strict=False):
        if length is None:
            given = phase.arguments["total_iters"].value if "total_iters" in phase.arguments else None
            text = (
                "Non final learning rate schedulers must have either the 'steps' or 'decay_steps' parameter given."
                if run.layout == "flat" and _release(run).builds_1x_optimizers
                else f"every phase but the last needs a positive total_iters; {phase.written} has {given!r}"
            )
            found.refuse("CONFIG-053", phase.origin, text)
            return
    starts = [sum(lengths[:i]) for i in range(len(lengths))]  # type: ignore[arg-type]
    given = config.arguments.get("milestones")
    if given is not None and given.value != starts[1:]:
        found.refuse(
            "CONFIG-053",
            given.origin,
            f"Expected {config.name.value} to have milestones {starts[1:]}, but got {given.value}",
        )
    steps = run.steps
    for index, (phase, start, length) in enumerate(zip(config.children, starts, lengths, strict=True)):
        if steps is not None and start >= steps:
            text = f"{phase.written} starts at step {start}, after the last training step {steps - 1}: it never runs"
            found.warn("CONFIG-054", phase.origin, text)
        elif steps is not None and length is not None and start + length > steps:
            text = f"{phase.written} ends at step {start + length}; training stops at step {steps - 1}, mid-phase"
            fix = (
                f"shorten {phase.written} to {steps - start} steps to end with the run's {steps}, "
                f"or train for {start + length} steps"
            )
            # Shortening a phase that later phases follow would move their milestones too: no edit then.
            last = index == len(config.children) - 1 or given is None
            found.warn(
                "CONFIG-054",
                phase.arguments["total_iters"].origin,
                text,
                fix=fix,
                new_value=str(steps - start) if last else None,
            )
    for before, after, length in zip(config.children, config.children[1:], lengths, strict=False):
        _check_handover(before, after, length, run, found)


def _check_handover(
    before: SchedulerConfig, after: SchedulerConfig, length: int | None, run: RunDescription, found: Findings
) -> None:
    """The rate where ``before`` ends (its local step ``length``) against where ``after`` starts."""
    try:
        end = build(before, strict=run.layout != "flat").at([length or 0])[0]
        start = build(after, strict=run.layout != "flat").at([0])[0]
    except CsConformError:
        return
    if not math.isclose(end, start, rel_tol=1e-6, abs_tol=1e-12):
        text = f"the rate jumps from {end:.6g} to {start:.6g} where {before.written} hands over to {after.written}"
        found.warn("CONFIG-055", after.origin, text)


@pytorch_only
def check_schedule(run: RunDescription, found: Findings) -> None:
    if run.schedule is None:
        return
    _check_scheduler(run.schedule, run, found)
    try:
        schedule = build(run.schedule, strict=run.layout != "flat")
    except ScheduleNotRunnable:
        return
    except InvalidInputError as exc:
        found.refuse("LR-004", run.schedule.origin, f"the reference engine refuses the schedule: {exc}")
        return
    if run.steps is not None:
        _check_rates_finite(schedule, run.steps, run.schedule.origin, found)


def _check_rates_finite(schedule: Schedule, steps: int, origin: Location, found: Findings) -> None:
    """A rate beyond float32's range within the run (an ExponentialLR growing by 10 every few steps):
    the reference engine's optimizer refuses a non-finite learning rate at that step."""
    grid = evaluation_steps(schedule, steps)
    rates = schedule.at(grid)
    beyond = np.flatnonzero(~np.isfinite(rates))
    if beyond.size:
        step, rate = int(grid[beyond[0]]), float(rates[beyond[0]])
        found.refuse(
            "OPTIM-011",
            origin,
            f"the learning rate is {rate} from step {step} of the run's {steps}: the schedule leaves float32's "
            "range, and the reference engine's optimizer refuses a non-finite learning rate",
        )


# --- loop, checkpoints, evaluation ---------------------------------------------------------------------


def check_loop(run: RunDescription, found: Findings) -> None:
    loop = run.loop
    lengths = [s for s in (loop.max_steps, loop.num_steps, loop.num_epochs) if s is not None]
    if trains(run) and not lengths:
        found.refuse("CONFIG-060", _loop_origin(run), "a training run needs max_steps, num_steps or num_epochs")
    for setting in lengths:
        problem = integer_problem(_key(setting), setting.value, minimum=1)
        if problem is not None:
            found.refuse("CONFIG-060", setting.origin, problem)
        elif setting is not loop.num_epochs and setting.value > MAX_CSX_STEPS:
            found.refuse("CONFIG-061", setting.origin, name=_key(setting), value=setting.value)
    steps = run.steps
    checkpoint = loop.checkpoint_steps
    if checkpoint is not None:
        if integer_problem("checkpoint_steps", checkpoint.value, minimum=0) is not None:
            found.refuse("CONFIG-062", checkpoint.origin, steps=checkpoint.value)
        elif steps is not None and checkpoint.value > steps:
            found.warn(
                "CONFIG-063",
                checkpoint.origin,
                f"checkpoint every {checkpoint.value} steps in a run of {steps}: only the last step is saved",
            )
        elif 0 < checkpoint.value < DEFAULT_MIN_SAVE_CHECKPOINT_STEPS:
            found.warn(
                "CONFIG-063",
                checkpoint.origin,
                f"checkpoint every {checkpoint.value} steps: below the lower bound of "
                f"{DEFAULT_MIN_SAVE_CHECKPOINT_STEPS} steps (ESTIMATOR-016)",
            )
    if run.framework == "pytorch":
        _check_evaluation(run, found)


def _loop_origin(run: RunDescription) -> Location:
    return Location("trainer.init.loop" if run.layout == "trainer" else "runconfig")


def _key(setting: Setting[Any]) -> str:
    return (setting.origin.key or "").rsplit(".", 1)[-1]


def _check_evaluation(run: RunDescription, found: Findings) -> None:
    loop, steps = run.loop, run.steps
    frequency = loop.eval_frequency
    if frequency is not None:
        value = frequency.value
        fraction_allowed = _release(run).eval_frequency_fraction
        valid = (is_integer(value) and value >= 1) or (
            fraction_allowed and isinstance(value, float) and 0.0 < value <= 1.0
        )
        if not valid:
            fraction = " or a float in the range (0.0, 1.0]" if fraction_allowed else ""
            found.refuse(
                "CONFIG-064", frequency.origin, f"`eval_frequency` must be a positive integer{fraction}. Got {value!r}"
            )
        elif is_integer(value) and steps is not None and value > steps:
            found.warn(
                "CONFIG-065",
                frequency.origin,
                f"eval_frequency {value} exceeds the {steps} training steps: one evaluation, at the end",
            )
    eval_steps = loop.eval_steps
    problem = None if eval_steps is None else integer_problem("eval_steps", eval_steps.value, minimum=1)
    if eval_steps is not None and problem is not None:
        found.refuse("CONFIG-064", eval_steps.origin, problem)


def check_sequence_length(run: RunDescription, found: Findings) -> None:
    """CONFIG-066: the training sequences are no longer than the model's position table."""
    model = run.model
    family = model_family(run)
    if model is None or model.seq_len is None or family is None or not is_integer(model.seq_len.value):
        return
    rows = position_table_length(model.fields.value, family.name)
    if rows is not None and model.seq_len.value > rows:
        found.refuse(
            "CONFIG-066",
            model.seq_len.origin,
            f"max_sequence_length {model.seq_len.value} is longer than the model's position table of {rows} rows "
            f"(max_position_embeddings): positions {rows} to {model.seq_len.value - 1} have no row to read",
        )


def trains_and_evaluates(run: RunDescription) -> Setting[Any] | None:
    """The setting that asks for training with evaluation in one run, if any."""
    if run.loop.mode is not None and run.loop.mode.value == "train_and_eval":
        return run.loop.mode
    frequency = run.loop.eval_frequency
    if run.layout == "trainer" and run.loop.has_eval_input and trains(run):
        if frequency is None:  # the TrainingLoop's default: evaluate once, after training
            return Setting(1.0, Location("trainer.fit.val_dataloader"))
        return frequency if frequency.value else None
    if run.layout == "flat" and frequency is not None and frequency.value and run.loop.has_eval_input:
        return frequency
    return None


def check_train_and_eval(run: RunDescription, found: Findings) -> None:
    setting = trains_and_evaluates(run)
    if setting is None:
        return
    found.refuse(
        "GRAPH-005", setting.origin, "training with evaluation in one run is refused on the CS system in this release"
    )
    found.warn(
        "CONFIG-070",
        setting.origin,
        f"release {run.release} runs training and evaluation as separate runs, each compiled anew",
    )


def check_metrics(run: RunDescription, found: Findings) -> None:
    metrics = run.model.compute_eval_metrics if run.model is not None else None
    if metrics is not None and metrics.value is True and not run.loop.has_eval_input:
        found.warn(
            "CONFIG-080",
            metrics.origin,
            "compute_eval_metrics is on, but there is no evaluation input: no metric is computed",
        )


def check_estimator_settings(run: RunDescription, found: Findings) -> None:
    for key, setting in run.estimator_settings.items():
        found.refuse(
            ESTIMATOR_RULES[key], setting.origin, f"RunConfig parameter {key} is not supported on the CS system"
        )


CHECKS: tuple[Callable[[RunDescription, Findings], None], ...] = (
    check_layout,
    check_batch,
    check_precision,
    check_loss_scaling,
    check_clipping,
    check_optimizer,
    check_schedule,
    check_loop,
    check_sequence_length,
    check_train_and_eval,
    check_metrics,
    check_estimator_settings,
    check_model_keys,
    check_keys,
)


def run_checks(run: RunDescription, found: Findings, wafer: str = "wse2") -> None:
    """Every check on ``run``; the findings land in ``found``."""
    check_cluster(run, found, wafer)
    for check in CHECKS:
        check(run, found)
