"""Cases for BatchNorm and LayerNorm (numpy references written here; see tests/opcheck.py)."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(1234)


def rnd(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


def _other_axes(ndim: int, axis: int) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i != axis % ndim)


def _per_channel(v, ndim: int, axis: int):
    """A (C,) vector shaped to broadcast along ``axis`` of an ``ndim`` array."""
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return v.reshape(shape)


def _bn_ref(train, eps=1e-3, axis=1, fix_gamma=True, mean_var=False):
    def ref(data, gamma, beta, moving_mean, moving_var):
        nd = data.ndim
        if train:
            mean = data.mean(axis=_other_axes(nd, axis))
            var = data.var(axis=_other_axes(nd, axis))
        else:
            mean, var = moving_mean, moving_var
        g = np.ones_like(gamma) if fix_gamma else gamma
        inv = 1.0 / np.sqrt(var + eps)
        out = ((data - _per_channel(mean, nd, axis)) * _per_channel(inv * g, nd, axis)
               + _per_channel(beta, nd, axis))
        return [out, mean, inv] if mean_var else out
    return ref


def _bn_inputs(shape, axis=1):
    c = shape[axis]
    return {"data": rnd(*shape), "gamma": rnd(c, lo=0.5, hi=1.5), "beta": rnd(c),
            "moving_mean": rnd(c, lo=-0.2, hi=0.2), "moving_var": rnd(c, lo=0.5, hi=1.5)}


def _bn(**params):
    return lambda v: mx.sym.BatchNorm(v["data"], v["gamma"], v["beta"], v["moving_mean"],
                                      v["moving_var"], **params)


def _ln_ref(axis=-1, eps=1e-5, mean_var=False):
    def ref(data, gamma, beta):
        nd = data.ndim
        mean = data.mean(axis=axis, keepdims=True)
        std = np.sqrt(data.var(axis=axis, keepdims=True) + eps)
        out = (data - mean) / std * _per_channel(gamma, nd, axis) + _per_channel(beta, nd, axis)
        return [out, mean, std] if mean_var else out
    return ref


def _ln_inputs(shape, axis=-1):
    c = shape[axis]
    return {"data": rnd(*shape), "gamma": rnd(c, lo=0.5, hi=1.5), "beta": rnd(c)}


def _ln(**params):
    return lambda v: mx.sym.LayerNorm(v["data"], v["gamma"], v["beta"], **params)


CASES = [
    # training: batch statistics (gradient through the statistics, checked numerically)
    Case("BatchNorm", _bn(fix_gamma=False), _bn_inputs((3, 2, 2, 2)),
         _bn_ref(True, fix_gamma=False), is_train=True, id="train"),
    Case("BatchNorm", _bn(), _bn_inputs((4, 3)), _bn_ref(True), is_train=True, id="train-fixgamma"),
    Case("BatchNorm", _bn(axis=-1, fix_gamma=False, eps=1e-2), _bn_inputs((2, 3, 3), -1),
         _bn_ref(True, eps=1e-2, axis=-1, fix_gamma=False), is_train=True, id="train-axis-last"),
    Case("BatchNorm", _bn(axis=0, fix_gamma=False), _bn_inputs((2, 3, 4), 0),
         _bn_ref(True, axis=0, fix_gamma=False), is_train=True, id="train-axis0"),
    # relu(BatchNorm): the gradient becomes one _backward_BatchNorm_relu kernel (simplify pass)
    Case("BatchNorm", lambda v: mx.sym.Activation(_bn(fix_gamma=False)(v), act_type="relu"),
         _bn_inputs((4, 3, 2)),
         lambda **a: np.maximum(_bn_ref(True, fix_gamma=False)(**a), 0.0), is_train=True,
         id="train-relu"),
    # inference: moving statistics
    Case("BatchNorm", _bn(fix_gamma=False), _bn_inputs((2, 3, 2, 2)),
         _bn_ref(False, fix_gamma=False), id="inference"),
    # use_global_stats: moving statistics in training too, the gradient treats them as constants
    Case("BatchNorm", _bn(fix_gamma=False, use_global_stats=True), _bn_inputs((3, 2, 4)),
         _bn_ref(False, fix_gamma=False), is_train=True, id="global-stats"),
    # hidden outputs: mean and inverse std (their gradients are blocked, so no numeric check)
    Case("BatchNorm", _bn(fix_gamma=False, output_mean_var=True), _bn_inputs((3, 2, 2)),
         _bn_ref(True, fix_gamma=False, mean_var=True), is_train=True, grad="none", id="mean-var"),
    Case("BatchNorm", _bn(output_mean_var=True), _bn_inputs((3, 2, 2)),
         _bn_ref(False, mean_var=True), grad="none", id="mean-var-inference"),
    Case("LayerNorm", _ln(), _ln_inputs((3, 5)), _ln_ref(), id="last"),
    Case("LayerNorm", _ln(axis=1, eps=1e-3), _ln_inputs((2, 4, 3), 1), _ln_ref(1, 1e-3), id="axis1"),
    Case("LayerNorm", _ln(axis=0), _ln_inputs((4, 2, 3), 0), _ln_ref(0), id="axis0"),
    Case("LayerNorm", _ln(axis=1, output_mean_var=True), _ln_inputs((2, 3, 2), 1),
         _ln_ref(1, mean_var=True), grad="none", id="mean-std"),
]
