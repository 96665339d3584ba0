"""Generate ``mx.sym.<Op>`` constructors from the op registry."""
from __future__ import annotations

from collections.abc import Callable

from ..ops.registry import OpDef, aliases, all_ops
from .symbol import Symbol, make_op_symbol

__all__ = ["make_constructor", "constructors"]


def _doc(op: OpDef, called: str) -> str:
    lines = [op.doc.strip() or f"The {op.name} operator.", "", "Parameters", "----------"]
    for p in op.params:
        default = "required" if repr(p.default) == "REQUIRED" else f"default {p.default!r}"
        choices = f", one of {list(p.choices)}" if p.choices else ""
        lines.append(f"{p.name} : {p.kind} ({default}{choices}) {p.doc}".rstrip())
    lines += ["name : str, optional", "attr : dict of str to str, optional"]
    if called != op.name:
        lines += ["", f"Alias of ``{op.name}``."]
    return "\n".join(lines)


def make_constructor(called: str, op: OpDef) -> Callable[..., Symbol]:
    """A function ``called(*symbols, name=None, attr=None, **params) -> Symbol``."""
    def constructor(*args, name=None, attr=None, **kwargs) -> Symbol:
        return make_op_symbol(called, *args, name=name, attr=attr, **kwargs)
    constructor.__name__ = called
    constructor.__qualname__ = called
    constructor.__doc__ = _doc(op, called)
    return constructor


def constructors() -> dict[str, Callable[..., Symbol]]:
    """Every op and alias name -> its constructor."""
    ops = all_ops()
    out = {name: make_constructor(name, op) for name, op in ops.items()}
    for alias, canonical in aliases().items():
        out[alias] = make_constructor(alias, ops[canonical])
    return out
