"""The run as a whole: each function walked with its arguments, and the traced step with all it calls.

:class:`Analysis` answers three questions for the checks:

- what each name of a function holds (:meth:`Analysis.facts`): the function is walked by
  :class:`~csconform.usercode.infer.Evaluator` with its parameters' values, the names of the
  module's top level and of the functions it is nested in, and the attributes ``self`` is given in
  the class's methods; a call of another function of the run is answered by walking that function
  with the arguments' values (to a bounded depth), so a helper's result is known;
- what the traced step is (:meth:`Analysis.traced`): every function decorated with
  ``cstorch.trace`` and every module's ``forward``, and every function of the run they call, with
  the values each is called with, step closures excepted (their bodies run after the step);
- which functions the run calls from elsewhere (:meth:`Analysis.is_called`), so that a sequence of
  GradScaler calls split over helpers is judged where it is complete.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from csconform.usercode.infer import Env, Evaluator, Facts, Resolve
from csconform.usercode.names import last
from csconform.usercode.project import Class, Function, Module, Project
from csconform.usercode.values import (
    COMPILED,
    CS_DATALOADER,
    INSTANCE,
    MODULE,
    TORCH_DATALOADER,
    TRACE_DECORATORS,
    TREE_VALUE,
    UNKNOWN_VALUE,
    Value,
    is_closure_decorator,
    join,
)

LOADER_CLASSES = frozenset({TORCH_DATALOADER, CS_DATALOADER})
DATASET_CLASSES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.IterableDataset"})
MAX_DEPTH = 6
"""How deep a chain of calls is followed to learn what a helper returns."""

Params = frozenset[tuple[str, Value]]


@dataclass(frozen=True)
class CallEdge:
    """A call of a function of the run: where, which function, with what values per parameter."""

    node: ast.Call
    callee: Function
    params: Params


@dataclass(frozen=True)
class Summary:
    """What a walk leaves that other walks need: the value returned, the names at the end, the
    attributes given to ``self``, the calls of the run's functions."""

    returns: Value
    env: Env
    self_attributes: dict[str, Value]
    calls: tuple[CallEdge, ...]


@dataclass(frozen=True)
class Traced:
    """A function that runs inside the traced step: the step (or forward) it is reached from, and
    the function that calls it (None for the step itself)."""

    root: Function
    caller: Function | None


@dataclass
class Analysis:
    project: Project
    _summaries: dict[tuple[Function, Params], Summary] = field(default_factory=dict)
    _facts: dict[tuple[Function, Params], Facts] = field(default_factory=dict)
    _module_envs: dict[int, Env] = field(default_factory=dict)
    _attributes: dict[int, dict[str, Value]] = field(default_factory=dict)
    _stack: list[Function] = field(default_factory=list)
    _traced: dict[Function, tuple[Traced, Params]] | None = None
    _callers: dict[Function, list[tuple[Module, Function | None, ast.Call]]] | None = None
    _every_step: dict[Function, bool] = field(default_factory=dict)
    too_deep: set[Module] = field(default_factory=set)
    """Modules whose walk ran out of Python's recursion limit (reported unreadable, not checked)."""

    # --- the walks ----------------------------------------------------------------------------------

    def facts(self, function: Function, params: Params | None = None) -> Facts:
        """Every value in ``function``, its parameters holding ``params`` (default: as :meth:`traced`
        found them for a function of the step, else as :meth:`default_params`)."""
        key = (function, self.params_of(function) if params is None else params)
        if key not in self._facts:
            self._walk(*key)
        return self._facts.get(key) or Facts()

    def params_of(self, function: Function) -> Params:
        """What the parameters hold in the walk the checks see: as the traced step calls the
        function, else as :meth:`default_params`."""
        traced = self.traced().get(function)
        return traced[1] if traced is not None else self.default_params(function)

    def module_facts(self, module: Module) -> Facts:
        """Every value in the module's top-level statements."""
        evaluator = Evaluator(module.imports, {}, self._resolver(module, None, []), self._attribute)
        return evaluator.run(_top_level(module.source.tree.body))

    def default_params(self, function: Function) -> Params:
        """What a function's parameters hold when nothing is known of its callers: ``self``, and
        the batch a traced step is given first."""
        values: dict[str, Value] = {}
        parameters = function.parameters
        if function.owner is not None and parameters and not _is_static(function):
            values[parameters[0].arg] = self.instance(function.owner)
            parameters = parameters[1:]
        if self.is_trace_step(function) and parameters:
            values[parameters[0].arg] = TREE_VALUE
        return frozenset(values.items())

    def summary(self, function: Function, params: Params) -> Summary:
        """What a walk of ``function`` with ``params`` leaves (nothing known while it is being walked,
        or beyond :data:`MAX_DEPTH` nested walks)."""
        key = (function, params)
        if key not in self._summaries:
            if function in self._stack or len(self._stack) >= MAX_DEPTH:
                return Summary(UNKNOWN_VALUE, {}, {}, ())
            self._walk(function, params)
        return self._summaries[key]

    def _walk(self, function: Function, params: Params) -> None:
        """Walk ``function`` once with ``params``, keeping its facts and its summary."""
        if function in self._stack or len(self._stack) >= MAX_DEPTH:
            return
        env = dict(self.module_env(function.module))
        if function.parent is not None:
            outer = function.parent
            env.update(self.summary(outer, self.default_params(outer)).env)
        env.update(dict(params))
        self_name = function.parameters[0].arg if function.owner is not None and function.parameters else None
        calls: list[CallEdge] = []
        self._stack.append(function)
        try:
            evaluator = Evaluator(
                function.module.imports,
                env,
                self._resolver(function.module, function, calls),
                self._attribute,
                self_name,
            )
            facts = evaluator.run(function.node.body)
        finally:
            self._stack.pop()
        self._facts[(function, params)] = facts
        self._summaries[(function, params)] = Summary(facts.returns, facts.env, facts.self_attributes, tuple(calls))

    def module_env(self, module: Module) -> Env:
        if id(module) not in self._module_envs:
            self._module_envs[id(module)] = {}  # a module's top level that calls its own functions
            self._module_envs[id(module)] = self.module_facts(module).env
        return self._module_envs[id(module)]

    # --- classes and instances ----------------------------------------------------------------------

    def is_module_class(self, cls: Class) -> bool:
        """A torch.nn.Module (a base of the class or of an ancestor in the run is one of torch.nn's)."""
        return any(base.startswith("torch.nn.") or last(base) == "Module" for base in self.project.base_names(cls))

    def instance(self, cls: Class) -> Value:
        return Value(MODULE if self.is_module_class(cls) else INSTANCE, ref=cls)

    def class_attributes(self, cls: Class) -> dict[str, Value]:
        """What ``self.<name>`` holds in the class: every ``self.<name> = ...`` of its methods and
        of its ancestors' in the run, joined."""
        if id(cls) not in self._attributes:
            self._attributes[id(cls)] = {}  # while collecting, self's attributes are unknown
            collected: dict[str, Value] = {}
            for ancestor in reversed(list(self.project.ancestors(cls))):
                for method in ancestor.methods.values():
                    if _assigns_self(method):
                        found = self.summary(method, self.default_params(method)).self_attributes
                        for name, value in found.items():
                            collected[name] = join(collected[name], value) if name in collected else value
            self._attributes[id(cls)] = collected
        return self._attributes[id(cls)]

    def _attribute(self, owner: Value, name: str) -> Value | None:
        if owner.kind in (INSTANCE, MODULE) and isinstance(owner.ref, Class):
            return self.class_attributes(owner.ref).get(name)
        return None

    # --- calls --------------------------------------------------------------------------------------

    def _resolver(self, module: Module, within: Function | None, calls: list[CallEdge]) -> Resolve:
        def resolve(
            node: ast.Call, receiver: Value | None, qualified: str | None, args: list[Value], keywords: dict[str, Value]
        ) -> Value | None:
            target, bound_self = self._target(node, receiver, qualified, module, within)
            if isinstance(target, Class):
                return self.instance(target)
            if target is None:
                return None
            params = _bind(target, bound_self, args, keywords)
            calls.append(CallEdge(node, target, params))
            if is_closure_decorator_of(target):
                return UNKNOWN_VALUE
            returned = self.summary(target, params).returns
            if target.name == "forward" and not returned.tensorish:
                return TREE_VALUE
            return returned

        return resolve

    def _target(
        self, node: ast.Call, receiver: Value | None, qualified: str | None, module: Module, within: Function | None
    ) -> tuple[Function | Class | None, Value | None]:
        """The function (or class) a call reaches, and the value bound to its ``self``."""
        func = node.func
        if receiver is not None and receiver.kind in (MODULE, COMPILED) and qualified == "__call__":
            cls = self._model_class(receiver)
            return (self.project.method(cls, "forward"), Value(MODULE, ref=cls)) if cls is not None else (None, None)
        if isinstance(func, ast.Attribute) and receiver is not None:
            if receiver.kind in (INSTANCE, MODULE) and isinstance(receiver.ref, Class):
                return self.project.method(receiver.ref, func.attr), receiver
            if (
                isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name)
                and func.value.func.id == "super"
            ):
                if within is not None and within.owner is not None:
                    bases = list(self.project.ancestors(within.owner))[1:]
                    for base in bases:
                        if func.attr in base.methods:
                            return base.methods[func.attr], self.instance(within.owner)
                return None, None
        if isinstance(func, ast.Name):
            scope = within
            while scope is not None:  # a function nested in this one or in an enclosing one
                nested = next((f for f in scope.module.functions if f.parent is scope and f.name == func.id), None)
                if nested is not None:
                    return nested, None
                scope = scope.parent
        if qualified is None:
            return None, None
        found = self.project.resolve(qualified, module)
        if isinstance(found, Function) and found.owner is not None and not _is_static(found):
            return None, None  # an unbound method called through its class: unknown self
        return (found, None) if isinstance(found, Function | Class) else (None, None)

    def _model_class(self, model: Value) -> Class | None:
        if model.kind == COMPILED and model.items:
            model = model.items[0]
        return model.ref if model.kind == MODULE and isinstance(model.ref, Class) else None

    # --- the traced step ----------------------------------------------------------------------------

    def is_trace_step(self, function: Function) -> bool:
        return any(decorator in TRACE_DECORATORS for decorator in function.decorators)

    def is_closure(self, function: Function) -> bool:
        return is_closure_decorator_of(function)

    def is_forward(self, function: Function) -> bool:
        return function.name == "forward" and function.owner is not None and self.is_module_class(function.owner)

    def traced(self) -> dict[Function, tuple[Traced, Params]]:
        """Every function that runs inside a traced step, with what its parameters hold there."""
        if self._traced is not None:
            return self._traced
        found: dict[Function, tuple[Traced, Params]] = {}
        queue: list[Function] = []
        pipeline = self._input_pipeline_classes()
        for module in self.project.modules:
            for function in module.functions:
                if self.is_forward(function) and function.owner in pipeline:
                    continue
                if (self.is_trace_step(function) or self.is_forward(function)) and not self.is_closure(function):
                    found[function] = (Traced(function, None), self.default_params(function))
                    queue.append(function)
        self._traced = found
        while queue:
            function = queue.pop(0)
            where, params = found[function]
            try:
                calls = self.summary(function, params).calls
            except RecursionError:
                self.too_deep.add(function.module)
                continue
            for edge in calls:
                callee = edge.callee
                if self.is_closure(callee):
                    continue
                if callee not in found:
                    merged = _merge(self.default_params(callee), edge.params)
                    found[callee] = (Traced(where.root, function), merged)
                    queue.append(callee)
                else:
                    previous = found[callee]
                    merged = _merge(previous[1], edge.params)
                    if merged != previous[1]:
                        found[callee] = (previous[0], merged)
                        queue.append(callee)
        return found

    def _input_pipeline_classes(self) -> set[Class]:
        """The module classes the run makes only inside its input pipeline (a function that builds a
        DataLoader, a Dataset's method, a collate function): data transforms, run on the host."""
        made_in: dict[Class, list[bool]] = {}
        for module in self.project.modules:
            scopes: list[tuple[Function | None, list[ast.AST]]] = [(None, module.nodes)]
            scopes += [(f, f.nodes) for f in module.functions]
            for function, nodes in scopes:
                in_pipeline = function is not None and self._in_input_pipeline(function)
                for node in nodes:
                    if isinstance(node, ast.Call):
                        name = module.imports.qualified(node.func)
                        cls = self.project.class_of(name, module) if name else None
                        if cls is not None:
                            made_in.setdefault(cls, []).append(in_pipeline)
        return {cls for cls, places in made_in.items() if all(places)}

    def _in_input_pipeline(self, function: Function) -> bool:
        if "collate" in function.name:
            return True
        if function.owner is not None and any(
            base in DATASET_CLASSES for base in self.project.base_names(function.owner)
        ):
            return True
        return any(
            isinstance(node, ast.Call) and function.module.imports.qualified(node.func) in LOADER_CLASSES
            for node in function.nodes
        )

    def callers(self, function: Function) -> list[tuple[Module, Function | None, ast.Call]]:
        """Where the run calls ``function``: the module, the calling function (None: top-level code)
        and the call. Read from the calls as written (a function's own name, a nested function,
        an import of the run, ``self.method``, ``super().method``), without walking any function."""
        if self._callers is None:
            callers: dict[Function, list[tuple[Module, Function | None, ast.Call]]] = {}
            for module in self.project.modules:
                scopes: list[tuple[Function | None, list[ast.Call]]] = [(None, module.calls)]
                for caller, calls in scopes + [(f, f.calls) for f in module.functions]:
                    for node in calls:
                        target = self._written_target(node, module, caller)
                        if target is not None:
                            callers.setdefault(target, []).append((module, caller, node))
            self._callers = callers
        return self._callers.get(function, [])

    def _written_target(self, node: ast.Call, module: Module, caller: Function | None) -> Function | None:
        func = node.func
        receiver = None
        if isinstance(func, ast.Attribute) and caller is not None and caller.owner is not None:
            on = func.value
            if isinstance(on, ast.Name) and caller.parameters and on.id == caller.parameters[0].arg:
                receiver = self.instance(caller.owner)
            elif isinstance(on, ast.Call) and isinstance(on.func, ast.Name) and on.func.id == "super":
                receiver = UNKNOWN_VALUE
        target, _ = self._target(node, receiver, module.imports.qualified(func), module, caller)
        return target if isinstance(target, Function) else None

    def is_called(self, function: Function) -> bool:
        """Whether a function of the run calls ``function`` (through a call the walks resolve)."""
        return bool(self.callers(function))

    def runs_every_step(self, function: Function) -> bool:
        """Whether ``function`` runs once per training step: it is in the traced step, it is a
        scheduler's or optimizer's ``step``, or a call of it sits in a loop (other than one over
        param groups) or in a function that runs every step."""
        if function in self._every_step:
            return self._every_step[function]
        self._every_step[function] = False  # a cycle of calls adds nothing
        every = (
            function in self.traced()
            or (function.owner is not None and function.name == "step")
            or any(
                in_training_loop(module, node) or (caller is not None and self.runs_every_step(caller))
                for module, caller, node in self.callers(function)
            )
        )
        self._every_step[function] = every
        return every


def in_training_loop(module: Module, node: ast.AST) -> bool:
    """Whether ``node`` is in a for or while loop of its own function, other than a loop over an
    optimizer's param groups."""
    child: ast.AST = node
    parent = module.parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        if isinstance(parent, ast.While) and child in parent.body:
            return True
        if (
            isinstance(parent, ast.For | ast.AsyncFor)
            and child in parent.body
            and "param_groups" not in ast.unparse(parent.iter)
        ):
            return True
        child, parent = parent, module.parents.get(id(parent))
    return False


def is_closure_decorator_of(function: Function) -> bool:
    return any(is_closure_decorator(decorator) for decorator in function.decorators)


def _is_static(function: Function) -> bool:
    return any(last(d) in ("staticmethod", "classmethod") for d in function.decorators)


def _assigns_self(method: Function) -> bool:
    if not method.parameters:
        return False
    name = method.parameters[0].arg
    return any(
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
        for node in method.nodes
    )


def _bind(function: Function, bound_self: Value | None, args: list[Value], keywords: dict[str, Value]) -> Params:
    """The value of each parameter of ``function`` for one call."""
    parameters = [p.arg for p in function.parameters]
    positional = [p.arg for p in (*function.node.args.posonlyargs, *function.node.args.args)]
    values: dict[str, Value] = {}
    if bound_self is not None and positional:
        values[positional[0]] = bound_self
        positional = positional[1:]
    for name, value in zip(positional, args, strict=False):
        values[name] = value
    for name, value in keywords.items():
        if name in parameters:
            values[name] = value
    return frozenset((name, value) for name, value in values.items() if value != UNKNOWN_VALUE)


def _merge(a: Params, b: Params) -> Params:
    merged = dict(a)
    for name, value in b:
        merged[name] = join(merged[name], value) if name in merged else value
    return frozenset(merged.items())


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """A module's statements without its function and class definitions (walked on their own)."""
    return [s for s in body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
