"""The CerebrasEstimator (CODE-060 to CODE-070): the model function, the input function, RunConfig.

On the CS system the CerebrasEstimator takes no user hooks (CODE-060) and no eval_metric_ops in a
training run (CODE-061); it calls the input function with the params dict alone (CODE-062) and
needs a Dataset back (CODE-063) whose elements are (features, labels) (CODE-064), repeating without
a count (CODE-065) for the steps train() is given (CODE-066), batched with drop_remainder=True
(CODE-067), shuffled differently on every input worker (CODE-068); seven RunConfig parameters are
not supported (CODE-069) and checkpoints should not be saved too often (CODE-070).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from csconform.engine.estimator_config import DEFAULT_MIN_SAVE_CHECKPOINT_STEPS, UNSUPPORTED_PARAMETERS
from csconform.usercode.fixes import argument_removed, arguments_cleared, keyword_added, value_replaced
from csconform.usercode.names import last
from csconform.usercode.project import Function, Module
from csconform.usercode.scope import Scope, argument, has_unpacking, is_constant, keyword, method_name
from csconform.usercode.values import (
    DATASET,
    ESTIMATOR,
    ESTIMATOR_SPEC_CLASSES,
    RUN_CONFIG_CLASSES,
    SEED_FUNCTIONS,
)

HOOK_KEYWORDS = ("training_hooks", "evaluation_hooks", "prediction_hooks")
INPUT_FN_NAME = re.compile(r"(train_|eval_|predict_)?input_fn")
ESTIMATOR_RUNS = {"train": 1, "evaluate": 2, "predict": 2}
"""Estimator methods taking hooks, and the position of ``hooks`` among their arguments."""
INPUT_FN_CALLS = ("train", "evaluate", "predict", "compile")
DROP_REMAINDER_POSITION = {"batch": 1, "padded_batch": 3, "map_and_batch": 3}
"""Positions of ``drop_remainder`` in ``batch(batch_size, drop_remainder)``, ``padded_batch(batch_size,
padded_shapes, padding_values, drop_remainder)`` and ``map_and_batch(map_func, batch_size,
num_parallel_batches, drop_remainder)``."""


def is_estimator_code(module: Module) -> bool:
    """TensorFlow code, or code that uses the Model Zoo's estimator classes (which import it)."""
    return module.uses_tensorflow or module.mentions("CerebrasEstimator", "CSRunConfig", "CSEstimatorSpec")


def _is_estimator_call(scope: Scope, call: ast.Call, methods: tuple[str, ...] | dict[str, int]) -> bool:
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in methods
        and scope.value(call.func.value).kind == ESTIMATOR
    )


def _is_class_call(scope: Scope, call: ast.Call, classes: tuple[str, ...]) -> bool:
    called = scope.called(call)
    return last(called) in classes and (
        called.startswith("tensorflow") or scope.uses_tensorflow or last(called).startswith("CS")
    )


def _is_dataset(scope: Scope, receiver: ast.expr) -> bool:
    """A tf.data Dataset, known from its making, or any receiver of a Dataset method in TensorFlow code."""
    kind = scope.value(receiver).kind
    return kind == DATASET or (kind == "unknown" and scope.uses_tensorflow)


def check_hooks(scope: Scope) -> None:
    """CODE-060: user hooks in an EstimatorSpec, or given to train/evaluate/predict."""
    for call in scope.calls():
        given: list[ast.expr] = []
        if _is_class_call(scope, call, ESTIMATOR_SPEC_CLASSES):
            given = [k.value for k in call.keywords if k.arg in HOOK_KEYWORDS]
        elif _is_estimator_call(scope, call, ESTIMATOR_RUNS):
            hooks = argument(call, "hooks", ESTIMATOR_RUNS[method_name(call)])
            given = [hooks] if hooks is not None else []
        for value in given:
            if not scope.none_on_every_path(value):
                scope.refuse(
                    "CODE-060",
                    value,
                    f"user hooks ({scope.text(value)}): the CerebrasEstimator does not support user-defined hooks "
                    "on the CS system",
                )


def _in_eval_branch(scope: Scope, node: ast.AST) -> bool:
    """Whether ``node`` runs only when the mode is EVAL (``if mode == ModeKeys.EVAL:`` or ``!= TRAIN``)."""
    child: ast.AST = node
    for parent in scope.ancestors(node):
        if isinstance(parent, ast.If) and child in parent.body and _tests_eval(parent.test):
            return True
        child = parent
    return False


def _tests_eval(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    names = [_mode_name(part) for part in (test.left, *test.comparators)]
    op = test.ops[0]
    return (isinstance(op, ast.Eq) and "EVAL" in names) or (isinstance(op, ast.NotEq) and "TRAIN" in names)


def _mode_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.upper()
    return ""


def _set_only_in_eval(scope: Scope, value: ast.expr) -> bool:
    if not isinstance(value, ast.Name):
        return False
    assignments = [
        s
        for s in scope.nodes
        if isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == value.id for t in s.targets)
        and not scope.none_on_every_path(s.value)
    ]
    return bool(assignments) and all(_in_eval_branch(scope, s) for s in assignments)


def check_eval_metric_ops(scope: Scope) -> None:
    """CODE-061: eval_metric_ops in an EstimatorSpec that trains."""
    for call in scope.calls():
        if not _is_class_call(scope, call, ESTIMATOR_SPEC_CLASSES):
            continue
        metrics = keyword(call, "eval_metric_ops")
        train_op = argument(call, "train_op", 3)
        if metrics is None or train_op is None or scope.none_on_every_path(train_op):
            continue
        if scope.none_on_every_path(metrics.value) or _in_eval_branch(scope, call):
            continue
        if _set_only_in_eval(scope, metrics.value):
            continue
        scope.refuse("CODE-061", metrics)


def _is_named_input_fn(scope: Scope) -> bool:
    """A function of TensorFlow code named input_fn (or train_, eval_, predict_input_fn), or passed
    by name as the input_fn of an estimator's call in its module (cstorch's DataLoader takes any
    input_fn: only TensorFlow code is the estimator's)."""
    function = scope.function
    if function is None or not scope.uses_tensorflow:
        return False
    return INPUT_FN_NAME.fullmatch(function.name) is not None or function in _passed_as_input_fn(scope)


def _passed_as_input_fn(scope: Scope) -> set[Function]:
    """The module's functions some call of the module passes as ``input_fn=`` (worked out once)."""
    module = scope.module
    if "input_fn" not in module.derived:
        passed: set[Function] = set()
        for call in module.calls + [c for f in module.functions for c in f.calls]:
            for given in call.keywords:
                if given.arg == "input_fn" and isinstance(given.value, ast.Name):
                    found = module.top.get(given.value.id)
                    if isinstance(found, Function):
                        passed.add(found)
        module.derived["input_fn"] = passed
    return module.derived["input_fn"]


def _input_functions(scope: Scope) -> Iterator[tuple[ast.AST, Function | None]]:
    """The input functions this scope passes to an estimator, and the scope itself if it is one."""
    function = scope.function
    if _is_named_input_fn(scope):
        assert function is not None
        yield function.node, function
    for call in scope.calls():
        if not _is_estimator_call(scope, call, INPUT_FN_CALLS):
            continue
        given = argument(call, "input_fn", 0)
        if isinstance(given, ast.Lambda):
            yield given, None


def check_input_function_parameters(scope: Scope) -> None:
    """CODE-062: an input function whose parameters are not the single params."""
    for node, function in _input_functions(scope):
        arguments = node.args if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else None
        if arguments is None:
            continue
        names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
        defaults = len(arguments.defaults)
        if function is not None and function.owner is not None and names:
            names = names[1:]  # self
        required = names[: len(names) - defaults] + [
            a.arg for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is None
        ]
        if required == ["params"] or (names[:1] == ["params"] and required in ([], ["params"])):
            continue
        shown = ", ".join(names) or "no parameter"
        scope.refuse(
            "CODE-062",
            node,
            f"the input function takes ({shown}): the CerebrasEstimator calls it with the single params dict",
        )


def check_input_function_results(scope: Scope) -> None:
    """CODE-063: an input function that returns something other than a Dataset."""
    if not _is_named_input_fn(scope):
        return
    for node in scope.nodes:
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value
        returned = None
        if isinstance(value, ast.Tuple | ast.List | ast.Dict):
            returned = f"a {type(value).__name__.lower()}"
        elif isinstance(value, ast.Call) and method_name(value) in ("get_next", "make_one_shot_iterator"):
            returned = f"an iterator's {method_name(value)}()"
        elif isinstance(value, ast.Call) and scope.called(value).startswith("numpy."):
            returned = "a NumPy array"
        if returned is not None:
            rule = scope.found.spec.get("CODE-063")
            documented = rule.error.message if rule.error is not None and rule.error.message else rule.title
            scope.refuse("CODE-063", node, f"{documented}; it returns {returned}")


def _pair_problem(node: ast.expr) -> str | None:
    """Why a tuple written as a Dataset element is not (features, labels), or None."""
    if not isinstance(node, ast.Tuple):
        return None
    if len(node.elts) != 2:
        return f"{len(node.elts)} parts"
    if isinstance(node.elts[0], ast.Tuple):
        return "features written as a tuple"  # a structure; a list is converted into one tensor
    return None


def check_dataset_elements(scope: Scope) -> None:
    """CODE-064: Dataset elements that are not (features, labels)."""
    for call in scope.calls():
        called = scope.called(call)
        element = None
        if last(called) in ("from_tensor_slices", "from_tensors") and called.startswith("tensorflow") and call.args:
            element = call.args[0]  # an element has the argument's structure (a slice of each part)
        elif (
            method_name(call) == "map" and isinstance(call.func, ast.Attribute) and _is_dataset(scope, call.func.value)
        ):
            mapped = argument(call, "map_func", 0)
            if isinstance(mapped, ast.Lambda):
                element = mapped.body
            elif isinstance(mapped, ast.Name):
                for function in scope.module.functions:
                    if function.name == mapped.id and function.parent is scope.function:
                        returns = [r.value for r in ast.walk(function.node) if isinstance(r, ast.Return) and r.value]
                        element = next((r for r in returns if _pair_problem(r)), None)
        problem = _pair_problem(element) if element is not None else None
        if problem is not None and element is not None:
            scope.refuse(
                "CODE-064",
                element,
                f"a Dataset element of {problem} ({scope.text(element)}): each element must be (features, labels), "
                "features a tensor",
            )


def check_dataset_calls(scope: Scope) -> None:
    """CODE-065 (repeat with a count), CODE-067 (batch without drop_remainder=True), CODE-068 (a
    constant shuffle seed)."""
    source = scope.module.source
    for call in scope.calls():
        method = method_name(call) or ("map_and_batch" if last(scope.called(call)) == "map_and_batch" else "")
        on_dataset = isinstance(call.func, ast.Attribute) and _is_dataset(scope, call.func.value)
        if method == "map_and_batch":
            on_dataset = scope.called(call).startswith("tensorflow")
        if not on_dataset or has_unpacking(call):
            continue
        if method == "repeat" and scope.value(call.func.value).kind == DATASET:  # type: ignore[attr-defined]
            count = argument(call, "count", 0)
            if count is not None and not is_constant(count, None):
                scope.refuse(
                    "CODE-065",
                    call,
                    f"repeat({scope.text(count)}): the input must repeat without end; the steps are given to train()",
                    edits=(arguments_cleared(source, call),),
                )
        elif method in DROP_REMAINDER_POSITION:
            drop = argument(call, "drop_remainder", DROP_REMAINDER_POSITION[method])
            if drop is None:
                scope.refuse("CODE-067", call, edits=(keyword_added(source, call, "drop_remainder=True"),))
            elif is_constant(drop, False):
                scope.refuse("CODE-067", drop, edits=(value_replaced(source, drop, "True"),))
        elif method == "shuffle":
            seed = argument(call, "seed", 1)
            if _constant_seed(seed):
                _seed_found(scope, seed)


def _constant_seed(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)


def _seed_found(scope: Scope, seed: ast.expr | None) -> None:
    assert seed is not None
    scope.refuse(
        "CODE-068",
        seed,
        f"a constant seed ({scope.text(seed)}): every input worker would shuffle its data the same way",
    )


def check_seeds_and_run_config(scope: Scope) -> None:
    """CODE-068 (set_seed, tf_random_seed), CODE-069 (unsupported RunConfig parameters), CODE-070
    (save_checkpoint_steps below the lower bound), CODE-066 (train() without steps)."""
    source = scope.module.source
    for call in scope.calls():
        called = scope.called(call)
        if called in SEED_FUNCTIONS and call.args and _constant_seed(call.args[0]):
            _seed_found(scope, call.args[0])
        elif _is_class_call(scope, call, RUN_CONFIG_CLASSES):
            for given in call.keywords:
                if given.arg in UNSUPPORTED_PARAMETERS and not is_constant(given.value, None):
                    scope.refuse(
                        "CODE-069",
                        given,
                        f"RunConfig parameter {given.arg} is not supported on the CS system",
                        edits=(argument_removed(source, call, given),),
                    )
                elif given.arg == "tf_random_seed" and _constant_seed(given.value):
                    _seed_found(scope, given.value)
                elif given.arg == "save_checkpoint_steps" and _below_bound(given.value):
                    scope.warn(
                        "CODE-070",
                        given,
                        f"save_checkpoint_steps={scope.text(given.value)}: below the lower bound of "
                        f"{DEFAULT_MIN_SAVE_CHECKPOINT_STEPS} steps, which slows the fast system down",
                    )
        elif _is_estimator_call(scope, call, ("train",)) and _without_steps(call):
            scope.refuse(
                "CODE-066",
                call,
                "train() without steps or max_steps: the number of steps is given to train(), the input "
                "repeats without end",
            )


def _without_steps(call: ast.Call) -> bool:
    """``train(input_fn, hooks, steps, max_steps)`` given neither steps nor max_steps."""
    return not has_unpacking(call) and argument(call, "steps", 2) is None and argument(call, "max_steps", 3) is None


def _below_bound(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
        and 0 < node.value < DEFAULT_MIN_SAVE_CHECKPOINT_STEPS
    )
