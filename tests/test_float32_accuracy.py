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


def _direct(x, w, head, pad):
    """A direct float32 convolution at stride 1 and its data gradient: one float32 GEMM per tap."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), np.float32)
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    out = np.zeros(head.shape, np.float32)
    dxp = np.zeros_like(xp)
    oh, ow = head.shape[2:]
    for i in range(k):
        for j in range(k):
            win = (slice(None), slice(None), slice(i, i + oh), slice(j, j + ow))
            out += np.einsum("fc,nchw->nfhw", w[:, :, i, j], xp[win], dtype=np.float32)
            dxp[win] += np.einsum("fc,nfhw->nchw", w[:, :, i, j], head, dtype=np.float32)
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
def test_tile_convolutions_are_as_accurate_as_a_direct_one(x_shape, filters):
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
    ref_out, ref_dx = _bound(x.astype(np.float64), w.astype(np.float64), head.astype(np.float64), "float64")
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
