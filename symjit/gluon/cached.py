"""How a hybridized block runs: its traced Symbol bound once per (input shapes, dtypes, context).

The executor's arguments are the parameters' own arrays (an executor's bound arrays are its
storage, so an optimizer's in-place update is seen by the next call) plus an input buffer per
data variable, into which each call copies its inputs; outputs are copied out, so a result
stays valid after the next call. An executor is rebound when a parameter's array object changes
(re-initialization, ``cast``, ``reset_ctx``). Training-mode calls (``autograd.record()`` or
``train_mode()``) run the executor's training program (BatchNorm updates its running statistics
in place); while recording, the call is left on the autograd tape as one entry whose operator
is the traced symbol (:func:`symjit.autograd.record_graph`). A traced symbol that draws random
numbers (Dropout) runs imperatively while recording in training mode, because the recorded
graph's backward recomputes the forward pass and would draw another mask.
"""
from __future__ import annotations

import hashlib
from typing import Any

from .. import autograd
from ..base import MXNetError
from ..imperative import MODE
from ..ndarray import NDArray, zeros
from .nest import _flatten, _regroup
from .parameter import DeferredInitializationError

__all__ = ["call_cached", "CachedGraph"]

_RANDOM = ("Dropout", "_random_", "_sample_", "_shuffle")


class CachedGraph:
    """A block's traced symbol, its parameters by variable name and its bound executors."""

    def __init__(self, block: Any, inputs: list, out: Any):
        self.symbol = out
        self.data_names = [i.name for i in inputs]
        params = {p.name: p for p in block.collect_params().values()}
        self.inputs = out.list_inputs()
        missing = [n for n in self.inputs if n not in params and n not in self.data_names]
        if missing:
            raise MXNetError(f"{block.name}: the traced graph uses variables {missing} that are "
                                 "neither inputs nor parameters of the block")
        self.params = {n: params[n] for n in self.inputs if n not in self.data_names}
        self.aux = set(out.list_auxiliary_states())
        self.random = any(n.op is not None and n.op.name.startswith(_RANDOM) for n in out._topo())
        key = hashlib.sha1(out.tojson().encode()).hexdigest()[:16]
        self.op = autograd.GraphOp(out, key)
        self.executors: dict[tuple, tuple] = {}

    def finish_init(self, block: Any, args: tuple, ctx: Any) -> None:
        try:
            for p in self.params.values():
                p.data(ctx)
        except DeferredInitializationError:
            block._deferred_infer_shape(*args)
            for p in self.params.values():
                p._finish_deferred_init()

    def run(self, flat: list[NDArray], ctx: Any) -> list[NDArray]:
        pdata = {n: p.data(ctx) for n, p in self.params.items()}
        key = (tuple((a.shape, str(a.dtype)) for a in flat), ctx)
        hit = self.executors.get(key)
        if hit is None or any(hit[1][n] is not a for n, a in pdata.items()):
            data = {n: zeros(a.shape, ctx=ctx, dtype=a.dtype) for n, a in zip(self.data_names, flat)}
            args = {n: a for n, a in {**data, **pdata}.items() if n not in self.aux}
            aux = {n: a for n, a in pdata.items() if n in self.aux}
            exe = self.symbol.bind(ctx, args, grad_req="null", aux_states=aux)
            hit = self.executors[key] = (exe, pdata, [data[n] for n in self.data_names])
        exe, _, bufs = hit
        for src, dst in zip(flat, bufs):
            src._copyto(dst)
        return [o.copy() for o in exe.forward(is_train=MODE.training)]


def _trimmed(fmt: Any) -> Any:
    """An input format without trailing None arguments (defaults left out or given as None)."""
    fmt = list(fmt) if isinstance(fmt, list) else fmt
    while isinstance(fmt, list) and fmt and fmt[-1] == -1:
        fmt.pop()
    return fmt


def call_cached(block: Any, *args: Any) -> Any:
    """Run hybridized ``block`` on NDArray inputs ``args``."""
    if not block._cached_graph:
        block._cached = None
    elif _trimmed(_flatten(list(args), "input")[1]) != _trimmed(block._in_format):
        raise ValueError(f"{block.name}: the inputs' structure (which are None, how they nest) differs "
                         "from the call this hybridized block was traced with; call hybridize() again "
                         "to trace it anew")
    inputs, out = block._get_graph(*args)
    flat = [a for a in _flatten(list(args), "input")[0] if a is not None]
    ctx = flat[0].context
    if block._cached is None:
        block._cached = CachedGraph(block, inputs, out)
    graph = block._cached
    graph.finish_init(block, args, ctx)
    if MODE.recording and MODE.training and graph.random:
        params = {k: v.data(ctx) for k, v in block._reg_params.items()}
        from .. import ndarray
        return block.hybrid_forward(ndarray, *args, **params)
    with autograd.pause(train_mode=MODE.training):
        outs = graph.run(flat, ctx)
    by_name = {**dict(zip(graph.data_names, flat)), **{n: p.data(ctx) for n, p in graph.params.items()}}
    autograd.record_graph(graph.op, [by_name[n] for n in graph.inputs], outs)
    return _regroup(outs, block._out_format)[0]
