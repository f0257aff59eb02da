"""The files of one run as modules: their functions and classes, and what a called name resolves to.

A helper called from the traced step may live in another file, imported by name
(``from mypkg.steps import clip``) or relatively (``from .steps import clip``). Each file linted is
given a dotted module name from its path (:func:`module_name`); an import resolves to a file of the
run when exactly one file's name ends with the imported module's name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from csconform.errors import UnreadableDocumentError
from csconform.usercode.names import ImportTable
from csconform.usercode.source import SourceFile

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
MAX_NAME_PARTS = 16
MAX_NESTING = 250
"""How deep the syntax tree of a file may nest (the walks recurse once or twice per level, within
Python's recursion limit of 1000; a chain of 250 ``+`` is already generated code)."""
OPERATORS = (ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)
"""Nodes shared by every expression (``Load``, ``Add``, ``Eq``): not places, left out of the index."""


@dataclass(eq=False)
class Function:
    """A ``def`` anywhere in a module: at top level, in a class, or nested in another function."""

    node: FunctionNode
    module: Module
    qualname: str
    owner: Class | None = None
    """The class whose method it is (None: a function)."""
    parent: Function | None = None
    """The function it is nested in."""
    decorators: tuple[str, ...] = ()
    """The qualified names of its decorators (``cerebras.pytorch.trace``)."""
    nodes: list[ast.AST] = field(default_factory=list, repr=False)
    """Every node of its own code (its parameters and body, not the functions and classes in it), in order."""
    calls: list[ast.Call] = field(default_factory=list, repr=False)
    """The calls among :attr:`nodes`."""

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def parameters(self) -> list[ast.arg]:
        arguments = self.node.args
        return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]

    def __repr__(self) -> str:
        return f"<Function {self.module.name}.{self.qualname}>"


@dataclass(eq=False)
class Class:
    node: ast.ClassDef
    module: Module
    qualname: str
    bases: tuple[str, ...] = ()
    """The qualified names of its bases."""
    methods: dict[str, Function] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name

    def __repr__(self) -> str:
        return f"<Class {self.module.name}.{self.qualname}>"


@dataclass(eq=False)
class Module:
    source: SourceFile
    name: str
    imports: ImportTable
    functions: list[Function] = field(default_factory=list)
    """Every function of the module, outer ones before the ones nested in them."""
    classes: list[Class] = field(default_factory=list)
    top: dict[str, Function | Class] = field(default_factory=dict)
    """The functions and classes defined at the module's top level, by name."""
    nodes: list[ast.AST] = field(default_factory=list, repr=False)
    """Every node of the top-level code (class bodies included, functions not), in order."""
    calls: list[ast.Call] = field(default_factory=list, repr=False)
    uses_tensorflow: bool = False
    """Whether the module imports TensorFlow (the CerebrasEstimator's checks apply to its code)."""
    _mentioned: dict[str, bool] = field(default_factory=dict, repr=False)
    derived: dict[str, Any] = field(default_factory=dict, repr=False)
    """What a check works out once for the whole module (by the check's own key)."""
    parents: dict[int, ast.AST] = field(default_factory=dict, repr=False)
    """The parent of each node (by id)."""
    in_loop: set[int] = field(default_factory=set, repr=False)
    """The ids of the nodes inside a for or while loop of their own function (or of the top level)."""

    @property
    def path(self) -> str:
        return self.source.path

    def mentions(self, *words: str) -> bool:
        """Whether the file's text contains one of ``words``: a check whose subject the file never
        names has nothing to find there, and skips it."""
        for word in words:
            if word not in self._mentioned:
                self._mentioned[word] = word in self.source.text
            if self._mentioned[word]:
                return True
        return False

    def __repr__(self) -> str:
        return f"<Module {self.name}>"


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted name of the file ``path`` and whether it is a package's ``__init__``: its folders
    up to the first whose name is not an identifier (``1.8.0``, the root), so that an import of
    ``pkg.sub.mod`` finds the file whatever the folders above ``pkg`` are, and whether or not each
    folder has an ``__init__.py`` (namespace packages, scripts beside each other)."""
    path = path.absolute()
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while folder.name.isidentifier() and len(parts) < MAX_NAME_PARTS:
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) or path.stem, path.stem == "__init__"


def load_module(source: SourceFile, path: Path) -> Module:
    """The module of one parsed file: every function and class it defines, and the nodes of each
    scope (one walk over the tree; the checks and the walks of the analysis reuse it)."""
    name, is_package = module_name(path)
    module = Module(source, name, ImportTable(name, is_package))
    imports: list[ast.Import | ast.ImportFrom] = []
    decorated: list[tuple[Function, list[ast.expr]]] = []

    def visit(
        node: ast.AST,
        parent: ast.AST | None,
        nodes: list[ast.AST],
        prefix: str,
        owner: Class | None,
        function: Function | None,
        in_loop: bool,
        depth: int = 0,
    ) -> None:
        if depth > MAX_NESTING:
            raise UnreadableDocumentError(
                f"nested more than {MAX_NESTING} levels deep (the checker's bound; hand-written code nests far less)",
                source=source.path,
                line=getattr(node, "lineno", None),
            )
        nodes.append(node)
        if parent is not None:
            module.parents[id(node)] = parent
        if in_loop:
            module.in_loop.add(id(node))
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defined = Function(node, module, prefix + node.name, owner, None if owner is not None else function)
            module.functions.append(defined)
            decorated.append((defined, node.decorator_list))
            if owner is not None:
                owner.methods.setdefault(node.name, defined)
            elif function is None:
                module.top[node.name] = defined
            for decorator in node.decorator_list:
                visit(decorator, node, nodes, prefix, owner, function, in_loop, depth + 1)
            visit(node.args, node, defined.nodes, "", None, defined, False, depth + 1)
            for statement in node.body:
                visit(statement, node, defined.nodes, f"{defined.qualname}.", None, defined, False, depth + 1)
            return
        if isinstance(node, ast.ClassDef):
            cls = Class(node, module, prefix + node.name)
            module.classes.append(cls)
            if owner is None and function is None:
                module.top[node.name] = cls
            for part in (*node.decorator_list, *node.bases, *node.keywords):
                visit(part, node, nodes, prefix, owner, function, in_loop, depth + 1)
            for statement in node.body:
                visit(statement, node, nodes, f"{cls.qualname}.", cls, function, in_loop, depth + 1)
            return
        if isinstance(node, ast.Call):
            (function.calls if function is not None else module.calls).append(node)
        loop = isinstance(node, ast.For | ast.AsyncFor | ast.While)
        for field_name in node._fields:
            value = getattr(node, field_name, None)
            inside = in_loop or (loop and field_name in ("body", "orelse"))
            for child in value if isinstance(value, list) else (value,):
                if isinstance(child, ast.AST) and not isinstance(child, OPERATORS):
                    visit(child, node, nodes, prefix, owner, function, inside, depth + 1)

    for statement in source.tree.body:
        visit(statement, None, module.nodes, "", None, None, False)
    module.imports = ImportTable.of(imports, name, is_package)
    module.uses_tensorflow = any(target.startswith("tensorflow") for target in module.imports.names.values())
    for function, decorators in decorated:
        function.decorators = tuple(module.imports.qualified(_called(d)) or "" for d in decorators)
    for cls in module.classes:
        cls.bases = tuple(module.imports.qualified(base) or "" for base in cls.node.bases)
    return module


def _called(decorator: ast.expr) -> ast.expr:
    return decorator.func if isinstance(decorator, ast.Call) else decorator


@dataclass
class Project:
    """Every module of one run, and the resolution of qualified names to their definitions."""

    modules: list[Module]
    _by_suffix: dict[str, list[Module]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_suffix = {}
        for module in self.modules:
            parts = module.name.split(".")
            for start in range(len(parts)):
                self._by_suffix.setdefault(".".join(parts[start:]), []).append(module)

    def mentions(self, word: str) -> bool:
        """Whether any file of the run contains ``word``."""
        return any(module.mentions(word) for module in self.modules)

    def module(self, name: str) -> Module | None:
        """The one module of the run whose dotted name ends with ``name`` (None: none, or several)."""
        found = self._by_suffix.get(name, [])
        return found[0] if len(found) == 1 else None

    def resolve(self, qualified: str, within: Module) -> Function | Class | Module | None:
        """The definition a qualified name stands for in ``within``: a name of the module itself,
        or ``module.name`` / ``module.Class.method`` of a module of the run."""
        head, _, rest = qualified.partition(".")
        if head in within.top and head not in within.imports.names:
            return _member(within.top[head], rest)
        parts = qualified.split(".")
        for cut in range(len(parts), 0, -1):
            module = self.module(".".join(parts[:cut]))
            if module is not None:
                if cut == len(parts):
                    return module
                first = module.top.get(parts[cut])
                return None if first is None else _member(first, ".".join(parts[cut + 1 :]))
        return None

    def class_of(self, qualified: str, within: Module) -> Class | None:
        found = self.resolve(qualified, within)
        return found if isinstance(found, Class) else None

    def ancestors(self, cls: Class) -> Iterator[Class]:
        """The class and its bases found in the run, nearest first (each once)."""
        seen: set[int] = set()
        queue = [cls]
        while queue:
            current = queue.pop(0)
            if id(current) in seen:
                continue
            seen.add(id(current))
            yield current
            for base in current.bases:
                found = self.class_of(base, current.module) if base else None
                if found is not None:
                    queue.append(found)

    def base_names(self, cls: Class) -> set[str]:
        """The qualified names of every base of the class and of its ancestors in the run."""
        return {base for ancestor in self.ancestors(cls) for base in ancestor.bases if base}

    def method(self, cls: Class, name: str) -> Function | None:
        """The method ``name`` of the class or of the nearest ancestor in the run defining it."""
        for ancestor in self.ancestors(cls):
            if name in ancestor.methods:
                return ancestor.methods[name]
        return None


def _member(definition: Function | Class, rest: str) -> Function | Class | None:
    if not rest:
        return definition
    if isinstance(definition, Class) and "." not in rest:
        return definition.methods.get(rest)
    return None
