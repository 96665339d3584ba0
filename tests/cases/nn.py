"""Cases for Convolution, Pooling, Embedding, Dropout and LeakyReLU (references in plain numpy)."""
from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(7)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


# --- Convolution -----------------------------------------------------------------------------


def _conv_np(x, w, b=None, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1):
    """Direct convolution (2-D; a 3-D input is treated as height 1)."""
    one_d = x.ndim == 3
    if one_d:
        x, w = x[:, :, None, :], w[:, :, None, :]
        stride, pad, dilate = (1, *stride), (0, *pad), (1, *dilate)
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dilate[0], j * dilate[1]
            rows = slice(r0, r0 + stride[0] * (oh - 1) + 1, stride[0])
            cols = slice(c0, c0 + stride[1] * (ow - 1) + 1, stride[1])
            patch = xp[:, :, rows, cols]
            for g in range(groups):
                pg = patch[:, g * cg:(g + 1) * cg]
                wg = w[g * fg:(g + 1) * fg, :, i, j]
                out[:, g * fg:(g + 1) * fg] += np.einsum("ncij,fc->nfij", pg, wg)
    if b is not None:
        out += b[None, :, None, None]
    return out[:, :, 0, :] if one_d else out


def _conv3d_np(x, w, b=None, stride=(1, 1, 1), pad=(0, 0, 0), dilate=(1, 1, 1), groups=1):
    """Direct 3-D convolution: every kernel tap's strided window of the padded input times its
    weights, summed over the taps."""
    f, cg = w.shape[:2]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in pad])
    span = [dilate[i] * (w.shape[2 + i] - 1) + 1 for i in range(3)]
    outs = [(xp.shape[2 + i] - span[i]) // stride[i] + 1 for i in range(3)]
    out = np.zeros((x.shape[0], f, *outs))
    fg = f // groups
    for tap in np.ndindex(*w.shape[2:]):
        win = tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in zip(tap, dilate, stride, outs))
        patch = xp[(slice(None), slice(None), *win)]
        for g in range(groups):
            out[:, g * fg:(g + 1) * fg] += np.einsum("ncdhw,fc->nfdhw", patch[:, g * cg:(g + 1) * cg],
                                                     w[(slice(g * fg, (g + 1) * fg), slice(None), *tap)])
    return out if b is None else out + b[None, :, None, None, None]


def _conv_case(cid, shapes, relu=False, **params):
    no_bias = params.get("no_bias", False)
    names = ["data", "weight"] + ([] if no_bias else ["bias"])
    inputs = {n: rnd(*s) for n, s in zip(names, shapes)}
    geo = {k: params[k] for k in ("stride", "pad", "dilate") if k in params}
    geo["groups"] = params.get("num_group", 1)

    def build(v):
        net = mx.sym.Convolution(*[v[n] for n in names], **params)
        return mx.sym.Activation(net, act_type="relu") if relu else net

    def ref(data, weight, bias=None):
        out = (_conv3d_np if data.ndim == 5 else _conv_np)(data, weight, bias, **geo)
        return np.maximum(out, 0) if relu else out
    return Case("Convolution", build, inputs, ref, id=cid)


CONV_CASES = [
    _conv_case("3x3", [(1, 2, 5, 5), (3, 2, 3, 3), (3,)], kernel=(3, 3), num_filter=3),
    _conv_case("stride_pad_nobias", [(2, 1, 5, 5), (2, 1, 3, 3)], kernel=(3, 3), num_filter=2,
               stride=(2, 2), pad=(1, 1), no_bias=True),
    _conv_case("dilate_group", [(2, 2, 5, 5), (4, 1, 2, 2), (4,)], kernel=(2, 2), num_filter=4,
               dilate=(2, 2), num_group=2),
    _conv_case("rect", [(1, 2, 4, 6), (2, 2, 2, 3), (2,)], kernel=(2, 3), num_filter=2,
               stride=(1, 2), pad=(0, 1)),
    _conv_case("1d", [(2, 3, 7), (4, 3, 3), (4,)], kernel=(3,), num_filter=4, stride=(2,), pad=(1,)),
    _conv_case("relu_fused", [(2, 2, 4, 4), (3, 2, 2, 2), (3,)], relu=True, kernel=(2, 2), num_filter=3),
    _conv_case("dilate_pad", [(1, 2, 6, 6), (3, 2, 2, 2), (3,)], kernel=(2, 2), num_filter=3,
               dilate=(2, 2), pad=(1, 1), stride=(2, 1)),
    # the CPU's direct kernels (symjit/kernels/cpu/conv_direct.py): depthwise, and 1x1 over >= 512 pixels
    _conv_case("depthwise_s2", [(2, 3, 7, 7), (3, 1, 3, 3)], relu=True, kernel=(3, 3), num_filter=3,
               stride=(2, 2), pad=(1, 1), num_group=3, no_bias=True),
    _conv_case("pointwise", [(1, 4, 24, 24), (4, 2, 1, 1), (4,)], relu=True, kernel=(1, 1), num_filter=4,
               num_group=2),
    # 3-D: a sum of 2-D convolutions over the depth taps (symjit/ops/conv3d.py)
    _conv_case("3d", [(2, 2, 4, 5, 4), (3, 2, 2, 3, 2), (3,)], kernel=(2, 3, 2), num_filter=3),
    _conv_case("3d_strided_group", [(1, 4, 5, 4, 5), (4, 2, 3, 2, 2)], kernel=(3, 2, 2), num_filter=4,
               stride=(2, 1, 2), pad=(1, 1, 0), dilate=(1, 2, 1), num_group=2, no_bias=True),
]


# --- Pooling ---------------------------------------------------------------------------------


def _windows(size, k, s, p, n_out):
    """Per output index: (real start, real end, padded extent) as MXNet's pooling defines them."""
    out = []
    for o in range(n_out):
        start = o * s - p
        end = min(start + k, size + p)
        out.append((max(start, 0), min(end, size), end - start))
    return out


def _lp_root(s, p):
    return np.sign(s) * np.abs(s) ** (1.0 / p)


def _pool_np(x, kernel=None, stride=None, pad=None, pool_type="max", convention="valid",
             global_pool=False, count_include_pad=True, p_value=None):
    one_d = x.ndim == 3
    if one_d:
        x = x[:, :, None, :]
        if not global_pool:
            kernel, stride, pad = (1, *kernel), (1, *(stride or (1,))), (0, *(pad or (0,)))
    n, c, h, w = x.shape
    if global_pool:
        kernel, stride, pad = (h, w), (1, 1), (0, 0)
    stride, pad = stride or (1, 1), pad or (0, 0)
    rnd_fn = math.ceil if convention == "full" else math.floor
    oh = rnd_fn((h + 2 * pad[0] - kernel[0]) / stride[0]) + 1
    ow = rnd_fn((w + 2 * pad[1] - kernel[1]) / stride[1]) + 1
    if convention == "same":   # 1-D, no pad: ceil(w / stride) windows, the last ones cut short
        ow = math.ceil(w / stride[1])
    out = np.zeros((n, c, oh, ow))
    for a, (h0, h1, ph) in enumerate(_windows(h, kernel[0], stride[0], pad[0], oh)):
        for b, (w0, w1, pw) in enumerate(_windows(w, kernel[1], stride[1], pad[1], ow)):
            win = x[:, :, h0:h1, w0:w1]
            if pool_type == "lp":
                out[:, :, a, b] = _lp_root((win ** p_value).sum(axis=(2, 3)), p_value)
            elif pool_type == "max":
                out[:, :, a, b] = win.max(axis=(2, 3))
            elif pool_type == "sum":
                out[:, :, a, b] = win.sum(axis=(2, 3))
            else:
                div = ph * pw if count_include_pad else (h1 - h0) * (w1 - w0)
                out[:, :, a, b] = win.sum(axis=(2, 3)) / div
    return out[:, :, 0, :] if one_d else out


def _pool_case(cid, shape, **params):
    ref_kw = {"kernel": params.get("kernel"), "stride": params.get("stride"), "pad": params.get("pad"),
              "pool_type": params.get("pool_type", "max"),
              "convention": params.get("pooling_convention", "valid"),
              "global_pool": params.get("global_pool", False),
              "count_include_pad": params.get("count_include_pad", True),
              "p_value": params.get("p_value")}
    return Case("Pooling", lambda v: mx.sym.Pooling(v["data"], **params), {"data": rnd(*shape)},
                lambda data: _pool_np(data, **ref_kw), id=cid)


POOL_CASES = [
    _pool_case("max2x2", (1, 2, 4, 4), kernel=(2, 2), stride=(2, 2)),
    _pool_case("max_full_pad", (2, 1, 6, 6), kernel=(3, 3), stride=(2, 2), pad=(1, 1),
               pooling_convention="full"),
    _pool_case("avg_pad", (1, 2, 4, 4), kernel=(3, 3), pad=(1, 1), pool_type="avg"),
    _pool_case("avg_nopad_count", (1, 2, 4, 4), kernel=(3, 3), pad=(1, 1), pool_type="avg",
               count_include_pad=False),
    _pool_case("avg_full", (1, 2, 5, 5), kernel=(2, 2), stride=(2, 2), pool_type="avg",
               pooling_convention="full"),
    _pool_case("sum", (1, 2, 4, 5), kernel=(2, 2), pool_type="sum"),
    _pool_case("global_max", (2, 3, 3, 3), global_pool=True),
    _pool_case("global_avg", (2, 3, 3, 3), global_pool=True, pool_type="avg"),
    _pool_case("max1d", (2, 3, 7), kernel=(3,), stride=(2,)),
    _pool_case("avg1d_pad", (2, 3, 6), kernel=(2,), pad=(1,), pool_type="avg"),
    _pool_case("max1d_same", (2, 3, 11), kernel=(3,), stride=(2,), pooling_convention="same"),
    _pool_case("max1d_same_zero_pad", (1, 2, 10), kernel=(2,), stride=(2,), pad=(0, 0, 0),
               pooling_convention="same"),
    _pool_case("global_avg1d", (2, 3, 5), global_pool=True, pool_type="avg"),
    _pool_case("lp1", (1, 2, 4, 4), kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=1),
    _pool_case("lp2", (1, 2, 4, 4), kernel=(2, 2), stride=(1, 1), pool_type="lp", p_value=2),
    _pool_case("lp3_1d", (2, 2, 6), kernel=(3,), stride=(1,), pool_type="lp", p_value=3),
]


# --- Embedding -------------------------------------------------------------------------------


def _embed_np(data, weight):
    rows = np.clip(np.trunc(data), 0, weight.shape[0] - 1).astype(int)
    return weight[rows]


EMBED_CASES = [
    Case("Embedding", lambda v: mx.sym.Embedding(v["data"], v["weight"], input_dim=5, output_dim=4,
                                                 dtype="float64"),
         {"data": np.array([[0.0, 3.0, 3.0], [4.0, 1.0, 0.0]]), "weight": rnd(5, 4)}, _embed_np,
         no_grad=("data",), id="repeat"),
    Case("Embedding", lambda v: mx.sym.Embedding(v["data"], v["weight"], input_dim=4, output_dim=3,
                                                 dtype="float64"),
         {"data": np.array([7.0, -2.0, 2.0, 1.0]), "weight": rnd(4, 3)}, _embed_np,
         no_grad=("data",), id="clipped"),
]


# --- Dropout (p > 0 in training is tested statistically in tests/test_dropout_exec.py) -------

DROPOUT_CASES = [
    Case("Dropout", lambda v: mx.sym.Dropout(v["x"], p=0.0), {"x": rnd(3, 4)}, lambda x: x,
         is_train=True, id="p0_train"),
    Case("Dropout", lambda v: mx.sym.Dropout(v["x"], p=0.0, mode="always", axes=(1,)),
         {"x": rnd(2, 3, 4)}, lambda x: x, is_train=True, id="p0_always_axes"),
    Case("Dropout", lambda v: mx.sym.Dropout(v["x"], p=0.5), {"x": rnd(3, 4)}, lambda x: x,
         grad="none", id="p05_inference"),
]


# --- LeakyReLU -------------------------------------------------------------------------------

_SELU_A, _SELU_L = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_erf = np.vectorize(math.erf)


def _lrelu_np(kind, slope=0.25, lower=0.125, upper=0.334):
    def ref(data, gamma=None):
        x = data
        neg = {"leaky": slope * x, "rrelu": (lower + upper) / 2 * x, "elu": slope * np.expm1(x),
               "selu": _SELU_A * np.expm1(x)}
        if kind == "gelu":
            return 0.5 * x * (1 + _erf(x / np.sqrt(2)))
        if kind == "prelu":
            lead = (1,) if gamma.ndim == 1 else ()
            g = gamma.reshape(lead + gamma.shape + (1,) * (x.ndim - 2)) if gamma.size > 1 else gamma
            return np.where(x > 0, x, g * x)
        out = np.where(x > 0, x, neg[kind])
        return _SELU_L * out if kind == "selu" else out
    return ref


def _lrelu_case(cid, kind, inputs, **params):
    names = list(inputs)
    p = {k: params[k] for k in ("slope", "lower", "upper") if k in params}
    raw = {"slope": params.get("slope"), "lower_bound": params.get("lower"),
           "upper_bound": params.get("upper")}
    raw = {k: v for k, v in raw.items() if v is not None}
    return Case("LeakyReLU", lambda v: mx.sym.LeakyReLU(*[v[n] for n in names], act_type=kind, **raw),
                inputs, _lrelu_np(kind, **p), id=cid)


LRELU_CASES = [
    _lrelu_case("leaky", "leaky", {"data": rnd(3, 4)}, slope=0.1),
    _lrelu_case("leaky_default", "leaky", {"data": rnd(2, 5)}),
    _lrelu_case("elu", "elu", {"data": rnd(3, 4)}, slope=0.7),
    _lrelu_case("selu", "selu", {"data": rnd(3, 4)}),
    _lrelu_case("gelu", "gelu", {"data": rnd(3, 4)}),
    _lrelu_case("rrelu", "rrelu", {"data": rnd(3, 4)}, lower=0.2, upper=0.4),
    _lrelu_case("prelu", "prelu", {"data": rnd(2, 3, 4), "gamma": R.uniform(0.1, 0.5, 3)}),
    _lrelu_case("prelu_2d", "prelu", {"data": rnd(4, 3), "gamma": R.uniform(0.1, 0.5, 3)}),
    _lrelu_case("prelu_full", "prelu", {"data": rnd(4, 3), "gamma": R.uniform(0.1, 0.5, (4, 3))}),
    _lrelu_case("prelu_nc", "prelu", {"data": rnd(2, 3, 4), "gamma": R.uniform(0.1, 0.5, (2, 3))}),
    _lrelu_case("prelu_shared", "prelu", {"data": rnd(2, 3, 2), "gamma": R.uniform(0.1, 0.5, 1)}),
    Case("LeakyReLU", lambda v: mx.sym.tanh(mx.sym.LeakyReLU(v["data"], act_type="elu")),
         {"data": rnd(3, 4)}, lambda data: np.tanh(_lrelu_np("elu")(data)), id="elu_then_tanh"),
]

CASES = CONV_CASES + POOL_CASES + EMBED_CASES + DROPOUT_CASES + LRELU_CASES
