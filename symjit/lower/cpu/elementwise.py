"""CPU lowering of ``where`` (record in :mod:`symjit.ops.elementwise`); every other elementwise op
is lowered by the shared loop generator from its scalar body."""
from __future__ import annotations

from ..rules import rule
from . import CPUTarget


def _where_lower(k, node, ins, outs):
    """A flat loop; a 1-D condition (rank-2+ data) picks whole rows of the flattened arrays."""
    c, x, y, o = (k.tmp(n) for n in "cxyo")
    for local, arr in zip((c, x, y, o), (*ins, *outs)):
        k.line(f"{local} = {arr}.reshape(-1)")
    if len(k.info[ins[0]].shape) == 1 and len(k.info[ins[1]].shape) > 1:
        m = k.tmp("m")
        k.line(f"{m} = {o}.shape[0] // {c}.shape[0] if {c}.shape[0] > 0 else 0")
        k.line(f"for r in range({c}.shape[0]):")
        k.line(f"    src = {x} if {c}[r] != 0 else {y}")
        k.line(f"    for j in range(r * {m}, (r + 1) * {m}):")
        k.line(f"        {o}[j] = src[j]")
    else:
        k.line(f"for j in range({o}.shape[0]):")
        k.line(f"    {o}[j] = {x}[j] if {c}[j] != 0 else {y}[j]")


# the flat loop reads x[j] before it writes out[j]
rule("where", CPUTarget, _where_lower, inplace=((1, 0),))
