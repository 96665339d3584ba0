"""``mx.nd`` functions written in Python around the registered operators, which :func:`install`
gives ``mx.nd`` after :func:`symjit.imperative.install_nd_functions`: ``split_v2`` and ``histogram``
(their params worked out here, then the operator's compiled call), ``reset_arrays`` (fills, no
kernel) and ``Custom`` (a :class:`symjit.operator.CustomOpProp`'s own ``forward``, recorded under
``autograd.record``).
"""
from __future__ import annotations

from typing import Any

from . import profiler
from .base import DTypeError, MXNetError
from .context import current_context
from .imperative import MODE, invoke
from .ndarray import NDArray
from .ops.registry import get_op

__all__ = ["split_v2", "histogram", "reset_arrays", "nd_custom", "install"]


def install(module: Any) -> None:
    """Give ``module`` (``mx.nd``) these functions, in place of the generated functions of the
    operators of the same names."""
    module.split_v2 = split_v2
    module.histogram = histogram
    module.Custom = nd_custom
    module.reset_arrays = reset_arrays


def split_v2(ary: NDArray, indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False,
             out: Any = None) -> list[NDArray]:
    """``mx.nd.split_v2``: pieces of ``ary`` along ``axis`` (equal sections for an int, cut at the
    given indices for a tuple), by the registered ``_split_v2`` operator.

    >>> import symjit as mx
    >>> [p.asnumpy().tolist() for p in mx.nd.split_v2(mx.nd.array([1, 2, 3, 4]), (1, 3))]
    [[1.0], [2.0, 3.0], [4.0]]
    """
    from .symbol.functions import split_v2_params
    outs = invoke("_split_v2", [ary], split_v2_params(indices_or_sections, axis, squeeze_axis), out,
                  "split_v2")
    return outs if len(outs) > 1 else outs[0]


def histogram(a: NDArray, bins: Any = 10, range: Any = None) -> tuple[NDArray, NDArray]:   # noqa: A002
    """``mx.nd.histogram``: (counts as int64, bin edges) of ``a`` for ``bins`` equal bins over
    ``range`` (default: a's min to max, widened by 0.5 each way when they are equal, as numpy), or
    for ``bins`` an NDArray of edges; by the registered ``_histogram`` operator.

    >>> import symjit as mx
    >>> [x.asnumpy().tolist() for x in mx.nd.histogram(mx.nd.array([0, 1, 1, 3]), bins=3)]
    [[1, 2, 1], [0.0, 1.0, 2.0, 3.0]]
    """
    if isinstance(bins, NDArray):
        return tuple(invoke("_histogram", [a, bins], {}, None, "histogram"))
    if range is None:
        lo, hi = float(invoke("min", [a])[0].asnumpy()[0]), float(invoke("max", [a])[0].asnumpy()[0])
        range = (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)   # noqa: A001
    params = {"bin_cnt": int(bins), "range": str(tuple(float(v) for v in range))}
    return tuple(invoke("_histogram", [a], params, None, "histogram"))


def reset_arrays(*data: NDArray, num_arrays: int | None = None, out: Any = None,
                 name: str | None = None) -> list:
    """``mx.nd.reset_arrays``: set every array to zero in place; returns ``[]`` as MXNet's does.
    Each array is filled as ``a[:] = 0`` fills it (no kernel is compiled: a call on arrays of
    new shapes, dtypes or counts costs no compilation; in a graph, ``mx.sym.reset_arrays`` is one
    compiled operator).

    >>> import symjit as mx
    >>> a, b = mx.nd.ones((2,)), mx.nd.ones((3,))
    >>> mx.nd.reset_arrays(a, b, num_arrays=2), a.asnumpy().tolist(), b.asnumpy().tolist()
    ([], [0.0, 0.0], [0.0, 0.0, 0.0])
    """
    if num_arrays is not None and num_arrays != len(data):
        raise MXNetError(f"reset_arrays: num_arrays={num_arrays} but {len(data)} arrays given")
    for i, a in enumerate(data):
        if not isinstance(a, NDArray):
            raise MXNetError(f"reset_arrays: argument {i} is a {type(a).__name__}, not an NDArray")
    if out is not None:
        raise MXNetError("reset_arrays: out= is not accepted (the arrays are reset in place)")
    for a in data:
        a[:] = 0
    return []


def nd_custom(*inputs: NDArray, op_type: str | None = None, out: Any = None, name: str | None = None,
              **kwargs: Any) -> Any:
    """``mx.nd.Custom``: run a registered :class:`symjit.operator.CustomOpProp`'s operator on NDArrays
    (its ``infer_shape``/``infer_type`` size the outputs, ``forward`` fills them, inference mode);
    inputs in the prop's ``list_arguments`` order, then its aux states.

    >>> import symjit as mx
    >>> @mx.operator.register('twice_nd')
    ... class TwiceProp(mx.operator.CustomOpProp):
    ...     def create_operator(self, ctx, shapes, dtypes):
    ...         class Twice(mx.operator.CustomOp):
    ...             def forward(self, is_train, req, in_data, out_data, aux):
    ...                 self.assign(out_data[0], req[0], in_data[0] * 2)
    ...         return Twice()
    >>> mx.nd.Custom(mx.nd.array([1, 2]), op_type='twice_nd').asnumpy().tolist()
    [2.0, 4.0]
    """
    from .ops.custom import _aux, prop_of
    op = get_op("Custom")
    params = op.parse_params({"op_type": op_type, **kwargs})
    for i, a in enumerate(inputs):
        if not isinstance(a, NDArray):
            raise DTypeError(f"Custom (op_type={op_type!r}): input {i} must be an NDArray, "
                             f"got {type(a).__name__}")
    prop = prop_of(params)
    n_args = len(op.list_arguments(params))
    if len(inputs) != n_args + len(_aux(params)):
        raise MXNetError(f"Custom (op_type={op_type!r}): {len(inputs)} inputs given, it takes "
                         f"{op.list_arguments(params) + op.list_aux(params)}")
    if MODE.recording and MODE.recorder is not None:     # autograd.record(): run it, and record it
        raw = {"op_type": op_type, **kwargs}
        outs = MODE.recorder("Custom", list(inputs), raw, out, f"Custom (op_type={op_type!r})",
                             None, run=lambda: _custom_forward(op_type, params, prop, inputs, n_args, out,
                                                               MODE.training))
    else:
        outs = _custom_forward(op_type, params, prop, inputs, n_args, out, MODE.training)
    n_vis = op.num_visible(params)
    return outs[0] if n_vis == 1 else outs[:n_vis]


def _custom_forward(op_type: str | None, params: dict, prop: Any, inputs: tuple, n_args: int, out: Any,
                    is_train: bool) -> list[NDArray]:
    """Run a Custom operator's ``forward`` on NDArrays (every output, the hidden ones too)."""
    from .ops.custom import _custom_dtype, _custom_shape
    args, aux = list(inputs[:n_args]), list(inputs[n_args:])
    try:
        _, shapes, _ = _custom_shape(params, [tuple(a.shape) for a in args], [tuple(a.shape) for a in aux])
        _, dtypes, _ = _custom_dtype(params, [a.dtype for a in args], [a.dtype for a in aux])
    except Exception as exc:  # noqa: BLE001 - the prop's methods are user code
        raise MXNetError(f"Custom (op_type={op_type!r}): {exc}") from exc
    ctx = args[0].context if args else current_context()
    from .ndarray.creation import empty
    outs = list(out) if isinstance(out, (list, tuple)) else [out] if out is not None else \
        [empty(s, ctx=ctx, dtype=t) for s, t in zip(shapes, dtypes)]
    operator = prop.create_operator(ctx, [list(a.shape) for a in args], [a.dtype for a in args])
    try:
        with profiler.custom_op(op_type):
            operator.forward(is_train, ["write"] * len(outs), args, outs, aux)
    except MXNetError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code: report it, naming the op
        raise MXNetError(f"Custom (op_type={op_type!r}): forward raised {type(exc).__name__}: {exc}") from exc
    return outs
