"""How a hybridized block runs: its traced Symbol bound once per (input shapes, dtypes, context).

The executor's arguments are the parameters' own arrays (an executor's bound arrays are its
storage, so an optimizer's in-place update is seen by the next call) plus an input buffer per
data variable, into which each call copies its inputs; outputs are copied out, so a result
stays valid after the next call. An executor is rebound when a parameter's array object changes
(re-initialization, ``cast``, ``reset_ctx``). Training-mode calls (``autograd.record()`` or
``train_mode()``) run the executor's training program (BatchNorm updates its running statistics
in place); while recording, the call is left on the autograd tape as one entry whose operator
is the traced symbol (:func:`symjit.autograd.record_graph`). A recorded training call runs an
executor bound with the gradients the recording needs (the parameters', and the inputs' that
depend on a variable), which keeps the call's forward pass: the backward pass calls that
executor's backward with the gradients of the block's outputs, as MXNet's cached operators do,
instead of computing the forward pass again. Where the executor has run again since (the block
called twice in one recording) or a higher-order gradient is asked for, the entry's graph is
inlined into the compiled backward program, which recomputes it from the inputs. A traced symbol
that draws random numbers (Dropout) runs imperatively while recording in training mode, since such
a recomputation would draw another mask.
"""
from __future__ import annotations

from typing import Any

from ..base import MXNetError
from ..cached_op import BoundGraph
from ..imperative import MODE
from .nest import _flatten, _regroup
from .parameter import DeferredInitializationError

__all__ = ["call_cached", "CachedGraph"]

_RANDOM = ("Dropout", "_random_", "_sample_", "_shuffle")


class CachedGraph:
    """A block's traced symbol, its parameters by variable name and its executors (a
    :class:`~symjit.cached_op.BoundGraph` copying the data inputs, the parameters bound as they are)."""

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
        self.random = any(n.op is not None and n.op.name.startswith(_RANDOM) for n in out._topo())
        self.bound = BoundGraph(out, self.data_names)
        self.op = self.bound.op

    def finish_init(self, block: Any, args: tuple, ctx: Any) -> None:
        try:
            for p in self.params.values():
                p.data(ctx)
            return
        except DeferredInitializationError:
            pass
        # outside the handler: an exception there would keep the caught one as its context, and
        # with it the frames (the block and its arrays) of its traceback
        block._deferred_infer_shape(*args)
        for p in self.params.values():
            p._finish_deferred_init()


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
    graph.bound.hook = block._op_hook
    graph.finish_init(block, args, ctx)
    if MODE.recording and MODE.training and graph.random:
        params = {k: v.data(ctx) for k, v in block._reg_params.items()}
        from .. import ndarray
        return block.hybrid_forward(ndarray, *args, **params)
    by_name = {**dict(zip(graph.data_names, flat)), **{n: p.data(ctx) for n, p in graph.params.items()}}
    outs = graph.bound.call([by_name[n] for n in graph.inputs], ctx)
    return _regroup(outs, block._out_format)[0]
