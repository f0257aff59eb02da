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


def rules_by_test(tests_dir: Path) -> dict[str, set[str]]:
    """The rule ids each test function names, keyed by its test id without parameters
    (``csconform/conformance/test_x.py::test_y``: relative to the folder two levels above the suite,
    as :func:`csconform.conformance.suite_test_id` names them)."""
    found: dict[str, set[str]] = {}
    for path in sorted(tests_dir.rglob("test_*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (SyntaxError, UnicodeDecodeError):
            continue
        prefix = path.relative_to(tests_dir.parent.parent).as_posix()
        module_ids: list[str] = []
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
            ):
                module_ids.extend(_spec_ids(node.value))
        classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
        for definition in _test_definitions(tree):
            if isinstance(definition, ast.ClassDef):
                continue  # the class's own marks reach its methods, below
            ids = [i for decorator in definition.decorator_list for i in _spec_ids(decorator)] + module_ids
            parents = [parent for parent in classes if definition in parent.body]
            ids += [i for parent in parents for decorator in parent.decorator_list for i in _spec_ids(decorator)]
            name = "::".join([prefix, *(parent.name for parent in parents), definition.name])
            found[name] = set(ids)
    return found


def count_checks(tests_dir: Path) -> Counter[str]:
    """Number of test functions naming each rule id, over every ``test_*.py`` under ``tests_dir``."""
    return Counter(rule_id for ids in rules_by_test(tests_dir).values() for rule_id in ids)


def suite_dir_for(specs_dir: Path) -> Path | None:
    """The conformance suite that checks the spec in ``specs_dir``: the suite shipped in the package
    for the package's own spec, else a project's ``tests/conformance`` beside its ``specs/``."""
    from csconform.conformance import SUITE_DIR
    from csconform.spec.loader import default_specs_dir

    if specs_dir.resolve() == default_specs_dir().resolve():
        return SUITE_DIR
    candidate = specs_dir.parent / "tests" / "conformance"
    return candidate if candidate.is_dir() else None
