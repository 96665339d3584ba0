"""The Winograd F(2x2, 3x3) kernels (``symjit.kernels.cpu.conv_winograd``) against the float64
reference convolution and its data and weight gradients: odd and even planes, every padding they take
(symmetric and not), batches cut into blocks (the last one shorter), both dtypes, NaN-filled
scratch; and the checks that keep other geometries out."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.cpu import conv
from symjit.kernels.cpu.conv_shapes import prefers_winograd, winograd_length
from symjit.kernels.cpu.conv_winograd import (
    conv2d_backward_data_winograd_parts,
    conv2d_backward_weight_winograd_parts,
    conv2d_forward_winograd_parts,
)
from symjit.kernels.cpu.gemm import KernelArgError

from .partsrun import in_parts
from .test_kernels_conv_pool import ref_conv, ref_conv_backward

CASES = [   # x shape, filters, pad
    ((2, 3, 6, 6), 4, (1, 1)),
    ((3, 2, 7, 5), 3, (1, 1)),     # odd planes: the last tile row and column are cut
    ((1, 4, 5, 8), 2, (0, 0)),
    ((2, 3, 4, 4), 5, (2, 2)),     # the data gradient pads by 0
    ((2, 2, 9, 6), 3, (1, 0)),
    ((1, 1, 3, 3), 1, (0, 2)),     # one output row
]
GEOMETRY = ((1, 1), (1, 1), 1)   # stride, dilate, groups


def _tol(dtype):
    return {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-11, "atol": 1e-11}


def _scratch(kind, x_shape, w_shape, out_shape, images=None):
    """NaN-filled scratch of ``kind`` for the whole batch, or ``images`` per block."""
    if images is None:
        shape = conv.conv2d_cols_shape(kind, x_shape, w_shape, out_shape, 1)
    else:
        c_in, c_out, plane = ((w_shape[0], x_shape[1], x_shape[2:]) if kind == "backward_data_winograd"
                              else (x_shape[1], w_shape[0], out_shape[2:]))
        tiles = ((plane[0] + 1) // 2) * ((plane[1] + 1) // 2)
        shape = (1, winograd_length(images, c_in, c_out, tiles))
    return np.full(shape, np.nan, np.float64)


# float64 (compiled apart from float32) with --exhaustive: the nets run Winograd in float32
@pytest.mark.parametrize("dtype", [np.float32, pytest.param(np.float64, marks=pytest.mark.exhaustive)])
@pytest.mark.parametrize("images", [None, 1, 2])
@pytest.mark.parametrize("case", CASES)
def test_winograd_forward_and_gradients_match_the_reference(case, images, dtype):
    _check_against_the_reference(case, images, dtype)


@pytest.mark.parametrize("images", [None, 2])
def test_winograd_threaded_transforms_match_the_reference(images):
    """Arrays above ``SPLIT_MIN`` elements: every transform (weight, input, output, output
    gradient, the weight gradient's back-transform) splits its rows or planes over the threads."""
    from symjit.kernels.cpu._parallel import SPLIT_MIN
    case = ((3, 130, 19, 18), 130, (1, 1))
    assert min(3 * 130 * 19 * 18, 130 * 130 * 9) >= SPLIT_MIN
    _check_against_the_reference(case, images, np.float32)


def _check_against_the_reference(case, images, dtype):
    x_shape, filters, pad = case
    rng = np.random.default_rng(len(x_shape) + filters)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((filters, x_shape[1], 3, 3)).astype(dtype)
    stride, dilate, groups = GEOMETRY
    oh, ow = conv.conv2d_output_size(x_shape[2:], (3, 3), stride, pad, dilate)
    out_shape = (x_shape[0], filters, oh, ow)
    dout = rng.standard_normal(out_shape).astype(dtype)
    args = (stride, pad, dilate, groups)
    ref_dx, ref_dw = ref_conv_backward(x, w, dout, *args)

    cols = _scratch("forward_winograd", x_shape, w.shape, out_shape, images).astype(dtype)
    out = np.full(out_shape, np.nan, dtype)
    conv.check_conv2d("forward_winograd", x, w, out, cols, *args)
    in_parts(conv2d_forward_winograd_parts, x, w, out, cols, *args)
    np.testing.assert_allclose(out, ref_conv(x, w, *args), **_tol(dtype))

    cols = _scratch("backward_data_winograd", x_shape, w.shape, out_shape, images).astype(dtype)
    dx = np.full(x_shape, np.nan, dtype)
    conv.check_conv2d("backward_data_winograd", dx, w, dout, cols, *args)
    in_parts(conv2d_backward_data_winograd_parts, dout, w, dx, cols, *args)
    np.testing.assert_allclose(dx, ref_dx, **_tol(dtype))

    cols = _scratch("backward_weight_winograd", x_shape, w.shape, out_shape, images).astype(dtype)
    dw = np.full(w.shape, np.nan, dtype)
    conv.check_conv2d("backward_weight_winograd", x, dw, dout, cols, *args)
    in_parts(conv2d_backward_weight_winograd_parts, dout, x, dw, cols, *args)
    np.testing.assert_allclose(dw, ref_dw, **_tol(dtype))


@pytest.mark.parametrize("w_shape, stride, pad, dilate, groups", [
    ((4, 2, 3, 2), (1, 1), (1, 1), (1, 1), 1),
    ((4, 2, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((4, 2, 3, 3), (1, 1), (1, 1), (2, 2), 1),
    ((4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 2),
    ((4, 2, 3, 3), (1, 1), (3, 3), (1, 1), 1),
])
def test_winograd_kernels_reject_other_geometries(w_shape, stride, pad, dilate, groups):
    x = np.zeros((1, 2, 8, 8), np.float32)
    oh, ow = conv.conv2d_output_size((8, 8), w_shape[2:], stride, pad, dilate)
    out = np.zeros((1, 4, oh, ow), np.float32)
    cols = np.zeros((1, 1 << 16), np.float32)
    with pytest.raises(KernelArgError, match=r"conv2d_forward_winograd: takes a 3x3 window at stride 1"):
        conv.check_conv2d("forward_winograd", x, np.zeros(w_shape, np.float32), out, cols, stride, pad,
                          dilate, groups)


def test_winograd_scratch_too_short_is_an_error():
    x, w, out = np.zeros((2, 3, 6, 6)), np.zeros((4, 3, 3, 3)), np.zeros((2, 4, 6, 6))
    least = conv.conv2d_cols_shape("forward_winograd", x.shape, w.shape, out.shape, 1, max_elems=0)
    with pytest.raises(KernelArgError, match=r"argument 'cols' has shape \(1,10\).*one image per block"):
        conv.check_conv2d("forward_winograd", x, w, out, np.zeros((1, 10)), (1, 1), (1, 1), (1, 1), 1)
    conv.check_conv2d("forward_winograd", x, w, out, np.zeros(least), (1, 1), (1, 1), (1, 1), 1)


def test_which_layers_prefer_winograd():
    """ResNet's 3x3 stride-1 layers at batch 2 do (the 64-channel one's forward only); its 7 x 7 one
    (too few tiles), layers with 64 channels on a side and other geometries do not."""
    geo = ((1, 1), (1, 1), (1, 1), 1)
    assert prefers_winograd((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 56, 56), *geo)
    assert not prefers_winograd((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 56, 56), *geo, gradient=True)
    assert not prefers_winograd((2, 64, 35, 35), (96, 64, 3, 3), (2, 96, 35, 35), *geo)
    assert prefers_winograd((2, 256, 14, 14), (256, 256, 3, 3), (2, 256, 14, 14), *geo)
    assert prefers_winograd((2, 256, 14, 14), (256, 256, 3, 3), (2, 256, 14, 14), *geo, gradient=True)
    assert not prefers_winograd((2, 512, 7, 7), (512, 512, 3, 3), (2, 512, 7, 7), *geo)
    assert prefers_winograd((32, 512, 7, 7), (512, 512, 3, 3), (32, 512, 7, 7), *geo)
    assert not prefers_winograd((2, 32, 27, 27), (128, 32, 3, 3), (2, 128, 27, 27), *geo)
    assert not prefers_winograd((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 28, 28), (2, 2), (1, 1), (1, 1), 1)
