"""Lowering rules: how one operator becomes code on one target, and the facts the passes read.

A :class:`Rule` is registered for ``(op name, Target class)``; a target uses the rule of its own
class, else of the nearest class it derives from, else the target-neutral default (:data:`ANY`,
the :class:`~symjit.lower.target.Target` base class), as JAX's lowering rules fall back from a
platform rule to the default one. A new target registers its rules under its own class (no table
of names to edit), and a subclass of a target inherits that target's rules. An
elementwise/broadcast op with a scalar ``body`` needs no rule at all: the shared loop generator
composes its body on every target (:data:`LOOP`).

A rule's ``emit(k, node, ins, outs)`` writes the statements of a kernel through ``k`` (a
:class:`~symjit.lower.writer.KernelWriter`: ``k.line``, ``k.imp(module, name)`` for a
local alias, ``k.tmp(prefix)`` for a fresh local, ``k.info[name]`` for the static
:class:`~symjit.compiler.graph.Value` of an array argument); ``ins``/``outs`` are the local names of
the node's arrays. It returns None, or a function ``expr(idx) -> str`` giving output element
``idx`` (loop-index names), or a dict of them by output slot (outputs of the loop's shape); the
group's loop evaluates them and continues with the fused elementwise ops where the rule declares
``epilogue=True`` (GEMM accumulator plus bias, then the activation).

The facts (``epilogue``, ``reduce``, ``inplace``, ``shape_only``, ``gathers``, ``host``,
``workspace``) are the only place the compiler learns them: the fusion pass, the memory planner
and the loop generator read the rule of the target they compile for and never test a target by
name.

>>> from symjit.ops import get_op
>>> from symjit.lower.target import get_target
>>> cpu, cuda = get_target('cpu'), get_target('cuda')
>>> lookup(get_op('FullyConnected'), cpu).epilogue, lookup(get_op('BatchNorm'), cuda).target is type(cuda)
(True, True)
>>> lookup(get_op('relu'), cuda) is LOOP
True
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..base import MXNetError
from ..ops.registry import Kind, OpDef
from .target import Target, load_builtin

__all__ = ["Rule", "rule", "lookup", "rules_of", "LOOP", "ANY", "is_loop_op", "ElemExpr"]

ANY = Target   # the rules of every target without one of its own
ElemExpr = Callable[[list[str]], str]   # loop-index names -> source of an output element
FUSABLE_INTO = (Kind.ELEMWISE, Kind.BROADCAST)


@dataclasses.dataclass(frozen=True)
class Rule:
    """How an op is lowered on one target class (:data:`ANY`: every target without its own rule).

    ``emit``: the emitter (None for :data:`LOOP`: the loop generator composes the op's body).
    ``epilogue``: ``emit`` returns an element expression elementwise consumers may extend.
    ``reduce``: ``"sum"`` or ``"mean"``: the op may accumulate inside the loop that computes its
    input (a *reduction epilogue*), which the target's loop generator then emits.
    ``inplace``: (input slot, output slot) pairs that may share a buffer when the kernel runs
    alone (valid for this emitter's access order), or a function of the params giving them.
    ``shape_only``: input slots that only lend their shape (never loaded by a loop).
    ``gathers``: the element function reads the anchor's inputs at other positions than the element
    it computes, inside the group's loop (a per-element dot product), so no loop output may take
    over those inputs' buffers (emitters that finish before the loop, like the CPU's GEMM, need
    not say it).
    ``host``: the op runs as a Python call between compiled segments (``OpDef.extra['host']``).
    ``workspace(node, ins, outs) -> [(shape, dtype), ...]``: the scratch buffers the emitter needs,
    from the static :class:`~symjit.compiler.graph.Value` s of the node's inputs and outputs. They
    are temporaries of the memory plan, alive while the group's kernel runs, and reach the emitter
    as ``k.workspace`` (local names, in order): kernels never allocate.
    """

    op: str
    target: type
    emit: Callable | None = None
    epilogue: bool = False
    reduce: str | None = None
    inplace: tuple[tuple[int, int], ...] | Callable[[dict], tuple] = ()
    shape_only: tuple[int, ...] = ()
    gathers: bool = False
    host: bool = False
    workspace: Callable | None = None

    def inplace_pairs(self, params: dict) -> tuple[tuple[int, int], ...]:
        """The (input slot, output slot) pairs for these params."""
        return tuple(self.inplace(params) if callable(self.inplace) else self.inplace)


LOOP = Rule("<elementwise>", ANY)   # the default of an op with a scalar body: the loop generator
_RULES: dict[tuple[str, type], Rule] = {}


def _class(target: Target | type) -> type:
    cls = target if isinstance(target, type) else type(target)
    if not issubclass(cls, Target):
        raise MXNetError(f"lowering rules are keyed by a Target class or a target, not {target!r}")
    return cls


def rule(op: str, target: type | Target = ANY, emit: Callable | None = None, **facts: Any) -> Rule:
    """Register the lowering of ``op`` on ``target`` (a :class:`~symjit.lower.target.Target`
    class, or a target, meaning its class); returns the rule.

    >>> rule('no_such_op_here', Target)
    Traceback (most recent call last):
    symjit.base.MXNetError: lowering rule for unknown operator 'no_such_op_here'
    """
    from ..ops.registry import find_op
    opdef = find_op(op)
    if opdef is None:
        raise MXNetError(f"lowering rule for unknown operator {op!r}")
    cls = _class(target)
    key = (opdef.name, cls)
    if key in _RULES:
        raise MXNetError(f"{opdef.name}: two lowering rules for target {cls.name or cls.__name__!r}")
    _RULES[key] = Rule(opdef.name, cls, emit, **facts)
    return _RULES[key]


def is_loop_op(op: OpDef) -> bool:
    """An elementwise/broadcast op with a scalar body: the loop generator lowers it anywhere."""
    return op.kind in FUSABLE_INTO and op.body is not None


def lookup(op: OpDef, target: Target | type) -> Rule | None:
    """The rule lowering ``op`` on ``target`` (a Target, or a Target class): its class's own, else
    that of the nearest class it derives from, down to the target-neutral one (:data:`ANY`), else
    :data:`LOOP` for an elementwise op with a body; None when the target cannot lower it."""
    load_builtin()
    for cls in _class(target).__mro__:
        found = _RULES.get((op.name, cls))
        if found is not None:
            return found
        if cls is ANY:
            break
    return LOOP if is_loop_op(op) else None


def rules_of(target: Target | type) -> dict[str, Rule]:
    """Every op's rule on ``target`` (ops without one are absent)."""
    from ..ops.registry import all_ops
    out = {}
    for name, op in all_ops().items():
        found = lookup(op, target)
        if found is not None:
            out[name] = found
    return out
