"""``Custom``: operators written in Python (``mx.operator``), run as host callbacks.

A custom op is registered by name with :func:`symjit.operator.register`, which stores its
``CustomOpProp`` subclass in :data:`PROPS`. ``mx.sym.Custom(*inputs, op_type=name, **kwargs)``
builds a node of the ``Custom`` record below; everything about the node comes from an instance of
the registered prop, created with the extra keyword arguments as strings (as MXNet hands them
over, so ``scale=2`` arrives as ``'2'``):

* argument, output and aux-state names: ``list_arguments()``, ``list_outputs()``,
  ``list_auxiliary_states()`` (so ``mx.sym.Custom(data=x, label=y, op_type=...)`` accepts the
  prop's input names as keyword symbols, and missing inputs become ``{name}_{input}`` variables);
* shapes: ``infer_shape(in_shapes) -> (in, out[, aux])``, called with the argument shapes as lists,
  an unknown shape as ``[]``; if it raises while some input shape is still unknown, the engine
  tries again later, once more is known;
* dtypes: ``infer_type(in_types) -> (in, out[, aux])`` with numpy type classes, unknown input
  types filled with the first known one;
* gradient: an internal ``_backward_Custom`` node whose inputs are the output gradients (only
  when ``need_top_grad``; a missing one is zeros), the forward inputs, the forward outputs and the
  aux states, and whose outputs are one gradient per argument. ``declare_backward_dependency`` is
  not consulted: backward always sees every array.

Both records are OPAQUE; their lowering rule declares ``host=True`` (``extra['host']`` is the
factory below, :mod:`symjit.lower.neutral`): the fusion pass gives each its own group, and code
generation splits the phase's program at it, so the executor runs compiled segments and host calls
in order. A host call wraps the planned buffers as NDArrays (views, no copies) and calls the
``CustomOp`` from ``prop.create_operator(ctx, shapes, dtypes)`` (one instance per executor program
and node, shared by forward and backward): ``forward(is_train, req, in_data, out_data, aux)`` and
``backward(req, out_grad, in_data, out_data, in_grad, aux)``. ``req`` is ``'write'`` for every
forward output; in backward it is ``'null'`` for a gradient nobody reads and ``'write'`` otherwise
(``grad_req='add'`` is handled by the graph after the call). Without ``need_top_grad``, ``out_grad``
holds zeros. Any exception raised by the Python code is re-raised as :class:`MXNetError` naming the
op type and node.

Symbol JSON: a Custom node's attrs are ``op_type`` and the extra kwargs (``extra['free_params']``
tells the loader that every plain attr is a param); loading needs the op type registered.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import profiler
from ..base import MXNetError, ParamError, dtype_name, shape_str
from .registry import Kind, OpDef, Param, RuleError, register

__all__ = ["PROPS", "CustomOpDef", "prop_of", "host_call", "register_array_type"]

PROPS: dict[str, type] = {}   # op_type -> CustomOpProp subclass (filled by mx.operator.register)
_ARRAY_TYPE: list[type] = []
"""The class a host call views its buffers as, ``cls(buffer, ctx)``: the NDArray, registered by
:mod:`symjit.operator` (where custom ops are registered) when it is imported."""
_SETTLE: list[Callable[[], None]] = []   # runs queued NDArray work (registered with the array type)
_INSTANCES: dict[tuple, Any] = {}
_RESERVED = ("op_type", "forward_node")


class CustomOpDef(OpDef):
    """An OpDef whose params are ``op_type`` plus any extra keyword, kept as strings."""

    def parse_params(self, raw: dict[str, Any]) -> dict[str, Any]:
        if "op_type" not in raw or raw["op_type"] is None:
            raise ParamError(f"{self.name}: required parameter 'op_type' is missing "
                             f"(registered op types: {sorted(PROPS)})")
        out = {k: _as_str(v) for k, v in raw.items()}
        if out["op_type"] not in PROPS:
            raise ParamError(f"{self.name}: op_type {out['op_type']!r} is not registered "
                             f"(use @mx.operator.register; registered: {sorted(PROPS)})")
        prop_of(out)   # validates the prop's constructor and names now, not at bind
        return out

    def format_params(self, params: dict[str, Any]) -> dict[str, str]:
        return {k: str(v) for k, v in params.items()}


def _as_str(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def _kwargs(params: dict) -> dict[str, str]:
    return {k: v for k, v in params.items() if k not in _RESERVED}


def _where(params: dict) -> str:
    return f"Custom (op_type={params.get('op_type')!r})"


def prop_of(params: dict) -> Any:
    """The CustomOpProp instance for a node's params (one per op type, class and kwargs)."""
    op_type = params.get("op_type")
    cls = PROPS.get(op_type)
    if cls is None:
        raise ParamError(f"Custom: op_type {op_type!r} is not registered (registered: {sorted(PROPS)})")
    kwargs = _kwargs(params)
    key = (op_type, tuple(sorted(kwargs.items())))
    hit = _INSTANCES.get(key)
    if hit is not None and hit[0] is cls:
        return hit[1]
    try:
        prop = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - user code: report it, naming the op
        raise ParamError(f"{_where(params)}: {cls.__name__}({_fmt_kwargs(kwargs)}) raised "
                         f"{type(exc).__name__}: {exc}") from exc
    _check_names(params, prop)
    _INSTANCES[key] = (cls, prop)
    return prop


def _fmt_kwargs(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def _names(params: dict, prop: Any, method: str) -> list[str]:
    try:
        names = getattr(prop, method)()
    except Exception as exc:  # noqa: BLE001 - user code
        raise MXNetError(f"{_where(params)}: {method}() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise MXNetError(f"{_where(params)}: {method}() must return a list of str, got {names!r}")
    return list(names)


def _check_names(params: dict, prop: Any) -> None:
    args = _names(params, prop, "list_arguments")
    outs = _names(params, prop, "list_outputs")
    aux = _names(params, prop, "list_auxiliary_states")
    if not outs:
        raise MXNetError(f"{_where(params)}: list_outputs() returned no outputs")
    if len(set(args + aux)) != len(args) + len(aux):
        raise MXNetError(f"{_where(params)}: input names repeat: {args + aux}")


def _arguments(p: dict) -> list[str]:
    return _names(p, prop_of(p), "list_arguments")


def _outputs(p: dict) -> list[str]:
    return _names(p, prop_of(p), "list_outputs")


def _aux(p: dict) -> list[str]:
    return _names(p, prop_of(p), "list_auxiliary_states")


def _need_top_grad(p: dict) -> bool:
    return bool(getattr(prop_of(p), "need_top_grad_", True))


# --- shape and dtype rules --------------------------------------------------------------------
def _split_result(p: dict, ret: Any, method: str, n_aux: int) -> tuple[list, list, list]:
    if not isinstance(ret, (list, tuple)) or len(ret) not in (2, 3):
        raise RuleError(f"{method}() must return (in, out) or (in, out, aux) lists, got {ret!r}")
    ins, outs = list(ret[0]), list(ret[1])
    aux = list(ret[2]) if len(ret) == 3 else []
    want = (len(_arguments(p)), len(_outputs(p)), n_aux)
    for what, got, n in zip(("inputs", "outputs", "aux states"), (ins, outs, aux), want):
        if len(got) != n:
            raise RuleError(f"{method}() returned {len(got)} {what}, the op has {n}")
    return ins, outs, aux


def _as_shape(value: Any, method: str, what: str) -> tuple[int, ...] | None:
    try:
        shape = tuple(int(d) for d in value)
    except (TypeError, ValueError):
        raise RuleError(f"{method}() returned {value!r} for {what}, expected a tuple of ints") from None
    if any(d < 0 for d in shape):
        raise RuleError(f"{method}() returned {shape_str(shape)} for {what}, a negative dimension")
    return shape or None


def _custom_shape(p: dict, ins: list, aux: list):
    names = _arguments(p)
    n_aux = len(_aux(p))
    unknown = any(s is None for s in ins)
    if ins and all(s is None for s in ins):
        return [None] * len(ins), [None] * len(_outputs(p)), [None] * n_aux
    try:
        ret = prop_of(p).infer_shape([list(s) if s is not None else [] for s in ins])
    except Exception as exc:  # noqa: BLE001 - user code; retried once more inputs are known
        if unknown:
            return [None] * len(ins), [None] * len(_outputs(p)), [None] * n_aux
        raise RuleError(f"infer_shape({[shape_str(s) for s in ins]}) raised "
                        f"{type(exc).__name__}: {exc}") from exc
    new_in, outs, new_aux = _split_result(p, ret, "infer_shape", n_aux)
    outs_names = _outputs(p)
    return ([_as_shape(s, "infer_shape", f"argument '{n}'") for s, n in zip(new_in, names)],
            [_as_shape(s, "infer_shape", f"output '{n}'") for s, n in zip(outs, outs_names)],
            [_as_shape(s, "infer_shape", "an aux state") for s in new_aux])


def _as_dtype(value: Any, method: str) -> np.dtype | None:
    if value is None:
        return None
    try:
        return np.dtype(value)
    except TypeError:
        raise RuleError(f"{method}() returned {value!r}, expected a numpy dtype") from None


def _custom_dtype(p: dict, ins: list, aux: list):
    known = next((t for t in list(ins) + list(aux) if t is not None), None)
    n_aux = len(_aux(p))
    if known is None and ins:
        return [None] * len(ins), [None] * len(_outputs(p)), [None] * n_aux
    filled = [np.dtype(t if t is not None else known).type for t in ins]
    try:
        ret = prop_of(p).infer_type(filled)
    except Exception as exc:  # noqa: BLE001 - user code
        raise RuleError(f"infer_type({[dtype_name(t) for t in filled]}) raised "
                        f"{type(exc).__name__}: {exc}") from exc
    new_in, outs, new_aux = _split_result(p, ret, "infer_type", n_aux)
    conv = lambda ts: [_as_dtype(t, "infer_type") for t in ts]  # noqa: E731
    return conv(new_in), conv(outs), conv(new_aux)


# --- gradient ---------------------------------------------------------------------------------
def _bwd_arguments(p: dict) -> list[str]:
    outs = _outputs(p)
    grads = [f"{o}_grad" for o in outs] if _need_top_grad(p) else []
    return grads + _arguments(p) + outs + _aux(p)


def _bwd_outputs(p: dict) -> list[str]:
    return [f"{a}_grad" for a in _arguments(p)]


def _bwd_rule(p: dict, ins: list, aux: list):
    """Shapes and dtypes alike: the inputs as they are; one gradient per forward argument."""
    skip = len(_outputs(p)) if _need_top_grad(p) else 0
    n_args = len(_arguments(p))
    return list(ins), list(ins[skip:skip + n_args]), []


def _custom_grad(b, node, ograds: list) -> list:
    p = node.params
    n_args = len(_arguments(p))
    head = []
    if _need_top_grad(p):
        head = [og if og is not None else b.add1("zeros_like", o)
                for og, o in zip(ograds, node.outputs)]
    ins = head + node.inputs[:n_args] + node.outputs + node.inputs[n_args:]
    params = {**p, "forward_node": node.name}
    grads = b.add("_backward_Custom", ins, name=f"{node.name}_backward", params=params)
    return list(grads) + [None] * (len(node.inputs) - n_args)


# --- host calls -------------------------------------------------------------------------------
def register_array_type(cls: type, settle: Callable[[], None] | None = None) -> None:
    """Make host calls hand the ``CustomOp`` its buffers as ``cls(buffer, ctx)`` (views, no
    copies), and run ``settle`` after its ``forward``/``backward`` returns, so that work its code
    queued on those arrays (the lazy engine's) is done before compiled kernels read the buffers;
    called by :mod:`symjit.operator` with the NDArray and the queue's flush.

    >>> from symjit.ndarray import NDArray
    >>> _ARRAY_TYPE == [NDArray]
    True
    """
    _ARRAY_TYPE[:] = [cls]
    _SETTLE[:] = [settle] if settle is not None else []


def _wrap(arrays: list[np.ndarray], ctx: Any) -> list:
    if not _ARRAY_TYPE:
        raise MXNetError("Custom: running a custom operator needs symjit.operator imported (import symjit)")
    return [_ARRAY_TYPE[0](a, ctx) for a in arrays]


def _operator(node, env: dict, ins: list[np.ndarray]) -> Any:
    """The CustomOp of a forward node (created once per program, shared with its backward)."""
    p = node.params
    key = ("custom_op", p.get("forward_node", node.name))
    op = env.get(key)
    if op is None:
        shapes = [list(a.shape) for a in ins]
        dtypes = [a.dtype.type for a in ins]
        try:
            op = prop_of(p).create_operator(env["ctx"], shapes, dtypes)
        except Exception as exc:  # noqa: BLE001 - user code
            raise MXNetError(f"{_where(p)} '{node.name}': create_operator raised "
                             f"{type(exc).__name__}: {exc}") from exc
        env[key] = op
    return op


def host_call(node, ins: list[np.ndarray], outs: list[np.ndarray], reqs: list[str],
              env: dict) -> Callable[[], None]:
    """A zero-argument callable running a Custom/_backward_Custom node on bound buffers.

    ``ins``/``outs`` are the node's planned arrays (views into the executor's storage), ``reqs``
    one of 'write'/'null' per output, ``env`` a dict shared by the nodes of one program holding
    ``ctx`` (the executor's context).
    """
    p = node.params
    ctx = env["ctx"]
    nd_ins, nd_outs = _wrap(ins, ctx), _wrap(outs, ctx)
    n_args, n_outs = len(_arguments(p)), len(_outputs(p))
    if node.op.name == "Custom":
        in_data, aux = nd_ins[:n_args], nd_ins[n_args:]
        fwd_ins = ins

        def run() -> None:
            op = _operator(node, env, fwd_ins)
            with profiler.custom_op(p["op_type"]):
                op.forward(node.train, list(reqs), in_data, nd_outs, aux)
        return _guarded(node, "forward", run)
    skip = n_outs if _need_top_grad(p) else 0
    if skip:
        out_grad = nd_ins[:skip]
    else:
        out_grad = _wrap([ctx.device.alloc(tuple(a.shape), a.dtype, 0)
                          for a in ins[n_args:n_args + n_outs]], ctx)
    in_data = nd_ins[skip:skip + n_args]
    out_data = nd_ins[skip + n_args:skip + n_args + n_outs]
    aux = nd_ins[skip + n_args + n_outs:]
    fwd_ins = ins[skip:skip + n_args] + ins[skip + n_args + n_outs:]

    def run_backward() -> None:
        op = _operator(node, env, fwd_ins)
        with profiler.custom_op(p["op_type"], backward=True):
            op.backward(list(reqs), out_grad, in_data, out_data, nd_outs, aux)
    return _guarded(node, "backward", run_backward)


def _guarded(node, phase: str, fn: Callable[[], None]) -> Callable[[], None]:
    def call() -> None:
        try:
            fn()
            for settle in _SETTLE:   # the op's queued writes land before kernels read its outputs
                settle()
        except MXNetError as exc:
            if str(exc).startswith(_where(node.params)):
                raise
            raise MXNetError(f"{_where(node.params)} '{node.name}': {phase} raised "
                             f"{type(exc).__name__}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - user code: report it, naming the op
            raise MXNetError(f"{_where(node.params)} '{node.name}': {phase} raised "
                             f"{type(exc).__name__}: {exc}") from exc
    return call


register(CustomOpDef(
    "Custom",
    params=(Param("op_type", "str", doc="the name given to @mx.operator.register; further keyword "
                                         "arguments are passed to the prop's constructor as strings"),),
    arguments=_arguments, outputs=_outputs, aux=_aux,
    shape=_custom_shape, dtype=_custom_dtype,
    kind=Kind.OPAQUE, grad=_custom_grad, extra={"host": host_call, "free_params": True, "reads_mode": True},
    doc="An operator implemented in Python: a registered mx.operator.CustomOpProp gives its inputs, "
        "outputs, shapes and dtypes, and its CustomOp runs forward/backward as a host callback "
        "between compiled kernels.",
))

register(CustomOpDef(
    "_backward_Custom",
    params=(Param("op_type", "str"), Param("forward_node", "str", "")),
    arguments=_bwd_arguments, outputs=_bwd_outputs, shape=_bwd_rule, dtype=_bwd_rule,
    kind=Kind.OPAQUE, extra={"host": host_call, "backward_of": "Custom"},
    doc="Gradient of Custom: calls the CustomOp's backward on the host.",
))
