"""No module of the package imports, directly or through others, a module that imports it back.

The graph is read from the source with ``ast``: every import statement counts, at the top of a module
or inside a function or an ``if TYPE_CHECKING:`` block alike, since an import moved into a function
hides a circle without removing it. ``from package import name`` counts as an import of
``package.name`` when that is a module, else of ``package``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import csconform

PACKAGE = Path(csconform.__file__).parent


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> source file, for every module below ``root`` (a package folder)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that the module ``name`` (at ``path``) imports anywhere in its source."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in modules:
                    found.add(submodule)
                elif source in modules:
                    found.add(source)
    found.discard(name)
    return found


def import_circles(root: Path) -> list[list[str]]:
    """Every group of modules below ``root`` that import each other in a circle (strongly connected
    components of the import graph with more than one module), each sorted."""
    modules = module_names(root)
    graph = {name: sorted(imported_modules(name, path, modules)) for name, path in modules.items()}
    order: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    circles = []
    for start in graph:  # Tarjan's algorithm, iterative: a deep package must not hit the recursion limit
        if start in order:
            continue
        work = [(start, iter(graph[start]))]
        order[start] = lowest[start] = len(order)
        stack.append(start)
        while work:
            node, edges = work[-1]
            following = next((edge for edge in edges if edge not in order or edge in stack), None)
            if following is not None:
                if following in order:
                    lowest[node] = min(lowest[node], order[following])
                else:
                    order[following] = lowest[following] = len(order)
                    stack.append(following)
                    work.append((following, iter(graph[following])))
                continue
            work.pop()
            if work:
                lowest[work[-1][0]] = min(lowest[work[-1][0]], lowest[node])
            if lowest[node] == order[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def write_package(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root / "pkg"


def test_the_package_has_no_import_circle() -> None:
    assert import_circles(PACKAGE) == []


def test_a_circle_is_found_through_a_function_level_import(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "def late():\n    from pkg.c import value\n",
            "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\nvalue = 1\n",
            "pkg/d.py": "import pkg.a\n",  # imports into the circle, but nothing imports d back
        },
    )
    assert import_circles(package) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_importing_a_package_and_its_submodule_is_no_circle(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.sub import thing\n",
            "pkg/sub/__init__.py": "from pkg.sub.leaf import thing\n",
            "pkg/sub/leaf.py": "from pkg import other\nthing = 1\n",
            "pkg/other.py": "",
        },
    )
    assert import_circles(package) == []
