"""Samplers with one distribution per element (MXNet's ``_sample_<dist>``, public as
``sample_<dist>``; ``mx.sym.random.<dist>`` / ``mx.nd.random.<dist>`` call them when the
parameters are Symbols / NDArrays), ``_sample_multinomial`` and ``_shuffle``.

The parameter arrays share a shape P; the output is P + ``shape``, and the samples at index i of P
use the parameters at i. Each element is drawn by the same counter-based samplers as
:mod:`symjit.ops.random_ops` (so ``mx.random.seed`` repeats them on every target); the dtype is
``dtype``, else the parameters'. ``sample_multinomial`` draws category indices from the
probabilities on data's last axis (inverse CDF), with ``get_prob`` also their log-probabilities,
whose gradient reaches data (REINFORCE-style, as in MXNet). ``shuffle`` permutes the first axis
(Fisher-Yates with the counter-based uniforms, one thread). The samples themselves have no
gradient. Lowering: :mod:`symjit.lower.random`.

>>> import symjit as mx
>>> mx.random.seed(1)
>>> s = mx.nd.sample_uniform(mx.nd.array([0.0, 10.0]), mx.nd.array([1.0, 11.0]), shape=(3,))
>>> s.shape, bool((s[1].asnumpy() >= 10).all())
((2, 3), True)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..jitext import jitable
from .random_ops import SAMPLERS, uniform01
from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_float, shape_str

__all__ = ["SAMPLE_ARGS", "categorical", "check_categories", "shuffle_rows"]

# dist -> MXNet's argument names of the parameter arrays
SAMPLE_ARGS = {"uniform": ("low", "high"), "normal": ("mu", "sigma"), "gamma": ("alpha", "beta"),
               "exponential": ("lam",), "poisson": ("lam",), "negative_binomial": ("k", "p"),
               "generalized_negative_binomial": ("mu", "alpha")}

_SHAPE = Param("shape", "shape", (), doc="samples per distribution")


def _sample_shape(p: dict, ins: list, aux: list):
    known = next((s for s in ins if s is not None), None)
    if known is None:
        return list(ins), [None], []
    if any(s is not None and tuple(s) != tuple(known) for s in ins):
        raise RuleError("the parameter arrays must share one shape, got "
                        + ", ".join(shape_str(s) for s in ins if s is not None))
    return [known] * len(ins), [tuple(known) + tuple(p["shape"])], []


def _sample_dtype(p: dict, ins: list, aux: list):
    known = next((t for t in ins if t is not None), None)
    if known is not None:
        need_float(known, "parameters")
    out = np.dtype(p["dtype"]) if p["dtype"] is not None else known
    return [known] * len(ins), [out], []


for _dist, _names in SAMPLE_ARGS.items():
    _fn, _, _, _what = SAMPLERS[_dist]
    register(OpDef(
        name=f"_sample_{_dist}", aliases=(f"sample_{_dist}",), arguments=_names,
        params=(_SHAPE, Param("dtype", "dtype", None, nullable=True, doc="the output dtype (default: "
                                                                          "the parameters')")),
        shape=_sample_shape, dtype=_sample_dtype, kind=Kind.INJECTIVE, hint=f"sample_{_dist}",
        doc=f"``shape`` samples of the {_what} distribution per element of the parameter arrays.",
        extra={"family": "sample", "no_grad": True, "sampler": _fn},
    ))


# --- multinomial ---------------------------------------------------------------------------------
@jitable
def categorical(probs, row, k, u):
    """The category whose cumulative probability first exceeds ``u`` (the last one at worst)."""
    acc = 0.0
    for c in range(k):
        acc += probs[row, c]
        if u < acc:
            return c
    return k - 1


def _multi_outputs(p: dict) -> list[str]:
    return ["output", "prob"] if p["get_prob"] else ["output"]


def _exact_integers(dtype: np.dtype) -> int:
    """The largest integer ``dtype`` holds, with every smaller one, exactly."""
    if dtype.kind in "iu":
        return int(np.iinfo(dtype).max)
    return 2 ** (np.finfo(dtype).nmant + 1)


def check_categories(k: int, dtype: Any) -> None:
    """A RuleError unless every category index below ``k`` is exact in ``dtype``."""
    dtype = np.dtype(dtype)
    if k - 1 > _exact_integers(dtype):
        raise RuleError(f"data has {k} categories on its last axis, more than dtype {dtype.name} "
                        f"represents exactly (indices up to {_exact_integers(dtype)}); choose a wider "
                        "dtype")


def _multi_shape(p: dict, ins: list, aux: list):
    """Data's leading axes then ``shape`` ((1,) for one distribution and no ``shape``); the
    categories' indices must be exact in ``dtype``."""
    data = ins[0]
    if data is None:
        return [None], [None] * len(_multi_outputs(p)), []
    if data:
        check_categories(data[-1], p["dtype"])
    out = (tuple(data[:-1]) + tuple(p["shape"])) or (1,)
    return [data], [out] * len(_multi_outputs(p)), []


def _multi_dtype(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is not None:
        need_float(data, "data")
    return [data], [np.dtype(p["dtype"]), data][:len(_multi_outputs(p))], []


def _multi_grad(b, node, ograds):
    """d log p(sample) / d data = one_hot(sample) / data, summed over the draws."""
    if not node.params["get_prob"] or ograds[1] is None:
        return [None]
    data = node.inputs[0]
    ds = b.g.values[data].shape
    sample, g = node.outputs[0], ograds[1]
    extra = len(b.g.values[g].shape) - (len(ds) - 1)     # the draws' axes
    hot = b.add1("one_hot", sample, depth=ds[-1], dtype=b.g.values[data].dtype.name)
    spread = b.add1("broadcast_mul", hot, b.add1("expand_dims", g, axis=len(b.g.values[g].shape)))
    if extra:
        first = len(ds) - 1
        spread = b.add1("sum", spread, axis=tuple(range(first, first + extra)))
    # categories never drawn get 0, not 0 / 0 when their probability is 0
    safe = b.add1("elemwise_add", data, b.add1("_equal_scalar", spread, scalar=0.0))
    return [b.add1("elemwise_div", spread, safe)]


register(OpDef(
    name="_sample_multinomial", aliases=("sample_multinomial",), arguments=("data",), outputs=_multi_outputs,
    params=(_SHAPE, Param("get_prob", "bool", False, doc="also return the samples' log-probabilities"),
            Param("dtype", "dtype", "int32", doc="dtype of the sampled indices")),
    shape=_multi_shape, dtype=_multi_dtype, kind=Kind.OPAQUE, grad=_multi_grad, hint="sample_multinomial",
    doc="Category indices drawn from the probabilities on data's last axis (``shape`` per distribution).",
    extra={"family": "sample"},
))


# --- shuffle -------------------------------------------------------------------------------------
def shuffle_rows(x, out, seed, rows, width):
    """``out``: ``x``'s rows (``rows`` x ``width``) permuted by Fisher-Yates."""
    for r in range(rows):
        for c in range(width):
            out[r, c] = x[r, c]
    for step in range(rows - 1):
        i = rows - 1 - step
        j = int(math.floor(uniform01(seed, i) * (i + 1)))
        if j > i:
            j = i
        if j != i:
            for c in range(width):
                t = out[i, c]
                out[i, c] = out[j, c]
                out[j, c] = t


register(OpDef(
    name="_shuffle", aliases=("shuffle",), shape=lambda p, ins, aux: ([ins[0]], [ins[0]], []),
    kind=Kind.OPAQUE, hint="shuffle",
    doc="A copy of data with its rows (first axis) in a random order.",
    extra={"family": "sample", "no_grad": True},
))
