"""Cases for the contrib operators (symjit/ops/contrib.py) through mx.sym.contrib: numpy references
written from MXNet's documentation; gradients by finite differences where MXNet has one."""
from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(29)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


def _heads(x, heads, parts, which):
    s, b, e = x.shape
    d = e // (heads * parts)
    t = x.reshape(s, b, heads, parts, d)[:, :, :, which, :]
    return t.transpose(1, 2, 0, 3).reshape(b * heads, s, d)


def _merge(x, heads):
    bh, s, d = x.shape
    return x.reshape(bh // heads, heads, s, d).transpose(2, 0, 1, 3).reshape(s, bh // heads, heads * d)


def _qk(q, k):
    return (q / math.sqrt(q.shape[-1])) @ np.swapaxes(k, 1, 2)


def _bn(data, gamma, beta, moving_mean, moving_var):
    mean = data.mean(axis=(0, 2, 3), keepdims=True)
    var = data.var(axis=(0, 2, 3), keepdims=True)
    return (data - mean) / np.sqrt(var + 1e-3) * gamma.reshape(1, -1, 1, 1) + beta.reshape(1, -1, 1, 1)


def _bn_relu(**kw):
    return np.maximum(_bn(**kw), 0)


def _adaptive(x, oh, ow):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, h1 = i * h // oh, -(-(i + 1) * h // oh)
            w0, w1 = j * w // ow, -(-(j + 1) * w // ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


def _src(i, n_in, n_out, align):
    if align:
        return i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return max((i + 0.5) * n_in / n_out - 0.5, 0.0)


def _resize(x, oh, ow, align=True):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        sy = _src(i, h, oh, align)
        y0, dy = int(sy), sy - int(sy)
        y1 = min(y0 + 1, h - 1)
        for j in range(ow):
            sx = _src(j, w, ow, align)
            x0, dx = int(sx), sx - int(sx)
            x1 = min(x0 + 1, w - 1)
            out[:, :, i, j] = ((1 - dy) * ((1 - dx) * x[:, :, y0, x0] + dx * x[:, :, y0, x1])
                               + dy * ((1 - dx) * x[:, :, y1, x0] + dx * x[:, :, y1, x1]))
    return out


def _affine_grid(theta, h, w):
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    base = np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])
    return (theta.reshape(-1, 2, 3) @ base).reshape(-1, 2, h, w)


def _warp_grid(flow):
    n, _, h, w = flow.shape
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([(xs + flow[:, 0]) * 2 / (w - 1) - 1, (ys + flow[:, 1]) * 2 / (h - 1) - 1], axis=1)


def _sample(data, grid):
    n, c, h, w = data.shape
    out = np.zeros((n, c) + grid.shape[2:])
    for b in range(n):
        for i in range(grid.shape[2]):
            for j in range(grid.shape[3]):
                x, y = (grid[b, 0, i, j] + 1) * (w - 1) / 2, (grid[b, 1, i, j] + 1) * (h - 1) / 2
                x0, y0 = int(np.floor(x)), int(np.floor(y))
                for yy, xx, wt in ((y0, x0, (1 - (y - y0)) * (1 - (x - x0))), (y0, x0 + 1,
                                                                               (1 - (y - y0)) * (x - x0)),
                                   (y0 + 1, x0, (y - y0) * (1 - (x - x0))), (y0 + 1, x0 + 1,
                                                                             (y - y0) * (x - x0))):
                    if 0 <= yy < h and 0 <= xx < w:
                        out[b, :, i, j] += wt * data[b, :, yy, xx]
    return out


_theta = np.array([[0.9, 0.1, 0.05, -0.2, 0.8, 0.1], [1.1, -0.3, -0.1, 0.2, 0.7, 0.05]])
# sample points away from pixel boundaries (the bilinear weights have kinks there)
_grid = np.stack([R.uniform(-1.3, 1.3, (2, 2, 3)), R.uniform(-1.3, 1.3, (2, 2, 3))], axis=1)
_grid = np.round(_grid * 2.0) / 2.0 + 0.17

_qkv = rnd(3, 2, 2 * 3 * 2)   # seq 3, batch 2, heads 2, dim 2
_att = rnd(4, 3, 3)
_q, _kv = rnd(2, 2, 4), rnd(3, 2, 2 * 2 * 2)
_att2 = rnd(4, 2, 3)
_bn_in = {"data": rnd(2, 3, 2, 2), "gamma": R.uniform(0.5, 1.5, 3), "beta": rnd(3),
          "moving_mean": np.zeros(3),
          "moving_var": np.ones(3)}

CASES = [
    Case("_contrib_div_sqrt_dim", lambda v: mx.sym.contrib.div_sqrt_dim(v["x"]), {"x": rnd(2, 4)},
         lambda x: x / 2.0),
    Case("_contrib_quadratic", lambda v: mx.sym.contrib.quadratic(v["x"], a=1.5, b=-2.0, c=0.5),
         {"x": rnd(3, 2)},
         lambda x: 1.5 * x * x - 2.0 * x + 0.5),
    Case("_contrib_backward_quadratic", lambda v: mx.sym.contrib.backward_quadratic(v["g"], v["x"], a=2.0,
                                                                                    b=1.0),
         {"g": rnd(3), "x": rnd(3)}, lambda g, x: g * (4.0 * x + 1.0), grad="none"),
    Case("_contrib_gradientmultiplier", lambda v: mx.sym.contrib.gradientmultiplier(v["x"], scalar=-0.5),
         {"x": rnd(2, 3)}, lambda x: x.copy(), grad=lambda inputs, outs, head: {"x": -0.5 * head[0]}),
    Case("_contrib_backward_gradientmultiplier", lambda v: mx.sym.contrib.backward_gradientmultiplier(v["x"],
                                                                                                     scalar=3.0),
         {"x": rnd(3)}, lambda x: 3.0 * x, grad="none"),
    Case("_contrib_round_ste", lambda v: mx.sym.contrib.round_ste(v["x"]), {"x": rnd(2, 3) * 3},
         lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), grad=lambda inputs, outs, head: {"x": head[0]}),
    Case("_contrib_sign_ste", lambda v: mx.sym.contrib.sign_ste(v["x"]), {"x": rnd(2, 3)},
         lambda x: np.sign(x), grad=lambda inputs, outs, head: {"x": head[0]}),
    Case("_contrib_arange_like", lambda v: mx.sym.contrib.arange_like(v["x"], start=2.0, step=0.5, repeat=2),
         {"x": rnd(2, 3)}, lambda x: (2.0 + (np.arange(6) // 2) * 0.5).reshape(2, 3), grad="none"),
    Case("_contrib_arange_like", lambda v: mx.sym.contrib.arange_like(v["x"], axis=-1), {"x": rnd(2, 4)},
         lambda x: np.arange(4, dtype=np.float64), grad="none", id="axis"),
    Case("_contrib_index_array", lambda v: mx.sym.contrib.index_array(v["x"], axes=(1, 0)), {"x": rnd(2, 3)},
         lambda x: np.stack(np.meshgrid(np.arange(2), np.arange(3), indexing="ij")[::-1],
                            axis=-1).astype(np.int64),
         grad="none"),
    Case("_contrib_allclose", lambda v: mx.sym.contrib.allclose(v["a"], v["b"], rtol=1e-3),
         {"a": np.array([1.0, 2.0, np.nan]), "b": np.array([1.0005, 2.0, np.nan])},
         lambda a, b: np.array([1.0], dtype=np.float32), grad="none"),
    Case("_contrib_allclose", lambda v: mx.sym.contrib.allclose(v["a"], v["b"]),
         {"a": np.array([1.0, 2.0]), "b": np.array([1.0, 2.1])}, lambda a, b: np.array([0.0],
                                                                                       dtype=np.float32),
         grad="none", id="far"),
    Case("_contrib_BatchNormWithReLU", lambda v: mx.sym.contrib.BatchNormWithReLU(
        v["data"], v["gamma"], v["beta"], v["moving_mean"], v["moving_var"], fix_gamma=False),
        dict(_bn_in), _bn_relu, is_train=True, no_grad=("moving_mean", "moving_var")),
    Case("_contrib_SyncBatchNorm", lambda v: mx.sym.contrib.SyncBatchNorm(
        v["data"], v["gamma"], v["beta"], v["moving_mean"], v["moving_var"], fix_gamma=False, ndev=1),
        dict(_bn_in), _bn, is_train=True, no_grad=("moving_mean", "moving_var")),
    Case("_contrib_index_copy", lambda v: mx.sym.contrib.index_copy(v["old"], v["ind"], v["new"]),
         {"old": rnd(4, 2), "ind": np.array([3.0, 0.0]), "new": rnd(2, 2)},
         lambda old, ind, new: np.concatenate([new[1:2], old[1:3], new[0:1]]), no_grad=("ind",)),
    Case("_contrib_interleaved_matmul_selfatt_qk",
         lambda v: mx.sym.contrib.interleaved_matmul_selfatt_qk(v["qkv"], heads=2), {"qkv": _qkv},
         lambda qkv: _qk(_heads(qkv, 2, 3, 0), _heads(qkv, 2, 3, 1))),
    Case("_contrib_interleaved_matmul_selfatt_valatt",
         lambda v: mx.sym.contrib.interleaved_matmul_selfatt_valatt(v["qkv"], v["att"], heads=2),
         {"qkv": _qkv, "att": _att}, lambda qkv, att: _merge(att @ _heads(qkv, 2, 3, 2), 2)),
    Case("_contrib_interleaved_matmul_encdec_qk",
         lambda v: mx.sym.contrib.interleaved_matmul_encdec_qk(v["q"], v["kv"], heads=2), {"q": _q,
                                                                                           "kv": _kv},
         lambda q, kv: _qk(_heads(q, 2, 1, 0), _heads(kv, 2, 2, 0))),
    Case("_contrib_interleaved_matmul_encdec_valatt",
         lambda v: mx.sym.contrib.interleaved_matmul_encdec_valatt(v["kv"], v["att"], heads=2),
         {"kv": _kv, "att": _att2}, lambda kv, att: _merge(att @ _heads(kv, 2, 2, 1), 2)),
    Case("_contrib_AdaptiveAvgPooling2D", lambda v: mx.sym.contrib.AdaptiveAvgPooling2D(v["x"],
                                                                                        output_size=(2, 3)),
         {"x": rnd(2, 2, 5, 4)}, lambda x: _adaptive(x, 2, 3)),
    Case("_contrib_AdaptiveAvgPooling2D", lambda v: mx.sym.contrib.AdaptiveAvgPooling2D(v["x"]),
         {"x": rnd(1, 3, 3, 3)}, lambda x: _adaptive(x, 1, 1), id="global"),
    Case("_contrib_AdaptiveAvgPooling2D", lambda v: mx.sym.contrib.AdaptiveAvgPooling2D(v["x"],
                                                                                        output_size=3),
         {"x": rnd(1, 1, 2, 2)}, lambda x: _adaptive(x, 3, 3), id="up"),
    Case("_contrib_BilinearResize2D", lambda v: mx.sym.contrib.BilinearResize2D(v["x"], height=5, width=3),
         {"x": rnd(1, 2, 3, 4)}, lambda x: _resize(x, 5, 3)),
    Case("_contrib_BilinearResize2D",
         lambda v: mx.sym.contrib.BilinearResize2D(v["x"], scale_height=2.0, scale_width=0.5,
                                                   align_corners=False),
         {"x": rnd(1, 1, 3, 4)}, lambda x: _resize(x, 6, 2, False), id="scale_no_align"),
    Case("_contrib_BilinearResize2D",
         lambda v: mx.sym.contrib.BilinearResize2D(v["x"], scale_height=2.0, scale_width=0.5,
                                                   mode="odd_scale"),
         {"x": rnd(1, 1, 3, 4)}, lambda x: _resize(x, 5, 2), id="odd_scale"),
    # an input row feeds about 2 * 31/3 output rows: the gradient's window of rows is that wide
    Case("_contrib_BilinearResize2D", lambda v: mx.sym.contrib.BilinearResize2D(v["x"], height=32, width=23),
         {"x": rnd(1, 1, 4, 3)}, lambda x: _resize(x, 32, 23), id="upsample_x8"),
    Case("_contrib_BilinearResize2D", lambda v: mx.sym.contrib.BilinearResize2D(v["x"], mode="to_odd_up"),
         {"x": rnd(1, 2, 3, 4)}, lambda x: _resize(x, 3, 5), id="to_odd_up"),
    Case("_contrib_BilinearResize2D", lambda v: mx.sym.contrib.BilinearResize2D(v["x"], mode="to_even_down"),
         {"x": rnd(1, 1, 3, 4)}, lambda x: _resize(x, 2, 4), id="to_even_down"),
    Case("_contrib_BilinearResize2D", lambda v: mx.sym.contrib.BilinearResize2D(v["x"], v["like"],
                                                                                mode="like"),
         {"x": rnd(1, 1, 2, 3), "like": rnd(1, 1, 4, 5)}, lambda x, like: _resize(x, 4, 5), no_grad=("like",),
         id="like"),
    Case("GridGenerator", lambda v: mx.sym.GridGenerator(v["theta"], transform_type="affine",
                                                         target_shape=(3, 4)),
         {"theta": _theta}, lambda theta: _affine_grid(theta, 3, 4)),
    Case("GridGenerator", lambda v: mx.sym.GridGenerator(v["flow"], transform_type="warp"),
         {"flow": rnd(1, 2, 3, 4)},
         lambda flow: _warp_grid(flow), id="warp"),
    Case("BilinearSampler", lambda v: mx.sym.BilinearSampler(v["data"], v["grid"]),
         {"data": rnd(2, 2, 3, 4), "grid": _grid}, lambda data, grid: _sample(data, grid)),
    Case("SpatialTransformer", lambda v: mx.sym.SpatialTransformer(v["data"], v["loc"], target_shape=(2, 3)),
         {"data": rnd(2, 1, 4, 4), "loc": _theta}, lambda data, loc: _sample(data, _affine_grid(loc, 2, 3)),
         no_grad=("loc",)),
]
