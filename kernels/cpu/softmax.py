"""Softmax, log-softmax and the loss-output layers: SoftmaxOutput and the regression outputs.

Kernels work on canonical views the caller makes (by reshape, never by copy):

* ``softmax_forward`` and friends: softmax over the last axis of an ``(M, K)`` view; the ``*_3d``
  variants reduce the middle axis of an ``(A, K, B)`` view (softmax over any axis, and
  SoftmaxOutput's ``multi_output`` layout ``(N, K, S)``).
* SoftmaxOutput: ``prob (N, K)`` with class-index labels ``(N,)``, or ``prob (N, K, S)`` with labels
  ``(N, S)`` (``multi_output``). Labels are float arrays, as MXNet passes them, and are turned into
  class indices by truncation toward zero (MXNet's ``static_cast<int>``).
* Regression outputs: ``(N, M)`` views, ``M`` = outputs per sample (``label.size // label.shape[0]``).

All kernels are ``numba.njit(cache=True, nogil=True)``, write into preallocated C-contiguous
arrays of one float dtype (float32 or float64) and trust their caller for shapes: call the matching
``check_*`` function first (Numba does no bounds checks). Sums run in float64.

>>> import numpy as np
>>> x = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
>>> out = np.empty_like(x)
>>> check_softmax("softmax_forward", x, out)
>>> softmax_forward(x, out)
>>> np.round(out, 4)
array([[0.09  , 0.2447, 0.6652]], dtype=float32)
>>> label = np.array([2.0], dtype=np.float32)
>>> dx = np.empty_like(x)
>>> check_softmax_output("softmax_output_backward", out, label, dx)
>>> softmax_output_backward(out, label, dx, 1.0, -1.0, False, NORM_NULL, 0.0)
>>> np.round(dx, 4)
array([[ 0.09  ,  0.2447, -0.3348]], dtype=float32)
"""
from __future__ import annotations

import math

import numpy as np

from symjit.base import shape_str

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from .gemm import KernelArgError, check_arrays, need_ndim, need_shape

__all__ = [
    "softmax_forward", "log_softmax_forward", "softmax_backward", "log_softmax_backward",
    "softmax_forward_3d", "log_softmax_forward_3d", "softmax_backward_3d", "log_softmax_backward_3d",
    "softmax_output_forward", "softmax_output_forward_3d",
    "softmax_output_backward", "softmax_output_backward_3d", "softmax_output_backward_prob",
    "regression_forward", "regression_backward",
    "NORM_NULL", "NORM_BATCH", "NORM_VALID", "NORMALIZATION_CODES",
    "REG_LINEAR", "REG_LOGISTIC", "REG_MAE", "REGRESSION_CODES",
    "check_softmax", "check_softmax_backward", "check_softmax_output", "check_regression",
]

_jit = njit(cache=True, nogil=True)

NORM_NULL = 0
NORM_BATCH = 1
NORM_VALID = 2
#: SoftmaxOutput's ``normalization`` parameter -> the code the kernels take.
NORMALIZATION_CODES = {"null": NORM_NULL, "batch": NORM_BATCH, "valid": NORM_VALID}

REG_LINEAR = 0
REG_LOGISTIC = 1
REG_MAE = 2
#: Regression output op name -> the ``kind`` code of :func:`regression_forward`/``_backward``.
REGRESSION_CODES = {"LinearRegressionOutput": REG_LINEAR, "LogisticRegressionOutput": REG_LOGISTIC,
                    "MAERegressionOutput": REG_MAE}

_NO_CLASS = -(2 ** 62)  # what a NaN / huge label truncates to: never a class, never ignore_label


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax over the last axis of (M, K)


@_jit
def _as_dtype(v, like):
    """``v`` converted to ``like``'s dtype (so float32 kernels run exp in float32)."""
    z = np.empty(1, like.dtype)
    z[0] = v
    return z[0]


@_jit
def _row_max(x, i, it):
    m = x[i, 0] * it
    for k in range(1, x.shape[1]):
        v = x[i, k] * it
        if v > m:
            m = v
    return m


@_jit
def _row_sum(a, i):
    """``a[i, :].sum()`` in float64 with four independent partial sums (no latency chain)."""
    n = a.shape[1]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    k = 0
    while k + 4 <= n:
        s0 += a[i, k]
        s1 += a[i, k + 1]
        s2 += a[i, k + 2]
        s3 += a[i, k + 3]
        k += 4
    while k < n:
        s0 += a[i, k]
        k += 1
    return (s0 + s1) + (s2 + s3)


@_jit
def softmax_forward(x, out, temperature=1.0):
    """``out[M, K] = softmax(x[M, K] / temperature)`` over the last axis (max-subtracted).

    ``exp`` runs in the arrays' dtype, the row sum in float64.
    """
    if x.shape[1] == 0:
        return
    it = _as_dtype(1.0 / temperature, x)
    for i in range(x.shape[0]):
        m = _row_max(x, i, it)
        for k in range(x.shape[1]):
            out[i, k] = np.exp(x[i, k] * it - m)
        r = _as_dtype(1.0 / _row_sum(out, i), x)
        for k in range(x.shape[1]):
            out[i, k] *= r


@_jit
def log_softmax_forward(x, out, temperature=1.0):
    """``out[M, K] = log_softmax(x[M, K] / temperature)`` over the last axis (max-subtracted)."""
    if x.shape[1] == 0:
        return
    it = _as_dtype(1.0 / temperature, x)
    for i in range(x.shape[0]):
        m = _row_max(x, i, it)
        for k in range(x.shape[1]):
            out[i, k] = np.exp(x[i, k] * it - m)
        lse = m + math.log(_row_sum(out, i))
        for k in range(x.shape[1]):
            out[i, k] = x[i, k] * it - lse


@_jit
def softmax_backward(dout, y, dx, temperature=1.0):
    """``dx = y * (dout - sum(dout * y)) / temperature`` row-wise; ``y`` is the softmax output."""
    inv_t = 1.0 / temperature
    for i in range(y.shape[0]):
        s = 0.0
        for k in range(y.shape[1]):
            s += dout[i, k] * y[i, k]
        for k in range(y.shape[1]):
            dx[i, k] = y[i, k] * (dout[i, k] - s) * inv_t


@_jit
def log_softmax_backward(dout, y, dx, temperature=1.0):
    """``dx = (dout - exp(y) * sum(dout)) / temperature`` row-wise; ``y`` is the log_softmax output."""
    inv_t = 1.0 / temperature
    for i in range(y.shape[0]):
        s = 0.0
        for k in range(y.shape[1]):
            s += dout[i, k]
        for k in range(y.shape[1]):
            dx[i, k] = (dout[i, k] - math.exp(y[i, k]) * s) * inv_t


# ---------------------------------------------------------------------------------------------
# the same over the middle axis of (A, K, B)


@_jit
def _col_max(x, a, b, inv_t):
    m = -np.inf
    for k in range(x.shape[1]):
        v = x[a, k, b] * inv_t
        if v > m:
            m = v
    return m


@_jit
def softmax_forward_3d(x, out, temperature=1.0):
    """``out[A, K, B]`` = softmax of ``x / temperature`` over the middle axis ``K``."""
    inv_t = 1.0 / temperature
    for a in range(x.shape[0]):
        for b in range(x.shape[2]):
            m = _col_max(x, a, b, inv_t)
            s = 0.0
            for k in range(x.shape[1]):
                e = math.exp(x[a, k, b] * inv_t - m)
                out[a, k, b] = e
                s += e
            r = 1.0 / s
            for k in range(x.shape[1]):
                out[a, k, b] = out[a, k, b] * r


@_jit
def log_softmax_forward_3d(x, out, temperature=1.0):
    """``out[A, K, B]`` = log_softmax of ``x / temperature`` over the middle axis ``K``."""
    inv_t = 1.0 / temperature
    for a in range(x.shape[0]):
        for b in range(x.shape[2]):
            m = _col_max(x, a, b, inv_t)
            s = 0.0
            for k in range(x.shape[1]):
                s += math.exp(x[a, k, b] * inv_t - m)
            lse = m + math.log(s)
            for k in range(x.shape[1]):
                out[a, k, b] = x[a, k, b] * inv_t - lse


@_jit
def softmax_backward_3d(dout, y, dx, temperature=1.0):
    """Softmax gradient over the middle axis of ``(A, K, B)`` arrays (see :func:`softmax_backward`)."""
    inv_t = 1.0 / temperature
    for a in range(y.shape[0]):
        for b in range(y.shape[2]):
            s = 0.0
            for k in range(y.shape[1]):
                s += dout[a, k, b] * y[a, k, b]
            for k in range(y.shape[1]):
                dx[a, k, b] = y[a, k, b] * (dout[a, k, b] - s) * inv_t


@_jit
def log_softmax_backward_3d(dout, y, dx, temperature=1.0):
    """Log-softmax gradient over the middle axis of ``(A, K, B)`` arrays."""
    inv_t = 1.0 / temperature
    for a in range(y.shape[0]):
        for b in range(y.shape[2]):
            s = 0.0
            for k in range(y.shape[1]):
                s += dout[a, k, b]
            for k in range(y.shape[1]):
                dx[a, k, b] = (dout[a, k, b] - math.exp(y[a, k, b]) * s) * inv_t


# ---------------------------------------------------------------------------------------------
# SoftmaxOutput


@_jit
def softmax_output_forward(x, prob):
    """SoftmaxOutput forward: ``prob[N, K] = softmax(x[N, K])`` over the last axis."""
    softmax_forward(x, prob, 1.0)


@_jit
def softmax_output_forward_3d(x, prob):
    """SoftmaxOutput forward with ``multi_output``: softmax over axis 1 of ``(N, K, S)``."""
    softmax_forward_3d(x, prob, 1.0)


@_jit
def _label_class(v):
    """MXNet's ``static_cast<int>(label)``: truncation toward zero; NaN/huge -> ``_NO_CLASS``."""
    if not (-1e15 < v < 1e15):
        return _NO_CLASS
    return int(v)


@_jit
def _targets(k, smooth_alpha):
    """(target of the gold class, target of every other class) with label smoothing."""
    if smooth_alpha == 0.0 or k < 2:
        return 1.0 - smooth_alpha, 0.0
    return 1.0 - smooth_alpha, smooth_alpha / (k - 1)


@_jit
def _valid_count(label, ignore_label):
    """The number of labels whose class is not ``ignore_label``'s (at least 1)."""
    ig = _label_class(ignore_label)
    flat = label.reshape(label.size)
    cnt = 0
    for i in range(flat.size):
        if _label_class(flat[i]) != ig:
            cnt += 1
    return max(cnt, 1)


@_jit
def softmax_output_backward(prob, label, dx, grad_scale, ignore_label, use_ignore, normalization_code,
                            smooth_alpha):
    """SoftmaxOutput gradient for ``prob (N, K)`` and class labels ``label (N,)``.

    ``dx[i] = (prob[i] - target(label[i])) * grad_scale / norm`` where the target is one-hot
    (``1 - smooth_alpha`` on the gold class, ``smooth_alpha / (K - 1)`` elsewhere), rows whose label
    equals ``ignore_label`` get zero when ``use_ignore``, and ``norm`` is 1 (``NORM_NULL``), ``N``
    (``NORM_BATCH``) or the number of labels not equal to ``ignore_label`` (``NORM_VALID``; counted
    even when ``use_ignore`` is false, as MXNet does; at least 1). A label outside ``[0, K)`` that
    is not ignored gets no gold class (MXNet's behaviour; :func:`check_softmax_output` rejects it).
    """
    n, k = prob.shape
    scale = grad_scale * 1.0
    if normalization_code == NORM_BATCH:
        scale = grad_scale / max(n, 1)
    elif normalization_code == NORM_VALID:
        scale = grad_scale / _valid_count(label, ignore_label)
    on, off = _targets(k, smooth_alpha)
    ig = _label_class(ignore_label)
    for i in range(n):
        c = _label_class(label[i])
        if use_ignore and c == ig:
            for q in range(k):
                dx[i, q] = 0.0
            continue
        for q in range(k):
            t = on if q == c else off
            dx[i, q] = (prob[i, q] - t) * scale


@_jit
def softmax_output_backward_3d(prob, label, dx, grad_scale, ignore_label, use_ignore, normalization_code,
                               smooth_alpha):
    """SoftmaxOutput gradient with ``multi_output``: ``prob (N, K, S)``, labels ``(N, S)``.

    As :func:`softmax_output_backward` per position, except the normalisation, which follows
    MXNet 1.x: ``NORM_NULL`` divides by ``S``, ``NORM_BATCH`` by ``N * S`` and ``NORM_VALID`` by the
    number of non-ignored labels over all ``N * S`` positions (at least 1).
    """
    n, k, s = prob.shape
    if normalization_code == NORM_VALID:
        scale = grad_scale / _valid_count(label, ignore_label)
    elif normalization_code == NORM_BATCH:
        scale = grad_scale / max(s, 1) / max(n, 1)
    else:
        scale = grad_scale / max(s, 1)
    on, off = _targets(k, smooth_alpha)
    ig = _label_class(ignore_label)
    for i in range(n):
        for j in range(s):
            c = _label_class(label[i, j])
            if use_ignore and c == ig:
                for q in range(k):
                    dx[i, q, j] = 0.0
                continue
            for q in range(k):
                t = on if q == c else off
                dx[i, q, j] = (prob[i, q, j] - t) * scale


@_jit
def softmax_output_backward_prob(prob, label, dx, grad_scale):
    """SoftmaxOutput gradient when ``label`` has ``prob``'s shape (probabilities as labels).

    ``dx = (prob - label) * grad_scale`` on ``(N, K)`` views, with no normalisation (MXNet 1.x).
    """
    for i in range(prob.shape[0]):
        for q in range(prob.shape[1]):
            dx[i, q] = (prob[i, q] - label[i, q]) * grad_scale


# ---------------------------------------------------------------------------------------------
# Linear / Logistic / MAE regression outputs on (N, M) views


@_jit
def regression_forward(x, out, kind):
    """Regression output forward: identity (linear, MAE) or sigmoid (``kind == REG_LOGISTIC``)."""
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if kind == REG_LOGISTIC:
                out[i, j] = 1.0 / (1.0 + math.exp(-x[i, j]))
            else:
                out[i, j] = x[i, j]


@_jit
def regression_backward(out, label, dx, grad_scale, kind):
    """Regression output gradient on ``(N, M)`` views, ``M`` = outputs per sample.

    ``dx = grad_scale / M * (out - label)`` for linear and logistic (``out`` is the sigmoid output),
    ``dx = grad_scale / M * sign(out - label)`` for MAE (``sign(0) = 0``): MXNet scales by ``1/M``,
    the number of regression outputs of one sample, and not by the batch size.
    """
    m = out.shape[1]
    scale = grad_scale / max(m, 1)
    for i in range(out.shape[0]):
        for j in range(m):
            d = out[i, j] - label[i, j]
            if kind == REG_MAE:
                d = 1.0 if d > 0 else (-1.0 if d < 0 else d)
            dx[i, j] = d * scale


# ---------------------------------------------------------------------------------------------
# validation (pure Python: call before the kernels)


def _need_view_ndim(kernel: str, name: str, arr: np.ndarray) -> int:
    if arr.ndim not in (2, 3):
        raise KernelArgError(f"{kernel}: argument '{name}' must be a 2-D (M, K) or 3-D (A, K, B) view, "
                             f"got shape {shape_str(arr.shape)}")
    return arr.ndim


def _need_temperature(kernel: str, temperature: float) -> None:
    t = float(temperature)
    if not math.isfinite(t) or t == 0.0:
        raise KernelArgError(f"{kernel}: temperature must be finite and non-zero, got {temperature}")


def check_softmax(kernel: str, x: np.ndarray, out: np.ndarray, temperature: float = 1.0) -> None:
    """Validate a (log-)softmax forward call: same shape, 2-D or 3-D, one float dtype.

    >>> try:
    ...     check_softmax("softmax_forward", np.zeros((2, 3)), np.zeros((2, 4)))
    ... except ValueError as e:
    ...     print(e)
    softmax_forward: argument 'out' has shape (2,4), expected (2,3)
    """
    check_arrays(kernel, x=x, out=out)
    _need_view_ndim(kernel, "x", x)
    need_shape(kernel, "out", out, x.shape)
    _need_temperature(kernel, temperature)


def check_softmax_backward(kernel: str, dout: np.ndarray, y: np.ndarray, dx: np.ndarray,
                           temperature: float = 1.0) -> None:
    """Validate a (log-)softmax backward call: ``dout``, ``y`` and ``dx`` of one shape and dtype."""
    check_arrays(kernel, dout=dout, y=y, dx=dx)
    _need_view_ndim(kernel, "y", y)
    need_shape(kernel, "dout", dout, y.shape)
    need_shape(kernel, "dx", dx, y.shape)
    _need_temperature(kernel, temperature)


def _class_index(v: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(v) & (np.abs(v) < 1e15)
        return np.where(ok, np.trunc(np.where(ok, v, 0)), _NO_CLASS).astype(np.int64)


def check_softmax_output(kernel: str, prob: np.ndarray, label: np.ndarray, dx: np.ndarray,
                         ignore_label: float = -1.0, use_ignore: bool = False,
                         smooth_alpha: float = 0.0) -> None:
    """Validate a SoftmaxOutput backward call (2-D with labels ``(N,)`` or 3-D with ``(N, S)``).

    Every label must truncate to a class in ``[0, K)`` unless ``use_ignore`` and it equals
    ``ignore_label``; ``0 <= smooth_alpha <= 1``.
    """
    check_arrays(kernel, prob=prob, label=label, dx=dx)
    nd = _need_view_ndim(kernel, "prob", prob)
    need_shape(kernel, "dx", dx, prob.shape)
    want = (prob.shape[0],) if nd == 2 else (prob.shape[0], prob.shape[2])
    need_shape(kernel, "label", label, want, f" for prob of shape {shape_str(prob.shape)}")
    if not 0.0 <= float(smooth_alpha) <= 1.0:
        raise KernelArgError(f"{kernel}: smooth_alpha must be in [0, 1], got {smooth_alpha}")
    cls = _class_index(label)
    bad = (cls < 0) | (cls >= prob.shape[1])
    if use_ignore:
        bad &= cls != _class_index(np.array([ignore_label]))[0]
    if bad.any():
        first = label[np.nonzero(bad)][0]
        raise KernelArgError(f"{kernel}: argument 'label' (shape {shape_str(label.shape)}) holds "
                             f"{int(bad.sum())} value(s) outside [0, {prob.shape[1]}), e.g. {first}, "
                             f"for prob of shape {shape_str(prob.shape)}")


def check_regression(kernel: str, out: np.ndarray, label: np.ndarray, dx: np.ndarray | None = None) -> None:
    """Validate a regression output call on ``(N, M)`` views (label reshaped to ``out``'s shape)."""
    arrays = {"out": out, "label": label} if dx is None else {"out": out, "label": label, "dx": dx}
    check_arrays(kernel, **arrays)
    need_ndim(kernel, "out", out, 2)
    need_shape(kernel, "label", label, out.shape)
    if dx is not None:
        need_shape(kernel, "dx", dx, out.shape)
