"""Cases for the composite ops (symjit/ops/composite.py): numpy references written here from MXNet's
documented formulas, float64 finite-difference gradients through their expansions."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(11)


def rnd(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _l2(mode):
    def ref(x):
        data = x
        axes = {"instance": tuple(range(1, data.ndim)), "channel": (1,),
                "spatial": tuple(range(2, data.ndim))}[mode]
        return data / np.sqrt((data ** 2).sum(axis=axes, keepdims=True) + 1e-10)
    return ref


def _norm(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps), mean, var


def _instance_norm(data, gamma, beta):
    y, _, _ = _norm(data, (2, 3), 1e-3)
    return y * gamma.reshape(1, -1, 1, 1) + beta.reshape(1, -1, 1, 1)


def _group_norm(groups, eps):
    def ref(data, gamma, beta):
        n = data.shape[0]
        y, mean, var = _norm(data.reshape(n, groups, -1), (2,), eps)
        # one gamma and beta per group (MXNet 1.x's GroupNorm), spread over the group's channels
        out = (y * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)).reshape(data.shape)
        return [out, mean.reshape(n, groups), np.sqrt(var + eps).reshape(n, groups)]
    return ref


def _lrn(nsize, alpha=1e-4, beta=0.75, knorm=2.0):
    def ref(x):
        data = x
        sq = np.pad(data ** 2, ((0, 0), (nsize // 2, nsize // 2), (0, 0), (0, 0)))
        window = sum(sq[:, i:i + data.shape[1]] for i in range(nsize))
        return data / (knorm + alpha / nsize * window) ** beta
    return ref


def _d2s(data, k=2):
    n, c, h, w = data.shape
    t = data.reshape(n, k, k, c // (k * k), h, w).transpose(0, 3, 4, 1, 5, 2)
    return t.reshape(n, c // (k * k), h * k, w * k)


def _s2d(data, k=2):
    n, c, h, w = data.shape
    t = data.reshape(n, c, h // k, k, w // k, k).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(n, c * k * k, h // k, w // k)


def _bilinear(x, w, s):
    """Depthwise transposed convolution, kernel 2s - s%2, stride s, pad s // 2 (MXNet's bilinear)."""
    k, p = 2 * s - s % 2, s // 2
    n, c, h, wd = x.shape
    full = np.zeros((n, c, (h - 1) * s + k, (wd - 1) * s + k))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * s:i * s + k, j * s:j * s + k] += x[:, :, i:i + 1, j:j + 1] * w[:, 0][None]
    return full[:, :, p:p + h * s, p:p + wd * s]


def _conv2x2(x, w, b):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - 1, x.shape[3] - 1))
    for f in range(w.shape[0]):
        for i in range(out.shape[2]):
            for j in range(out.shape[3]):
                out[:, f, i, j] = np.sum(x[:, :, i:i + 2, j:j + 2] * w[f], axis=(1, 2, 3)) + b[f]
    return out


def _nearest(x, k):
    return x.repeat(k, axis=2).repeat(k, axis=3)


_d2s_in = np.arange(24, dtype=np.float64).reshape(1, 4, 2, 3)
# MXNet's documented example of depth_to_space (block 2)
_d2s_doc = np.array([[[[0, 6, 1, 7, 2, 8], [12, 18, 13, 19, 14, 20],
                       [3, 9, 4, 10, 5, 11], [15, 21, 16, 22, 17, 23]]]], dtype=np.float64)

CASES = [
    Case("add_n", lambda v: mx.sym.add_n(v["a"], v["b"], v["c"]),
         {"a": rnd(2, 3), "b": rnd(2, 3), "c": rnd(2, 3)},
         lambda a, b, c: a + b + c),
    Case("add_n", lambda v: mx.sym.ElementWiseSum(v["a"], v["a"]), {"a": rnd(4)}, lambda a: 2 * a,
         id="alias_same"),
    Case("add_n", lambda v: mx.sym.add_n(v["a"]), {"a": rnd(3)}, lambda a: a.copy(), id="one"),
    Case("softmin", lambda v: mx.sym.softmin(v["x"]), {"x": rnd(3, 4)}, lambda x: _softmax(-x, -1)),
    Case("softmin", lambda v: mx.sym.softmin(v["x"], axis=0, temperature=2.0), {"x": rnd(3, 4)},
         lambda x: _softmax(-x / 2.0, 0), id="axis0_t2"),
    Case("SoftmaxActivation", lambda v: mx.sym.SoftmaxActivation(v["x"]), {"x": rnd(2, 3, 2)},
         lambda x: _softmax(x.reshape(2, 6), 1).reshape(2, 3, 2), id="instance"),
    Case("SoftmaxActivation", lambda v: mx.sym.SoftmaxActivation(v["x"], mode="channel"), {"x": rnd(2, 3, 2)},
         lambda x: _softmax(x, 1), id="channel"),
    Case("reshape_like", lambda v: mx.sym.reshape_like(v["lhs"], v["rhs"]),
         {"lhs": rnd(2, 6), "rhs": rnd(3, 4)},
         lambda lhs, rhs: lhs.reshape(3, 4), no_grad=("rhs",)),
    Case("reshape_like",
         lambda v: mx.sym.reshape_like(v["lhs"], v["rhs"], lhs_begin=1, rhs_begin=0, rhs_end=2),
         {"lhs": rnd(2, 6), "rhs": rnd(2, 3, 5)}, lambda lhs, rhs: lhs.reshape(2, 2, 3), no_grad=("rhs",),
         id="partial"),
    *[Case("L2Normalization", lambda v, m=m: mx.sym.L2Normalization(v["x"], mode=m), {"x": rnd(2, 3, 2, 2)},
           _l2(m), id=m) for m in ("instance", "channel", "spatial")],
    Case("InstanceNorm", lambda v: mx.sym.InstanceNorm(v["data"], v["gamma"], v["beta"]),
         {"data": rnd(2, 3, 2, 3), "gamma": rnd(3, lo=0.5, hi=1.5), "beta": rnd(3)}, _instance_norm),
    Case("GroupNorm", lambda v: mx.sym.GroupNorm(v["data"], v["gamma"], v["beta"], num_groups=2, eps=1e-3,
                                                 output_mean_var=True),
         {"data": rnd(2, 4, 2, 2), "gamma": rnd(2, lo=0.5, hi=1.5), "beta": rnd(2)}, _group_norm(2, 1e-3)),
    Case("moments", lambda v: mx.sym.moments(v["x"], axes=(0, 2)), {"x": rnd(3, 2, 4)},
         lambda x: [x.mean(axis=(0, 2)), x.var(axis=(0, 2))]),
    Case("moments", lambda v: mx.sym.moments(v["x"], axes=(1,), keepdims=True), {"x": rnd(3, 4)},
         lambda x: [x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)], id="keepdims"),
    Case("moments", lambda v: mx.sym.moments(v["x"]), {"x": rnd(3, 4)},   # every axis: shape (1,)
         lambda x: [x.mean().reshape(1), x.var().reshape(1)], id="all_axes"),
    Case("LRN", lambda v: mx.sym.LRN(v["x"], nsize=3, alpha=0.5, beta=0.75, knorm=1.5),
         {"x": rnd(2, 5, 2, 2)},
         _lrn(3, alpha=0.5, knorm=1.5)),
    Case("LRN", lambda v: mx.sym.LRN(v["x"], nsize=5), {"x": rnd(1, 4, 3, 1)}, _lrn(5), id="default"),
    Case("UpSampling", lambda v: mx.sym.UpSampling(v["x"], scale=2, sample_type="nearest"),
         {"x": rnd(1, 2, 2, 3)}, lambda x: _nearest(x, 2)),
    Case("UpSampling",
         lambda v: mx.sym.UpSampling(v["a"], v["b"], scale=2, sample_type="nearest", num_args=2),
         {"a": rnd(1, 2, 2, 2), "b": rnd(1, 1, 1, 1)},
         lambda a, b: np.concatenate([_nearest(a, 2), _nearest(b, 4)], axis=1), id="concat"),
    Case("UpSampling", lambda v: mx.sym.UpSampling(v["a"], v["b"], scale=1, sample_type="nearest", num_args=2,
                                                   multi_input_mode="sum"),
         {"a": rnd(1, 2, 2, 2), "b": rnd(1, 2, 1, 1)}, lambda a, b: a + _nearest(b, 2), id="sum"),
    Case("UpSampling", lambda v: mx.sym.UpSampling(v["x"], v["w"], scale=2, sample_type="bilinear",
                                                   num_filter=2),
         {"x": rnd(1, 2, 2, 3), "w": rnd(2, 1, 4, 4)}, lambda x, w: _bilinear(x, w, 2), id="bilinear"),
    Case("depth_to_space", lambda v: mx.sym.depth_to_space(v["x"], block_size=2), {"x": _d2s_in},
         lambda x: _d2s_doc, id="doc"),
    Case("depth_to_space", lambda v: mx.sym.depth_to_space(v["x"], block_size=2), {"x": rnd(2, 8, 2, 1)},
         lambda x: _d2s(x)),
    Case("space_to_depth", lambda v: mx.sym.space_to_depth(v["x"], block_size=2), {"x": rnd(2, 1, 4, 2)},
         lambda x: _s2d(x)),
    Case("argmax_channel", lambda v: mx.sym.argmax_channel(v["x"]), {"x": np.array([[0.0, 1, 2], [3, 5, 4]])},
         lambda x: np.array([2.0, 1.0]), grad="none"),
    Case("batch_take", lambda v: mx.sym.batch_take(v["a"], v["indices"]),
         {"a": rnd(3, 4), "indices": np.array([1.0, 3.0, 0.0])},
         lambda a, indices: a[np.arange(3), indices.astype(int)], no_grad=("indices",)),
    Case("choose_element_0index", lambda v: mx.sym.choose_element_0index(v["lhs"], v["rhs"]),
         {"lhs": rnd(3, 4), "rhs": np.array([2.0, 0.0, 3.0])},
         lambda lhs, rhs: lhs[np.arange(3), rhs.astype(int)], no_grad=("rhs",)),
    Case("slice_like", lambda v: mx.sym.slice_like(v["data"], v["like"]), {"data": rnd(3, 4), "like": rnd(2,
                                                                                                          3)},
         lambda data, like: data[:2, :3].copy(), no_grad=("like",)),
    Case("slice_like", lambda v: mx.sym.slice_like(v["data"], v["like"], axes=(1,)),
         {"data": rnd(3, 4), "like": rnd(1, 2)}, lambda data, like: data[:, :2].copy(), no_grad=("like",),
         id="axes"),
    Case("Crop", lambda v: mx.sym.Crop(v["x"], h_w=(2, 3), offset=(1, 0)), {"x": rnd(1, 2, 4, 4)},
         lambda x: x[:, :, 1:3, 0:3].copy()),
    Case("Crop", lambda v: mx.sym.Crop(v["x"], v["like"], num_args=2, center_crop=True),
         {"x": rnd(1, 1, 5, 4), "like": rnd(1, 1, 3, 2)}, lambda x, like: x[:, :, 1:4, 1:3].copy(),
         no_grad=("like",), id="like"),
    Case("khatri_rao", lambda v: mx.sym.khatri_rao(v["a"], v["b"], v["c"]),
         {"a": rnd(2, 3), "b": rnd(3, 3), "c": rnd(2, 3)},
         lambda a, b, c: np.stack([np.kron(np.kron(a[:, r], b[:, r]), c[:, r]) for r in range(3)], axis=1)),
    Case("_identity_with_attr_like_rhs",
         lambda v: mx.sym._internal._identity_with_attr_like_rhs(v["x"], v["like"]),
         {"x": rnd(2, 3), "like": rnd(2, 3)}, lambda x, like: x.copy(), no_grad=("like",)),
    Case("_split_v2", lambda v: mx.sym.split_v2(v["x"], (1, 3), axis=1), {"x": rnd(2, 5)},
         lambda x: [x[:, :1].copy(), x[:, 1:3].copy(), x[:, 3:].copy()]),
    Case("_split_v2", lambda v: mx.sym.split_v2(v["x"], 3, axis=0, squeeze_axis=True), {"x": rnd(3, 2)},
         lambda x: [x[0].copy(), x[1].copy(), x[2].copy()], id="sections"),
    Case("amp_cast", lambda v: mx.sym.amp_cast(v["x"], dtype="float32"), {"x": rnd(2, 3)},
         lambda x: x.astype(np.float32), grad="none"),
    Case("amp_cast", lambda v: mx.sym.amp_cast(v["x"], dtype="float32"), {"x": np.array([1, 2],
                                                                                        dtype=np.int32)},
         lambda x: x.copy(), grad="none", id="int_passes"),
    Case("amp_cast", lambda v: mx.sym.amp_cast(v["x"], dtype="float64"), {"x": rnd(2, 3)}, lambda x: x.copy(),
         id="same"),
    Case("amp_multicast", lambda v: mx.sym.amp_multicast(v["a"], v["b"], num_outputs=2), {"a": rnd(2),
                                                                                          "b": rnd(3)},
         lambda a, b: [a.copy(), b.copy()], id="same"),
    Case("amp_multicast", lambda v: mx.sym.amp_multicast(v["a"], v["b"], num_outputs=2),
         {"a": rnd(2).astype(np.float32), "b": rnd(3)}, lambda a, b: [a.astype(np.float64), b.copy()],
         grad="none"),
    Case("all_finite", lambda v: mx.sym.all_finite(v["x"]), {"x": np.array([1.0, np.inf, 2.0])},
         lambda x: np.array([0.0], dtype=np.float32), grad="none"),
    Case("multi_all_finite", lambda v: mx.sym.multi_all_finite(v["a"], v["b"], num_arrays=2),
         {"a": rnd(2), "b": rnd(3)}, lambda a, b: np.array([1.0], dtype=np.float32), grad="none"),
    Case("multi_sum_sq", lambda v: mx.sym.multi_sum_sq(v["a"], v["b"], num_arrays=2), {"a": rnd(2),
                                                                                       "b": rnd(3)},
         lambda a, b: np.array([(a * a).sum(), (b * b).sum()], dtype=np.float32), grad="none", rtol=1e-5),
    Case("Convolution_v1", lambda v: mx.sym.Convolution_v1(v["x"], v["w"], v["b"], kernel=(2, 2),
                                                           num_filter=2),
         {"x": rnd(1, 2, 3, 3), "w": rnd(2, 2, 2, 2), "b": rnd(2)}, lambda x, w, b: _conv2x2(x, w, b)),
    Case("Pooling_v1", lambda v: mx.sym.Pooling_v1(v["x"], kernel=(2, 2), stride=(2, 2), pool_type="avg"),
         {"x": rnd(1, 2, 4, 4)}, lambda x: x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5))),
    Case("BatchNorm_v1", lambda v: mx.sym.BatchNorm_v1(v["data"], v["gamma"], v["beta"], v["mm"], v["mv"],
                                                       use_global_stats=True, fix_gamma=False, eps=1e-3),
         {"data": rnd(2, 3, 2), "gamma": rnd(3), "beta": rnd(3), "mm": rnd(3), "mv": rnd(3) + 2.0},
         lambda data, gamma, beta, mm, mv: (data - mm.reshape(1, 3, 1)) / np.sqrt(mv.reshape(1, 3, 1) + 1e-3)
         * gamma.reshape(1, 3, 1) + beta.reshape(1, 3, 1), no_grad=("mm", "mv")),
]
