"""Which tests check which rules, read statically from the test sources.

The pytest plugin enforces traceability on the collected tests at run time; this module answers
the same question without running anything, for ``csconform spec list`` (the "checks" column).
It counts test functions (and classes) whose decorators or module-level ``pytestmark`` carry
``pytest.mark.spec("ID", ...)``.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path


def _spec_ids(node: ast.expr) -> list[str]:
    """Rule ids in a ``pytest.mark.spec(...)`` expression (or a list of marks), else []."""
    if isinstance(node, ast.List | ast.Tuple):
        return [rule_id for element in node.elts for rule_id in _spec_ids(element)]
    if not isinstance(node, ast.Call):
        return []
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "spec":
        return [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    return []


def _test_definitions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    found: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            found.append(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found.append(node)
            found.extend(
                child
                for child in node.body
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and child.name.startswith("test")
            )
    return found


def count_checks(tests_dir: Path) -> Counter[str]:
    """Number of test functions naming each rule id, over every ``test_*.py`` under ``tests_dir``."""
    counts: Counter[str] = Counter()
    for path in sorted(tests_dir.rglob("test_*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (SyntaxError, UnicodeDecodeError):
            continue
        module_ids: list[str] = []
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
            ):
                module_ids.extend(_spec_ids(node.value))
        for definition in _test_definitions(tree):
            ids = [i for decorator in definition.decorator_list for i in _spec_ids(decorator)]
            if isinstance(definition, ast.ClassDef):
                # the class's own marks reach its methods; count them once per method below
                continue
            ids += module_ids
            ids += [
                i
                for parent in ast.walk(tree)
                if isinstance(parent, ast.ClassDef) and definition in parent.body
                for decorator in parent.decorator_list
                for i in _spec_ids(decorator)
            ]
            counts.update(set(ids))
    return counts


def default_tests_dir(specs_dir: Path) -> Path | None:
    """The repository's ``tests/conformance`` beside the spec directory, when there is one."""
    candidate = specs_dir.parent / "tests"
    return candidate if candidate.is_dir() else None
