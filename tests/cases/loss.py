"""Cases for the loss and output heads: SoftmaxOutput variants, softmax, log_softmax, the regression
outputs, MakeLoss and BlockGrad. Heads whose gradient is defined (not derived from the forward)
get an expected-gradient function written here with numpy."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(2024)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


def _softmax(x, axis=-1, t=1.0):
    z = x / t
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis=-1, t=1.0):
    z = x / t
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))


def _masked(fn, axis):
    """fn over the first length[...] entries of ``axis``, 0 elsewhere (use_length=True)."""
    def ref(data, length):
        moved = np.moveaxis(data, axis, -1)
        out = np.zeros_like(moved)
        for idx in np.ndindex(*moved.shape[:-1]):
            n = int(length[idx])
            if n:
                out[idx][:n] = fn(moved[idx][:n])
        return np.moveaxis(out, -1, axis)
    return ref


# --- SoftmaxOutput ---------------------------------------------------------------------------


def _so_ref(multi=False, preserve=False):
    def ref(data, label):
        if multi:
            return _softmax(data, axis=1)
        if preserve:
            return _softmax(data, axis=-1)
        return _softmax(data.reshape(data.shape[0], -1)).reshape(data.shape)
    return ref


def _so_grad(multi=False, preserve=False, grad_scale=1.0, norm="null", use_ignore=False,
             ignore=-1.0, alpha=0.0):
    """MXNet's SoftmaxOutput gradient: (prob - target) * grad_scale / normalisation."""
    def grad(inputs, outs, head):
        p, label = outs[0], inputs["label"]
        if label.shape == p.shape:
            return {"data": (p - label) * grad_scale}
        if multi:
            pk = np.moveaxis(p.reshape(p.shape[0], p.shape[1], -1), 1, -1)   # (N, S, K)
        else:
            pk = p.reshape(-1, p.shape[-1]) if preserve else p.reshape(p.shape[0], -1)
        k = pk.shape[-1]
        lab = np.trunc(label).astype(int).reshape(pk.shape[:-1])
        gold = np.arange(k) == lab[..., None]
        g = pk - np.where(gold, 1.0 - alpha, alpha / (k - 1))
        if use_ignore:
            g[lab == int(ignore)] = 0.0
        scale = {"null": 1.0, "batch": 1.0 / pk.shape[0],
                 "valid": 1.0 / max(int(np.sum(lab != int(ignore))), 1)}[norm] * grad_scale
        if multi and norm != "valid":
            scale /= pk.shape[1]
        g = g * scale
        return {"data": np.moveaxis(g, -1, 1).reshape(p.shape) if multi else g.reshape(p.shape)}
    return grad


def _so(**params):
    return lambda v: mx.sym.SoftmaxOutput(v["data"], v["label"], **params)


def _labels(shape, k, ignore=None):
    lab = R.integers(0, k, shape).astype(np.float64)
    if ignore is not None:
        lab.reshape(-1)[::3] = ignore
    return lab


def _prob_label(shape):
    return _softmax(rnd(*shape))


SO_CASES = [
    Case("SoftmaxOutput", _so(normalization="batch", grad_scale=2.0),
         {"data": rnd(4, 3), "label": _labels(4, 3)}, _so_ref(),
         grad=_so_grad(grad_scale=2.0, norm="batch"), no_grad=("label",), id="batch"),
    Case("SoftmaxOutput", _so(use_ignore=True, ignore_label=-1.0, normalization="valid"),
         {"data": rnd(5, 4), "label": _labels(5, 4, ignore=-1.0)}, _so_ref(),
         grad=_so_grad(norm="valid", use_ignore=True), no_grad=("label",), id="ignore-valid"),
    Case("SoftmaxOutput", _so(use_ignore=True, ignore_label=2.0),
         {"data": rnd(6, 3), "label": _labels(6, 3, ignore=2.0)}, _so_ref(),
         grad=_so_grad(use_ignore=True, ignore=2.0), no_grad=("label",), id="ignore-2"),
    Case("SoftmaxOutput", _so(normalization="valid", ignore_label=0.0),
         {"data": rnd(5, 3), "label": _labels(5, 3, ignore=0.0)}, _so_ref(),
         grad=_so_grad(norm="valid", ignore=0.0), no_grad=("label",), id="valid-no-ignore"),
    Case("SoftmaxOutput", _so(preserve_shape=True),
         {"data": rnd(2, 3, 4), "label": _labels((2, 3), 4)}, _so_ref(preserve=True),
         grad=_so_grad(preserve=True), no_grad=("label",), id="preserve-shape"),
    Case("SoftmaxOutput", _so(), {"data": rnd(2, 3, 2), "label": _labels(2, 6)}, _so_ref(),
         grad=_so_grad(), no_grad=("label",), id="flatten"),
    Case("SoftmaxOutput", _so(multi_output=True),
         {"data": rnd(2, 3, 2, 2), "label": _labels((2, 2, 2), 3)}, _so_ref(multi=True),
         grad=_so_grad(multi=True), no_grad=("label",), id="multi-output"),
    Case("SoftmaxOutput", _so(multi_output=True, normalization="batch", grad_scale=0.5),
         {"data": rnd(3, 4, 2), "label": _labels((3, 2), 4)}, _so_ref(multi=True),
         grad=_so_grad(multi=True, norm="batch", grad_scale=0.5), no_grad=("label",), id="multi-batch"),
    Case("SoftmaxOutput", _so(multi_output=True, use_ignore=True, normalization="valid"),
         {"data": rnd(2, 3, 3), "label": _labels((2, 3), 3, ignore=-1.0)}, _so_ref(multi=True),
         grad=_so_grad(multi=True, norm="valid", use_ignore=True), no_grad=("label",),
         id="multi-ignore-valid"),
    Case("SoftmaxOutput", _so(smooth_alpha=0.1),
         {"data": rnd(4, 5), "label": _labels(4, 5)}, _so_ref(),
         grad=_so_grad(alpha=0.1), no_grad=("label",), id="smooth"),
    Case("SoftmaxOutput", _so(grad_scale=3.0),
         {"data": rnd(3, 4), "label": _prob_label((3, 4))}, _so_ref(),
         grad=_so_grad(grad_scale=3.0), no_grad=("label",), id="prob-label"),
    Case("SoftmaxOutput", lambda v: mx.sym.Softmax(v["data"], v["label"]),
         {"data": rnd(3, 4), "label": _labels(3, 4)}, _so_ref(),
         grad=_so_grad(), no_grad=("label",), id="alias"),
    # rows of 32 classes or more: the CUDA target gives each row a block (lower/cuda/softmax.py)
    Case("SoftmaxOutput", _so(), {"data": rnd(3, 40), "label": _labels(3, 40)}, _so_ref(),
         grad=_so_grad(), no_grad=("label",), id="long-rows"),
    Case("SoftmaxOutput", _so(multi_output=True),
         {"data": rnd(2, 33, 2), "label": _labels((2, 2), 33)}, _so_ref(multi=True),
         grad=_so_grad(multi=True), no_grad=("label",), id="multi-long-rows"),
]

# --- softmax / log_softmax ---------------------------------------------------------------------


def _sm_cases(name, fn):
    sym = getattr(mx.sym, name)
    lengths = np.array([[3, 1, 4], [2, 4, 0]], dtype=np.int64)
    return [
        Case(name, lambda v: sym(v["x"]), {"x": rnd(3, 5)}, lambda x: fn(x), id="last"),
        Case(name, lambda v: sym(v["x"], axis=1), {"x": rnd(2, 4, 3)}, lambda x: fn(x, axis=1),
             id="axis1"),
        Case(name, lambda v: sym(v["x"], axis=0, temperature=2.5), {"x": rnd(4, 3)},
             lambda x: fn(x, axis=0, t=2.5), id="axis0-temperature"),
        Case(name, lambda v: sym(v["x"], temperature=0.5), {"x": rnd(2, 2, 4)},
             lambda x: fn(x, t=0.5), id="temperature"),
        Case(name, lambda v: sym(v["x"], dtype="float32"), {"x": rnd(2, 5)},
             lambda x: fn(x).astype(np.float32), grad="none", id="dtype"),
        Case(name, lambda v: sym(v["x"], v["length"], axis=1, use_length=True),
             {"x": rnd(2, 4, 3), "length": lengths},
             lambda x, length: _masked(fn, 1)(x, length), id="length"),
        # rows of 32 or more along axis 0 (a block per row on CUDA, rows strided in memory)
        Case(name, lambda v: sym(v["x"], axis=0, temperature=2.0), {"x": rnd(33, 2, 3)},
             lambda x: fn(x, axis=0, t=2.0), id="long-rows"),
    ]


SM_CASES = _sm_cases("softmax", _softmax) + _sm_cases("log_softmax", _log_softmax)

# --- regression outputs ------------------------------------------------------------------------


def _reg_grad(kind, grad_scale=1.0):
    """MXNet's regression gradient: grad_scale / m * (out - label) (sign of it for MAE),
    m = outputs per sample."""
    def grad(inputs, outs, head):
        out = outs[0]
        d = out - inputs["label"].reshape(out.shape)
        if kind == "mae":
            d = np.sign(d)
        m = out.size // out.shape[0]
        return {"data": d * grad_scale / m}
    return grad


def _reg(name, **params):
    return lambda v: getattr(mx.sym, name)(v["data"], v["label"], **params)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


REG_CASES = [
    Case("LinearRegressionOutput", _reg("LinearRegressionOutput"),
         {"data": rnd(4, 3), "label": rnd(4, 3)}, lambda data, label: data,
         grad=_reg_grad("linear"), no_grad=("label",), id="2d"),
    Case("LinearRegressionOutput", _reg("LinearRegressionOutput", grad_scale=2.0),
         {"data": rnd(5, 1), "label": rnd(5)}, lambda data, label: data,
         grad=_reg_grad("linear", 2.0), no_grad=("label",), id="column-label"),
    Case("LinearRegressionOutput", _reg("LinearRegressionOutput"),
         {"data": rnd(2, 3, 2), "label": rnd(2, 6)}, lambda data, label: data,
         grad=_reg_grad("linear"), no_grad=("label",), id="reshaped-label"),
    Case("LogisticRegressionOutput", _reg("LogisticRegressionOutput", grad_scale=0.5),
         {"data": rnd(3, 4) * 3, "label": R.integers(0, 2, (3, 4)).astype(np.float64)},
         lambda data, label: _sigmoid(data), grad=_reg_grad("logistic", 0.5), no_grad=("label",)),
    Case("MAERegressionOutput", _reg("MAERegressionOutput"),
         {"data": rnd(4, 2), "label": rnd(4, 2)}, lambda data, label: data,
         grad=_reg_grad("mae"), no_grad=("label",)),
]

# --- MakeLoss and BlockGrad --------------------------------------------------------------------


def _makeloss_grad(grad_scale=1.0, norm="null", thresh=0.0):
    def grad(inputs, outs, head):
        x = inputs["x"]
        div = {"null": 1.0, "batch": x.shape[0], "valid": max(int(np.sum(x > thresh)), 1)}[norm]
        return {"x": np.full(x.shape, grad_scale / div)}
    return grad


def _fc_makeloss_grad(inputs, outs, head):
    ones = np.full(outs[0].shape, 0.5)   # grad_scale, through dot(x, w.T)
    return {"x": ones @ inputs["w"], "w": ones.T @ inputs["x"]}


def _fc_blocked_w_grad(inputs, outs, head):
    return {"x": head[0] @ inputs["w"], "w": np.zeros_like(inputs["w"])}


def _fc(x, w):
    return mx.sym.FullyConnected(x, w, num_hidden=2, no_bias=True)


MISC_CASES = [
    Case("MakeLoss", lambda v: mx.sym.MakeLoss(v["x"]), {"x": rnd(3, 4)}, lambda x: x,
         grad=_makeloss_grad(), id="null"),
    Case("MakeLoss", lambda v: mx.sym.MakeLoss(v["x"], grad_scale=2.0, normalization="batch"),
         {"x": rnd(4, 2)}, lambda x: x, grad=_makeloss_grad(2.0, "batch"), id="batch"),
    Case("MakeLoss", lambda v: mx.sym.MakeLoss(v["x"], normalization="valid", valid_thresh=0.2),
         {"x": rnd(3, 5)}, lambda x: x, grad=_makeloss_grad(1.0, "valid", 0.2), id="valid"),
    Case("MakeLoss", lambda v: mx.sym.MakeLoss(_fc(v["x"], v["w"]), grad_scale=0.5),
         {"x": rnd(3, 4), "w": rnd(2, 4)}, lambda x, w: x @ w.T, grad=_fc_makeloss_grad,
         id="composed"),
    Case("BlockGrad", lambda v: mx.sym.BlockGrad(v["x"]), {"x": rnd(2, 3)}, lambda x: x,
         grad=lambda i, o, h: {"x": np.zeros_like(i["x"])}, id="zero-grad"),
    Case("BlockGrad", lambda v: _fc(v["x"], mx.sym.stop_gradient(v["w"])),
         {"x": rnd(3, 4), "w": rnd(2, 4)}, lambda x, w: x @ w.T, grad=_fc_blocked_w_grad,
         id="partial"),
]

def _svm_grad(margin=1.0, coef=1.0, linear=False):
    """MXNet's SVMOutput gradient (checked against MXNet 1.9.1): for the label's class
    -2c max(m - x, 0) (-c [x < m] linear), for the others 2c max(m + x, 0) (c [x > -m])."""
    def grad(inputs, outs, head):
        x = inputs["data"].reshape(inputs["data"].shape[0], -1)
        hot = np.eye(x.shape[1])[inputs["label"].astype(int)]
        if linear:
            own, other = -coef * (x < margin), coef * (x > -margin)
        else:
            own, other = -2 * coef * np.maximum(margin - x, 0), 2 * coef * np.maximum(margin + x, 0)
        return {"data": np.where(hot == 1, own, other).reshape(inputs["data"].shape)}
    return grad


SVM_CASES = [
    Case("SVMOutput", lambda v: mx.sym.SVMOutput(v["data"], v["label"]),
         {"data": rnd(4, 3) * 2, "label": np.array([2.0, 0.0, 1.0, 1.0])}, lambda data, label: data,
         grad=_svm_grad(), no_grad=("label",)),
    Case("SVMOutput", lambda v: mx.sym.SVMOutput(v["data"], v["label"], use_linear=True, margin=0.5),
         {"data": rnd(3, 2, 2) * 2, "label": np.array([3.0, 0.0, 1.0])}, lambda data, label: data,
         grad=_svm_grad(0.5, linear=True), no_grad=("label",), id="linear_4d"),
    Case("SVMOutput", lambda v: mx.sym.SVMOutput(v["data"], v["label"], margin=0.5,
                                                 regularization_coefficient=2.0),
         {"data": np.array([[0.5, -1.2, 2.0], [1.5, 0.3, -0.4]]), "label": np.array([2.0, 0.0])},
         lambda data, label: data,
         grad=lambda i, o, h: {"data": np.array([[4.0, 0, 0], [0, 3.2, 0.4]])},   # MXNet 1.9.1's figures
         no_grad=("label",), id="mxnet_recorded"),
]

CASES = SO_CASES + SM_CASES + REG_CASES + MISC_CASES + SVM_CASES
