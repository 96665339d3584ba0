"""Operators without inputs: ``_zeros``, ``_ones``, ``_full`` (elementwise constants, which fuse
into their consumers), and ``_arange``, ``_eye``, ``_linspace`` (index maps, lowered by
:mod:`symjit.lower.gather` on every target). ``mx.sym.zeros``/``ones``/``full``/``arange``/``eye``/
``linspace`` build them (:mod:`symjit.symbol.functions`), as MXNet's ``mx.sym`` functions build
its hidden operators of the same names. ``ctx`` is accepted and ignored: a symbol runs on the
device it is bound to.

>>> import symjit as mx
>>> mx.sym.arange(0, 6, step=2, repeat=2).simple_bind(mx.cpu()).forward()[0].asnumpy().tolist()
[0.0, 0.0, 2.0, 2.0, 4.0, 4.0]
"""
from __future__ import annotations

import math

import numpy as np

from . import partial_shape
from .registry import Kind, OpDef, Param, ParamError, RuleError, register

__all__ = ["arange_length", "OPS"]

_CTX = Param("ctx", "str", "", doc="ignored: the symbol runs where it is bound")


def _dtype(default: str = "float32") -> Param:
    return Param("dtype", "dtype", default, doc="the output dtype")


def _fill(value):
    return value


def _fixed(shape_of):
    def shape(p: dict, ins: list, aux: list):
        out = tuple(int(d) for d in shape_of(p))
        if any(d < 0 for d in out):
            raise RuleError(f"the output shape {out} has a negative size")
        return [], [out], []
    return shape


def _typed(p: dict, ins: list, aux: list):
    return [], [np.dtype(p["dtype"])], []


def _body(value):
    return lambda p: (_fill, (float(value(p)),))


for _name, _value, _extra_params, _what in (
    ("_zeros", lambda p: 0.0, (), "zeros"),
    ("_ones", lambda p: 1.0, (), "ones"),
    ("_full", lambda p: p["value"], (Param("value", "float", doc="the fill value"),), "``value``"),
):
    register(OpDef(
        name=_name, arguments=(), params=(Param("shape", "shape", (), doc="the output shape"), _CTX,
                                          _dtype(), *_extra_params),
        shape=_fixed(lambda p: p["shape"]), shape_partial=partial_shape.fixed, dtype=_typed,
        kind=Kind.ELEMWISE, body=_body(_value),
        doc=f"An array of {_what} of ``shape`` and ``dtype``.", extra={"family": "source", "no_grad": True},
    ))


def arange_length(p: dict) -> int:
    """The length of ``_arange``'s output: ``ceil((stop - start) / step) * repeat``.

    >>> arange_length({'start': 0.0, 'stop': 5.0, 'step': 2.0, 'repeat': 1})
    3
    """
    start, stop, step = p["start"], p["stop"], p["step"]
    if stop is None:
        start, stop = 0.0, start
    n = math.ceil((stop - start) / step)
    return max(n, 0) * p["repeat"]


def _arange_check(p: dict) -> None:
    if p["step"] == 0:
        raise ParamError("_arange: parameter 'step' must not be 0")
    if p["infer_range"]:
        raise ParamError("_arange: infer_range=True (a length inferred from the graph) is not "
                         "supported; give 'stop'")


register(OpDef(
    name="_arange", arguments=(),
    params=(Param("start", "float", doc="the first value (the end when stop is None)"),
            Param("stop", "float", None, nullable=True, doc="the end, excluded"),
            Param("step", "float", 1.0, doc="the spacing"),
            Param("repeat", "int", 1, check=lambda v: v >= 1, check_msg=">= 1", doc="copies of each value"),
            Param("infer_range", "bool", False, doc="not supported"), _CTX, _dtype()),
    check=_arange_check, shape=_fixed(lambda p: (arange_length(p),)), dtype=_typed, kind=Kind.INJECTIVE,
    doc="Evenly spaced values ``start, start + step, ...`` below ``stop`` (numpy's arange; with one "
        "value, from 0 below it), each repeated ``repeat`` times.",
    extra={"family": "source", "no_grad": True},
))

register(OpDef(
    name="_eye", arguments=(),
    params=(Param("N", "int", check=lambda v: v >= 0, check_msg=">= 0", doc="rows"),
            Param("M", "int", 0, check=lambda v: v >= 0, check_msg=">= 0", doc="columns (0: N)"),
            Param("k", "int", 0, doc="the diagonal: 0 the main one, > 0 above, < 0 below"), _CTX, _dtype()),
    shape=_fixed(lambda p: (p["N"], p["M"] or p["N"])), dtype=_typed, kind=Kind.INJECTIVE,
    doc="An N x M matrix of zeros with ones on diagonal ``k``.",
    extra={"family": "source", "no_grad": True},
))

register(OpDef(
    name="_linspace", arguments=(),
    params=(Param("start", "float", doc="the first value"), Param("stop", "float", doc="the last value"),
            Param("num", "int", check=lambda v: v >= 0, check_msg=">= 0", doc="how many values"),
            Param("endpoint", "bool", True, doc="whether stop is the last value"), _CTX, _dtype()),
    shape=_fixed(lambda p: (p["num"],)), dtype=_typed, kind=Kind.INJECTIVE,
    doc="``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``).",
    extra={"family": "source", "no_grad": True},
))

register(OpDef(
    name="_eye_tri", arguments=(),
    params=(Param("N", "int", check=lambda v: v >= 0, check_msg=">= 0", doc="rows and columns"),
            Param("lower", "bool", True, doc="ones on and below the diagonal (else on and above)"),
            _CTX, _dtype()),
    shape=_fixed(lambda p: (p["N"], p["N"])), dtype=_typed, kind=Kind.INJECTIVE,
    doc="Internal: an N x N mask of ones on and below (or above) the diagonal (linalg's trmm).",
    extra={"family": "source", "no_grad": True},
))

OPS = ("_zeros", "_ones", "_full", "_arange", "_eye", "_linspace", "_eye_tri")
