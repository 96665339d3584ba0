"""The import graph of the ``symjit`` package, read with ``ast`` (nothing is imported).

Prints the strongly connected components of the graph of symjit's modules (circles of imports,
counting the imports at module level and those inside functions), how many imports run inside
functions, and the imports that run up a layer: from a module to one of a layer above it in the
``layers`` contract of ``[tool.importlinter]`` in ``pyproject.toml`` (the layers of
``docs/architecture.md``). ``--check`` exits 1 on a circle not in :data:`REMAINING` (the layers
themselves are checked by ``lint-imports``, which reads the same contract).

    python tools/import_graph.py [--check] [--edges]

A module's edges follow what Python runs: ``import a.b`` and ``from a import b`` (``b`` a
submodule) lead to ``a.b``; ``from a import name`` to ``a``. The parent packages that Python
imports first are not edges (every module would otherwise sit in a circle with ``symjit``).
Imports under ``if TYPE_CHECKING:`` never run and are left out.
"""
from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {"symjit": ROOT / "symjit", "symjit.kernels": ROOT / "kernels"}

LAZY_OPTIONAL = {
    # Deliberate imports inside functions of a module that needs an optional or heavy dependency
    # (numba.cuda, onnx, cv2, mpi4py) at import, so ``import symjit`` does not pay for it or need it.
    # They are left out of the circle count; every other import counts.
}


@dataclass(frozen=True)
class Edge:
    """One import statement's edge: ``source`` imports ``target`` at ``line``."""
    source: str
    target: str
    line: int
    in_function: bool


def module_files() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    out = {}
    for pkg, base in PACKAGE_DIRS.items():
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([pkg, *parts])
            if "__pycache__" in path.parts:
                continue
            out[name] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """``(node, in_function)`` of every import statement that can run."""
    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    yield from walk(ast.Module(body=[sub], type_ignores=[]), in_function)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, in_function
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            yield from walk(child, inner)
    yield from walk(tree, False)


def edges(modules: dict[str, Path]) -> tuple[list[Edge], dict[str, int]]:
    """The internal edges, and the count of imports inside functions per kind
    (``internal``/``external``)."""
    out: list[Edge] = []
    counts = {"internal": 0, "external": 0}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        for node, in_function in _imports(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    if node.module:
                        base = base + node.module.split(".")
                    origin = ".".join(base)
                else:
                    origin = node.module or ""
                for alias in node.names:
                    sub = f"{origin}.{alias.name}"
                    targets.append(sub if sub in modules else origin)
            internal = [t for t in dict.fromkeys(targets) if t in modules]
            if in_function:
                counts["internal" if internal else "external"] += 1
            out.extend(Edge(name, t, node.lineno, in_function) for t in internal if t != name)
    return out, counts


def strongly_connected(nodes: list[str], graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module, each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = [0]

    def visit(root: str) -> None:
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))

    for node in nodes:
        if node not in index:
            visit(node)
    return sorted(found, key=lambda c: (-len(c), c))


def layers_contract() -> list[list[str]]:
    """The layers of the ``layers`` contract in pyproject.toml, top (may import everything
    below) to bottom, each a list of module prefixes."""
    import tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for contract in config.get("tool", {}).get("importlinter", {}).get("contracts", []):
        if contract.get("type") == "layers":
            return [[m.strip() for m in layer.replace(":", "|").split("|")]
                    for layer in contract["layers"]]
    return []


def layer_of(module: str, layers: list[list[str]]) -> int | None:
    """The index of the layer holding ``module`` (its longest matching prefix), or None."""
    best, best_len = None, -1
    for i, layer in enumerate(layers):
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    return best


REMAINING: list[list[str]] = [
    # circles not broken yet (none now); a circle not listed here fails tests/test_import_graph.py
]


def circles() -> list[list[str]]:
    """The circles of symjit's modules, counting every import (but :data:`LAZY_OPTIONAL`)."""
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for e in edges(modules)[0]:
        if (e.source, e.target) not in LAZY_OPTIONAL:
            graph.setdefault(e.source, set()).add(e.target)
    return strongly_connected(sorted(modules), graph)


def main(argv: list[str] | None = None) -> int:
    """Print the figures; with ``--check`` return 1 on a circle not in :data:`REMAINING`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 on a circle not listed as remaining")
    parser.add_argument("--edges", action="store_true", help="list each circle's edges")
    args = parser.parse_args(argv)

    modules = module_files()
    all_edges, fn_counts = edges(modules)
    counted = [e for e in all_edges if (e.source, e.target) not in LAZY_OPTIONAL]
    graph: dict[str, set[str]] = {}
    top_graph: dict[str, set[str]] = {}
    for e in counted:
        graph.setdefault(e.source, set()).add(e.target)
        if not e.in_function:
            top_graph.setdefault(e.source, set()).add(e.target)
    circles = strongly_connected(sorted(modules), graph)
    top_circles = strongly_connected(sorted(modules), top_graph)

    print(f"modules: {len(modules)}; internal import edges: {len(all_edges)} "
          f"({sum(e.in_function for e in all_edges)} inside functions)")
    print(f"imports inside functions: {fn_counts['internal']} of symjit's modules, "
          f"{fn_counts['external']} of other packages")
    print(f"circles counting every import: {len(circles)}; module-level imports only: {len(top_circles)}")
    for comp in circles:
        print(f"  circle of {len(comp)}: {' '.join(comp)}")
        if args.edges:
            members = set(comp)
            for e in counted:
                if e.source in members and e.target in members:
                    where = "function" if e.in_function else "module"
                    print(f"      {e.source}:{e.line} -> {e.target} ({where})")

    layers = layers_contract()
    upward = []
    for e in counted:
        src, dst = layer_of(e.source, layers), layer_of(e.target, layers)
        if src is not None and dst is not None and dst < src:
            upward.append(e)
    unplaced = sorted(m for m in modules if layer_of(m, layers) is None and m != "symjit")
    print(f"imports that run up a layer ({len(layers)} layers): {len(upward)}")
    for e in upward:
        where = "function" if e.in_function else "module"
        print(f"  {e.source}:{e.line} -> {e.target} ({where})")
    if unplaced:
        print(f"modules in no layer: {' '.join(unplaced)}")
    new = [c for c in circles if c not in REMAINING]
    if args.check and new:
        print(f"new circles: {new}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
