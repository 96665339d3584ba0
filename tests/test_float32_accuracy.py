"""Float32 kernels as accurate as a direct float32 computation: each long sum of the register tiles
is summed in blocks (from 0 in registers, then added to the output), so its rounding error stays
within a small factor of a direct convolution's (one float32 GEMM per window tap, the taps summed
in float32, as oneDNN's direct kernels accumulate) and of BLAS's GEMM, against float64 runs of the
same inputs. ``benchmarks/bench_conv_numerics.py`` measures every convolution form the same way."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.cpu.conv_shapes import vec_tile
from symjit.kernels.cpu.conv_vec import MR, tile_gemm

import symjit as mx
from symjit.lower.cpu.nn import _forward_kind, _gradient_kind
from symjit.ops.registry import get_op

from .partsrun import in_parts

needs_tile = pytest.mark.skipif(vec_tile()[0] == 0, reason="the host has neither AVX2 nor AVX-512")


def _error(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())


@needs_tile
@pytest.mark.parametrize("depth", [2304, 4608])
def test_tile_gemm_long_sums_are_as_accurate_as_blas(depth):
    rng = np.random.default_rng(depth)
    rows, cols = 2 * MR, 64
    worst_tile, worst_blas = 0.0, 0.0
    for _ in range(3):
        a = rng.standard_normal((rows, depth)).astype(np.float32)
        b = np.abs(rng.standard_normal((depth, cols))).astype(np.float32)   # like relu outputs
        ref = a.astype(np.float64) @ b.astype(np.float64)
        out = np.full((rows, cols), np.nan, np.float32)
        tile_gemm(a.reshape(-1), 0, depth, 1, b.reshape(-1), 0, cols, rows, cols, depth,
                  out.reshape(-1), 0, cols, True)
        worst_tile = max(worst_tile, _error(out, ref))
        worst_blas = max(worst_blas, _error(a @ b, ref))
    assert worst_tile <= 2.0 * worst_blas, (worst_tile, worst_blas)


def _direct(x, w, head, pad, dtype=np.float32):
    """A direct convolution at stride 1 and its data gradient, one GEMM per tap in ``dtype``
    (float32: the error to compare with; float64: the reference)."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    x, w, head = (a.astype(dtype) for a in (x, w, head))
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), dtype)
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    out = np.zeros(head.shape, dtype)
    dxp = np.zeros_like(xp)
    oh, ow = head.shape[2:]
    for i in range(k):
        for j in range(k):
            win = (slice(None), slice(None), slice(i, i + oh), slice(j, j + ow))
            out += np.einsum("fc,nchw->nfhw", w[:, :, i, j], xp[win], dtype=dtype)
            dxp[win] += np.einsum("fc,nfhw->nchw", w[:, :, i, j], head, dtype=dtype)
    return out, dxp[:, :, pad:pad + h, pad:pad + wd]


def _bound(x, w, head, dtype):
    sym = mx.sym.Convolution(mx.sym.Variable("x"), mx.sym.Variable("w"), kernel=(3, 3), pad=(1, 1),
                             num_filter=w.shape[0], no_bias=True)
    ex = sym.simple_bind(mx.cpu(), x=x.shape, w=w.shape, type_dict={"x": dtype, "w": dtype},
                         grad_req={"x": "write", "w": "null"})
    ex.arg_dict["x"][:] = x
    ex.arg_dict["w"][:] = w
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(mx.nd.array(head, dtype=dtype))
    return out, ex.grad_dict["x"].asnumpy()


@needs_tile
@pytest.mark.parametrize("x_shape, filters", [((2, 256, 14, 14), 256), ((2, 512, 7, 7), 512)])
def test_tile_convolutions_are_as_accurate_as_a_direct_one(x_shape, filters, wide_tile_rule):
    """ResNet's 3x3 layers at batch 2 (the tiles take their forward, and the 14 x 14 layer's data
    gradient): 2304- and 4608-term sums, within 2x a direct float32 convolution's error."""
    prm = get_op("Convolution").parse_params({"kernel": "(3, 3)", "pad": "(1, 1)",
                                              "num_filter": str(filters), "no_bias": "True"})
    w_shape = (filters, x_shape[1], 3, 3)
    out_shape = (x_shape[0], filters, *x_shape[2:])
    assert _forward_kind(x_shape, w_shape, out_shape, prm, np.dtype("float32")) == "forward_vec"
    data_vec = _gradient_kind("backward_data", x_shape, w_shape, out_shape, prm,
                              np.dtype("float32")) == "backward_data_vec"
    rng = np.random.default_rng(filters)
    x = np.maximum(rng.standard_normal(x_shape), 0).astype(np.float32)
    w = (rng.standard_normal(w_shape) / np.sqrt(9 * x_shape[1])).astype(np.float32)
    head = rng.standard_normal(out_shape).astype(np.float32)
    ref_out, ref_dx = _direct(x, w, head, 1, np.float64)    # numpy's float64 sums: the reference
    out, dx = _bound(x, w, head, "float32")
    direct_out, direct_dx = _direct(x, w, head, 1)
    assert _error(out, ref_out) <= 2.0 * _error(direct_out, ref_out)
    limit = 2.0 if data_vec else 4.0   # the tiles' data gradient; else im2col + BLAS
    assert _error(dx, ref_dx) <= limit * _error(direct_dx, ref_dx)


def _beta_on_the_edge(x: np.ndarray) -> np.float32:
    """A float32 beta that puts one BatchNorm output (fix_gamma, eps 1e-5) of the single channel
    of ``x`` on different sides of 0 when normalised with the float64 batch statistics and with
    them rounded to float32."""
    x64 = x.astype(np.float64).reshape(-1)
    m64, inv64 = x64.mean(), 1.0 / np.sqrt(x64.var() + 1e-5)
    m32, inv32 = float(np.float32(m64)), float(np.float32(inv64))
    for xi in x64:
        b = np.float32(-(xi - m64) * inv64)
        for _ in range(64):
            v64, v32 = (xi - m64) * inv64 + float(b), (xi - m32) * inv32 + float(b)
            if (v64 > 0) != (v32 > 0):
                return b
            b = np.nextafter(b, np.float32(np.inf) if v64 <= 0 else np.float32(-np.inf))
    raise AssertionError("no element of x lies on the edge")


CONTEXTS = [pytest.param(mx.cpu(), id="cpu"), pytest.param(mx.gpu(0), id="cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("ctx", CONTEXTS)
def test_batchnorm_relu_gradient_masks_the_forwards_zeros(ctx):
    """relu(BatchNorm(x)) in training: the fused gradient recomputes the relu's mask from ``x`` and
    the saved (float32) statistics, so the forward normalises with those same numbers; with a
    beta that puts an output on the edge, beta's gradient for a head of ones counts exactly the
    forward's positive outputs."""
    shape = (2, 1, 7, 7)
    x = (np.random.default_rng(0).standard_normal(shape) * 0.7 + 2.3).astype(np.float32)
    beta = _beta_on_the_edge(x)
    net = mx.sym.Activation(mx.sym.BatchNorm(mx.sym.Variable("x"), fix_gamma=True, eps=1e-5, name="bn"),
                            act_type="relu")
    ex = net.simple_bind(ctx, x=shape, type_dict={"x": "float32"})
    ex.arg_dict["x"][:] = x
    ex.arg_dict["bn_gamma"][:] = 1.0
    ex.arg_dict["bn_beta"][:] = np.array([beta], np.float32)
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(mx.nd.ones(shape, ctx=ctx))
    assert ex.grad_dict["bn_beta"].asnumpy()[0] == (out > 0).sum()


def _basic_block(x, name: str, width: int, stride: int, down: bool):
    """ResNet v1's basic block: conv-BN-relu-conv-BN, the shortcut (a strided 1x1 conv-BN when
    ``down``) added, relu."""
    def conv_bn(v, tag, kernel, s, pad):
        v = mx.sym.Convolution(v, kernel=(kernel, kernel), stride=(s, s), pad=(pad, pad), num_filter=width,
                               no_bias=True, name=f"{name}{tag}_conv")
        return mx.sym.BatchNorm(v, fix_gamma=False, eps=1e-5, name=f"{name}{tag}_bn")
    y = mx.sym.Activation(conv_bn(x, "a", 3, stride, 1), act_type="relu")
    y = conv_bn(y, "b", 3, 1, 1)
    short = conv_bn(x, "_down", 1, stride, 0) if down else x
    return mx.sym.Activation(y + short, act_type="relu")


def _head(x, classes: int):
    """Global average pooling, a FullyConnected layer and SoftmaxOutput: the nets' head."""
    x = mx.sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(7, 7))
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=classes, name="fc"),
                                name="softmax")


def _gradient_errors(net, data_shape: tuple, seed: int) -> list[float]:
    """One training step of ``net`` (relu'd N(0, 1) data, Xavier-uniform weights, BatchNorm's gamma
    1 and beta 0) in float32 and in float64 on the same numbers: per argument gradient
    ``max |g32 - g64| / max(max |g64|, 1e-2 * the largest gradient)``, sorted."""
    rng = np.random.default_rng(seed)
    shapes = {"data": data_shape, "softmax_label": (data_shape[0],)}
    arg_shapes, _, _ = net.infer_shape(**shapes)
    classes = arg_shapes[net.list_arguments().index("fc_weight")][0]
    values = {"data": np.maximum(rng.standard_normal(shapes["data"]), 0),
              "softmax_label": rng.integers(0, classes, data_shape[0]).astype(np.float64)}
    for name, shape in zip(net.list_arguments(), arg_shapes):
        if name in shapes:
            continue
        if name.endswith("gamma"):
            values[name] = np.ones(shape)
        elif name.endswith(("beta", "bias")):
            values[name] = np.zeros(shape)
        else:
            scale = np.sqrt(6.0 / (np.prod(shape[1:]) + shape[0] * np.prod(shape[2:])))
            values[name] = rng.uniform(-scale, scale, shape)
    values = {k: v.astype(np.float32).astype(np.float64) for k, v in values.items()}

    def grads(dtype):
        ex = net.simple_bind(mx.cpu(), type_dict={n: dtype for n in net.list_arguments()}, **shapes)
        for name, arr in ex.arg_dict.items():
            arr[:] = values[name]
        ex.forward(is_train=True)
        ex.backward()
        return {n: g.asnumpy().astype(np.float64) for n, g in ex.grad_dict.items() if n not in shapes}

    g64, g32 = grads("float64"), grads("float32")
    big = max(np.abs(g).max() for g in g64.values())
    return sorted(float(np.abs(g32[n] - g64[n]).max() / max(np.abs(g64[n]).max(), 1e-2 * big)) for n in g64)


def test_resnet_v1_basic_block_on_7x7_maps_has_float32_gradients_within_rounding():
    """One ResNet v1 basic block (512 channels, 7 x 7 maps, batch 2: each BatchNorm channel sums
    98 positions) with its head: the kernels of its training step's backward (the convolutions'
    gradients, the fused BatchNorm/relu and add/relu gradients) keep every float32 gradient within
    rounding of the float64 run: observed 5.5e-7 of an array's largest value, bounded at 5e-6,
    far below MXNet 1.9.1's float32 error on ResNet-18 v1 (worst 0.041, median 0.0035). These
    inputs keep every relu input at least 50 times the forward's float32 error (3e-7) away from
    0, so no relu mask differs between the two runs (a flip moves a gradient by up to 0.1 of its
    array on 7 x 7 maps at batch 2: ``bench_float32_grads.py``) and the bound sees only the
    kernels' rounding."""
    net = _head(_basic_block(mx.sym.Variable("data"), "b", 512, 1, False), 10)
    errors = _gradient_errors(net, (2, 512, 7, 7), 0)
    assert errors[-1] <= 5e-6 and errors[len(errors) // 2] <= 2e-6, errors


def test_resnet_v1_stage_on_7x7_maps_trains_in_float32_like_float64():
    """ResNet-18 v1's last stage (256 -> 512 channels, 14 x 14 -> 7 x 7, two basic blocks) with its
    head, batch 2, Xavier weights: one training step's float32 gradients against float64, by
    ``max |g32 - g64| / max(max |g64|, 1e-2 * the largest gradient)`` per array, within the worst
    and median error MXNet 1.9.1's float32 shows on the whole ResNet-18 v1 (0.041 and 0.0035).
    These inputs put a relu input within float32's error of 0: its sign flips between the two
    runs (float32's own, whatever the kernels; see ``bench_float32_grads.py``), which sets the
    worst error (0.024) and reaches the arrays below it (median 9e-4); the rest is rounding."""
    x = _basic_block(mx.sym.Variable("data"), "s4b1", 512, 2, True)
    x = _basic_block(x, "s4b2", 512, 1, False)
    errors = _gradient_errors(_head(x, 100), (2, 256, 14, 14), 4)
    assert errors[-1] <= 0.041 and errors[len(errors) // 2] <= 0.0035, errors


def _weight_reference(x, dout, k, pad, groups):
    """The weight gradient of a stride-1 convolution in float64 (one BLAS GEMM per tap and group)."""
    x64, d64 = x.astype(np.float64), dout.astype(np.float64)
    n, c, h, wd = x.shape
    f, oh, ow = dout.shape[1:]
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
    xp[:, :, pad:pad + h, pad:pad + wd] = x64
    cg, fg = c // groups, f // groups
    dw = np.zeros((f, cg, k, k))
    for g in range(groups):
        dg = d64[:, g * fg:(g + 1) * fg]
        for i in range(k):
            for j in range(k):
                win = xp[:, g * cg:(g + 1) * cg, i:i + oh, j:j + ow]
                dw[g * fg:(g + 1) * fg, :, i, j] = np.tensordot(dg, win, axes=([0, 2, 3], [0, 2, 3]))
    return dw


@pytest.mark.parametrize("groups, images", [(1, None), (1, 5), (2, 5)])
def test_blas_weight_gradient_sums_positions_in_blocks(groups, images):
    """im2col's weight gradient over 1728 positions of a 256 -> 512 1x1 layer: GEMMs of 64
    positions (a float32 chain of 64 products), 16 of them added by BLAS, then into a compensated
    sum; the 131072-element product in blocks of 128 rows; blocks of 5 images (the position blocks
    cross the folds) and 2 groups. Within 5 units of 2^-24 of the largest value (one float32 GEMM
    over the 1728 positions: 3.8-5.7e-7 on these inputs), and the threaded kernel agrees bitwise."""
    from symjit.kernels.cpu import conv
    n, c, f, h = 12, 256, 512, 12
    rng = np.random.default_rng(groups)
    x = np.maximum(rng.standard_normal((n, c, h, h)), 0).astype(np.float32)
    dout = rng.standard_normal((n, f, h, h)).astype(np.float32)
    w_shape, args = (f, c // groups, 1, 1), ((1, 1), (0, 0), (1, 1), groups)
    limit = conv.CONV_SCRATCH_MAX if images is None else (c + f) * h * h * images
    shape = conv.conv2d_cols_shape("backward_weight", x.shape, w_shape, dout.shape, groups, limit)
    assert shape[1] >= 3 * f * c // groups   # room for the compensated sum
    ref = _weight_reference(x, dout, 1, 0, groups)
    cols, dw = np.full(shape, np.nan, np.float32), np.full(w_shape, np.nan, np.float32)
    conv.check_conv2d("backward_weight", x, dw, dout, cols, *args)
    conv.conv2d_backward_weight(dout, x, dw, cols, *args)
    assert _error(dw, ref) <= 5 * 2.0 ** -24


@pytest.mark.parametrize("images", [None, 7])
def test_winograd_weight_gradient_sums_tiles_in_blocks(images):
    """Winograd's weight gradient of a 256 -> 256 3x3 layer over 24 images of 14 x 14 (1176 tiles):
    each of its 16 GEMMs in blocks of 64 tiles, the 65536-element products in blocks of filters,
    folded into a compensated sum; within 2x a direct float32 convolution's error (one float32
    GEMM per tap over the positions)."""
    from symjit.kernels.cpu import conv, conv_winograd
    from symjit.kernels.cpu.conv_shapes import winograd_length, winograd_tiles
    n, c, h = 24, 256, 14
    rng = np.random.default_rng(images or 0)
    x = np.maximum(rng.standard_normal((n, c, h, h)), 0).astype(np.float32)
    dout = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w_shape, args = (c, c, 3, 3), ((1, 1), (1, 1), (1, 1), 1)
    limit = conv.CONV_SCRATCH_MAX if images is None else winograd_length(images, c, c, winograd_tiles(h, h))
    cols = np.full(conv.conv2d_cols_shape("backward_weight_winograd", x.shape, w_shape, dout.shape, 1, limit),
                   np.nan, np.float32)
    dw = np.full(w_shape, np.nan, np.float32)
    conv.check_conv2d("backward_weight_winograd", x, dw, dout, cols, *args)
    in_parts(conv_winograd.conv2d_backward_weight_winograd_parts, dout, x, dw, cols, *args)
    ref = _weight_reference(x, dout, 3, 1, 1)
    xp = np.zeros((n, c, h + 2, h + 2), np.float32)
    xp[:, :, 1:1 + h, 1:1 + h] = x
    direct = np.zeros(w_shape, np.float32)
    for i in range(3):
        for j in range(3):
            win = xp[:, :, i:i + h, j:j + h]
            direct[:, :, i, j] = np.einsum("nfhw,nchw->fc", dout, win, dtype=np.float32)
    assert _error(dw, ref) <= 2.0 * _error(direct, ref)
