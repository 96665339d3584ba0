"""``mx.operator``: operators written in Python, run between compiled kernels.

Subclass :class:`CustomOpProp` (names, shapes, dtypes, which operator to create) and
:class:`CustomOp` (``forward``/``backward`` on NDArrays), register the prop under a name with
:func:`register`, and use it as ``mx.sym.Custom(data, op_type=name, **kwargs)``. Extra keyword
arguments reach the prop's constructor as strings, as in MXNet.

The compiled program is split at each custom op: compiled segments run the fused kernels before
and after it, and the executor calls its Python code in between on views of the planned buffers
(see :mod:`symjit.ops.custom` for the contract, including ``req`` values and errors).

The older :class:`NumpyOp` API (``forward(in_data, out_data)`` and ``backward(out_grad, in_data,
out_data, in_grad)`` on numpy arrays written in place) runs on the same machinery: calling an
instance like a symbol constructor registers a hidden op type for it.

>>> import numpy as np
>>> import symjit as mx
>>> class Twice(mx.operator.CustomOp):
...     def forward(self, is_train, req, in_data, out_data, aux):
...         self.assign(out_data[0], req[0], in_data[0] * 2)
...     def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
...         self.assign(in_grad[0], req[0], out_grad[0] * 2)
>>> @mx.operator.register("twice_doc")
... class TwiceProp(mx.operator.CustomOpProp):
...     def create_operator(self, ctx, shapes, dtypes):
...         return Twice()
>>> y = mx.sym.Custom(mx.sym.Variable('x'), op_type='twice_doc', name='t')
>>> ex = y.bind(mx.cpu(), {'x': mx.nd.array([1.0, 2.0])}, args_grad={'x': mx.nd.zeros((2,))})
>>> ex.forward(is_train=True)[0].asnumpy().tolist()
[2.0, 4.0]
>>> ex.backward(mx.nd.ones((2,)))
>>> ex.grad_dict['x'].asnumpy().tolist()
[2.0, 2.0]
"""
from __future__ import annotations

import collections
import ctypes
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from .base import MXNetError, NDArrayHandle, py_str
from .ndarray.dispatch import settle
from .ndarray.ndarray import NDArray
from .ops.custom import PROPS, register_array_type
from .symbol.symbol import Symbol, make_op_symbol

__all__ = ["CustomOp", "CustomOpProp", "register", "NumpyOp", "get_all_registered_operators",
           "get_operator_arguments", "OperatorArguments",
           # what ``from mxnet.operator import *`` also hands out in MXNet (its module has no __all__)
           "ctypes", "NDArray", "NDArrayHandle", "py_str"]

register_array_type(NDArray, settle)   # a Custom op's host call hands its CustomOp NDArrays


class CustomOp:
    """Base class of a Python operator's computation; override ``forward`` and ``backward``."""

    def forward(self, is_train: bool, req: list[str], in_data: list, out_data: list, aux: list) -> None:
        """Compute ``out_data`` from ``in_data`` (NDArrays); use :meth:`assign` to honour ``req``."""
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, req: list[str], out_grad: list, in_data: list, out_data: list,
                 in_grad: list, aux: list) -> None:
        """Compute ``in_grad`` (one NDArray per argument)."""
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def assign(self, dst: Any, req: str, src: Any) -> None:
        """Write ``src`` into ``dst`` as ``req`` asks: 'null' skips, 'write'/'inplace' copy,
        'add' accumulates.

        >>> import symjit as mx
        >>> a = mx.nd.ones((2,))
        >>> CustomOp().assign(a, 'add', mx.nd.ones((2,)))
        >>> a.asnumpy().tolist()
        [2.0, 2.0]
        """
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise MXNetError(f"CustomOp.assign: req must be 'null', 'write', 'inplace' or 'add', got {req!r}")


class CustomOpProp:
    """Base class of a Python operator's properties: names, shapes, dtypes and its operator.

    ``need_top_grad=False`` declares an output head (a loss) whose backward does not read the
    output gradient (``out_grad`` then holds zeros).
    """

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = bool(need_top_grad)

    def list_arguments(self) -> list[str]:
        """Input names (default ``['data']``)."""
        return ["data"]

    def list_outputs(self) -> list[str]:
        """Output names (default ``['output']``)."""
        return ["output"]

    def list_auxiliary_states(self) -> list[str]:
        """Aux-state names (default none)."""
        return []

    def infer_shape(self, in_shape: list) -> tuple:
        """``(in_shapes, out_shapes, aux_shapes)``; by default every output has the first
        input's shape."""
        return in_shape, [in_shape[0]] * len(self.list_outputs()), []

    def infer_type(self, in_type: list) -> tuple:
        """``(in_types, out_types, aux_types)``; by default everything has the first input's type."""
        t = in_type[0]
        return ([t] * len(in_type), [t] * len(self.list_outputs()),
                [t] * len(self.list_auxiliary_states()))

    def declare_backward_dependency(self, out_grad: list, in_data: list, out_data: list) -> list:
        """What backward reads (kept for MXNet compatibility: symjit always passes all)."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx: Any, shapes: list, dtypes: list) -> CustomOp:
        """Return the :class:`CustomOp` that computes this op (called once per bound program)."""
        raise NotImplementedError(f"{type(self).__name__}.create_operator is not implemented")


def register(reg_name: str) -> Callable[[type], type]:
    """Class decorator: register a :class:`CustomOpProp` subclass as ``op_type=reg_name``.

    Registering a name again replaces the earlier class.
    """
    if not isinstance(reg_name, str) or not reg_name:
        raise MXNetError(f"mx.operator.register: the name must be a non-empty string, got {reg_name!r}")

    def deco(prop_cls: type) -> type:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise MXNetError(f"mx.operator.register({reg_name!r}): expected a CustomOpProp subclass, "
                             f"got {prop_cls!r}")
        PROPS[reg_name] = prop_cls
        return prop_cls
    return deco


def get_all_registered_operators() -> list[str]:
    """Names of every registered operator (built-in and custom op types)."""
    from .ops.registry import all_ops
    return sorted(all_ops()) + sorted(PROPS)


OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])
OperatorArguments.__doc__ = "An operator's arguments: how many, their names and their type strings."

_KIND_TYPES = {"int": "int", "float": "float", "bool": "boolean", "str": "string", "shape": "Shape(tuple)",
               "floats": "tuple of <float>", "dtype": "dtype"}

_PROBES = {"int": 1, "float": 1.0, "bool": False, "str": "", "shape": (1,), "floats": (1.0,)}


def _type_string(param: Any) -> str:
    """A parameter's type as MXNet's operator documentation writes it: the kind (or the sorted
    choices), then ``required`` or ``optional, default=...``."""
    from .ops.registry import REQUIRED
    if param.choices is not None:
        names = (["None"] if param.nullable else []) + [repr(c) for c in sorted(param.choices)]
        kind, sep = "{" + ", ".join(names) + "}", ","
    else:
        kind, sep = _KIND_TYPES.get(param.kind, param.kind), ", "
    if param.default is REQUIRED:
        return f"{kind}, required"
    if param.default is None:
        return f"{kind}{sep}optional, default='None'"
    shown = param.format(param.default)
    return f"{kind}{sep}optional, default={shown!r}" if param.kind == "str" else \
        f"{kind}{sep}optional, default={shown}"


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """The inputs (``NDArray-or-Symbol``) and parameters of a registered operator, in MXNet's
    order: inputs first. An operator whose inputs depend on its parameters lists those of its
    default parameters (required ones set to a small valid value: FullyConnected's bias is listed).

    >>> get_operator_arguments('Activation').names
    ['data', 'act_type']
    """
    from .ops.registry import REQUIRED, find_op
    op = find_op(op_name)
    if op is None:
        raise MXNetError(f"get_operator_arguments: no operator named {op_name!r}")
    inputs: list[str] = []
    if op.variadic is None:
        probe = {p.name: _PROBES.get(p.kind, 1) if p.choices is None else p.choices[0]
                 for p in op.params if p.default is REQUIRED}
        try:
            parsed = op.parse_params(probe)
            inputs = list(op.list_arguments(parsed)) + list(op.list_aux(parsed))
        except MXNetError:
            inputs = [] if callable(op.arguments) else list(op.arguments)
    names = inputs + [p.name for p in op.params]
    types = ["NDArray-or-Symbol"] * len(inputs) + [_type_string(p) for p in op.params]
    return OperatorArguments(len(names), names, types)


# --- the older NumpyOp API ----------------------------------------------------------------------
_NUMPY_IDS = itertools.count()


class NumpyOp:
    """An operator on numpy arrays (MXNet's older API). Override ``list_arguments``,
    ``list_outputs``, ``infer_shape``, ``forward(in_data, out_data)`` and
    ``backward(out_grad, in_data, out_data, in_grad)``, writing results into the given arrays
    in place; then call the instance like a symbol constructor:
    ``net = NumpySoftmax()(data=fc, name='softmax')``. The base class itself is MXNet's: one
    input ``data``, one output ``output`` of its shape, a copy forward and a gradient of ones.
    """

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = bool(need_top_grad)
        self._op_type: str | None = None

    def list_arguments(self) -> list[str]:
        return ["data"]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def list_auxiliary_states(self) -> list[str]:
        return []

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, [in_shape[0]] * len(self.list_outputs())

    def infer_type(self, in_type: list) -> tuple:
        t = in_type[0]
        return [t] * len(in_type), [t] * len(self.list_outputs()), []

    def forward(self, in_data: list[np.ndarray], out_data: list[np.ndarray]) -> None:
        """By default, as in MXNet, the first output is a copy of the first input."""
        out_data[0][...] = in_data[0]

    def backward(self, out_grad: list[np.ndarray], in_data: list[np.ndarray],
                 out_data: list[np.ndarray], in_grad: list[np.ndarray]) -> None:
        """By default, as in MXNet, the first input's gradient is all ones (whatever the head
        gradient)."""
        in_grad[0][...] = 1.0

    def get_symbol(self, *args: Symbol, **kwargs: Any) -> Symbol:
        """The symbol applying this operator to the given inputs (what calling it does)."""
        if self._op_type is None:
            self._op_type = f"_numpy_op_{type(self).__name__}_{next(_NUMPY_IDS)}"
            PROPS[self._op_type] = _numpy_prop(self)
        return make_op_symbol("Custom", *args, op_type=self._op_type, **kwargs)

    __call__ = get_symbol


def _numpy_prop(numpy_op: NumpyOp) -> type:
    """A CustomOpProp class delegating to a NumpyOp instance."""
    class _NumpyProp(CustomOpProp):
        def __init__(self) -> None:
            super().__init__(numpy_op.need_top_grad_)

        def list_arguments(self) -> list[str]:
            return numpy_op.list_arguments()

        def list_outputs(self) -> list[str]:
            return numpy_op.list_outputs()

        def list_auxiliary_states(self) -> list[str]:
            return numpy_op.list_auxiliary_states()

        def infer_shape(self, in_shape: list) -> tuple:
            return numpy_op.infer_shape(in_shape)

        def infer_type(self, in_type: list) -> tuple:
            return numpy_op.infer_type(in_type)

        def create_operator(self, ctx: Any, shapes: list, dtypes: list) -> CustomOp:
            return _NumpyCustomOp(numpy_op)

    _NumpyProp.__name__ = _NumpyProp.__qualname__ = f"{type(numpy_op).__name__}Prop"
    return _NumpyProp


class _NumpyCustomOp(CustomOp):
    """Runs a NumpyOp's methods on the numpy storage of the bound arrays (no copies)."""

    def __init__(self, numpy_op: NumpyOp):
        self.op = numpy_op

    def forward(self, is_train, req, in_data, out_data, aux) -> None:
        self.op.forward([a._data for a in in_data], [a._data for a in out_data])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux) -> None:
        self.op.backward([a._data for a in out_grad], [a._data for a in in_data],
                         [a._data for a in out_data], [a._data for a in in_grad])
