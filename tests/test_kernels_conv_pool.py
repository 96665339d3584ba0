"""Tests of the Numba CPU kernels for GEMM epilogues, convolution and pooling.

References are plain numpy written here (einsum over kernel taps, explicit windows); backward
kernels are also checked against central finite differences in float64 on tiny shapes.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from symjit.kernels.cpu import conv, gemm, pool
from symjit.kernels.cpu.gemm import KernelArgError

from symjit.base import MXNetError

from .partsrun import in_parts

DTYPES = [np.float32, np.float64]


def tol(dtype):
    return {"rtol": 2e-4, "atol": 2e-4} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-10}


def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


# =============================================================================================
# GEMM


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 13, 5), (100, 784, 128), (3, 0, 4)])
def test_gemm_variants(dtype, m, k, n):
    rng = np.random.default_rng(0)
    a, b = rand(rng, (m, k), dtype), rand(rng, (n, k), dtype)
    bias = rand(rng, (n,), dtype)
    out = np.full((m, n), np.nan, dtype)
    gemm.check_gemm("nt", a, b, out)
    gemm.gemm_nt(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.T.astype(np.float64), **tol(dtype))
    gemm.gemm_nt_bias(a, b, bias, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.T + bias, **tol(dtype))

    bn = np.ascontiguousarray(b.T)  # (k, n)
    out[:] = np.nan
    gemm.check_gemm("nn", a, bn, out)
    gemm.gemm_nn(a, bn, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ bn, **tol(dtype))

    d = rand(rng, (m, n), dtype)  # dout.T @ x: (n, k)
    wgrad = np.full((n, k), np.nan, dtype)
    gemm.check_gemm("tn", d, a, wgrad)
    gemm.gemm_tn(d, a, wgrad)
    np.testing.assert_allclose(wgrad, d.T.astype(np.float64) @ a, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_and_col_sum(dtype):
    rng = np.random.default_rng(1)
    x = rand(rng, (9, 6), dtype)
    bias = rand(rng, (6,), dtype)
    y = x.copy()
    gemm.check_bias("add_bias_rows", y, bias)
    gemm.add_bias_rows(y, bias)
    np.testing.assert_allclose(y, x + bias[None, :], **tol(dtype))
    s = np.full(6, np.nan, dtype)
    gemm.check_col_sum("col_sum", x, s)
    gemm.col_sum(x, s)
    np.testing.assert_allclose(s, x.astype(np.float64).sum(axis=0), **tol(dtype))
    gemm.col_sum_accumulate(x, s)
    np.testing.assert_allclose(s, 2 * x.astype(np.float64).sum(axis=0), **tol(dtype))


def test_gemm_checks_name_argument_and_shapes():
    a, b = np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32)
    with pytest.raises(ValueError, match=r"gemm_nt: argument 'b' has shape \(4,5\), expected \(4,3\)"):
        gemm.check_gemm("nt", a, b, np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"argument 'out' has shape \(2,5\), expected \(2,4\)"):
        gemm.check_gemm("nt", a, np.zeros((4, 3), np.float32), np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"argument 'b' has dtype float64 but 'a' has float32"):
        gemm.check_gemm("nn", a, np.zeros((3, 4)), np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"argument 'a' has dtype int32 \(shape \(2,3\)\)"):
        gemm.check_gemm("nn", a.astype(np.int32), b, b)
    with pytest.raises(ValueError, match=r"argument 'a' \(shape \(3,2\)\) must be C-contiguous"):
        gemm.check_gemm("nn", a.T, b, b)
    with pytest.raises(MXNetError, match=r"argument 'bias' has shape \(3,\), expected \(4,\)"):
        gemm.check_bias("gemm_nt_bias", np.zeros((2, 4)), np.zeros(3))
    with pytest.raises(ValueError, match=r"col_sum: argument 'out' has shape \(2,\), expected \(3,\)"):
        gemm.check_col_sum("col_sum", np.zeros((5, 3)), np.zeros(2))


# =============================================================================================
# Convolution: numpy references.


def ref_padded_patches(x, kh, kw, stride, pad, dilate, oh, ow):
    """``patch[i][j]`` = the (N, C, OH, OW) input values the tap (i, j) multiplies."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    sh, sw = stride
    return [[xp[:, :, i * dilate[0]:i * dilate[0] + sh * (oh - 1) + 1:sh,
                j * dilate[1]:j * dilate[1] + sw * (ow - 1) + 1:sw] for j in range(kw)] for i in range(kh)]


def ref_conv(x, w, stride, pad, dilate, groups):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    oh, ow = conv.conv2d_output_size((h, wd), (kh, kw), stride, pad, dilate)
    patches = ref_padded_patches(x, kh, kw, stride, pad, dilate, oh, ow)
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for g in range(groups):
        fs, cs = slice(g * fg, (g + 1) * fg), slice(g * cg, (g + 1) * cg)
        for i in range(kh):
            for j in range(kw):
                out[:, fs] += np.einsum("nchw,fc->nfhw", patches[i][j][:, cs], w[fs, :, i, j])
    return out


def ref_conv_backward(x, w, dout, stride, pad, dilate, groups):
    """(dx, dw) of ``sum(conv(x, w) * dout)``."""
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    oh, ow = dout.shape[2:]
    patches = ref_padded_patches(x, kh, kw, stride, pad, dilate, oh, ow)
    dxp = np.zeros((n, c, h + 2 * pad[0], wd + 2 * pad[1]))
    dw = np.zeros(w.shape)
    fg = f // groups
    sh, sw = stride
    for g in range(groups):
        fs, cs = slice(g * fg, (g + 1) * fg), slice(g * cg, (g + 1) * cg)
        for i in range(kh):
            for j in range(kw):
                y0, x0 = i * dilate[0], j * dilate[1]
                dxp[:, cs, y0:y0 + sh * (oh - 1) + 1:sh, x0:x0 + sw * (ow - 1) + 1:sw] += np.einsum(
                    "nfhw,fc->nchw", dout[:, fs], w[fs, :, i, j])
                dw[fs, :, i, j] = np.einsum("nfhw,nchw->fc", dout[:, fs], patches[i][j][:, cs])
    return dxp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd], dw


# (x shape, w shape, stride, pad, dilate, groups)
CONV_CASES = [
    ((2, 1, 7, 7), (3, 1, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), (1, 2), (1, 1), 1),
    ((1, 4, 11, 10), (6, 2, 3, 3), (1, 2), (2, 1), (2, 3), 2),
    ((3, 6, 5, 7), (6, 1, 2, 3), (3, 2), (1, 1), (1, 2), 6),
    ((2, 2, 6, 6), (2, 2, 1, 1), (2, 2), (0, 0), (1, 1), 1),
    ((1, 3, 4, 5), (5, 3, 4, 5), (1, 1), (0, 0), (1, 1), 1),  # kernel covers the whole input
    ((2, 2, 3, 3), (3, 2, 3, 3), (1, 1), (4, 4), (1, 1), 1),  # pad larger than the kernel
    ((3, 2, 6, 7), (3, 2, 3, 2), (1, 1), (0, 0), (1, 1), 1),  # every tap inside: whole rows copied
    # stride 2 on both axes: im2col splits input rows into even and odd columns (_im2col_stride2)
    ((2, 3, 15, 14), (4, 3, 7, 7), (2, 2), (3, 3), (1, 1), 1),   # ResNet's stem, odd and even sides
    ((2, 4, 9, 10), (6, 2, 3, 4), (2, 2), (1, 0), (1, 1), 2),    # groups, pads differ, even KW
    ((1, 2, 8, 7), (3, 2, 2, 5), (2, 2), (0, 2), (1, 1), 1),     # pad only on columns
    ((2, 2, 5, 6), (2, 2, 3, 4), (2, 2), (3, 2), (1, 1), 1),     # pad 3: some tap rows outside
]


def make_conv(case, dtype, seed=0):
    xs, ws, stride, pad, dilate, groups = case
    rng = np.random.default_rng(seed)
    x, w = rand(rng, xs, dtype), rand(rng, ws, dtype)
    oh, ow = conv.conv2d_output_size(xs[2:], ws[2:], stride, pad, dilate)
    out_shape = (xs[0], ws[0], oh, ow)
    return x, w, out_shape, (stride, pad, dilate, groups)


def scratch(kind, x, w, out_shape, groups):
    shape = conv.conv2d_cols_shape(kind, x.shape, w.shape, out_shape, groups)
    return np.full(shape, np.nan, x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_forward(case, dtype):
    x, w, out_shape, args = make_conv(case, dtype)
    expect = ref_conv(x, w, *args)
    cols = scratch("forward", x, w, out_shape, args[3])
    out = np.full(out_shape, np.nan, dtype)
    conv.check_conv2d("forward", x, w, out, cols, *args)
    for kernel in (conv.conv2d_forward, conv.conv2d_forward_direct):
        out[:] = np.nan
        kernel(x, w, out, cols, *args)
        np.testing.assert_allclose(out, expect, **tol(dtype))
    bias = rand(np.random.default_rng(5), (w.shape[0],), dtype)
    conv.check_conv2d("forward", x, w, out, cols, *args, bias=bias)
    conv.conv2d_forward_bias(x, w, bias, out, cols, *args)
    np.testing.assert_allclose(out, expect + bias[None, :, None, None], **tol(dtype))
    conv.conv2d_forward(x, w, out, cols, *args)
    conv.add_channel_bias(out, bias)
    np.testing.assert_allclose(out, expect + bias[None, :, None, None], **tol(dtype))


# (x shape, w shape, stride, pad, dilate, groups) of the direct kernels (conv_direct.py)
DIRECT_CASES = [
    ((2, 3, 9, 8), (3, 1, 3, 3), (1, 1), (1, 1), (1, 1), 3),      # depthwise 3x3, 'same'
    ((2, 3, 9, 8), (6, 1, 3, 3), (2, 2), (1, 1), (1, 1), 3),      # 3x3 at stride 2, multiplier 2
    ((1, 2, 3, 2), (2, 1, 3, 3), (1, 1), (1, 1), (1, 1), 2),      # 3x3 over planes narrower than it
    ((1, 2, 7, 7), (2, 1, 3, 3), (2, 2), (0, 0), (1, 1), 2),      # 3x3 without padding
    ((2, 2, 9, 10), (4, 1, 3, 2), (2, 1), (1, 0), (2, 1), 2),     # multiplier 2, stride, dilate
    ((1, 4, 6, 5), (4, 1, 5, 5), (1, 2), (3, 3), (1, 1), 4),      # pad beyond the kernel
    ((3, 6, 5, 7), (6, 1, 2, 3), (3, 2), (1, 1), (1, 2), 6),      # CONV_CASES' depthwise one
    ((2, 4, 23, 24), (6, 4, 1, 1), (1, 1), (0, 0), (1, 1), 1),    # pointwise
    ((1, 4, 23, 24), (6, 2, 1, 1), (1, 1), (0, 0), (1, 1), 2),    # pointwise, two groups
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", DIRECT_CASES)
def test_conv_direct_kernels(case, dtype):
    from symjit.kernels.cpu import conv_direct as cd
    x, w, out_shape, (stride, pad, dilate, groups) = make_conv(case, dtype)
    out = np.full(out_shape, np.nan, dtype)
    if cd.is_depthwise(x.shape, w.shape, groups):
        cd.check_depthwise(x, w, out, stride, pad, dilate)
        cd.conv2d_forward_depthwise(x, w, out, stride, pad, dilate)
    else:
        assert cd.is_pointwise(x.shape, w.shape, stride, pad)
        cd.conv2d_forward_1x1(x, w, out, groups)
    np.testing.assert_allclose(out, ref_conv(x, w, stride, pad, dilate, groups), **tol(dtype))


def test_depthwise_3x3_edges_read_only_their_window():
    """An infinity in the first input element reaches only the outputs whose window holds it: the
    edge outputs of other planes stay finite and as the reference computes them."""
    from symjit.kernels.cpu import conv_direct as cd
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    x[0, 0, 0, 0] = np.inf
    w = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
    out = np.full((2, 3, 6, 7), np.nan, np.float32)
    cd.conv2d_forward_depthwise(x, w, out, (1, 1), (1, 1), (1, 1))
    want = ref_conv(x.astype(np.float64), w.astype(np.float64), (1, 1), (1, 1), (1, 1), 3)
    assert np.isfinite(out[0, 1:]).all() and np.isfinite(out[1]).all()
    np.testing.assert_allclose(out[0, 1:], want[0, 1:], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], want[1], rtol=1e-5, atol=1e-5)


def test_conv_direct_choice_and_checks():
    from symjit.kernels.cpu import conv_direct as cd
    assert not cd.is_depthwise((2, 4, 5, 5), (4, 2, 3, 3), 2)          # two channels per group
    assert not cd.is_pointwise((2, 4, 5, 5), (4, 4, 1, 1), (1, 1), (0, 0))   # 25 pixels: im2col
    x, w = np.ones((1, 2, 4, 4)), np.ones((2, 1, 3, 3))
    with pytest.raises(KernelArgError, match=r"out \(1,2,4,4\) must be \(1,2,2,2\)"):
        cd.check_depthwise(x, w, np.ones((1, 2, 4, 4)), (1, 1), (0, 0), (1, 1))
    with pytest.raises(KernelArgError, match=r"weight \(3,1,3,3\) must be \(F, 1, KH, KW\)"):
        cd.check_depthwise(x, np.ones((3, 1, 3, 3)), np.ones((1, 3, 2, 2)), (1, 1), (0, 0), (1, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_backward(case, dtype):
    x, w, out_shape, args = make_conv(case, dtype)
    dout = rand(np.random.default_rng(7), out_shape, dtype)
    ref_dx, ref_dw = ref_conv_backward(x, w, dout, *args)
    groups = args[3]
    dx = np.full(x.shape, np.nan, dtype)
    cols = scratch("backward_data", x, w, out_shape, groups)
    conv.check_conv2d("backward_data", dx, w, dout, cols, *args)
    conv.conv2d_backward_data(dout, w, dx, cols, *args)
    np.testing.assert_allclose(dx, ref_dx, **tol(dtype))
    dw = np.full(w.shape, np.nan, dtype)
    cols = scratch("backward_weight", x, w, out_shape, groups)
    conv.check_conv2d("backward_weight", x, dw, dout, cols, *args)
    conv.conv2d_backward_weight(dout, x, dw, cols, *args)
    np.testing.assert_allclose(dw, ref_dw, **tol(dtype))
    db = np.full(w.shape[0], np.nan, dtype)
    conv.check_conv_bias_grad(dout, db)
    conv.conv_bias_grad(dout, db)
    np.testing.assert_allclose(db, dout.astype(np.float64).sum(axis=(0, 2, 3)), **tol(dtype))


def conv_loss(x, w, r, args):
    out = np.empty(r.shape)
    conv.conv2d_forward(x, w, out, scratch("forward", x, w, r.shape, args[3]), *args)
    return float((out * r).sum())


@pytest.mark.parametrize("case", [CONV_CASES[1], CONV_CASES[2], CONV_CASES[3]])
def test_conv_backward_finite_differences(case):
    x, w, out_shape, args = make_conv(case, np.float64, seed=3)
    r = rand(np.random.default_rng(4), out_shape, np.float64)
    dx, dw = np.empty_like(x), np.empty_like(w)
    conv.conv2d_backward_data(r, w, dx, scratch("backward_data", x, w, out_shape, args[3]), *args)
    conv.conv2d_backward_weight(r, x, dw, scratch("backward_weight", x, w, out_shape, args[3]), *args)
    eps = 1e-6
    for arr, grad in ((x, dx), (w, dw)):
        num = np.empty_like(arr)
        for idx in np.ndindex(arr.shape):
            keep = arr[idx]
            arr[idx] = keep + eps
            up = conv_loss(x, w, r, args)
            arr[idx] = keep - eps
            down = conv_loss(x, w, r, args)
            arr[idx] = keep
            num[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-7)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_conv_random_shapes(data):
    groups = data.draw(st.sampled_from([1, 2, 3]))
    cg = data.draw(st.integers(1, 3))
    fg = data.draw(st.integers(1, 3))
    kh, kw = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    stride = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    dilate = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    pad = (data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3)))
    span = (dilate[0] * (kh - 1) + 1, dilate[1] * (kw - 1) + 1)
    h = data.draw(st.integers(max(1, span[0] - 2 * pad[0]), span[0] + 8))
    wd = data.draw(st.integers(max(1, span[1] - 2 * pad[1]), span[1] + 8))
    n = data.draw(st.integers(1, 3))
    dtype = data.draw(st.sampled_from(DTYPES))
    case = ((n, cg * groups, h, wd), (fg * groups, cg, kh, kw), stride, pad, dilate, groups)
    x, w, out_shape, args = make_conv(case, dtype, seed=data.draw(st.integers(0, 1000)))
    out = np.full(out_shape, np.nan, dtype)
    cols = scratch("forward", x, w, out_shape, groups)
    conv.check_conv2d("forward", x, w, out, cols, *args)
    conv.conv2d_forward(x, w, out, cols, *args)
    np.testing.assert_allclose(out, ref_conv(x, w, *args), **tol(dtype))
    dout = rand(np.random.default_rng(1), out_shape, dtype)
    ref_dx, ref_dw = ref_conv_backward(x, w, dout, *args)
    dx, dw = np.full_like(x, np.nan), np.full_like(w, np.nan)
    conv.conv2d_backward_data(dout, w, dx, scratch("backward_data", x, w, out_shape, groups), *args)
    conv.conv2d_backward_weight(dout, x, dw, scratch("backward_weight", x, w, out_shape, groups), *args)
    np.testing.assert_allclose(dx, ref_dx, **tol(dtype))
    np.testing.assert_allclose(dw, ref_dw, **tol(dtype))


def test_conv_checks_name_argument_and_shapes():
    x, w = np.zeros((2, 4, 8, 8), np.float32), np.zeros((6, 2, 3, 3), np.float32)
    args = ((1, 1), (0, 0), (1, 1), 2)
    out = np.zeros((2, 6, 6, 6), np.float32)
    cols = np.zeros(conv.conv2d_cols_shape("forward", x.shape, w.shape, out.shape, 2), np.float32)
    conv.check_conv2d("forward", x, w, out, cols, *args)  # valid
    with pytest.raises(ValueError, match=r"conv2d_forward: argument 'out' has shape \(2,6,5,5\), "
                                         r"expected \(2,6,6,6\)"):
        conv.check_conv2d("forward", x, w, np.zeros((2, 6, 5, 5), np.float32), cols, *args)
    with pytest.raises(ValueError, match=r"argument 'w' has shape \(6,4,3,3\), expected \(6,2,3,3\)"):
        conv.check_conv2d("forward", x, np.zeros((6, 4, 3, 3), np.float32), out, cols, *args)
    with pytest.raises(ValueError, match=r"F=5 of 'w' \(5,2,3,3\) must be divisible by groups=2"):
        conv.check_conv2d("forward", x, np.zeros((5, 2, 3, 3), np.float32), out, cols, *args)
    with pytest.raises(ValueError, match=r"argument 'cols' has shape \(1,10\), expected \(1,"):
        conv.check_conv2d("forward", x, w, out, np.zeros((1, 10), np.float32), *args)
    with pytest.raises(ValueError, match=r"argument 'stride' must be a tuple of two ints >= 1"):
        conv.check_conv2d("forward", x, w, out, cols, (0, 1), (0, 0), (1, 1), 2)
    with pytest.raises(ValueError, match=r"does not fit 'x' \(2,4,8,8\)"):
        conv.check_conv2d("forward", x, np.zeros((6, 2, 9, 9), np.float32), out, cols, *args)
    with pytest.raises(ValueError, match=r"conv2d_backward_weight: argument 'dw' has dtype float64"):
        conv.check_conv2d("backward_weight", x, w.astype(np.float64), out, cols, *args)
    with pytest.raises(ValueError, match=r"argument 'bias' has shape \(5,\), expected \(6,\)"):
        conv.check_conv2d("forward", x, w, out, cols, *args, bias=np.zeros(5, np.float32))
    with pytest.raises(ValueError, match=r"conv_bias_grad: argument 'db' has shape \(2,\), expected \(6,\)"):
        conv.check_conv_bias_grad(out, np.zeros(2, np.float32))


def block_scratch(kind, x, w, out_shape, groups, images):
    """NaN-filled scratch that holds ``images`` images per block (the batch cut into blocks)."""
    k = x.shape[1] * w.shape[2] * w.shape[3]
    per_image = (k + w.shape[0]) * out_shape[2] * out_shape[3]
    shape = conv.conv2d_cols_shape(kind, x.shape, w.shape, out_shape, groups, max_elems=images * per_image)
    return np.full(shape, np.nan, x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_forward_in_blocks_of_output_rows(case, dtype):
    """A scratch smaller than one image: the forward runs blocks of output rows of one image (one
    row, two, a count that does not divide the rows, all but one) give the whole-batch result, with
    and without bias, the serial and parallel kernels alike (to rounding: BLAS may order a sum
    differently in a GEMM of another width)."""
    x, w, out_shape, args = make_conv(case, dtype)
    groups, oh, ow = args[3], out_shape[2], out_shape[3]
    bias = rand(np.random.default_rng(5), (w.shape[0],), dtype)
    whole, whole_b = np.empty(out_shape, dtype), np.empty(out_shape, dtype)
    conv.conv2d_forward(x, w, whole, scratch("forward", x, w, out_shape, groups), *args)
    conv.conv2d_forward_bias(x, w, bias, whole_b, scratch("forward", x, w, out_shape, groups), *args)
    np.testing.assert_allclose(whole, ref_conv(x, w, *args), **tol(dtype))
    per_row = (x.shape[1] * w.shape[2] * w.shape[3] + w.shape[0]) * ow
    for rows in sorted({1, 2, 3, max(1, oh - 1)}):
        if rows >= oh:
            continue
        cols = np.full((1, rows * per_row), np.nan, dtype)   # the kernel reads the rows from it
        out = np.full(out_shape, np.nan, dtype)
        conv.check_conv2d("forward", x, w, out, cols, *args, bias=bias)
        conv.conv2d_forward(x, w, out, cols, *args)
        np.testing.assert_allclose(out, whole, **tol(dtype), err_msg=f"{rows} rows")
        conv.conv2d_forward_bias(x, w, bias, out, cols, *args)
        np.testing.assert_allclose(out, whole_b, **tol(dtype), err_msg=f"{rows} rows, bias")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_forward_cnhw(case, dtype):
    x, w, out_shape, args = make_conv(case, dtype)
    expect = ref_conv(x, w, *args).transpose(1, 0, 2, 3)
    out = np.full(out_shape, np.nan, dtype)
    for images in (None, 1, 2):
        cols = (scratch("forward_cnhw", x, w, out_shape, args[3]) if images is None
                else block_scratch("forward_cnhw", x, w, out_shape, args[3], images))
        conv.check_conv2d("forward_cnhw", x, w, out, cols, *args)
        y = conv.conv2d_forward_cnhw(x, w, out, cols, *args)
        assert y.shape == expect.shape and np.shares_memory(y, cols)
        np.testing.assert_allclose(y, expect, **tol(dtype))
    assert np.isnan(out).all()   # out only gives the shape


@pytest.mark.parametrize("images", [1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_batch_cut_into_blocks(case, dtype, images):
    """A scratch smaller than the whole batch: blocks of ``images`` (the last one may be shorter)."""
    x, w, out_shape, args = make_conv(case, dtype)
    groups = args[3]
    bias = rand(np.random.default_rng(5), (w.shape[0],), dtype)
    dout = rand(np.random.default_rng(7), out_shape, dtype)
    ref_dx, ref_dw = ref_conv_backward(x, w, dout, *args)
    out = np.full(out_shape, np.nan, dtype)
    cols = block_scratch("forward", x, w, out_shape, groups, images)
    conv.check_conv2d("forward", x, w, out, cols, *args, bias=bias)
    conv.conv2d_forward(x, w, out, cols, *args)
    np.testing.assert_allclose(out, ref_conv(x, w, *args), **tol(dtype))
    conv.conv2d_forward_bias(x, w, bias, out, cols, *args)
    np.testing.assert_allclose(out, ref_conv(x, w, *args) + bias[None, :, None, None], **tol(dtype))
    cols = block_scratch("backward_data", x, w, out_shape, groups, images)
    dx = np.full(x.shape, np.nan, dtype)
    conv.check_conv2d("backward_data", dx, w, dout, cols, *args)
    conv.conv2d_backward_data(dout, w, dx, cols, *args)
    np.testing.assert_allclose(dx, ref_dx, **tol(dtype))
    cols = block_scratch("backward_weight", x, w, out_shape, groups, images)
    dw = np.full(w.shape, np.nan, dtype)
    conv.check_conv2d("backward_weight", x, dw, dout, cols, *args)
    conv.conv2d_backward_weight(dout, x, dw, cols, *args)
    np.testing.assert_allclose(dw, ref_dw, **tol(dtype))


def test_conv_cols_sizes():
    xs, ws, os_ = (64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8)
    k, f, p = 500, 50, 64
    assert conv.conv2d_cols_shape("forward", xs, ws, os_, 1) == (1, (k + f) * 64 * p)
    assert conv.conv2d_cols_shape("backward_data", xs, ws, os_, 1) == (1, (k + f) * 64 * p)
    # the weight gradient's product, its compensated sum and compensation (4096 positions: more
    # than 16 GEMMs of 64)
    assert conv.conv2d_cols_shape("backward_weight", xs, ws, os_, 1) == (1, (k + f) * 64 * p + 3 * f * k)
    # a batch of 16 positions: the product alone
    assert conv.conv2d_cols_shape("backward_weight", (1, 20, 8, 8), ws, (1, 50, 4, 4), 1) == \
        (1, (k + f) * 16 + f * k)
    assert conv.conv2d_cols_shape("forward_cnhw", xs, ws, os_, 1) == (1, (k + f) * 64 * p)
    # capped: 10 images per block; the filter-major forward then also holds the whole output
    cap = 10 * (k + f) * p + 5
    assert conv.conv2d_cols_shape("forward", xs, ws, os_, 1, max_elems=cap) == (1, 10 * (k + f) * p)
    assert conv.conv2d_cols_shape("forward_cnhw", xs, ws, os_, 1, max_elems=cap) == \
        (1, 10 * (k + f) * p + f * 64 * p)
    # less than one image: the forward takes blocks of output rows (8 per image here), the other
    # kernels one image
    assert conv.conv2d_cols_shape("forward", xs, ws, os_, 1, max_elems=0) == (1, (k + f) * 8)
    # (a plane of 64 outputs takes whole images unless asked for the least: conv2d_forward_rows)
    assert conv.conv2d_cols_shape("forward", xs, ws, os_, 1, max_elems=(k + f) * 8 * 3 + 1) == \
        (1, (k + f) * p)
    big = ((2, 20, 68, 68), (50, 20, 5, 5), (2, 50, 64, 64))   # 4096 outputs: rows
    assert conv.conv2d_cols_shape("forward", *big, 1, max_elems=(k + f) * 64 * 3 + 1) == \
        (1, (k + f) * 64 * 3)
    assert conv.conv2d_cols_shape("backward_data", xs, ws, os_, 1, max_elems=0) == (1, (k + f) * p)
    for kind in ("forward", "forward_cnhw", "backward_data", "backward_weight"):   # im2col's
        fixed = 3 * f * k if kind == "backward_weight" else 0
        blocked = f * 64 * p if kind == "forward_cnhw" else 0
        for limit in ((cap, conv.CONV_SCRATCH_MAX) if kind == "forward" else (0, cap, conv.CONV_SCRATCH_MAX)):
            assert conv.conv2d_cols_length(64, k, f, p, fixed, blocked, limit) == \
                conv.conv2d_cols_shape(kind, xs, ws, os_, 1, max_elems=limit)[1] == \
                conv.conv2d_scratch_length(conv.KINDS.index(kind), 64, k, f, k, p, limit)


def test_conv_checks_cols_length():
    x, w = np.zeros((3, 4, 8, 8), np.float32), np.zeros((6, 2, 3, 3), np.float32)
    out, args = np.zeros((3, 6, 6, 6), np.float32), ((1, 1), (0, 0), (1, 1), 2)
    row = (4 * 9 + 6) * 6   # the forward's least: one output row of one image
    conv.check_conv2d("forward", x, w, out, np.zeros((1, row), np.float32), *args)
    with pytest.raises(ValueError, match=rf"argument 'cols' has shape \(1,{row - 1}\), expected \(1,\d+\) "
                                         rf"\(at least \(1,{row}\): one output row per block\)"):
        conv.check_conv2d("forward", x, w, out, np.zeros((1, row - 1), np.float32), *args)
    least = conv.conv2d_cols_shape("backward_weight", x.shape, w.shape, out.shape, 2, max_elems=0)
    for length in (least[1], least[1] + 7, 10**6):   # any length from one image per block up
        conv.check_conv2d("backward_weight", x, w, out, np.zeros((1, length), np.float32), *args)
    short, need = least[1] - 1, least[1]
    with pytest.raises(ValueError, match=rf"argument 'cols' has shape \(1,{short}\), expected \(1,\d+\) "
                                         rf"\(at least \(1,{need}\): one image per block\)"):
        conv.check_conv2d("backward_weight", x, w, out, np.zeros((1, least[1] - 1), np.float32), *args)
    with pytest.raises(ValueError, match=r"argument 'cols' has shape \(2,"):
        conv.check_conv2d("backward_weight", x, w, out, np.zeros((2, 10**6), np.float32), *args)


# =============================================================================================
# Pooling: numpy references built from masks over a padded canvas.


def ref_pool(x, kernel, stride, pad, convention, pool_type, count_include_pad=True):
    """Forward pooling and, for each output, the (row, col) the max comes from (or -1)."""
    n, c, h, w = x.shape
    oh, ow = pool.pool_output_size((h, w), kernel, stride, pad, convention)
    extra = (stride[0] * oh + kernel[0], stride[1] * ow + kernel[1])  # canvas big enough for 'full'
    canvas_h, canvas_w = pad[0] + h + extra[0], pad[1] + w + extra[1]
    real = np.zeros((canvas_h, canvas_w), bool)
    real[pad[0]:pad[0] + h, pad[1]:pad[1] + w] = True
    padded = np.zeros((canvas_h, canvas_w), bool)
    padded[:2 * pad[0] + h, :2 * pad[1] + w] = True
    vals = np.zeros((n, c, canvas_h, canvas_w))
    vals[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w] = x
    out = np.zeros((n, c, oh, ow))
    arg = np.full((n, c, oh, ow, 2), -1)
    lowest = np.finfo(x.dtype).min
    for i in range(oh):
        for j in range(ow):
            win = (slice(i * stride[0], i * stride[0] + kernel[0]),
                   slice(j * stride[1], j * stride[1] + kernel[1]))
            m = real[win]
            v = vals[(slice(None), slice(None)) + win]
            if pool_type == "max":
                if not m.any():
                    out[:, :, i, j] = lowest
                    continue
                flat = np.where(m, v, -np.inf).reshape(n, c, -1)
                k = flat.argmax(axis=-1)  # first maximum
                out[:, :, i, j] = flat.max(axis=-1)
                rows, cols = np.unravel_index(k, m.shape)
                arg[:, :, i, j, 0] = rows + i * stride[0] - pad[0]
                arg[:, :, i, j, 1] = cols + j * stride[1] - pad[1]
            else:
                s = (v * m).sum(axis=(-2, -1))
                if pool_type == "sum":
                    out[:, :, i, j] = s
                else:
                    d = padded[win].sum() if count_include_pad else m.sum()
                    out[:, :, i, j] = s / d if m.any() else 0.0
    return out, arg


def ref_pool_backward(x, dout, kernel, stride, pad, convention, pool_type, count_include_pad=True):
    """dx of ``sum(pool(x) * dout)`` by pushing ``dout`` through each window."""
    n, c, h, w = x.shape
    _, arg = ref_pool(x, kernel, stride, pad, convention, pool_type, count_include_pad)
    dx = np.zeros(x.shape)
    oh, ow = dout.shape[2:]
    for i in range(oh):
        for j in range(ow):
            if pool_type == "max":
                for a in range(n):
                    for b in range(c):
                        r, q = arg[a, b, i, j]
                        if r >= 0:
                            dx[a, b, r, q] += dout[a, b, i, j]
                continue
            # avg/sum are linear: the gradient is the forward of a unit impulse, transposed.
            h0, w0 = i * stride[0] - pad[0], j * stride[1] - pad[1]
            rows = [r for r in range(h0, h0 + kernel[0]) if 0 <= r < h]
            cols = [q for q in range(w0, w0 + kernel[1]) if 0 <= q < w]
            if not rows or not cols:
                continue
            if pool_type == "sum":
                d = 1
            elif count_include_pad:
                d = (min(h0 + kernel[0], h + pad[0]) - h0) * (min(w0 + kernel[1], w + pad[1]) - w0)
            else:
                d = len(rows) * len(cols)
            dx[:, :, rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1] += dout[:, :, i:i + 1, j:j + 1] / d
    return dx


# (x shape, kernel, stride, pad, convention)
POOL_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), "valid"),
    ((1, 2, 7, 9), (3, 3), (2, 2), (1, 1), "valid"),
    ((2, 2, 7, 9), (3, 2), (2, 3), (1, 0), "full"),
    ((1, 1, 5, 5), (2, 2), (3, 3), (1, 1), "full"),   # last window lies in the padding only
    ((1, 2, 6, 5), (3, 3), (1, 1), (2, 2), "valid"),  # pad ~ kernel: windows of pure padding
    ((2, 1, 5, 6), (5, 6), (1, 1), (0, 0), "valid"),  # global pooling
    ((1, 2, 13, 11), (4, 3), (3, 2), (1, 1), "full"),
    ((2, 3, 9, 9), (3, 3), (1, 1), (1, 1), "valid"),  # Inception's branch pools
]


def make_pool(case, dtype, seed=0, ties=False):
    xs, kernel, stride, pad, convention = case
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, xs).astype(dtype) if ties else rand(rng, xs, dtype)
    oh, ow = pool.pool_output_size(xs[2:], kernel, stride, pad, convention)
    return x, (xs[0], xs[1], oh, ow), (kernel, stride, pad)


def run_pool_forward(pool_type, x, out, kp, include):
    if pool_type == "max":
        pool.max_pool2d_forward(x, out, *kp)
    elif pool_type == "sum":
        pool.sum_pool2d_forward(x, out, *kp)
    else:
        pool.avg_pool2d_forward(x, out, *kp, include)


def run_pool_backward(pool_type, x, dout, dx, kp, include):
    if pool_type == "max":
        pool.max_pool2d_backward(x, dout, dx, *kp)
    elif pool_type == "sum":
        pool.sum_pool2d_backward(dout, dx, *kp)
    else:
        pool.avg_pool2d_backward(dout, dx, *kp, include)


POOL_KINDS = [("max", True), ("sum", True), ("avg", True), ("avg", False)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("pool_type,include", POOL_KINDS)
def test_pool_forward_backward(case, dtype, pool_type, include):
    for ties in (False, True):
        x, out_shape, kp = make_pool(case, dtype, ties=ties)
        out = np.full(out_shape, np.nan, dtype)
        pool.check_pool2d(pool_type, x, out, *kp, case[4])
        run_pool_forward(pool_type, x, out, kp, include)
        expect, _ = ref_pool(x, *kp, case[4], pool_type, include)
        np.testing.assert_allclose(out, expect, **tol(dtype))
        dout = rand(np.random.default_rng(2), out_shape, dtype)
        dx = np.full(x.shape, np.nan, dtype)
        pool.check_pool2d(pool_type, dx, dout, *kp, case[4], x=x if pool_type == "max" else None)
        run_pool_backward(pool_type, x, dout, dx, kp, include)
        ref = ref_pool_backward(x, dout.astype(np.float64), *kp, case[4], pool_type, include)
        np.testing.assert_allclose(dx, ref, **tol(dtype))


def test_max_pool_ties_go_to_first_maximum():
    x = np.array([[[[1.0, 3.0, 3.0], [3.0, 0.0, 2.0], [3.0, 3.0, 3.0]]]])
    out, dx = np.empty((1, 1, 2, 2)), np.empty_like(x)
    pool.max_pool2d_forward(x, out, (2, 2), (1, 1), (0, 0))
    np.testing.assert_array_equal(out[0, 0], [[3, 3], [3, 3]])
    pool.max_pool2d_backward(x, np.array([[[[1.0, 10.0], [100.0, 1000.0]]]]), dx, (2, 2), (1, 1), (0, 0))
    # first maxima in row-major window order: (0,1), (0,1), (1,0), and for the window of
    # rows 1-2, cols 1-2 (values 0, 2, 3, 3) the element (2,1).
    np.testing.assert_array_equal(dx[0, 0], [[0, 11, 0], [100, 0, 0], [0, 1000, 0]])


def test_max_pool_nan_propagates_and_empty_window_is_lowest():
    x = np.array([[[[1.0, np.nan], [2.0, 0.5]]]])
    out = np.empty((1, 1, 1, 1))
    pool.max_pool2d_forward(x, out, (2, 2), (2, 2), (0, 0))
    assert np.isnan(out[0, 0, 0, 0])
    x = np.ones((1, 1, 5, 5), np.float32)
    oh, ow = pool.pool_output_size((5, 5), (2, 2), (3, 3), (1, 1), "full")
    out = np.empty((1, 1, oh, ow), np.float32)
    pool.max_pool2d_forward(x, out, (2, 2), (3, 3), (1, 1))
    assert (oh, ow) == (3, 3) and out[0, 0, 2, 2] == np.finfo(np.float32).min and out[0, 0, 0, 0] == 1


def test_max_pool_backward_nan_and_minus_infinity_windows():
    # window 0: 1, NaN, 5, NaN -> the first NaN (0,1); window 1: all -inf -> forward -inf, the
    # gradient to the window's first element (0,2); window 2 has the max 7 after a -inf.
    x = np.array([[[[1.0, np.nan, -np.inf, -np.inf, -np.inf, 7.0],
                    [5.0, np.nan, -np.inf, -np.inf, 2.0, 3.0]]]], np.float32)
    out = np.empty((1, 1, 1, 3), np.float32)
    pool.max_pool2d_forward(x, out, (2, 2), (2, 2), (0, 0))
    assert np.isnan(out[0, 0, 0, 0]) and out[0, 0, 0, 1] == -np.inf and out[0, 0, 0, 2] == 7
    dx = np.full_like(x, np.nan)
    pool.max_pool2d_backward(x, np.array([[[[1.0, 10.0, 100.0]]]], np.float32), dx, (2, 2), (2, 2), (0, 0))
    np.testing.assert_array_equal(dx[0, 0], [[0, 1, 10, 0, 0, 100], [0, 0, 0, 0, 0, 0]])


@pytest.mark.parametrize("case", [c for c in POOL_CASES if c[1] != (2, 2)])
def test_max_pool_nan_and_minus_infinity_in_every_window_shape(case):
    """The separable forward (windows of 3x3 and others that all hold an input element) and the
    per-window one (windows of pure padding) agree with the reference on NaN (propagated from
    any tap) and -inf (a window of -inf only is -inf)."""
    x, out_shape, kp = make_pool(case, np.float32, seed=5)
    rng = np.random.default_rng(6)
    x.reshape(-1)[rng.choice(x.size, max(1, x.size // 15), replace=False)] = np.nan
    x[..., :2, :3] = -np.inf
    out = np.full(out_shape, 7.0, np.float32)
    pool.max_pool2d_forward(x, out, *kp)
    expect, _ = ref_pool(x, *kp, case[4], "max")
    assert np.isnan(expect).any()   # (the -inf corner fills the first window of the 3x3 cases)
    np.testing.assert_array_equal(out, expect.astype(np.float32))


@pytest.mark.parametrize("pool_type,include", POOL_KINDS)
def test_pool_backward_finite_differences(pool_type, include):
    case = ((1, 2, 5, 6), (3, 2), (2, 2), (1, 1), "full")
    x, out_shape, kp = make_pool(case, np.float64, seed=11)
    r = rand(np.random.default_rng(12), out_shape, np.float64)
    dx = np.empty_like(x)
    run_pool_backward(pool_type, x, r, dx, kp, include)
    out = np.empty(out_shape)

    def loss():
        run_pool_forward(pool_type, x, out, kp, include)
        return float((out * r).sum())

    eps = 1e-6
    num = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        keep = x[idx]
        x[idx] = keep + eps
        up = loss()
        x[idx] = keep - eps
        down = loss()
        x[idx] = keep
        num[idx] = (up - down) / (2 * eps)
    np.testing.assert_allclose(dx, num, rtol=1e-6, atol=1e-7)


def test_pool_output_size_conventions():
    assert pool.pool_output_size((24, 24), (2, 2), (2, 2), (0, 0), "valid") == (12, 12)
    # valid: floor(4/2)+1, floor(5/2)+1; full: ceil(4/2)+1, ceil(5/2)+1
    assert pool.pool_output_size((7, 8), (3, 3), (2, 2), (0, 0), "valid") == (3, 3)
    assert pool.pool_output_size((7, 8), (3, 3), (2, 2), (0, 0), "full") == (3, 4)
    assert pool.pool_output_size((7, 8), (3, 3), (2, 2), (1, 1), "full", global_pool=True) == (1, 1)
    assert pool.pool2d_params((7, 8), (3, 3), (2, 2), (1, 1), True) == ((7, 8), (1, 1), (0, 0))
    with pytest.raises(ValueError, match=r"kernel \(5, 5\) exceeds the input \(3, 3\) padded by \(0, 0\)"):
        pool.pool_output_size((3, 3), (5, 5), (1, 1), (0, 0))
    with pytest.raises(ValueError, match=r"pooling_convention must be one of"):
        pool.pool_output_size((3, 3), (1, 1), (1, 1), (0, 0), "ceil")


def test_pool_checks_name_argument_and_shapes():
    x = np.zeros((1, 2, 4, 4), np.float32)
    with pytest.raises(ValueError, match=r"pool2d_max: argument 'out' has shape \(1,2,3,3\), expected "
                                         r"\(1,2,2,2\) for kernel=\(2, 2\)"):
        pool.check_pool2d("max", x, np.zeros((1, 2, 3, 3), np.float32), (2, 2), (2, 2), (0, 0))
    pool.check_pool2d("max", x, np.zeros((1, 2, 3, 3), np.float32), (2, 2), (1, 1), (0, 0), "full")
    with pytest.raises(ValueError, match=r"argument 'x' has shape \(1,2,4,5\), expected \(1,2,4,4\)"):
        pool.check_pool2d("max", x, np.zeros((1, 2, 2, 2), np.float32), (2, 2), (2, 2), (0, 0),
                          x=np.zeros((1, 2, 4, 5), np.float32))
    with pytest.raises(ValueError, match=r"argument 'data' must have 4 dimensions, got shape \(2,4,4\)"):
        pool.check_pool2d("avg", x[0], np.zeros((1, 2, 2, 2), np.float32), (2, 2), (2, 2), (0, 0))
    with pytest.raises(ValueError, match=r"argument 'out' has dtype float64 but 'data' has float32"):
        pool.check_pool2d("sum", x, np.zeros((1, 2, 2, 2)), (2, 2), (2, 2), (0, 0))
    with pytest.raises(ValueError, match=r"argument 'pad' must be a tuple of two ints >= 0"):
        pool.check_pool2d("sum", x, np.zeros((1, 2, 2, 2), np.float32), (2, 2), (2, 2), (-1, 0))
    with pytest.raises(ValueError, match=r"pool_type must be one of"):
        pool.check_pool2d("lp", x, x, (2, 2), (2, 2), (0, 0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hw,convention", [((8, 6), "valid"), ((5, 7), "valid"), ((5, 7), "full")])
def test_max_pool_2x2_tiles_match_the_window_loop(dtype, hw, convention):
    """Kernel = stride = 2 without padding takes the unrolled loops (forward and backward) where
    every window is a whole tile ('full' with an odd size cuts the last windows: the general
    loops); both give the numpy reference, NaN, -inf and ties included, wherever they sit in a
    tile, and the backward zeroes the rows and columns no tile covers."""
    rng = np.random.default_rng(5)
    x = rand(rng, (2, 3) + hw, dtype)
    x[1, 2, :2, :2] = 3.0                    # a tie: the first maximum takes the gradient
    x[1, 1, 2:4, 2:4] = [[-np.inf, 4.0], [4.0, np.nan]]
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 6, replace=False)] = np.nan
    flat[rng.choice(flat.size, 6, replace=False)] = -np.inf
    kp = ((2, 2), (2, 2), (0, 0))
    out = np.full((2, 3) + pool.pool_output_size(hw, *kp, convention), 7.0, dtype)
    pool.max_pool2d_forward(x, out, *kp)
    expect, _ = ref_pool(x, *kp, convention, "max", True)
    np.testing.assert_array_equal(out, expect.astype(dtype))
    assert np.isnan(out).any() and (out == -np.inf).sum() <= 6
    dout = rand(rng, out.shape, dtype)
    dx = np.full(x.shape, 7.0, dtype)
    pool.max_pool2d_backward(x, dout, dx, *kp)
    ref = ref_pool_backward(x, dout.astype(np.float64), *kp, convention, "max", True)
    np.testing.assert_array_equal(dx, ref.astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hw,pad,convention", [((9, 11), (1, 1), "valid"), ((8, 8), (0, 0), "valid"),
                                               ((8, 10), (1, 0), "full"), ((12, 7), (0, 1), "full")])
def test_max_pool_3x3_stride_2_backward_matches_the_reference(dtype, hw, pad, convention):
    """3x3 windows at stride 2 (ResNet's stem pool) take the vectorised taps where a window is
    whole and the loop per window elsewhere (cut by the padding or the edge, or holding a NaN): the
    gradient goes to the first maximum in row-major order (ties), the first NaN, or the window's
    first element when all are -inf, as the reference says."""
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, (2, 3) + hw).astype(dtype)   # many ties
    x[0, 1, 2:5, 2:5] = -np.inf                          # a whole window of -inf
    x[1, 0, 3:6, 4:7] = [[-np.inf, 1.0, 1.0], [np.nan, 1.0, np.nan], [2.0, 2.0, -np.inf]]
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 5, replace=False)] = np.nan
    kp = ((3, 3), (2, 2), pad)
    out_shape = (2, 3) + pool.pool_output_size(hw, *kp, convention)
    dout = rand(rng, out_shape, dtype)
    dx = np.full(x.shape, 7.0, dtype)
    pool.max_pool2d_backward(x, dout, dx, *kp)
    ref = ref_pool_backward(x, dout.astype(np.float64), *kp, convention, "max", True)
    np.testing.assert_allclose(dx, ref, **tol(dtype))
    dx[:] = 7.0
    in_parts(pool.max_pool2d_backward_parts, x, dout, dx, *kp)
    np.testing.assert_allclose(dx, ref, **tol(dtype))
