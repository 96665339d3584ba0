"""Neural-network layers: FullyConnected, Convolution, Pooling, Embedding, Dropout, Activation, LeakyReLU.

Windowed ops (Convolution, Pooling) are channel-first (``NCW``/``NCHW``) with one or two spatial
dimensions; an output length is ``floor((x + 2*pad - dilate*(kernel-1) - 1) / stride) + 1``
(ceil instead of floor for Pooling's ``pooling_convention='full'``).

Execution (gradient rules in :mod:`symjit.ops.nn_grad`, lowerings in :mod:`symjit.lower`):
Convolution, LeakyReLU and Dropout are epilogue anchors, so elementwise ops after them (bias,
activation) run in the same loop. Embedding clips indices to ``[0, input_dim-1]`` after truncation
(a negative index reads row 0); its indices get no gradient. Dropout draws its mask on the CPU
from Numba's random stream (``mx.random.seed`` reseeds it), on a GPU from a hash of each element's
index and a seed the host draws from ``mx.random`` for every launch (:func:`dropout_hash_scale`);
the two targets' masks differ, each is reproducible after ``mx.random.seed``. rrelu always
uses the mean slope ``(lower_bound + upper_bound) / 2`` (MXNet's inference
behaviour), also in training.

>>> import symjit as mx
>>> net = mx.sym.Convolution(mx.sym.Variable('data'), kernel=(3, 3), pad=(1, 1), num_filter=8, name='c')
>>> net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pooling_convention='full')
>>> net.infer_shape(data=(1, 3, 7, 7))[1]
[(1, 8, 4, 4)]
"""
from __future__ import annotations

import math

import numpy as np

from ..base import ParamError, shape_str
from . import conv3d, partial_shape
from . import nn_grad as nl
from .fastmath import sigmoid as fm_sigmoid
from .fastmath import tanh as fm_tanh
from .registry import FLOAT_DTYPES, Kind, OpDef, Param, RuleError, register, unary_shape
from .rules import need_rank, positive, prod, window_out_len, window_params

__all__ = [
    "FullyConnected", "Activation", "Convolution", "Pooling", "Embedding", "Dropout", "LeakyReLU",
    "ACT_TYPES", "LEAKY_ACT_TYPES", "SELU_ALPHA", "SELU_LAMBDA", "RuleError",
]


def _all_positive(v: tuple) -> bool:
    return all(d > 0 for d in v)


def _all_nonneg(v: tuple) -> bool:
    return all(d >= 0 for d in v)


# ---------------------------------------------------------------------------------------------
# FullyConnected: out = data . weight^T + bias, data flattened to 2-D unless flatten=False.


def _fc_args(p: dict) -> list[str]:
    return ["data", "weight"] if p["no_bias"] else ["data", "weight", "bias"]


def _fc_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    nh = p["num_hidden"]
    if data is None:   # as MXNet: nothing is inferred, the parameters included, before data's shape
        return [None] * len(ins), [None], []
    need_rank(data, "data", 1)
    if p["flatten"]:
        in_dim = prod(data[1:])
        out = (data[0], nh)
    else:
        in_dim = data[-1]
        out = (*data[:-1], nh)
    new = [data, (nh, in_dim)] + ([] if p["no_bias"] else [(nh,)])
    return new, [out], []


def _fc_grad(b, node, ograds):
    """dx = dout . W, dW = dout^T . x, db = sum(dout) over rows (all as 2-D views)."""
    dout = ograds[0]
    x, w = node.inputs[0], node.inputs[1]
    p = node.params
    xs = b.g.values[x].shape
    nh = p["num_hidden"]
    in_dim = b.g.values[w].shape[1]
    d2 = dout if len(b.g.values[dout].shape) == 2 else b.add1("Reshape", dout, shape=(-1, nh))
    x2 = x if len(xs) == 2 else b.add1("Reshape", x, shape=(-1, in_dim))
    # weight and bias gradients first: x then dies before dx is computed, so the op consuming dx
    # (e.g. the previous layer's activation gradient) can reuse x's buffer in place
    dw = b.add1("dot", d2, x2, transpose_a=True)
    db = None if p["no_bias"] else b.add1("sum", d2, axis=(0,))
    dx = b.add1("dot", d2, w)
    if b.g.values[dx].shape != xs:
        dx = b.add1("Reshape", dx, shape=xs)
    return [dx, dw] + ([] if db is None else [db])


FullyConnected = register(OpDef(
    name="FullyConnected",
    params=(
        Param("num_hidden", "int", check=positive, check_msg="> 0", doc="number of output units"),
        Param("no_bias", "bool", False, doc="no bias term"),
        Param("flatten", "bool", True, doc="flatten data to 2-D first; else apply to the last axis"),
    ),
    arguments=_fc_args,
    shape=_fc_shape,
    shape_partial=partial_shape.fc,
    dtypes=FLOAT_DTYPES,
    kind=Kind.OUT_ELEMWISE_FUSABLE,
    grad=_fc_grad, extra={"signature_inputs": 3},
    doc="Fully connected layer: ``out = dot(data, weight.T) + bias``.",
))


# ---------------------------------------------------------------------------------------------
# Activation: elementwise, one of five functions.

ACT_TYPES = ("relu", "sigmoid", "tanh", "softrelu", "softsign")


_unary_shape = unary_shape


def act_relu(x: float) -> float:
    """max(x, 0)."""
    return x if x > 0.0 else 0.0


def act_sigmoid(x: float) -> float:
    """1 / (1 + exp(-x)), without overflow for large |x| (vectorizable for float32, see fastmath)."""
    return fm_sigmoid(x)


def act_tanh(x: float) -> float:
    """tanh(x) (vectorizable for float32, see :mod:`symjit.ops.fastmath`)."""
    return fm_tanh(x)


def act_softrelu(x: float) -> float:
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), without overflow."""
    return (x if x > 0.0 else 0.0) + math.log1p(math.exp(-abs(x)))


def act_softsign(x: float) -> float:
    """x / (1 + |x|)."""
    return x / (1.0 + abs(x))


_ACT_BODIES = {"relu": act_relu, "sigmoid": act_sigmoid, "tanh": act_tanh,
               "softrelu": act_softrelu, "softsign": act_softsign}


def _act_body(p: dict):
    return _ACT_BODIES[p["act_type"]], ()


def _act_grad(b, node, ograds):
    """An elementwise ``_backward_Activation(dout, y)`` (softsign reads x instead of y)."""
    src = node.inputs[0] if node.params["act_type"] == "softsign" else node.outputs[0]
    return [b.add1("_backward_Activation", ograds[0], src, act_type=node.params["act_type"])]


Activation = register(OpDef(
    name="Activation",
    params=(Param("act_type", "str", choices=ACT_TYPES, doc="activation function"),),
    shape=_unary_shape,
    kind=Kind.ELEMWISE,
    body=_act_body,
    grad=_act_grad,
    doc="Elementwise activation: relu, sigmoid, tanh, softrelu (log(1+exp(x))) or softsign (x/(1+|x|)).",
))


def act_relu_grad(g, y):
    return g if y > 0 else 0.0 * g


def act_sigmoid_grad(g, y):
    return g * y * (1.0 - y)


def act_tanh_grad(g, y):
    return g * (1.0 - y * y)


def act_softrelu_grad(g, y):
    return g * -math.expm1(-y)   # sigmoid(x) written with y = log(1 + exp(x))


def act_softsign_grad(g, x):
    d = 1.0 + abs(x)
    return g / (d * d)


_ACT_GRADS = {"relu": act_relu_grad, "sigmoid": act_sigmoid_grad, "tanh": act_tanh_grad,
              "softrelu": act_softrelu_grad, "softsign": act_softsign_grad}


def _binary_same_shape(p: dict, ins: list, aux: list):
    known = next((s for s in ins if s is not None), None)
    return [known, known], [known], []


register(OpDef(
    name="_backward_Activation",
    params=(Param("act_type", "str", choices=ACT_TYPES),),
    arguments=("ograd", "data"),
    shape=_binary_same_shape,
    kind=Kind.ELEMWISE,
    body=lambda p: (_ACT_GRADS[p["act_type"]], ()),
    extra={"backward_of": "Activation"},
    doc="Activation's gradient from the head gradient and the output (the input for softsign).",
))


# ---------------------------------------------------------------------------------------------
# Shared by Convolution and Pooling: geometry params and layout checks.

_LAYOUTS = ("NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC")
_SUPPORTED_LAYOUTS = ("NCW", "NCHW")


def _window_param(name: str, doc: str, nonneg: bool = False) -> Param:
    if nonneg:
        return Param(name, "shape", (), check=_all_nonneg, check_msg="entries >= 0", doc=doc)
    return Param(name, "shape", (), check=_all_positive, check_msg="entries > 0", doc=doc)


def _check_geometry(op: str, p: dict, names: tuple[str, ...], dims: tuple[int, ...] = (1, 2)) -> None:
    """kernel has one of ``dims`` dims; each of ``names`` is empty or has as many entries as kernel."""
    k = p["kernel"]
    if len(k) not in dims:
        shown = " or ".join(str(d) for d in dims)
        raise ParamError(f"{op}: parameter 'kernel' must have {shown} entries "
                         f"({'-D, '.join(str(d) for d in dims)}-D {op.lower()}), got kernel={shape_str(k)}")
    for name in names:
        v = p[name]
        if v and len(v) != len(k):
            raise ParamError(f"{op}: parameter '{name}'={shape_str(v)} must have {len(k)} entries "
                             f"like kernel={shape_str(k)}")


def _check_layout(op: str, layout: str | None, nd: int | None,
                  supported: tuple[str, ...] = _SUPPORTED_LAYOUTS) -> None:
    if layout is None:
        return
    if layout not in supported:
        raise ParamError(f"{op}: parameter 'layout'={layout!r} is not supported: only channel-first "
                         f"layouts {list(supported)} are")
    if nd is not None and len(layout) != nd + 2:
        raise ParamError(f"{op}: parameter 'layout'={layout!r} does not fit a {nd}-D kernel")


def _spatial_out(data: tuple, kernel: tuple, p: dict, ceil: bool = False) -> tuple[int, ...]:
    """Output spatial dims of a window over ``data`` (N, C, *spatial)."""
    nd = len(kernel)
    stride, dilate, pad = window_params(p, nd)
    out = []
    for i in range(nd):
        try:
            out.append(window_out_len(data[2 + i], kernel[i], stride[i], dilate[i], pad[i], ceil))
        except RuleError as exc:
            raise RuleError(f"argument 'data' of shape {shape_str(data)}, spatial axis {2 + i}: "
                            f"{exc}") from None
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Convolution (1-D/2-D, channel-first): weight (num_filter, C/num_group, *kernel).


def _conv_check(p: dict) -> None:
    _check_geometry("Convolution", p, ("stride", "dilate", "pad"), (1, 2, 3))
    if p["num_filter"] % p["num_group"]:
        raise ParamError(f"Convolution: parameter 'num_filter'={p['num_filter']} must be divisible by "
                         f"num_group={p['num_group']}")
    _check_layout("Convolution", p["layout"], len(p["kernel"]), _SUPPORTED_LAYOUTS + ("NCDHW",))


def _conv_args(p: dict) -> list[str]:
    return ["data", "weight"] if p["no_bias"] else ["data", "weight", "bias"]


def _conv_shape(p: dict, ins: list, aux: list):
    k, nf, g = p["kernel"], p["num_filter"], p["num_group"]
    bias = [] if p["no_bias"] else [(nf,)]
    data = ins[0]
    if data is None:   # as MXNet: nothing is inferred, the parameters included, before data's shape
        return [None] * len(ins), [None], []
    nd = len(k)
    need_rank(data, "data", (nd + 2,), f" (N, C, *spatial) for kernel {shape_str(k)}")
    c = data[1]
    if c % g:
        raise RuleError(f"argument 'data' of shape {shape_str(data)} has {c} channels, "
                        f"not divisible by num_group={g}")
    out = _spatial_out(data, k, p)
    return [data, (nf, c // g, *k), *bias], [(data[0], nf, *out)], []


Convolution = register(OpDef(
    name="Convolution",
    params=(
        Param("kernel", "shape", check=_all_positive, check_msg="entries > 0",
              doc="window size (h, w) or (w,)"),
        _window_param("stride", "window stride, default 1 per axis"),
        _window_param("dilate", "kernel dilation, default 1 per axis"),
        _window_param("pad", "zero padding on both sides, default 0 per axis", nonneg=True),
        Param("num_filter", "int", check=positive, check_msg="> 0", doc="number of output channels"),
        Param("num_group", "int", 1, check=positive, check_msg="> 0", doc="number of channel groups"),
        Param("workspace", "int", 1024, check=lambda v: v >= 0, check_msg=">= 0",
              doc="workspace limit in MB (accepted, unused)"),
        Param("no_bias", "bool", False, doc="no bias term"),
        Param("cudnn_tune", "str", None, choices=("off", "limited_workspace", "fastest"), nullable=True,
              doc="cuDNN algorithm choice (accepted, unused)"),
        Param("cudnn_off", "bool", False, doc="turn off cuDNN (accepted, unused)"),
        Param("layout", "str", None, choices=_LAYOUTS, nullable=True,
              doc="data layout; only NCW/NCHW are supported"),
    ),
    arguments=_conv_args,
    shape=_conv_shape,
    shape_partial=partial_shape.convolution,
    dtypes=FLOAT_DTYPES,
    check=_conv_check,
    kind=Kind.OUT_ELEMWISE_FUSABLE,
    grad=nl.conv_grad, extra={"signature_inputs": 3, "expand_if": (conv3d.is_3d, conv3d.conv3d_expand)},
    doc="1-D, 2-D or 3-D convolution over channel-first data (N, C, [[D,] H,] W) with a "
        "(num_filter, C/num_group, *kernel) weight and an optional (num_filter,) bias (3-D: a sum "
        "of 2-D convolutions over the depth taps, symjit.ops.conv3d).",
))


# ---------------------------------------------------------------------------------------------
# Pooling (1-D/2-D, channel-first; global pooling reduces every spatial axis to 1).

POOL_TYPES = ("max", "avg", "sum", "lp")


def _pool_check(p: dict) -> None:
    k = p["kernel"]
    if not k and not p["global_pool"]:
        raise ParamError("Pooling: parameter 'kernel' is required unless global_pool=True")
    same = p["pooling_convention"] == "same"
    if k:   # 'same' takes no pad: any number of zeros is accepted, as MXNet (pad=(0, 0, 0))
        _check_geometry("Pooling", p, ("stride",) if same else ("stride", "pad"))
    if same:
        if len(k) != 1:
            raise ParamError(f"Pooling: pooling_convention='same' is for 1-D pooling (a kernel of one "
                             f"entry), got kernel {shape_str(k)}")
        if any(p["pad"] or ()):
            raise ParamError(f"Pooling: pooling_convention='same' takes no pad, got pad "
                             f"{shape_str(p['pad'])}")
    if p["pool_type"] == "lp" and p["p_value"] is None:
        raise ParamError("Pooling: parameter 'p_value' is required for pool_type='lp'")
    _check_layout("Pooling", p["layout"], len(k) if k else None)


def _pool_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    if p["global_pool"]:
        need_rank(data, "data", (3, 4), " (N, C, W) or (N, C, H, W) for global pooling")
        if p["layout"] is not None and len(p["layout"]) != len(data):
            raise RuleError(f"layout={p['layout']!r} does not fit argument 'data' of shape {shape_str(data)}")
        return [data], [(*data[:2], *(1,) * (len(data) - 2))], []
    k = p["kernel"]
    need_rank(data, "data", (len(k) + 2,), f" (N, C, *spatial) for kernel {shape_str(k)}")
    if p["pooling_convention"] == "same":   # ceil(width / stride) windows, the last ones cut short
        need_rank(data, "data", (3,), " (N, C, W) for pooling_convention='same'")
        return [data], [(*data[:2], -(-data[2] // (p["stride"] or (1,))[0]))], []
    out = _spatial_out(data, k, p, ceil=p["pooling_convention"] == "full")
    return [data], [(*data[:2], *out)], []


Pooling = register(OpDef(
    name="Pooling",
    params=(
        Param("kernel", "shape", (), check=_all_positive, check_msg="entries > 0",
              doc="window size (h, w) or (w,); ignored with global_pool"),
        Param("pool_type", "str", "max", choices=POOL_TYPES, doc="pooling function"),
        Param("global_pool", "bool", False, doc="pool over all spatial positions (output 1x1)"),
        Param("cudnn_off", "bool", False, doc="turn off cuDNN (accepted, unused)"),
        Param("pooling_convention", "str", "valid", choices=("valid", "full", "same"),
              doc="'valid' rounds the output length down, 'full' rounds it up; 'same' (1-D, no pad): "
                  "ceil(width / stride) windows"),
        _window_param("stride", "window stride, default 1 per axis"),
        _window_param("pad", "padding on both sides, default 0 per axis", nonneg=True),
        Param("p_value", "int", None, nullable=True, check=positive, check_msg="> 0",
              doc="the p of pool_type='lp'"),
        Param("count_include_pad", "bool", None, nullable=True,
              doc="avg pooling divides by the full window, padding included (None means True)"),
        Param("layout", "str", None, choices=_LAYOUTS, nullable=True,
              doc="data layout; only NCW/NCHW are supported"),
    ),
    shape=_pool_shape,
    dtypes=FLOAT_DTYPES,
    check=_pool_check,
    kind=Kind.OPAQUE,
    grad=nl.pool_grad,
    doc="1-D or 2-D max/avg/sum/lp pooling over channel-first data; global_pool pools every "
        "spatial axis to 1. lp: (sum of x**p over the window)**(1/p), the root sign-preserving "
        "for odd p (cbrt for p=3).",
))


# ---------------------------------------------------------------------------------------------
# Embedding: out = weight[data] with data holding (float or int) row indices.


def _emb_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:   # as MXNet: the weight's shape is inferred once data's is known
        return [None, None], [None], []
    return [data, (p["input_dim"], p["output_dim"])], [(*data, p["output_dim"])], []


def _emb_dtype(p: dict, ins: list, aux: list):
    dt = np.dtype(p["dtype"])
    data = ins[0]
    if data is None:
        data = np.dtype("float32")  # an untyped index variable is float32, as in MXNet
    elif data.kind not in "fiu":
        raise RuleError(f"argument 'data' must have a numeric dtype, got {data.name}")
    return [data, dt], [dt], []


Embedding = register(OpDef(
    name="Embedding",
    params=(
        Param("input_dim", "int", check=positive, check_msg="> 0", doc="vocabulary size (rows of weight)"),
        Param("output_dim", "int", check=positive, check_msg="> 0", doc="embedding size"),
        Param("dtype", "dtype", "float32", doc="dtype of weight and output"),
        Param("sparse_grad", "bool", False, doc="row-sparse weight gradient (accepted, dense here)"),
    ),
    arguments=("data", "weight"),
    shape=_emb_shape,
    shape_partial=partial_shape.embedding,
    dtype=_emb_dtype,
    kind=Kind.INJECTIVE,
    grad=nl.embed_grad,
    doc="Row lookup: ``out[..., :] = weight[data[...], :]``; output shape data.shape + (output_dim,).",
))


# ---------------------------------------------------------------------------------------------
# Dropout: hidden 'mask' output (1 on the broadcast 'axes').


def _dropout_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None, None], []
    axes = set()
    for a in p["axes"]:
        if not -len(data) <= a < len(data):
            raise RuleError(f"axes entry {a} is out of range for argument 'data' of shape {shape_str(data)}")
        axes.add(a % len(data))
    mask = tuple(1 if i in axes else d for i, d in enumerate(data))
    return [data], [data, mask], []


def dropout_active(node) -> bool:
    """True when a Dropout node draws a mask (a training pass, or ``mode='always'``)."""
    return node.params["mode"] == "always" or bool(node.train)


def dropout_hash_scale(seed: int, i: int, p: float) -> float:
    """The mask value of element ``i`` under ``seed``: ``1/(1-p)`` with probability ``1-p``, else
    0 (NaN for every element when ``p = 1``), from a counter-based hash (murmur3's 32-bit
    finaliser of ``i * golden + seed``), so any thread computes any element's mask with no RNG
    state. A scalar body (GPU targets): integer arithmetic masked to 32 bits stays exact in int64
    even where a product wraps.

    >>> [dropout_hash_scale(7, i, 0.5) for i in range(6)]
    [2.0, 2.0, 0.0, 0.0, 2.0, 0.0]
    """
    m = 0xFFFFFFFF
    h = (i * 0x9E3779B1 + seed) & m
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    h ^= h >> 16
    keep = 1.0 - p
    if keep <= 0.0:                          # p = 1: 0 * (1/0), NaN as in MXNet
        return math.nan
    if h * 2.3283064365386963e-10 < keep:   # h / 2**32 is uniform in [0, 1)
        return 1.0 / keep
    return 0.0


Dropout = register(OpDef(
    name="Dropout",
    params=(
        Param("p", "float", 0.5, check=lambda v: 0.0 <= v <= 1.0, check_msg="in [0, 1]",
              doc="fraction of the input that is zeroed"),
        Param("mode", "str", "training", choices=("training", "always"),
              doc="'training': only in training passes; 'always': also at inference"),
        Param("axes", "shape", (), doc="axes along which the mask is shared (variational dropout)"),
        Param("cudnn_off", "bool", False, nullable=True, doc="turn off cuDNN (accepted, unused)"),
    ),
    outputs=("output", "mask"),
    visible_outputs=1,
    shape=_dropout_shape,
    kind=Kind.OUT_ELEMWISE_FUSABLE,
    grad=nl.dropout_grad,
    extra={"reads_mode": True},
    doc="Dropout: zeroes each element with probability p and scales the rest by 1/(1-p) in "
        "training (p = 1: every output NaN, 0 * 1/0, as in MXNet); identity at inference "
        "(mode='training').",
))


# ---------------------------------------------------------------------------------------------
# LeakyReLU: leaky, prelu (learned per-channel slope 'gamma'), rrelu, elu, selu, gelu.

LEAKY_ACT_TYPES = ("rrelu", "leaky", "prelu", "elu", "selu", "gelu")
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_LAMBDA = 1.0507009873554804934193349852946


def lrelu_leaky(x: float, slope: float) -> float:
    """x if x > 0 else slope * x."""
    return x if x > 0.0 else slope * x


def lrelu_elu(x: float, slope: float) -> float:
    """x if x > 0 else slope * (exp(x) - 1)."""
    return x if x > 0.0 else slope * math.expm1(x)


def lrelu_selu(x: float, alpha: float, scale: float) -> float:
    """scale * (x if x > 0 else alpha * (exp(x) - 1))."""
    return scale * (x if x > 0.0 else alpha * math.expm1(x))


def lrelu_gelu(x: float) -> float:
    """x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))."""
    return 0.5 * x * (1.0 + math.erf(x * 0.7071067811865476))


def _lrelu_body(p: dict):
    """The scalar body, or None for prelu (second, per-channel input: see nn_grad.prelu_forward).

    rrelu is leaky with the mean slope ``(lower_bound + upper_bound) / 2`` in every mode: symjit
    does not sample random slopes in training (MXNet does)."""
    t = p["act_type"]
    if t == "leaky":
        return lrelu_leaky, (p["slope"],)
    if t == "elu":
        return lrelu_elu, (p["slope"],)
    if t == "selu":
        return lrelu_selu, (SELU_ALPHA, SELU_LAMBDA)
    if t == "gelu":
        return lrelu_gelu, ()
    if t == "rrelu":
        return lrelu_leaky, (nl.rrelu_slope(p),)
    return None


def _lrelu_args(p: dict) -> list[str]:
    return ["data", "gamma"] if p["act_type"] == "prelu" else ["data"]


def _lrelu_outputs(p: dict) -> list[str]:
    return ["output", "mask"] if p["act_type"] == "rrelu" else ["output"]


def _lrelu_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    outs = [data, data] if p["act_type"] == "rrelu" else [data]
    if p["act_type"] != "prelu":
        return [data], outs, []
    gamma = ins[1]
    if data is None:
        return [data, gamma], outs, []
    if gamma is None:  # as MXNet: one slope per channel (axis 1)
        need_rank(data, "data", 2, " for act_type='prelu' (channel axis 1)")
        return [data, (data[1],)], outs, []
    if len(gamma) == 0 or nl.prelu_gamma_axes(data, gamma) is None:
        forms = f"(C,) = {shape_str(data[1:2])}, (1,)" + (
            f" or (N, C) = {shape_str(data[:2])}" if len(data) > 1 else "")
        raise RuleError(f"argument 'gamma' of shape {shape_str(gamma)} does not broadcast to data "
                        f"of shape {shape_str(data)}: it must be {forms}, or 1 along an axis")
    return [data, gamma], outs, []


LeakyReLU = register(OpDef(
    name="LeakyReLU",
    params=(
        Param("act_type", "str", "leaky", choices=LEAKY_ACT_TYPES, doc="activation function"),
        Param("slope", "float", 0.25, doc="negative slope of leaky, alpha of elu"),
        Param("lower_bound", "float", 0.125, doc="lower bound of rrelu's random slope"),
        Param("upper_bound", "float", 0.334, doc="upper bound of rrelu's random slope"),
    ),
    arguments=_lrelu_args,
    outputs=_lrelu_outputs,
    visible_outputs=1,
    shape=_lrelu_shape,
    kind=Kind.OUT_ELEMWISE_FUSABLE,
    body=_lrelu_body,
    grad=nl.lrelu_grad,
    # as MXNet: prelu's gamma, unless its variable says otherwise, starts at 0.25
    extra={"input_var_attrs": {"gamma": {"__init__": '["Constant", {"value": 0.25}]'}}},
    doc="Leaky rectifiers: leaky (x>0 ? x : slope*x), prelu (slope gamma per channel, axis 1; "
        "gamma (C,), (1,) or (N, C) as axes 0 and 1 of data), "
        "rrelu (symjit: always the mean slope (lower_bound+upper_bound)/2, MXNet's inference "
        "behaviour; MXNet samples a random slope per element in training), "
        "elu (slope*(exp(x)-1) for x<=0), selu and gelu (erf form).",
))


# ---------------------------------------------------------------------------------------------
# Internal backward ops (tested through the forward ops' backward cases).


def _like_input(index: int):
    """Shape rule: one output shaped like input ``index`` (the others are left as given)."""
    def rule(p: dict, ins: list, aux: list):
        return list(ins), [ins[index]], []
    return rule


def _conv_bias_shape(p: dict, ins: list, aux: list):
    return [ins[0]], [(p["num_filter"],)], []


def _backward_op(name: str, of: str, **fields) -> OpDef:
    return register(OpDef(name=name, extra={"backward_of": of, **fields.pop("extra", {})}, **fields))


_backward_op("_backward_Convolution_data", "Convolution", params=Convolution.params,
             arguments=("ograd", "data", "weight"), shape=_like_input(1),
             doc="Convolution's data gradient: transposed convolution of the head gradient.")
_backward_op("_backward_Convolution_weight", "Convolution", params=Convolution.params,
             arguments=("ograd", "data", "weight"), shape=_like_input(2),
             doc="Convolution's weight gradient: sum over images of ograd x im2col(data)^T.")
_backward_op("_backward_Convolution_bias", "Convolution", params=Convolution.params,
             arguments=("ograd",), shape=_conv_bias_shape,
             doc="Convolution's bias gradient: the head gradient summed over all axes but 1.")
_backward_op("_backward_Pooling", "Pooling", params=Pooling.params, arguments=nl.pool_args,
             shape=_like_input(1),
             doc="Pooling's gradient (max: to the first maximum of each window, recomputed).")


def _emb_back_shape(p: dict, ins: list, aux: list):
    return list(ins), [(p["input_dim"], p["output_dim"])], []


def _emb_back_dtype(p: dict, ins: list, aux: list):
    return list(ins), [ins[0]], []


_backward_op("_backward_Embedding", "Embedding",
             params=(Param("input_dim", "int", check=positive, check_msg="> 0"),
                     Param("output_dim", "int", check=positive, check_msg="> 0")),
             arguments=("ograd", "data"), shape=_emb_back_shape, dtype=_emb_back_dtype,
             kind=Kind.OPAQUE,
             doc="Embedding's weight gradient: rows of ograd scatter-added at the (clipped) indices.")


def lrelu_leaky_grad(g: float, x: float, slope: float) -> float:
    return g if x > 0.0 else g * slope


def lrelu_elu_grad(g: float, x: float, slope: float) -> float:
    return g if x > 0.0 else g * slope * math.exp(x)


def lrelu_selu_grad(g: float, x: float, alpha: float, scale: float) -> float:
    return g * scale if x > 0.0 else g * scale * alpha * math.exp(x)


def lrelu_gelu_grad(g: float, x: float) -> float:
    cdf = 0.5 * (1.0 + math.erf(x * 0.7071067811865476))
    pdf = math.exp(-0.5 * x * x) * 0.3989422804014327
    return g * (cdf + x * pdf)


def prelu_gamma_grad(g: float, x: float) -> float:
    return 0.0 * g if x > 0.0 else g * x


def _lrelu_grad_body(p: dict):
    t = p["act_type"]
    if t == "elu":
        return lrelu_elu_grad, (p["slope"],)
    if t == "selu":
        return lrelu_selu_grad, (SELU_ALPHA, SELU_LAMBDA)
    if t == "gelu":
        return lrelu_gelu_grad, ()
    slope = nl.rrelu_slope(p) if t == "rrelu" else p["slope"]
    return lrelu_leaky_grad, (slope,)


_backward_op("_backward_LeakyReLU", "LeakyReLU", params=LeakyReLU.params,
             arguments=("ograd", "data"), shape=_binary_same_shape, kind=Kind.ELEMWISE,
             body=_lrelu_grad_body,
             doc="LeakyReLU's data gradient (leaky, rrelu, elu, selu, gelu) from ograd and the input.")


def _prelu_back_shape(p: dict, ins: list, aux: list):
    return list(ins), [ins[1]], []


_backward_op("_backward_PReLU_data", "LeakyReLU", arguments=("ograd", "data", "gamma"),
             shape=_prelu_back_shape, kind=Kind.OUT_ELEMWISE_FUSABLE,
             doc="prelu's data gradient: ograd where data > 0, else ograd * gamma[channel].")
_backward_op("_backward_PReLU_gamma", "LeakyReLU", arguments=("ograd", "data"),
             shape=_binary_same_shape, kind=Kind.ELEMWISE, body=lambda p: (prelu_gamma_grad, ()),
             doc="prelu's per-element gamma contribution ograd * min(data, 0) (summed by the rule).")
