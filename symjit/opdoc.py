"""Generate docs/ops.md from the registry: ``python -m symjit.opdoc > docs/ops.md``.

A tool above every layer: it reads the op records (:mod:`symjit.ops`) and the lowering rule table
(:mod:`symjit.lower`) to say, per operator, its namespaces, the targets that lower it and how its
gradient is made."""
from __future__ import annotations

from .lower import all_targets, lookup
from .ops.registry import REQUIRED, OpDef, aliases, all_ops

__all__ = ["ops_markdown"]


def _param(p) -> str:
    default = "required" if p.default is REQUIRED else repr(p.default)
    choices = f" ({', '.join(p.choices)})" if p.choices else ""
    return f"`{p.name}`={default}{choices}"


def _names(op: OpDef, fn, fallback: str) -> str:
    names = getattr(op, fn)
    if callable(names):
        return fallback
    return ", ".join(names) or "-"


def _targets(op: OpDef) -> str:
    if op.expand is not None:
        return "all (expands)"
    return ", ".join(t.name for t in all_targets() if lookup(op, t) is not None) or "none"


def _gradient(op: OpDef) -> str:
    if op.name.startswith("_"):
        return "-"
    if op.expand is not None and not op.extra.get("no_grad"):
        return "its expansion's"
    if op.extra.get("no_grad") or op.grad is None:
        return "none"
    return "yes"


def ops_markdown() -> str:
    """The operator table as markdown."""
    als: dict[str, list[str]] = {}
    for a, c in aliases().items():
        als.setdefault(c, []).append(a)
    lines = [
        "# Operators",
        "",
        "Generated from the op registry (`python -m symjit.opdoc > docs/ops.md`; a test keeps it",
        "in sync). Every public op (and alias) is in `mx.sym` and `mx.nd`; ops whose names start",
        "with `_` are internal (gradient helpers, compiler rewrites, MXNet's hidden operators).",
        "`targets` lists the targets with a lowering (`all (expands)`: a composite op, built from",
        "other ops when the graph is built); `gradient` says whether the op has one (`none`: MXNet's",
        "is zero or undefined).",
        "",
        "| op | aliases | inputs | aux | params | kind | targets | gradient | doc |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, op in sorted(all_ops().items(), key=lambda kv: (kv[0].startswith("_"), kv[0].lower())):
        params = "<br>".join(_param(p) for p in op.params) or "-"
        doc = " ".join(op.doc.split()).replace("|", "\\|")
        lines.append(f"| `{name}` | {', '.join(sorted(als.get(name, []))) or '-'} | "
                     f"{_names(op, 'arguments', '(depends on params)')} | {_names(op, 'aux', '(depends)')} | "
                     f"{params} | {op.kind.name.lower()} | {_targets(op)} | {_gradient(op)} | {doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":   # pragma: no cover
    print(ops_markdown(), end="")
