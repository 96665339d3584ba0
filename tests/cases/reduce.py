"""Cases for the reductions (sum, mean, max, min, prod, nansum, nanprod, norm, argmax, argmin,
softmax_cross_entropy) and linear algebra (dot, batch_dot). References are numpy, written here.

Axis sets cover both lowerings of sum/mean/max/min: one contiguous block of axes (the (A, R, B)
kernels) and scattered axes (the generic loop).
"""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(1234)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


def away(*shape):
    """Values with |x| in [0.2, 1] (no kink of |x| or sign(x) nearby)."""
    return R.uniform(0.2, 1.0, shape) * R.choice([-1.0, 1.0], shape)


def _ones_if_empty(y):
    """MXNet 1.x: a reduction with no axis left has shape (1,)."""
    y = np.asarray(y)
    return y.reshape(1) if y.ndim == 0 else y


def _np_axes(ndim, axis, exclude):
    if axis is None or axis == ():
        return tuple(range(ndim))
    axis = tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))
    return tuple(d for d in range(ndim) if d not in axis) if exclude else axis


def _reduce_ref(fn, axis=None, keepdims=False, exclude=False):
    def ref(x):
        return _ones_if_empty(fn(x, axis=_np_axes(x.ndim, axis, exclude), keepdims=keepdims))
    return ref


def _reduce_case(op, fn, x, id, **params):
    build = (lambda o, p: lambda v: getattr(mx.sym, o)(v["x"], **p))(op, params)
    return Case(op, build, {"x": x}, _reduce_ref(fn, params.get("axis"), params.get("keepdims", False),
                                                 params.get("exclude", False)), id=id)


# (id, input shape, params) shared by sum/mean/max/min
_VARIANTS = [
    ("all-axes", (2, 3), {}),
    ("empty-axis-tuple", (2, 3), {"axis": ()}),
    ("last", (3, 4), {"axis": -1}),
    ("first", (3, 4), {"axis": 0}),
    ("middle-block", (2, 3, 2, 2), {"axis": (1, 2)}),
    ("scattered", (2, 3, 4), {"axis": (0, 2)}),
    ("keepdims", (2, 3, 4), {"axis": 1, "keepdims": True}),
    ("keepdims-scattered", (2, 3, 4), {"axis": (0, -1), "keepdims": True}),
    ("exclude", (2, 3, 4), {"axis": 1, "exclude": True}),
    ("exclude-keepdims", (2, 3, 4), {"axis": (0,), "exclude": True, "keepdims": True}),
    ("size1-gap", (2, 1, 4), {"axis": (0, 2)}),
    ("size1-only", (5, 1), {"axis": 1}),
]

_BASIC = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}
# a spread of variants per op (block and scattered axes); compiling each case costs ~1.5 s
_SUBSETS = {
    "sum": ("all-axes", "last", "middle-block", "scattered", "keepdims", "exclude", "exclude-keepdims",
            "size1-gap"),
    "mean": ("all-axes", "middle-block", "scattered", "keepdims"),
    "max": ("last", "keepdims-scattered", "exclude", "size1-gap"),
    "min": ("empty-axis-tuple", "first", "scattered", "size1-only"),
}

BASIC_CASES = [_reduce_case(op, fn, rnd(*shape), vid, **params)
               for op, fn in _BASIC.items() for vid, shape, params in _VARIANTS
               if vid in _SUBSETS[op]]

# prod: zeros exercise the exact gradient (one zero in a slice: only it gets a gradient; two: none)
_X_ZEROS = np.array([[0.5, -0.8, 0.9, 0.7], [0.0, 0.6, -0.9, 0.8], [0.0, 0.7, 0.0, -0.6]])

PROD_CASES = [
    _reduce_case("prod", np.prod, rnd(2, 3), "all"),
    _reduce_case("prod", np.prod, rnd(2, 3, 4) + 1.5, "scattered", axis=(0, 2)),
    _reduce_case("prod", np.prod, _X_ZEROS, "zeros-rows", axis=1),
    _reduce_case("prod", np.prod, _X_ZEROS.T.copy(), "zeros-cols-keepdims", axis=0, keepdims=True),
]

_X_NAN = np.array([[0.5, np.nan, 0.9, -0.7], [np.nan, 0.6, -0.9, 0.0], [0.3, 0.7, 0.4, -0.6]])

NAN_CASES = [
    _reduce_case("nansum", np.nansum, _X_NAN, "rows", axis=1),
    _reduce_case("nansum", np.nansum, rnd(2, 3, 4), "keepdims", axis=(0, 2), keepdims=True),
    _reduce_case("nanprod", np.nanprod, _X_NAN, "rows", axis=1),
    _reduce_case("nanprod", np.nanprod, rnd(2, 3), "all"),
]


# --- norm -----------------------------------------------------------------------------------


def _norm_ref(ord=2, axis=None, keepdims=False, dtype=None):
    def ref(x):
        ax = tuple(range(x.ndim)) if axis is None else axis
        if ord == 1:
            y = np.abs(x).sum(axis=ax, keepdims=keepdims)
        else:
            y = np.sqrt((x * x).sum(axis=ax, keepdims=keepdims))
        y = _ones_if_empty(y)
        return y.astype(dtype) if dtype else y
    return ref


def _norm_case(x, id, grad="numeric", rtol=1e-5, **params):
    build = (lambda p: lambda v: mx.sym.norm(v["x"], **p))(params)
    ref = _norm_ref(params.get("ord", 2), params.get("axis"), params.get("keepdims", False),
                    params.get("out_dtype"))
    return Case("norm", build, {"x": x}, ref, grad=grad, rtol=rtol, id=id)


NORM_CASES = [
    _norm_case(away(3, 4), "l2-all"),
    _norm_case(away(2, 3, 4), "l1-negaxis", ord=1, axis=(-1,)),
    _norm_case(away(2, 3, 4), "l2-keepdims", axis=(0,), keepdims=True),
    _norm_case(away(2, 3, 4), "l1-keepdims", ord=1, axis=(2,), keepdims=True),
    _norm_case(away(2, 3, 4), "frobenius", axis=(0, 2)),
    _norm_case(away(2, 3, 2, 3), "l2-three-axes", axis=(0, 1, 3), keepdims=True),
    _norm_case(away(3, 4), "out-float32", grad="none", rtol=1e-6, axis=(1,), out_dtype="float32"),
]


# --- argmax / argmin -------------------------------------------------------------------------


def _arg_ref(fn, axis=None, keepdims=False):
    def ref(x):
        if axis is None:
            y = np.asarray(float(fn(x)))
            return y.reshape((1,) * x.ndim if keepdims else (1,))
        return fn(x, axis=axis, keepdims=keepdims).astype(x.dtype)
    return ref


def _arg_case(op, x, id, **params):
    build = (lambda o, p: lambda v: getattr(mx.sym, o)(v["x"], **p))(op, params)
    fn = np.argmax if op == "argmax" else np.argmin
    return Case(op, build, {"x": x}, _arg_ref(fn, params.get("axis"), params.get("keepdims", False)),
                grad="none", id=id)


_X_TIES = np.array([[1.0, 3.0, 3.0, -2.0], [-2.0, -2.0, 0.5, 1.0]])   # first occurrence wins

ARG_CASES = [
    _arg_case("argmax", rnd(3, 4), "flat"),
    _arg_case("argmax", rnd(2, 3, 4), "axis1", axis=1),
    _arg_case("argmax", _X_TIES, "ties", axis=1),
    _arg_case("argmin", rnd(2, 3, 4), "flat-keepdims", keepdims=True),
    _arg_case("argmin", rnd(2, 3, 4), "last-keepdims", axis=-1, keepdims=True),
    _arg_case("argmin", _X_TIES, "ties", axis=1),
]


# --- softmax_cross_entropy -------------------------------------------------------------------


def _sce_ref(data, label):
    z = data - data.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return np.array([-logp[np.arange(len(label)), label.astype(int)].sum()])


SCE_CASES = [
    Case("softmax_cross_entropy", lambda v: mx.sym.softmax_cross_entropy(v["data"], v["label"]),
         {"data": rnd(4, 5) * 3, "label": np.array([0.0, 3.0, 4.0, 1.0])}, _sce_ref,
         no_grad=("label",), id="4x5"),
]


# --- dot / batch_dot -------------------------------------------------------------------------


def _dot_case(a, b, ref, id, **params):
    build = (lambda p: lambda v: mx.sym.dot(v["a"], v["b"], **p))(params)
    return Case("dot", build, {"a": a, "b": b}, ref, id=id)


DOT_CASES = [
    _dot_case(rnd(3, 4), rnd(2, 4), lambda a, b: a @ b.T, "nt", transpose_b=True),
    _dot_case(rnd(4, 3), rnd(4, 2), lambda a, b: a.T @ b, "tn", transpose_a=True),
    _dot_case(rnd(3, 2, 2), rnd(3, 4), lambda a, b: np.tensordot(a, b, ([0], [0])), "nd-ta",
              transpose_a=True),
    _dot_case(rnd(2, 4), rnd(3, 2, 4), lambda a, b: np.tensordot(a, b, ([1], [2])), "nd-tb",
              transpose_b=True),
    _dot_case(rnd(3, 2, 2), rnd(2, 3, 3), lambda a, b: np.tensordot(a, b, ([0], [2])), "nd-tt",
              transpose_a=True, transpose_b=True),
    _dot_case(rnd(5), rnd(5), lambda a, b: np.array([a @ b]), "vec-vec"),
    _dot_case(rnd(3), rnd(3, 4), lambda a, b: a @ b, "vec-mat"),
    _dot_case(rnd(2, 3), rnd(3), lambda a, b: a @ b, "mat-vec"),
]


def _bt(x, t):
    return np.swapaxes(x, -1, -2) if t else x


def _batch_dot_case(a, b, id, ta=False, tb=False):
    build = (lambda p: lambda v: mx.sym.batch_dot(v["a"], v["b"], **p))(
        {"transpose_a": ta, "transpose_b": tb})
    return Case("batch_dot", build, {"a": a, "b": b},
                (lambda x, y: lambda a, b: np.matmul(_bt(a, x), _bt(b, y)))(ta, tb), id=id)


BATCH_DOT_CASES = [
    _batch_dot_case(rnd(3, 2, 4), rnd(3, 4, 2), "nn"),
    _batch_dot_case(rnd(3, 4, 2), rnd(3, 4, 3), "tn", ta=True),
    _batch_dot_case(rnd(2, 2, 4), rnd(2, 3, 4), "nt", tb=True),
    _batch_dot_case(rnd(2, 4, 3), rnd(2, 2, 4), "tt", ta=True, tb=True),
    _batch_dot_case(rnd(2, 1, 3, 2), rnd(2, 1, 2, 3), "4d-tt", ta=True, tb=True),
]

CASES = (BASIC_CASES + PROD_CASES + NAN_CASES + NORM_CASES + ARG_CASES + SCE_CASES + DOT_CASES
         + BATCH_DOT_CASES)
