"""Which names hold tensors: one pass over a function's body, statement by statement.

The evaluator walks a function (or a module's top level) in order, giving every expression a
:class:`~csconform.usercode.values.Value` and every assigned name the value assigned. Both
branches of an ``if`` are walked and joined; a loop's body is walked twice, so a value carried
around the loop is seen. A call of a function or a class of the run is handed to the caller's
``resolve`` (:mod:`csconform.usercode.analysis`), which walks the callee with the arguments' values
and answers with what it returns: that is how a helper called from the step is understood.

The checks read the values afterwards (:class:`Facts`), so that they are plain walks over the syntax
tree asking "what is this?".
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from csconform.usercode.names import ImportTable, last
from csconform.usercode.values import (
    COMPILE_FUNCTIONS,
    COMPILED,
    CS_DATALOADER,
    CS_LOADER,
    DATA_EXECUTOR,
    DATASET,
    DATASET_METHODS,
    ESTIMATOR,
    ESTIMATOR_CLASSES,
    EXECUTOR,
    HOST_VALUE_READ,
    ITERABLE,
    LEARNING_RATE,
    MODULE,
    NONE_VALUE,
    OPTIMIZER,
    PARAM_GROUP,
    PARAM_GROUPS,
    SCALED_LOSS,
    SCALER,
    SCALER_CLASSES,
    TENSOR,
    TENSOR_ATTRIBUTES,
    TENSOR_METADATA,
    TENSOR_METADATA_METHODS,
    TENSOR_METHODS,
    TENSOR_VALUE,
    TORCH_DATALOADER,
    TORCH_LAYER,
    TORCH_LAYERS_WITH_TUPLES,
    TORCH_LOADER,
    TREE,
    TREE_ITEMS,
    TREE_VALUE,
    TUPLE,
    UNKNOWN_VALUE,
    VALUE_READS,
    Value,
    element,
    is_dataset_factory,
    join,
    torch_function_returns_tensor,
)

Env = dict[str, Value]
Resolve = Callable[[ast.Call, Value | None, str | None, list[Value], dict[str, Value]], Value | None]
"""``resolve(call, receiver, qualified, args, keywords)``: the value a call of a function or class of
the run gives (None: not one of the run's). ``receiver`` is the value a method is called on."""


@dataclass
class Facts:
    """What one walk of a function found: the value of each expression, the names at the end, the
    value returned, and each attribute of ``self`` assigned."""

    values: dict[int, Value] = field(default_factory=dict)
    env: Env = field(default_factory=dict)
    returns: Value = UNKNOWN_VALUE
    self_attributes: dict[str, Value] = field(default_factory=dict)

    def value(self, node: ast.AST) -> Value:
        return self.values.get(id(node), UNKNOWN_VALUE)


class Evaluator:
    """One walk of one body. ``env`` starts with the parameters' values and the names of the
    enclosing scopes; ``attributes(value, name)`` gives the known attributes of an instance."""

    def __init__(
        self,
        imports: ImportTable,
        env: Env,
        resolve: Resolve,
        attributes: Callable[[Value, str], Value | None],
        self_name: str | None = None,
    ) -> None:
        self.imports = imports
        self.resolve = resolve
        self.attributes = attributes
        self.self_name = self_name
        self.facts = Facts(env=dict(env))

    # --- statements -----------------------------------------------------------------------------

    def run(self, body: list[ast.stmt]) -> Facts:
        self.block(body)
        return self.facts

    def block(self, body: Iterable[ast.stmt]) -> None:
        for statement in body:
            self.statement(statement)

    def _branches(self, *bodies: list[ast.stmt]) -> None:
        """Walk alternative blocks from the same names, then join what each left."""
        start = dict(self.facts.env)
        ends = []
        for body in bodies:
            self.facts.env = dict(start)
            self.block(body)
            ends.append(self.facts.env)
        merged = dict(start)
        for end in ends:
            for name, value in end.items():
                merged[name] = join(merged[name], value) if name in merged else value
        self.facts.env = merged

    def statement(self, node: ast.stmt) -> None:  # noqa: C901 - one case per kind of statement
        if isinstance(node, ast.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.bind(target, value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.bind(node.target, self.expr(node.value))
        elif isinstance(node, ast.AugAssign):
            current = self.expr(node.target) if not isinstance(node.target, ast.Name) else self._name(node.target.id)
            value = _arithmetic(current, self.expr(node.value))
            self.bind(node.target, value)
        elif isinstance(node, ast.For | ast.AsyncFor):
            iterated = self.expr(node.iter)
            for _ in range(2):
                self.bind(node.target, element(iterated))
                self._branches(node.body, [])
            self.block(node.orelse)
        elif isinstance(node, ast.While):
            for _ in range(2):
                self.expr(node.test)
                self._branches(node.body, [])
            self.block(node.orelse)
        elif isinstance(node, ast.If):
            self.expr(node.test)
            self._branches(node.body, node.orelse)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                context = self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, context if context.kind == DATASET else UNKNOWN_VALUE)
            self.block(node.body)
        elif isinstance(node, ast.Try | ast.TryStar):
            handlers = [h.body for h in node.handlers]
            self._branches(node.body + node.orelse, *handlers)
            self.block(node.finalbody)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.facts.returns = join(self.facts.returns, self.expr(node.value))
            else:
                self.facts.returns = join(self.facts.returns, NONE_VALUE)
        elif isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)
            if node.msg is not None:
                self.expr(node.msg)
        elif isinstance(node, ast.Match):
            self.expr(node.subject)
            self._branches(*[case.body for case in node.cases])
        elif isinstance(node, ast.Raise):
            for part in (node.exc, node.cause):
                if part is not None:
                    self.expr(part)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self.expr(target)
        # def, class, import, global, nonlocal, pass, break, continue: nothing to evaluate here

    def bind(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.facts.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            parts = target.elts
            starred = any(isinstance(part, ast.Starred) for part in parts)
            if value.kind == TUPLE and len(value.items) == len(parts) and not starred:
                for part, item in zip(parts, value.items, strict=True):
                    self.bind(part, item)
            else:
                each = TREE_VALUE if value.tensorish else element(value) if value.kind == TUPLE else UNKNOWN_VALUE
                for part in parts:
                    self.bind(part.value if isinstance(part, ast.Starred) else part, each)
        elif isinstance(target, ast.Attribute):
            self.expr(target.value)
            if isinstance(target.value, ast.Name) and target.value.id == self.self_name:
                previous = self.facts.self_attributes.get(target.attr)
                self.facts.self_attributes[target.attr] = value if previous is None else join(previous, value)
        elif isinstance(target, ast.Subscript):
            self.expr(target.value)
            self.expr(target.slice)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, value)

    # --- expressions ----------------------------------------------------------------------------

    def _name(self, name: str) -> Value:
        return self.facts.env.get(name, UNKNOWN_VALUE)

    def expr(self, node: ast.expr) -> Value:
        value = self._evaluate(node)
        self.facts.values[id(node)] = value
        return value

    def _evaluate(self, node: ast.expr) -> Value:  # noqa: C901 - one case per kind of expression
        if isinstance(node, ast.Constant):
            return NONE_VALUE if node.value is None else UNKNOWN_VALUE
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Attribute):
            return self._attribute(self.expr(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            return self._subscript(self.expr(node.value), node.slice, self.expr(node.slice))
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.BinOp):
            return _arithmetic(self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand)
            if operand.tensorish:
                return TENSOR_VALUE
            return operand if operand.kind in (LEARNING_RATE, HOST_VALUE_READ) else UNKNOWN_VALUE
        if isinstance(node, ast.BoolOp):
            values = [self.expr(v) for v in node.values]
            if any(v.is_tensor for v in values):
                return TENSOR_VALUE
            if any(v.kind == HOST_VALUE_READ for v in values):
                return Value(HOST_VALUE_READ)
            result = values[0]
            for value in values[1:]:
                result = join(result, value)
            return result
        if isinstance(node, ast.Compare):
            operands = [self.expr(node.left), *(self.expr(c) for c in node.comparators)]
            if all(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
                return UNKNOWN_VALUE
            if any(v.tensorish for v in operands):
                return TENSOR_VALUE
            return Value(HOST_VALUE_READ) if any(v.kind == HOST_VALUE_READ for v in operands) else UNKNOWN_VALUE
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            return join(self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Tuple):
            return Value(TUPLE, items=tuple(self.expr(e) for e in node.elts))
        if isinstance(node, ast.List | ast.Set):
            items = [self.expr(e) for e in node.elts]
            return TREE_VALUE if any(v.tensorish for v in items) else UNKNOWN_VALUE
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None:
                    self.expr(key)
            items = [self.expr(v) for v in node.values]
            return TREE_VALUE if any(v.tensorish for v in items) else UNKNOWN_VALUE
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self._comprehension(node)
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value)
            self.bind(node.target, value)
            return value
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                self.expr(part)
            return UNKNOWN_VALUE
        if isinstance(node, ast.FormattedValue):
            self.expr(node.value)
            if node.format_spec is not None:
                self.expr(node.format_spec)
            return UNKNOWN_VALUE
        if isinstance(node, ast.Starred | ast.Await):
            return self.expr(node.value)
        if isinstance(node, ast.Yield | ast.YieldFrom):
            if node.value is not None:
                self.expr(node.value)
            return UNKNOWN_VALUE
        if isinstance(node, ast.Slice):
            for bound in (node.lower, node.upper, node.step):
                if bound is not None:
                    self.expr(bound)
            return UNKNOWN_VALUE
        return UNKNOWN_VALUE  # lambda: its body runs elsewhere

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Value:
        saved = dict(self.facts.env)
        for generator in node.generators:
            self.bind(generator.target, element(self.expr(generator.iter)))
            for test in generator.ifs:
                self.expr(test)
        if isinstance(node, ast.DictComp):
            self.expr(node.key)
            result = self.expr(node.value)
        else:
            result = self.expr(node.elt)
        self.facts.env = saved
        if result.tensorish:
            return TREE_VALUE if isinstance(node, ast.DictComp) else Value(ITERABLE, items=(result,))
        return UNKNOWN_VALUE

    def _attribute(self, owner: Value, name: str) -> Value:
        if name == "param_groups":
            return Value(PARAM_GROUPS)
        if owner.kind == TENSOR:
            return TENSOR_VALUE if name in TENSOR_ATTRIBUTES else UNKNOWN_VALUE
        if owner.kind == TREE:
            return UNKNOWN_VALUE if name in TENSOR_METADATA else TREE_VALUE
        known = self.attributes(owner, name)
        return known if known is not None else UNKNOWN_VALUE

    def _subscript(self, owner: Value, index: ast.expr, index_value: Value) -> Value:
        if owner.tensorish:
            return owner
        if owner.kind == PARAM_GROUPS:
            return Value(PARAM_GROUP)
        if owner.kind == PARAM_GROUP and isinstance(index, ast.Constant) and index.value == "lr":
            return Value(LEARNING_RATE)
        if (
            owner.kind == TUPLE
            and isinstance(index, ast.Constant)
            and isinstance(index.value, int)
            and -len(owner.items) <= index.value < len(owner.items)
        ):
            return owner.items[index.value]
        if owner.kind == ITERABLE and owner.items:
            return owner.items[0]
        return UNKNOWN_VALUE

    def _call(self, node: ast.Call) -> Value:  # noqa: C901 - the API's cases, one after the other
        func = node.func
        receiver = self.expr(func.value) if isinstance(func, ast.Attribute) else None
        callee = self.expr(func) if isinstance(func, ast.Name) else None
        args = [self.expr(a) for a in node.args]
        keywords = {k.arg or "**": self.expr(k.value) for k in node.keywords}
        qualified = self.imports.qualified(func)
        if receiver is not None and isinstance(func, ast.Attribute):
            attribute = self._attribute(receiver, func.attr)
            self.facts.values[id(func)] = attribute
            if attribute.kind in (MODULE, COMPILED):
                callee = attribute  # self.encoder(x): a module held by an attribute
            else:
                known = self._method(receiver, func.attr, args)
                if known is not None:
                    return known
        if callee is not None and callee.kind in (MODULE, COMPILED):
            self.resolve(node, callee, "__call__", args, keywords)  # the module's forward runs in the step
            return _module_call(callee)
        if qualified is not None:
            known = self._api(qualified, node, args)
            if known is not None:
                return known
        resolved = self.resolve(node, receiver, qualified, args, keywords)
        return resolved if resolved is not None else UNKNOWN_VALUE

    def _method(self, receiver: Value, method: str, args: list[Value]) -> Value | None:
        kind = receiver.kind
        if kind == TENSOR:
            if method in VALUE_READS:
                return Value(HOST_VALUE_READ)
            if method in TENSOR_METADATA_METHODS:
                return UNKNOWN_VALUE
            if method == "type" and not args:
                return UNKNOWN_VALUE
            return TENSOR_VALUE
        if kind == TREE:
            if method in TENSOR_METHODS:
                return TENSOR_VALUE
            if method in VALUE_READS:
                return Value(HOST_VALUE_READ)
            if method in ("get", "pop", "values"):
                return TREE_VALUE if method != "values" else Value(ITERABLE, items=(TREE_VALUE,))
            if method == "items":
                return Value(TREE_ITEMS)
            return UNKNOWN_VALUE
        if kind in (MODULE, COMPILED):
            if method == "forward":
                return _module_call(receiver)
            if method in ("to", "train", "eval", "half", "float", "double", "bfloat16", "cuda", "cpu"):
                return receiver
            return None if receiver.ref is not None else UNKNOWN_VALUE
        if kind == SCALER:
            if method == "scale":
                return SCALED_LOSS
            return TENSOR_VALUE if method == "get_scale" else UNKNOWN_VALUE
        if kind == DATASET:
            return receiver if method in DATASET_METHODS else UNKNOWN_VALUE
        if kind == PARAM_GROUP and method == "get" and args:
            return Value(LEARNING_RATE)
        if kind == ITERABLE and method in ("pop", "__getitem__"):
            return receiver.items[0] if receiver.items else UNKNOWN_VALUE
        return None

    def _api(self, qualified: str, node: ast.Call, args: list[Value]) -> Value | None:
        """The value a call of the vendor's, PyTorch's or TensorFlow's API gives (None: not theirs)."""
        if qualified in COMPILE_FUNCTIONS:
            model = args[0] if args else UNKNOWN_VALUE
            return Value(COMPILED, ref=node, items=(model,))
        if qualified in SCALER_CLASSES:
            return Value(SCALER)
        if qualified == TORCH_DATALOADER:
            return Value(TORCH_LOADER)
        if qualified == CS_DATALOADER:
            return Value(CS_LOADER)
        if qualified == DATA_EXECUTOR:
            return Value(EXECUTOR)
        if torch_function_returns_tensor(qualified):
            return TENSOR_VALUE
        module, _, name = qualified.rpartition(".")
        if module in ("torch.nn", "torch.nn.modules") and name[:1].isupper():
            return Value(MODULE, ref=TORCH_LAYER if name not in TORCH_LAYERS_WITH_TUPLES else None)
        if _is_optimizer_class(module, name):
            return Value(OPTIMIZER)
        if is_dataset_factory(qualified):
            return Value(DATASET)
        if last(qualified) in ESTIMATOR_CLASSES and "." in qualified:
            return Value(ESTIMATOR)
        if qualified in ("enumerate", "reversed", "iter", "list", "tuple", "sorted") and args:
            inner = element(args[0])
            if qualified == "enumerate":
                return Value(ITERABLE, items=(Value(TUPLE, items=(UNKNOWN_VALUE, inner)),))
            return args[0] if qualified == "iter" else Value(ITERABLE, items=(inner,))
        if qualified == "zip" and args:
            return Value(ITERABLE, items=(Value(TUPLE, items=tuple(element(a) for a in args)),))
        if qualified == "next" and args:
            return element(args[0])
        if qualified == "sum" and args and (args[0].tensorish or element(args[0]).tensorish):
            return TENSOR_VALUE
        if qualified in ("float", "int", "bool") and args and args[0].tensorish:
            return Value(HOST_VALUE_READ)
        return None


def _is_optimizer_class(module: str, name: str) -> bool:
    """torch.optim.AdamW, cstorch.optim.SGD, ... (not their LR schedulers)."""
    in_optim = module.startswith(("torch.optim", "cerebras.pytorch.optim")) and "lr_scheduler" not in module
    return in_optim and name[:1].isupper() and not name.endswith(("LR", "Scheduler"))


def _module_call(model: Value) -> Value:
    """What calling a module gives: a tensor for a torch.nn layer, else a tensor or a structure of them."""
    return TENSOR_VALUE if model.kind == MODULE and model.ref == TORCH_LAYER else TREE_VALUE


def _arithmetic(left: Value, right: Value) -> Value:
    if left.tensorish or right.tensorish:
        return TENSOR_VALUE
    for kind in (LEARNING_RATE, HOST_VALUE_READ):
        if kind in (left.kind, right.kind):
            return Value(kind)
    return UNKNOWN_VALUE
