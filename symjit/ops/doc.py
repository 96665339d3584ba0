"""Generate docs/ops.md from the registry: ``python -m symjit.ops.doc > docs/ops.md``."""
from __future__ import annotations

from .registry import REQUIRED, OpDef, aliases, all_ops

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


def ops_markdown() -> str:
    """The operator table as markdown."""
    als: dict[str, list[str]] = {}
    for a, c in aliases().items():
        als.setdefault(c, []).append(a)
    lines = [
        "# Operators",
        "",
        "Generated from the op registry (`python -m symjit.ops.doc > docs/ops.md`; a test keeps it",
        "in sync). Internal `_backward_*` ops are gradient helpers, not user API.",
        "",
        "| op | aliases | inputs | aux | params | kind | doc |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, op in sorted(all_ops().items(), key=lambda kv: (kv[0].startswith("_"), kv[0].lower())):
        params = "<br>".join(_param(p) for p in op.params) or "-"
        doc = " ".join(op.doc.split()).replace("|", "\\|")
        lines.append(f"| `{name}` | {', '.join(sorted(als.get(name, []))) or '-'} | "
                     f"{_names(op, 'arguments', '(depends on params)')} | {_names(op, 'aux', '(depends)')} | "
                     f"{params} | {op.kind.name.lower()} | {doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":   # pragma: no cover
    print(ops_markdown(), end="")
