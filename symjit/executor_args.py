"""What a bind checks and prepares before the Executor compiles: the arrays given for arguments,
gradients and aux states, ``grad_req``, ``group2ctx``, the zeroed arrays of ``simple_bind``, the
views a reshaped executor shares, and whether float16 arrays or outputs call for a
``HalfExecutor``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import MXNetError, np_dtype, shape_str
from .context import Context
from .ndarray import NDArray, storage
from .ndarray import zeros as nd_zeros

__all__ = ["check_group2ctx", "normalize_grad_req", "simple_bind_arrays"]

_HALF = np.dtype("float16")


def check_group2ctx(symbol: Any, ctx: Context, group2ctx: Any) -> None:
    """Check ``group2ctx`` (MXNet's model-parallel placement: a dict from the ``ctx_group``
    attribute that ``mx.AttrScope(ctx_group=...)`` gives nodes to a Context). symjit runs an
    executor on one device, so every group the symbol uses must map to the executor's device;
    placing groups on several devices is a clear error, never a silent single-device run.

    >>> import symjit as mx
    >>> with mx.AttrScope(ctx_group='dev1'):
    ...     y = mx.sym.relu(mx.sym.Variable('x'), name='r')
    >>> check_group2ctx(y, mx.cpu(), {'dev1': mx.cpu(0)})
    >>> try:
    ...     check_group2ctx(y, mx.cpu(), {'dev1': mx.gpu(1)})
    ... except mx.base.MXNetError as exc:
    ...     print(str(exc).split(';')[0])
    bind: group2ctx places ctx_group 'dev1' (nodes r, x) on gpu(1), but this executor runs on cpu(0)
    """
    if group2ctx is None:
        return
    if not isinstance(group2ctx, dict) or not all(
            isinstance(k, str) and isinstance(v, Context) for k, v in group2ctx.items()):
        raise MXNetError(f"bind: group2ctx must be a dict of ctx_group name to Context, got "
                         f"{group2ctx!r:.100}")
    groups: dict[str, list[str]] = {}
    for node, attrs in symbol.attr_dict().items():
        if "__ctx_group__" in attrs:
            groups.setdefault(attrs["__ctx_group__"], []).append(node)
    for group, nodes in sorted(groups.items()):
        where = group2ctx.get(group)
        if where is not None and where.device is not ctx.device:   # pinned host memory is the CPU's
            names = ", ".join(sorted(nodes)[:5]) + (", ..." if len(nodes) > 5 else "")
            raise MXNetError(
                f"bind: group2ctx places ctx_group {group!r} (nodes {names}) on {where}, but this "
                f"executor runs on {ctx}; symjit runs an executor on one device (model-parallel "
                f"placement over several devices is not supported): map every group to {ctx}, or "
                "bind a data-parallel Module over the devices")


def normalize_grad_req(grad_req: Any, arg_names: list[str]) -> dict[str, str]:
    """grad_req as str, list (argument order) or dict (missing names: 'null'; names that are not
    arguments are ignored, as MXNet does) -> dict."""
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise MXNetError(f"bind: grad_req has {len(grad_req)} entries for {len(arg_names)} arguments")
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):   # as MXNet: names the symbol lacks are ignored (a removed bias)
        reqs = {n: grad_req.get(n, "null") for n in arg_names}
    else:
        raise MXNetError(f"bind: grad_req must be a str, list or dict, got {type(grad_req).__name__}")
    for n, r in reqs.items():
        if r not in ("null", "write", "add", "inplace"):
            raise MXNetError(f"bind: grad_req for {n!r} must be 'null', 'write' or 'add', got {r!r}")
    return {n: ("write" if r == "inplace" else r) for n, r in reqs.items()}


def _as_list(what: str, value: Any, names: list[str], allow_none: bool) -> list[NDArray | None]:
    if value is None:
        if allow_none:
            return [None] * len(names)
        raise MXNetError(f"bind: {what} must be given")
    if isinstance(value, dict):
        # as MXNet, only the symbol's names are read: entries for names it lacks are ignored (one
        # dict of a whole net's arrays may bind each of its parts; a bias that no_bias removed)
        missing = [n for n in names if value.get(n) is None]
        if missing and not allow_none:
            raise MXNetError(f"bind: {what} misses {missing}")
        value = [value.get(n) for n in names]
    if not isinstance(value, (list, tuple)):
        raise MXNetError(f"bind: {what} must be a list or a dict of NDArrays")
    if len(value) != len(names):
        raise MXNetError(f"bind: {what} has {len(value)} arrays for {len(names)} names {names}")
    for n, a in zip(names, value):
        if a is None:
            if not allow_none:
                raise MXNetError(f"bind: {what} misses {n!r}")
        elif not isinstance(a, NDArray):
            raise MXNetError(f"bind: {what}[{n!r}] must be an NDArray, got {type(a).__name__}")
    return list(value)


def _shared(old: NDArray, shape: tuple, name: str, allow_up_sizing: bool, ctx: Context) -> NDArray:
    """``old`` itself for its own shape, a view of its first elements for a smaller one, a new
    array for a larger one (with ``allow_up_sizing``; an error naming ``name`` without)."""
    shape = tuple(int(d) for d in shape)
    if old.shape == shape:
        return old
    n = int(np.prod(shape))
    if n <= old.size:
        flat = storage.reshape_view(old._data, (old.size,))
        return old._view(storage.reshape_view(flat[:n], shape))
    if not allow_up_sizing:
        raise MXNetError(f"reshape: {name!r} would grow from {shape_str(old.shape)} to {shape_str(shape)}; "
                         "pass allow_up_sizing=True")
    return nd_zeros(shape, ctx=ctx, dtype=old.dtype)


def _has_half(*groups: Any) -> bool:
    """Whether any NDArray of ``groups`` (lists or dicts of arrays, or None) is float16."""
    for group in groups:
        items = group.values() if isinstance(group, dict) else (group or ())
        if any(isinstance(a, NDArray) and np.dtype(a.dtype) == _HALF for a in items):
            return True
    return False


def _half_outputs(symbol: Any, args: Any) -> bool:
    """Whether the symbol, bound to ``args``, has a float16 output (``Cast`` to float16 last)."""
    names = symbol.list_arguments()
    pairs = ((n, args.get(n)) for n in names) if isinstance(args, dict) else zip(names, args or ())
    dtypes = {n: np.dtype(a.dtype) for n, a in pairs if isinstance(a, NDArray)}
    try:
        _, out_types, _ = symbol.infer_type(**dtypes)
    except MXNetError:
        return False   # the bind itself reports it
    return any(t is not None and np.dtype(t) == _HALF for t in out_types or ())


def simple_bind_arrays(symbol, ctx: Context, grad_req: Any, type_dict: dict | None,
                       shapes: dict[str, tuple]) -> tuple[list, list, list, dict]:
    """Allocate zeroed args, grads (for grad_req != 'null') and aux states for ``simple_bind``."""
    arg_names = symbol.list_arguments()
    arg_s, _, aux_s = symbol.infer_shape(**shapes)
    if arg_s is None:
        part, _, _ = symbol.infer_shape_partial(**shapes)
        missing = [n for n, s in zip(arg_names, part) if not s]
        if not missing:     # every input known: an operator's output nothing sizes (a draw without shape)
            inner = symbol.get_internals()
            _, outs, _ = inner.infer_shape_partial(**shapes)
            unsized = [n for n, s in zip(inner.list_outputs(), outs) if not s]
            raise MXNetError(f"simple_bind: cannot infer the shapes of the outputs {unsized}; give "
                             "their operators a shape, or use them where the graph gives one")
        raise MXNetError(f"simple_bind: cannot infer the shapes of {missing}; give their shapes")
    types = {n: np_dtype((type_dict or {}).get(n, "float32")) for n in arg_names}
    arg_t, _, aux_t = symbol.infer_type(**{n: t for n, t in (type_dict or {}).items()})
    if arg_t is not None:
        types = dict(zip(arg_names, (np.dtype(t) for t in arg_t)))
        aux_types = [np.dtype(t) for t in aux_t]
    else:
        aux_types = [np.dtype("float32")] * len(aux_s)
    reqs = normalize_grad_req(grad_req, arg_names)
    args = [nd_zeros(s, ctx=ctx, dtype=types[n]) for n, s in zip(arg_names, arg_s)]
    grads = [nd_zeros(s, ctx=ctx, dtype=types[n]) if reqs[n] != "null" else None
             for n, s in zip(arg_names, arg_s)]
    aux = [nd_zeros(s, ctx=ctx, dtype=t) for s, t in zip(aux_s, aux_types)]
    return args, grads, aux, reqs
