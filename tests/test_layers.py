"""The import graph of framework/ and server/: no cycles, and every import points down the layers.

docs/architecture.md explains the layers; ``LAYERS`` below is the one place that lists them. A
module belongs to the first layer with a path prefix that matches its file (relative to the
repository root, without ``.py``), so ``framework/profiler`` covers both ``profiler.py`` and a
``profiler/`` package, and ``framework/executor/`` every module of the executor. Every import
counts, wherever it stands in the file: a function-level import is still a dependency, and so is
one under ``if TYPE_CHECKING:`` (a type named in an annotation is part of the interface).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("framework", "server")

# Lowest layer first. A module may import modules of its own layer (as long as no cycle forms)
# and of the layers listed before it, never of a layer listed after it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base and events",
        (
            "framework/errors",
            "framework/absent",
            "framework/base",
            "framework/events",
            "framework/config",
            "framework/shape_mode",
            "framework/atomic_file",
            "framework/libinfo",
            "framework/log",
            "framework/registry",
        ),
    ),
    (
        "devices, storage and engine",
        (
            "framework/context",
            "framework/backend",
            "framework/storage",
            "framework/engine/",
            "framework/util",
            "framework/runtime",
        ),
    ),
    ("resources", ("framework/resource", "framework/random")),
    ("operators", ("framework/operator/",)),
    ("ndarray and autograd", ("framework/ndarray/", "framework/autograd")),
    ("symbol and executor", ("framework/symbol/", "framework/executor/")),
    (
        "training and data",
        (
            "framework/module/",
            "framework/kvstore/",
            "framework/io/",
            "framework/rnn/",
            "framework/image/",
            "framework/model",
            "framework/feedforward",
            "framework/optimizer",
            "framework/initializer",
            "framework/metric",
            "framework/lr_scheduler",
            "framework/callback",
            "framework/recordio",
            "framework/legacy_imdecode",
            "framework/custom_op",
            "framework/library",
            "framework/test_utils",
            "framework/imperative_test_utils",
            "framework/symbol_test_utils",
            "framework/tools/",
            "framework/contrib/",
            "framework/monitor",
        ),
    ),
    ("gluon", ("framework/gluon/",)),
    ("visualization and profiler", ("framework/visualization", "framework/profiler")),
    ("the framework package", ("framework/__init__",)),
    ("server", ("server/",)),
]


@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``importer`` (a module name) imports ``imported`` at ``path:line``."""

    importer: str
    imported: str
    path: str
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> file for every module of the first-party packages (``pkg/__init__.py`` is ``pkg``)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if "node_modules" in parts:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def layer_of(module: str, path: Path, root: Path = ROOT) -> int:
    """Index into ``LAYERS`` of the first layer with a prefix matching ``path``."""
    relative = path.relative_to(root).with_suffix("").as_posix()
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(relative.startswith(prefix) for prefix in prefixes):
            return index
    raise LookupError(f"{relative}.py ({module}) is in no layer: add its path to LAYERS in tests/test_layers.py")


def imports_of(module: str, path: Path, modules: dict[str, Path], root: Path = ROOT) -> list[Import]:
    """The first-party modules that ``module`` imports; ``from pkg import name`` names the submodule
    ``pkg.name`` if there is one, else the package ``pkg`` itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    package_parts = module.split(".") if is_package else module.split(".")[:-1]
    shown = path.relative_to(root).as_posix()
    edges: list[Import] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base_parts = package_parts[: len(package_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                targets.append(candidate if candidate in modules else base)
        for name in dict.fromkeys(targets):  # once per statement and module
            # ``import a.b.c`` depends on a.b.c; walk up to the longest first-party module name
            target = name
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                edges.append(Import(module, target, shown, node.lineno))
    return edges


def import_graph(root: Path = ROOT) -> tuple[dict[str, Path], list[Import]]:
    modules = module_files(root)
    edges = [edge for name, path in modules.items() for edge in imports_of(name, path, modules, root)]
    return modules, edges


def upward_imports(modules: dict[str, Path], edges: list[Import], root: Path = ROOT) -> list[str]:
    """One line per import of a module in a higher layer than the importer's."""
    problems = []
    for edge in edges:
        low = layer_of(edge.importer, modules[edge.importer], root)
        high = layer_of(edge.imported, modules[edge.imported], root)
        if high > low:
            problems.append(
                f"{edge.where()}: {edge.importer} (layer {LAYERS[low][0]!r}) imports {edge.imported} "
                f"(layer {LAYERS[high][0]!r}, above it)"
            )
    return problems


def import_cycles(edges: list[Import]) -> list[list[Import]]:
    """One cycle (as the list of its imports) per strongly connected component with more than one module."""
    graph: dict[str, list[Import]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, []).append(edge)
        graph.setdefault(edge.imported, [])
    # Tarjan's algorithm, iterative so deep graphs cannot overflow the interpreter's stack
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = lowlink[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if child < len(graph[node]):
                work.append((node, child + 1))
                nxt = graph[node][child].imported
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    lowlink[node] = min(lowlink[node], index[nxt])
                continue
            if lowlink[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
    return [_one_cycle(set(component), graph) for component in components]


def _one_cycle(members: set[str], graph: dict[str, list[Import]]) -> list[Import]:
    """A shortest cycle through the component's first module (breadth-first search back to it)."""
    start = min(members)
    came_from: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph[node]:
                if edge.imported not in members or edge.imported in came_from:
                    continue
                came_from[edge.imported] = edge
                if edge.imported == start:
                    path = [edge]
                    while path[0].importer != start:
                        path.insert(0, came_from[path[0].importer])
                    return path
                following.append(edge.imported)
        frontier = following
    raise AssertionError(f"no cycle through {start} in its strongly connected component")


def describe_cycle(cycle: list[Import]) -> str:
    return " -> ".join(f"{edge.importer} ({edge.where()})" for edge in cycle) + f" -> {cycle[0].importer}"


# ----------------------------------------------------------------------------- tests
def test_every_module_is_in_a_layer():
    modules = module_files()
    assert modules, "found no modules under framework/ and server/"
    for name, path in modules.items():
        layer_of(name, path)  # raises, naming the file, when a module is in no layer


def test_no_module_imports_a_higher_layer():
    modules, edges = import_graph()
    problems = upward_imports(modules, edges)
    assert not problems, "imports that point up the layers (docs/architecture.md):\n" + "\n".join(problems)


def test_no_import_cycles():
    _, edges = import_graph()
    cycles = import_cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(describe_cycle(cycle) for cycle in cycles)


def test_framework_never_imports_the_server():
    _, edges = import_graph()
    bad = [e.where() for e in edges if e.importer.startswith("framework") and e.imported.startswith("server")]
    assert not bad, f"framework imports server at {bad}"


def test_the_docs_list_the_same_layers_in_the_same_order():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| (\d+) \| ([^|]+?) \|", text, flags=re.MULTILINE)
    assert [(int(number), name) for number, name in documented] == [
        (index + 1, name) for index, (name, _) in enumerate(LAYERS)
    ], "docs/architecture.md's table of layers differs from LAYERS in tests/test_layers.py"


# ----------------------------------------------------------------------------- the checker, checked
def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tiny_tree(tmp_path: Path) -> Path:
    """A miniature framework/server tree whose imports follow the layers."""
    _write(tmp_path, "framework/__init__.py", "from . import events, ndarray\n")
    _write(tmp_path, "framework/events.py", "import json\n")
    _write(tmp_path, "framework/engine/__init__.py", "from .base import Engine\n")
    _write(tmp_path, "framework/engine/base.py", "from framework import events\n")
    _write(tmp_path, "framework/ndarray/__init__.py", "from .ndarray import NDArray\n")
    _write(tmp_path, "framework/ndarray/ndarray.py", "from ..engine import base\nfrom .. import events\n")
    _write(tmp_path, "server/__init__.py", "")
    _write(tmp_path, "server/app.py", "import framework as mx\nfrom framework.ndarray import ndarray\n")
    return tmp_path


def test_the_checker_accepts_a_tree_that_follows_the_layers(tiny_tree: Path):
    modules, edges = import_graph(tiny_tree)
    assert {(e.importer, e.imported) for e in edges} >= {
        ("framework.ndarray.ndarray", "framework.engine.base"),
        ("framework.ndarray.ndarray", "framework.events"),
        ("server.app", "framework"),
        ("framework", "framework.ndarray"),
    }
    assert upward_imports(modules, edges, tiny_tree) == []
    assert import_cycles(edges) == []


def test_the_checker_names_an_upward_import(tiny_tree: Path):
    _write(tiny_tree, "framework/engine/base.py", "from framework import events\n\nfrom ..ndarray import ndarray\n")
    modules, edges = import_graph(tiny_tree)
    [problem] = upward_imports(modules, edges, tiny_tree)
    assert problem.startswith("framework/engine/base.py:3: framework.engine.base")
    assert "'devices, storage and engine'" in problem
    assert "framework.ndarray.ndarray (layer 'ndarray and autograd', above it)" in problem


def test_the_checker_sees_function_level_and_type_checking_imports(tiny_tree: Path):
    _write(
        tiny_tree,
        "framework/events.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from framework.engine import base\n"
        "def f():\n    from .ndarray import ndarray\n",
    )
    modules, edges = import_graph(tiny_tree)
    problems = upward_imports(modules, edges, tiny_tree)
    assert sorted(problem.split(": ")[0] for problem in problems) == [
        "framework/events.py:3",
        "framework/events.py:5",
    ]


def test_the_checker_names_every_import_of_a_cycle(tiny_tree: Path):
    _write(tiny_tree, "framework/engine/var.py", "from . import base\n")
    _write(tiny_tree, "framework/engine/base.py", "from framework import events\nfrom .var import Var\n")
    _write(tiny_tree, "framework/engine/__init__.py", "from .base import Engine\nfrom . import var\n")
    _, edges = import_graph(tiny_tree)
    [cycle] = import_cycles(edges)
    assert describe_cycle(cycle) == (
        "framework.engine.base (framework/engine/base.py:2) -> framework.engine.var (framework/engine/var.py:1)"
        " -> framework.engine.base"
    )


def test_the_checker_rejects_a_module_in_no_layer(tmp_path: Path):
    _write(tmp_path, "framework/stray.py", "")
    modules = module_files(tmp_path)
    with pytest.raises(LookupError, match=r"framework/stray.py .* is in no layer"):
        layer_of("framework.stray", modules["framework.stray"], tmp_path)


if __name__ == "__main__":  # a report of the whole tree, for working on it
    _modules, _edges = import_graph()
    print("\n".join(upward_imports(_modules, _edges)) or "no upward imports")
    print("\n".join(describe_cycle(c) for c in import_cycles(_edges)) or "no cycles")
