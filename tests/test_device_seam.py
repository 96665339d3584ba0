"""The device seam: outside the device and target packages no code asks which device or target
it runs on by name; it asks the context's device object (``ctx.device``) or the target object.

The check walks every module of ``symjit`` and fails on a comparison (``==``, ``!=``, ``in``,
``not in``) of a device or target name ("cpu", "cuda", "gpu") with a ``device_type``, target or
name attribute or variable.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import symjit as mx
from symjit.devices import device_class, device_for

ROOT = Path(mx.__file__).resolve().parent
NAMES = {"cpu", "cuda", "gpu"}
# the packages that define what each device and target is, where their names belong
SEAM = ("devices/", "lower/target.py", "lower/cpu/", "lower/cuda/")
# comparisons not moved behind the device objects yet, as "path: source of the comparison"
ALLOWED = {
    # command-line checks of the --target option: --emit ptx exists for cuda, --timings for cpu
    "cli.py: args.target != 'cuda'",
    "cli.py: args.target != 'cpu'",
}


def _names(node: ast.AST) -> set[str]:
    """The device/target names a string constant (or a tuple, list or set of them) holds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_names(e) for e in node.elts))
    return set()


def _subject(node: ast.AST) -> str:
    """The last identifier of an attribute chain or a variable ('' for anything else)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _is_device_name(subject: str) -> bool:
    s = subject.lower()
    return "device_type" in s or "target" in s or s == "name" or s.endswith("_name")


def name_tests(source: str) -> list[tuple[int, str]]:
    """(line, source) of each comparison of a device/target name with such a subject in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, sides, sides[1:]):
            if not isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                continue
            if (_names(right) and _is_device_name(_subject(left))) or \
                    (_names(left) and _is_device_name(_subject(right))):
                found.append((node.lineno, ast.unparse(node)))
    return found


def _scan() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(SEAM):
            out[rel] = name_tests(path.read_text(encoding="utf-8"))
    return out


def test_no_device_or_target_name_tests_outside_the_seam() -> None:
    seen = {f"{rel}: {src}": line for rel, hits in _scan().items() for line, src in hits}
    bad = sorted(f"{key.split(': ')[0]}:{line}: {key.split(': ', 1)[1]}"
                 for key, line in seen.items() if key not in ALLOWED)
    assert not bad, ("compare no device or target names here: ask ctx.device (symjit.devices) "
                     "or the Target:\n" + "\n".join(bad))


def test_allow_list_holds_only_comparisons_still_there() -> None:
    seen = {f"{rel}: {src}" for rel, hits in _scan().items() for _, src in hits}
    assert ALLOWED <= seen, f"no longer present, remove from ALLOWED: {sorted(ALLOWED - seen)}"


# where a target name may become a Target object: the --target option, and the lookup itself
# (as_target, at compile_symbol's entry); a device's target_name reaches get_target through the
# hook the executor gives the devices, not a call
NAME_LOOKUPS = {"cli.py", "lower/target.py"}


def test_targets_are_looked_up_by_name_only_at_the_boundaries() -> None:
    """The compiler and the lowering receive Target objects: no module but the boundaries calls
    ``get_target``."""
    calls = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _subject(node.func) == "get_target" and rel not in NAME_LOOKUPS:
                calls.append(f"{rel}:{node.lineno}")
    assert not calls, ("pass the Target object (ctx.device.target, Compiled.target, k.target): "
                       + ", ".join(calls))


@pytest.mark.parametrize("source, hits", [
    ("ctx.device_type == 'gpu'", 1),
    ("'cpu' != self._target", 1),
    ("target_name in ('cpu', 'cuda')", 1),
    ("a.context.device_type not in {'gpu'}", 1),
    ("x == 'cpu'", 0),             # a variable of another meaning
    ("ctx.device_type == other", 0),
    ("mode == 'train'", 0),
])
def test_the_check_finds_name_comparisons(source: str, hits: int) -> None:
    assert len(name_tests(source)) == hits


def test_contexts_resolve_to_one_device_per_place() -> None:
    host = mx.cpu().device
    assert mx.cpu(1).device is host and mx.cpu_pinned().device is host
    assert mx.gpu(0).device is device_for(mx.gpu(0)) and mx.gpu(0).device is not mx.gpu(1).device
    assert (host.target_name, mx.gpu(0).device.target_name) == ("cpu", "cuda")
    assert host.target.name == "cpu" and device_class("cpu") is type(host)
    assert (host.aot, device_class("cuda").aot) == (True, False)
