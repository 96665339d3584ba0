"""A compiled program's values bound to buffers, and its phases bound to those buffers.

The executor, the imperative op calls (:mod:`symjit.imperative`) and the tests that run programs
by hand all find a value's buffer and call a phase's segments the same way, so it is written once
here: temporaries are views of one arena at the offsets of the memory plan (or views of the value
the plan aliases them to), everything else is the caller's (arguments, aux states, outputs,
gradients, head gradients). A target with :attr:`~symjit.lower.target.Target.stream_arg` gets the
stream to queue on before the arrays.

>>> import numpy as np, symjit as mx
>>> from symjit.compiler.pipeline import compile_symbol
>>> from symjit.config import Config
>>> x = mx.sym.Variable('x')
>>> cfg = Config(cache=False)
>>> c = compile_symbol(mx.sym.exp(x) * 2, {'x': (3,)}, {'x': 'float32'}, {}, False, cfg)
>>> xs, out = np.zeros(3, np.float32), np.empty(3, np.float32)
>>> array = value_arrays(c, np.empty(c.plan.planned_bytes, np.uint8),
...                      lambda vid, v: xs if v.kind == 'arg' else out)
>>> for seg, payload in bind_phases(c, array)['forward']:   # one kernel: called from the host
...     for fn, args in c.target.prepare_calls(c.module, seg.launches, dict(zip(seg.vids, payload))):
...         fn(*args)
>>> out.tolist()
[2.0, 2.0, 2.0]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .codegen.generate import Segment
from .graph import Value

__all__ = ["value_arrays", "bind_phases"]


def value_arrays(compiled: Any, arena: Any, external: Callable[[int, Value], Any]) -> Callable[[int], Any]:
    """``array(vid)``: the buffer of value ``vid`` of ``compiled`` (a ``Compiled``): a view of
    ``arena`` for a planned temporary, ``external(vid, value)`` for every other value."""
    g, plan = compiled.graph, compiled.plan

    # not recursive: a closure calling itself is a reference cycle, which would keep the
    # executor's arrays (held by ``external``) alive after it is dropped, until the cycle collector
    def array(vid: int) -> Any:
        v = g.values[vid]
        if v.kind != "tmp":
            return external(vid, v)
        base = vid
        while base not in plan.offsets and g.values[base].kind == "tmp":
            base = plan.aliases[base]     # a view of another value (a reshape that moves nothing)
        b = g.values[base]
        if b.kind != "tmp":
            return external(base, b).reshape(v.shape)
        off = plan.offsets[base]
        return arena[off:off + b.nbytes].view(b.dtype).reshape(v.shape)
    return array


def bind_phases(compiled: Any, array: Callable[[int], Any], stream: Any = 0,
                host_env: dict | None = None) -> dict[str, list[tuple[Segment, Any]]]:
    """Per phase, its segments with what each is called with: the argument list of a compiled
    function (the stream first on targets that take one), or the prepared call of a host segment
    (a Custom op, sharing ``host_env`` with the program's other host calls)."""
    lead = [stream] if compiled.target.stream_arg else []
    env = {} if host_env is None else host_env

    def segment(seg: Segment) -> Any:
        arrays = [array(v) for v in seg.vids]
        if seg.kind != "host":
            return lead + arrays + seg.consts   # a program function's consts follow its arrays
        n_in = len(seg.node.inputs)
        return seg.node.op.extra["host"](seg.node, arrays[:n_in], arrays[n_in:], seg.reqs, env)

    return {phase: [(seg, segment(seg)) for seg in segs]
            for phase, segs in compiled.program.segments.items()}
