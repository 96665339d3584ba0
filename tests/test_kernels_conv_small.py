"""The small-plane kernels (``symjit.kernels.cpu.conv_small``: per-image im2col and register-tile
GEMMs) against the float64 reference convolution and its gradients: LeNet's two layers, strides,
padding, dilation, a 1x1 window, filters and depths that are not a multiple of the tile, more
filters than one run of lanes, planes of one vector and of several runs, batches smaller than the
parts and cut unevenly, NaN-filled scratch and outputs; the checks that keep other dtypes and
geometries out; which layers the compiler gives them, and LeNet's program calling them."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.cpu import conv
from symjit.kernels.cpu.conv_shapes import SMALL_CHUNKS, small_layout, vec_tile
from symjit.kernels.cpu.conv_small import (
    conv2d_backward_data_small_parts,
    conv2d_backward_weight_rows_small_parts,
    conv2d_backward_weight_small_parts,
    conv2d_forward_rows_small_parts,
    conv2d_forward_small_parts,
)
from symjit.kernels.cpu.conv_small_rules import prefers_small
from symjit.kernels.cpu.gemm import KernelArgError

import symjit as mx
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config

from .partsrun import in_parts
from .test_kernels_conv_pool import ref_conv, ref_conv_backward

CASES = [   # x shape, w shape, stride, pad, dilate
    ((3, 20, 12, 12), (50, 20, 5, 5), (1, 1), (0, 0), (1, 1)),   # LeNet's conv2, fewer images than parts
    ((9, 20, 12, 12), (50, 20, 5, 5), (1, 1), (0, 0), (1, 1)),   # parts of 2 and 3 images
    ((2, 1, 28, 28), (20, 1, 5, 5), (1, 1), (0, 0), (1, 1)),     # LeNet's conv1: 576 positions, 9 runs
    ((5, 7, 15, 15), (17, 7, 3, 3), (2, 2), (1, 1), (1, 1)),     # stride 2, padding; 17 filters
    ((2, 3, 12, 12), (70, 3, 3, 3), (1, 1), (2, 2), (2, 2)),     # dilation; 70 filters: two runs of lanes
    ((1, 4, 4, 4), (16, 4, 1, 1), (1, 1), (0, 0), (1, 1)),       # one vector of positions, a 1x1 window
    ((4, 5, 14, 14), (7, 5, 3, 3), (1, 1), (0, 0), (1, 1)),      # 144 positions: 64 + 64 + 16
    ((3, 6, 9, 9), (20, 6, 3, 3), (1, 1), (1, 1), (1, 1)),       # 81 positions: a last vector overlapping
    ((2, 5, 7, 7), (16, 5, 3, 3), (1, 1), (1, 1), (1, 1)),       # 49 (ResNet's 7 x 7): 48 + the overlap
    ((3, 1, 6, 6), (18, 1, 2, 2), (1, 1), (0, 0), (1, 1)),       # K = 4: fewer rows than a tile (data)
    ((2, 3, 6, 6), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1)),        # 4 filters: the forward via the scratch
]
GROUPS = 1
pytestmark = pytest.mark.skipif(vec_tile()[0] == 0, reason="the host has neither AVX2 nor AVX-512")


def _nan(shape):
    return np.full(shape, np.nan, np.float32)


@pytest.mark.parametrize("case", CASES)
def test_small_forward_and_gradients_match_the_reference(case):
    x_shape, w_shape, stride, pad, dilate = case
    rng = np.random.default_rng(sum(x_shape) + sum(w_shape))
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    oh, ow = conv.conv2d_output_size(x_shape[2:], w_shape[2:], stride, pad, dilate)
    out_shape = (x_shape[0], w_shape[0], oh, ow)
    dout = rng.standard_normal(out_shape).astype(np.float32)
    args = (stride, pad, dilate, GROUPS)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    ref_dx, ref_dw = ref_conv_backward(x64, w64, dout.astype(np.float64), *args)
    depth = x_shape[1] * w_shape[2] * w_shape[3]
    tol = {"rtol": 1e-5, "atol": 1e-6 * depth ** 0.5 * 8}

    def scratch(kind):
        return _nan(conv.conv2d_cols_shape(kind, x_shape, w_shape, out_shape, GROUPS))

    cols, out = scratch("forward_small"), _nan(out_shape)
    conv.check_conv2d("forward_small", x, w, out, cols, *args)
    in_parts(conv2d_forward_small_parts, x, w, out, cols, *args)
    np.testing.assert_allclose(out, ref_conv(x64, w64, *args), **tol)

    cols, dx = scratch("backward_data_small"), _nan(x_shape)
    conv.check_conv2d("backward_data_small", dx, w, dout, cols, *args)
    in_parts(conv2d_backward_data_small_parts, dout, w, dx, cols, *args)
    np.testing.assert_allclose(dx, ref_dx, **tol)

    cols, dw = scratch("backward_weight_small"), _nan(w_shape)
    conv.check_conv2d("backward_weight_small", x, dw, dout, cols, *args)
    in_parts(conv2d_backward_weight_small_parts, dout, x, dw, cols, *args)
    np.testing.assert_allclose(dw, ref_dw, rtol=1e-5, atol=1e-6 * (x_shape[0] * oh * ow) ** 0.5 * 8)


def test_small_scratch_holds_one_slice_per_part():
    """One slice of ``small_layout`` elements per part: the batch's images, at most SMALL_CHUNKS."""
    for n in (1, SMALL_CHUNKS, 64):
        shape = conv.conv2d_cols_shape("backward_weight_small", (n, 20, 12, 12), (50, 20, 5, 5),
                                       (n, 50, 8, 8), 1)
        assert shape == (1, min(n, SMALL_CHUNKS) * small_layout(2, 20, 50, 5, 5, 64))
    x, w, out = (np.zeros(s, np.float32) for s in ((2, 3, 6, 6), (4, 3, 3, 3), (2, 4, 4, 4)))
    with pytest.raises(KernelArgError, match=r"conv2d_forward_small: argument 'cols' has shape \(1,10\)"):
        conv.check_conv2d("forward_small", x, w, out, np.zeros((1, 10), np.float32), (1, 1), (0, 0), (1, 1),
                          1)


@pytest.mark.parametrize("dtype, x_shape, w_shape, groups", [
    (np.float64, (1, 2, 6, 6), (4, 2, 3, 3), 1),
    (np.float32, (1, 2, 6, 6), (4, 1, 3, 3), 2),
    (np.float32, (1, 2, 5, 6), (4, 2, 3, 3), 1),      # 12 output positions: less than a vector
])
def test_small_kernels_reject_other_dtypes_and_planes(dtype, x_shape, w_shape, groups):
    x = np.zeros(x_shape, dtype)
    oh, ow = x_shape[2] - 2, x_shape[3] - 2
    out = np.zeros((1, 4, oh, ow), dtype)
    with pytest.raises(KernelArgError, match=r"conv2d_backward_data_small: takes float32, one group and "
                                             r"output planes of at least 16 positions"):
        conv.check_conv2d("backward_data_small", x, np.zeros(w_shape, dtype), out,
                          np.zeros((1, 1 << 16), dtype), (1, 1), (0, 0), (1, 1), groups)


def test_which_layers_prefer_the_small_kernels():
    """Small planes at stride 1 (float32, an image's columns within 64 Ki elements): LeNet's
    layers, forward and data gradient; the weight gradient from 64 values per column (conv2's 500,
    not conv1's 25). Strided layers with columns within 512 Ki elements and outputs of 64 positions
    (forwards of up to 4 images: any), 1x1 ones too. Not: 1x1 windows at stride 1, fewer than 16
    filters, big images' columns, groups, float64, ResNet's 7 x 7 planes and its stem."""
    s1, s2 = (1, 1), (2, 2)
    lenet1 = ((64, 1, 28, 28), (20, 1, 5, 5), (64, 20, 24, 24), s1, 1)
    lenet2 = ((64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8), s1, 1)
    assert prefers_small(*lenet1, "float32") and prefers_small(*lenet1, "float32", True)
    assert not prefers_small(*lenet1, "float32", "weight")
    assert all(prefers_small(*lenet2, "float32", g) for g in (False, True, "weight"))
    assert not prefers_small(*lenet2, "float64")
    assert not prefers_small((2, 64, 8, 8), (64, 64, 1, 1), (2, 64, 8, 8), s1, 1, "float32")
    assert not prefers_small((2, 20, 12, 12), (8, 20, 5, 5), (2, 8, 8, 8), s1, 1, "float32")
    assert not prefers_small((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 56, 56), s1, 1, "float32")
    assert not prefers_small((2, 20, 12, 12), (50, 10, 5, 5), (2, 50, 8, 8), s1, 2, "float32")
    assert not prefers_small((2, 512, 7, 7), (512, 512, 3, 3), (2, 512, 7, 7), s1, 1, "float32")
    down = ((32, 64, 56, 56), (128, 64, 3, 3), (32, 128, 28, 28), s2, 1)      # ResNet-18's s2b1a
    assert all(prefers_small(*down, "float32", g) for g in (False, True, "weight"))
    one = ((32, 256, 56, 56), (128, 256, 1, 1), (32, 128, 28, 28), s2, 1)      # a 1x1 at stride 2
    assert all(prefers_small(*one, "float32", g) for g in (False, True, "weight"))
    late = ((32, 256, 14, 14), (512, 256, 3, 3), (32, 512, 7, 7), s2, 1)      # 7 x 7 outputs
    assert not any(prefers_small(*late, "float32", g) for g in (False, True, "weight"))
    assert prefers_small((2,) + late[0][1:], late[1], (2,) + late[2][1:], s2, 1, "float32")
    assert not prefers_small((2,) + late[0][1:], late[1], (2,) + late[2][1:], s2, 1, "float32", True)
    mid = ((2, 128, 28, 28), (256, 128, 3, 3), (2, 256, 14, 14), s2, 1)      # 196 positions, batch 2
    assert prefers_small(*mid, "float32", True) and not prefers_small(*mid, "float32", "weight")
    assert prefers_small((8,) + mid[0][1:], mid[1], (8,) + mid[2][1:], s2, 1, "float32", "weight")
    stem = ((2, 3, 224, 224), (64, 3, 7, 7), (2, 64, 112, 112), s2, 1)
    assert not prefers_small(*stem, "float32")


def test_lenet_runs_the_small_kernels_and_matches_im2col(monkeypatch):
    """LeNet's training program calls the small-plane kernels for conv2's forward and gradients
    and conv1's forward (generated, not compiled); a net of one such layer gives im2col's output
    and gradients (the rule switched off) to float32 rounding."""
    from examples.nets import lenet
    f32 = np.dtype(np.float32)
    net = lenet()
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(64, 1, 28, 28))[0]))
    params = [n for n in shapes if n not in ("data", "softmax_label")]
    c = compile_symbol(net, shapes, dict.fromkeys(shapes, f32), dict.fromkeys(params, "write"), True,
                       Config.from_env(), load=False)
    src = c.program.source
    assert src.count("conv2d_forward_small_parts") >= 2     # conv1 and conv2
    assert "conv2d_backward_data_small_parts" in src and "conv2d_backward_weight_small_parts" in src
    assert "conv2d_backward_weight as" in src                  # conv1's weight gradient: im2col's

    one = mx.sym.Activation(mx.sym.Convolution(mx.sym.Variable("data"), kernel=(5, 5), num_filter=50,
                                               name="conv"), act_type="tanh")
    rng = np.random.default_rng(2)
    args = {"data": rng.standard_normal((6, 20, 12, 12)),
            "conv_weight": rng.standard_normal((50, 20, 5, 5)) * 0.05, "conv_bias": rng.standard_normal(50)}
    head = rng.standard_normal((6, 50, 8, 8)).astype(np.float32)

    def run():
        ex = one.bind(mx.cpu(), {k: mx.nd.array(v.astype(np.float32)) for k, v in args.items()},
                      args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward(mx.nd.array(head))
        return [out] + [ex.grad_dict[k].asnumpy() for k in args]
    small = run()
    from symjit.kernels.cpu import conv_small_rules
    monkeypatch.setattr(conv_small_rules, "SMALL_MAX_COLS", 0)
    monkeypatch.setattr(conv_small_rules, "SMALL_WIDE_S1_COLS", 0)   # nor as a wider plane
    one_shapes = {k: v.shape for k, v in args.items()}
    c = compile_symbol(one, one_shapes, dict.fromkeys(args, f32), dict.fromkeys(args, "write"), True,
                       Config.from_env(), load=False)
    assert "_small_" not in c.program.source
    im2col = run()
    for got, want in zip(small, im2col):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_wider_stride1_layers_the_tiles_and_winograd_leave_run_the_small_kernel(wide_tile_rule):
    """SqueezeNet's 3x3 layers at batch 2 (columns of 73 Ki to 205 Ki elements, which neither the
    direct tiles nor Winograd take) run the small-plane forward instead of im2col + BLAS, and give
    numpy's output; the layers those take keep them, columns past 512 Ki keep im2col, and so do
    planes under 64 positions (ResNet's 512-channel 7 x 7 layers)."""
    from symjit.kernels.cpu.conv_small_rules import prefers_small_wide

    from symjit.lower.cpu.nn import _forward_kind
    f32 = np.dtype(np.float32)

    def kind(x_shape, f, k=3):
        p = {"kernel": (k, k), "stride": (1, 1), "pad": (k // 2, k // 2), "dilate": (1, 1), "num_group": 1}
        return _forward_kind(x_shape, (f, x_shape[1], k, k), (x_shape[0], f, *x_shape[2:]), p, f32)
    assert kind((2, 32, 27, 27), 128) == "forward_small"
    assert kind((2, 64, 13, 13), 256) == "forward_small"
    assert kind((2, 64, 56, 56), 64) == "forward_vec"           # ResNet's: the tiles
    assert kind((32, 32, 27, 27), 128) != "forward_small"       # batch 32: the tiles
    assert kind((2, 512, 7, 7), 512) != "forward_small"          # 49 positions: im2col + BLAS
    assert prefers_small_wide((2, 448, 8, 8), (384, 448, 3, 3), (2, 384, 8, 8), (1, 1), 1, f32) == (
        vec_tile()[0] > 0)                                       # Inception's 8 x 8: 64 positions
    assert not prefers_small_wide((2, 96, 35, 35), (96, 96, 3, 3), (2, 96, 35, 35), (1, 1), 1, f32)
    assert not prefers_small_wide((2, 64, 13, 13), (256, 64, 1, 1), (2, 256, 13, 13), (1, 1), 1, f32)

    x_shape, w_shape = (2, 32, 27, 27), (128, 32, 3, 3)
    net = mx.sym.relu(mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), pad=(1, 1),
                                         num_filter=128, name="conv"))
    ex = net.simple_bind(mx.cpu(), data=x_shape, grad_req="null")
    src = "\n".join(p.program.source for p in ex._programs.values())
    assert "conv2d_forward_small_parts" in src and "im2col" not in src
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) * 0.1).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    got = ex.forward(data=x, conv_weight=w, conv_bias=b)[0].asnumpy()
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    want = np.einsum("nchwij,fcij->nfhw", windows, w.astype(np.float64)) + b[None, :, None, None]
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-4, atol=1e-4)


ROWS_CASES = [   # x shape, w shape, stride, pad, dilate: chunks of output rows (small_rows)
    ((2, 3, 80, 80), (16, 3, 7, 7), (2, 2), (3, 3), (1, 1)),     # a stem: even/odd columns, chunks 22 + 18
    ((2, 64, 60, 60), (16, 64, 3, 3), (2, 2), (1, 1), (1, 1)),   # 3x3/2: chunks of 7 rows, the last of 2
    ((3, 128, 50, 50), (20, 128, 3, 3), (3, 3), (2, 2), (2, 2)),  # stride 3, dilation; 20 filters
    ((1, 3, 40, 40), (6, 3, 3, 3), (2, 2), (0, 0), (1, 1)),      # one image, one tile row of filters
]


@pytest.mark.parametrize("case", ROWS_CASES)
def test_row_chunk_forward_matches_the_reference(case):
    from symjit.kernels.cpu.conv_shapes import small_rows
    x_shape, w_shape, stride, pad, dilate = case
    rng = np.random.default_rng(sum(x_shape))
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    args = (stride, pad, dilate, GROUPS)
    oh, ow = conv.conv2d_output_size(x_shape[2:], w_shape[2:], stride, pad, dilate)
    out = _nan((x_shape[0], w_shape[0], oh, ow))
    cols = _nan(conv.conv2d_cols_shape("forward_rows_small", x.shape, w.shape, out.shape, GROUPS))
    conv.check_conv2d("forward_rows_small", x, w, out, cols, *args)
    in_parts(conv2d_forward_rows_small_parts, x, w, out, cols, *args)
    depth = x_shape[1] * w_shape[2] * w_shape[3]
    want = ref_conv(x.astype(np.float64), w.astype(np.float64), *args)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6 * depth ** 0.5 * 8)
    chunks = -(-oh // small_rows(depth, oh, ow))
    assert chunks == {80: 2, 60: 5, 50: 3, 40: 1}[x_shape[2]]   # several chunks but in the last case

    dout = rng.standard_normal(out.shape).astype(np.float32)
    dw = _nan(w_shape)
    cols = _nan(conv.conv2d_cols_shape("backward_weight_rows_small", x.shape, w.shape, out.shape, GROUPS))
    conv.check_conv2d("backward_weight_rows_small", x, dw, dout, cols, *args)
    in_parts(conv2d_backward_weight_rows_small_parts, dout, x, dw, cols, *args)
    _, want_dw = ref_conv_backward(x.astype(np.float64), w.astype(np.float64), dout.astype(np.float64), *args)
    positions = x_shape[0] * oh * ow
    np.testing.assert_allclose(dw, want_dw, rtol=1e-5, atol=1e-6 * positions ** 0.5 * 8)


def test_row_chunk_forward_rejects_narrow_rows_and_is_chosen_for_stems():
    from symjit.kernels.cpu.conv_small_rules import prefers_small_rows

    from symjit.lower.cpu.nn import _forward_kind
    x = np.zeros((1, 3, 20, 20), np.float32)
    w = np.zeros((8, 3, 3, 3), np.float32)
    out = np.zeros((1, 8, 9, 9), np.float32)
    cols = np.zeros(conv.conv2d_cols_shape("forward_rows_small", x.shape, w.shape, out.shape, 1), np.float32)
    with pytest.raises(KernelArgError, match=r"conv2d_forward_rows_small: takes output rows of at least 16"):
        conv.check_conv2d("forward_rows_small", x, w, out, cols, (2, 2), (0, 0), (1, 1), 1)
    f32 = np.dtype(np.float32)
    stem = {"kernel": (7, 7), "stride": (2, 2), "pad": (3, 3), "dilate": (1, 1), "num_group": 1}
    kind = _forward_kind((2, 3, 224, 224), (64, 3, 7, 7), (2, 64, 112, 112), stem, f32)
    assert kind == "forward_rows_small"
    incep = {"kernel": (3, 3), "stride": (2, 2), "pad": (0, 0), "dilate": (1, 1), "num_group": 1}
    kind = _forward_kind((2, 3, 299, 299), (32, 3, 3, 3), (2, 32, 149, 149), incep, f32)
    assert kind == "forward_rows_small"
    assert not prefers_small_rows((2, 3, 224, 224), (64, 3, 7, 7), (2, 64, 112, 112), (2, 2), 1, "float64")
    assert not prefers_small_rows((2, 3, 224, 224), (8, 3, 7, 7), (2, 8, 112, 112), (2, 2), 1, "float32")


def test_a_stem_runs_the_row_chunk_kernels_and_matches_numpy():
    """A 7x7 stride-2 layer over 160 x 160 images (an image's columns 940 k elements): its forward
    and weight gradient run in chunks of output rows, and the output and gradients are numpy's."""
    x_shape, w_shape = (2, 3, 160, 160), (16, 3, 7, 7)
    net = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(7, 7), stride=(2, 2), pad=(3, 3),
                             num_filter=16, no_bias=True, name="conv")
    rng = np.random.default_rng(9)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) * 0.1).astype(np.float32)
    ex = net.bind(mx.cpu(), {"data": mx.nd.array(x), "conv_weight": mx.nd.array(w)},
                  args_grad={"conv_weight": mx.nd.zeros(w_shape)},
                  grad_req={"data": "null", "conv_weight": "write"})
    src = "\n".join(p.program.source for p in ex._programs.values())
    assert "conv2d_forward_rows_small_parts" in src and "conv2d_backward_weight_rows_small_parts" in src
    got = ex.forward(is_train=True)[0].asnumpy()
    head = rng.standard_normal(got.shape).astype(np.float32)
    ex.backward(mx.nd.array(head))
    args = ((2, 2), (3, 3), (1, 1), 1)
    want = ref_conv(x.astype(np.float64), w.astype(np.float64), *args)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    _, want_dw = ref_conv_backward(x.astype(np.float64), w.astype(np.float64), head.astype(np.float64), *args)
    np.testing.assert_allclose(ex.grad_dict["conv_weight"].asnumpy(), want_dw, rtol=1e-4, atol=1e-2)
