"""The SIMD tile kernels (``symjit.kernels.cpu.conv_vec``) against the float64 reference convolution
and its data and weight gradients: square and odd planes, every padding they take (none, symmetric, one axis,
``K - 1``), 1-D-like and 5x5 windows, filters and channels that are not a multiple of the tile (and
a single channel), batches cut into blocks (the last one shorter), NaN-filled scratch; the checks
that keep other dtypes and geometries out; and which layers the compiler gives them."""
from __future__ import annotations

import functools

import numba
import numpy as np
import pytest
from symjit.kernels.cpu import conv, conv_shapes
from symjit.kernels.cpu.conv_shapes import vec_layout, vec_packed_scratch, vec_tile
from symjit.kernels.cpu.conv_vec import (
    MR,
    NR,
    _compile_tile,
    _tiles_source,
    conv2d_backward_data_vec_parts,
    conv2d_backward_weight_vec_parts,
    conv2d_forward_vec_flat_parts,
    conv2d_forward_vec_parts,
)
from symjit.kernels.cpu.gemm import KernelArgError

from symjit.ops.registry import get_op

from .partsrun import in_parts
from .test_kernels_conv_pool import ref_conv, ref_conv_backward

CASES = [   # x shape, w shape, pad
    ((2, 3, 6, 6), (4, 3, 3, 3), (1, 1)),
    ((3, 2, 7, 5), (9, 2, 3, 3), (1, 1)),       # odd planes; 9 filters: a second, mostly empty tile row
    ((1, 4, 5, 8), (2, 4, 3, 3), (0, 0)),
    ((2, 3, 4, 4), (5, 3, 3, 3), (2, 2)),       # pad K - 1: the data gradient pads by 0
    ((2, 2, 9, 6), (3, 2, 3, 3), (1, 0)),       # pad on rows only
    ((1, 1, 3, 3), (1, 1, 3, 3), (0, 2)),       # one channel, one filter, one output row
    ((2, 5, 9, 11), (17, 5, 5, 5), (2, 2)),     # 5x5 'same'; filters past two tiles
    ((2, 6, 7, 9), (8, 6, 1, 7), (0, 3)),       # Inception's 1x7
    ((2, 6, 9, 7), (8, 6, 7, 1), (3, 0)),       # and 7x1
    ((3, 20, 12, 12), (50, 20, 5, 5), (0, 0)),  # LeNet's conv2: 20 channels, 50 filters
    ((2, 3, 20, 21), (4, 3, 3, 3), (1, 1)),     # positions span several runs of NR
    ((2, 3, 30, 31), (5, 3, 3, 3), (1, 1)),     # the weight gradient's positions span two chunks
]
GEOMETRY = ((1, 1), (1, 1), 1)   # stride, dilate, groups
# check_conv2d refuses the tile kernels on a host without AVX2 or AVX-512 (the compiler never picks
# them there); every machine of ours has one of the two.
pytestmark = pytest.mark.skipif(vec_tile()[0] == 0, reason="the host has neither AVX2 nor AVX-512")


def _scratch(kind, x_shape, w_shape, out_shape, images):
    """NaN-filled float32 scratch of ``kind``: for the whole batch (``images=None``), or for
    ``images`` per block (the budget that holds exactly that many)."""
    limit = conv.CONV_SCRATCH_MAX
    if images is not None:
        images = min(images, x_shape[0])
        data = kind == "backward_data_vec"
        c_in, c_out = (w_shape[0], x_shape[1]) if data else (x_shape[1], w_shape[0])
        plane, other = (out_shape[2:], x_shape[2:]) if data else (x_shape[2:], out_shape[2:])
        kh, kw = w_shape[2:]
        ph, pw = (other[0] - plane[0] + kh - 1) // 2, (other[1] - plane[1] + kw - 1) // 2
        weight = kind == "backward_weight_vec"
        limit = int(vec_layout(images, c_in, c_out, *plane, kh, kw, ph, pw, 1, 1, weight)[2])
        limit += 0 if weight else vec_packed_scratch(c_in, c_out, kh * kw)   # AVX2's packed weight
    shape = conv.conv2d_cols_shape(kind, x_shape, w_shape, out_shape, 1, limit)
    if images is not None:
        assert shape == (1, limit)
    return np.full(shape, np.nan, np.float32)


@pytest.mark.parametrize("images", [None, 1, 2])
@pytest.mark.parametrize("case", CASES)
def test_tile_forward_and_gradients_match_the_reference(case, images):
    x_shape, w_shape, pad = case
    rng = np.random.default_rng(sum(x_shape) + sum(w_shape))
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    stride, dilate, groups = GEOMETRY
    oh, ow = conv.conv2d_output_size(x_shape[2:], w_shape[2:], stride, pad, dilate)
    out_shape = (x_shape[0], w_shape[0], oh, ow)
    dout = rng.standard_normal(out_shape).astype(np.float32)
    args = (stride, pad, dilate, groups)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    ref_dx, ref_dw = ref_conv_backward(x64, w64, dout.astype(np.float64), *args)
    depth = x_shape[1] * w_shape[2] * w_shape[3]
    tol = {"rtol": 1e-5, "atol": 1e-6 * depth ** 0.5 * 8}

    cols = _scratch("forward_vec", x_shape, w_shape, out_shape, images)
    out = np.full(out_shape, np.nan, np.float32)
    conv.check_conv2d("forward_vec", x, w, out, cols, *args)
    in_parts(conv2d_forward_vec_parts, x, w, out, cols, *args)
    np.testing.assert_allclose(out, ref_conv(x64, w64, *args), **tol)

    cols = _scratch("forward_vec", x_shape, w_shape, out_shape, None)   # the batch in one block
    untouched = np.full(out_shape, np.nan, np.float32)
    in_parts(conv2d_forward_vec_flat_parts, x, w, untouched, cols, *args)
    assert np.isnan(untouched).all()   # the result stays in the scratch, where vec_layout says
    n, c, h, wd = x_shape
    cs, os, _ = vec_layout(n, c, w_shape[0], h, wd, *w_shape[2:], *pad, 1, 1)
    f, oh_, ow_ = np.meshgrid(np.arange(out_shape[1]), np.arange(oh), np.arange(ow), indexing="ij")
    flat = np.stack([cols[0, c * cs + f * os + (i * (h + pad[0]) + oh_) * (wd + pad[1]) + ow_]
                     for i in range(n)])
    np.testing.assert_array_equal(flat, out)   # the same tiles: the same values

    cols = _scratch("backward_data_vec", x_shape, w_shape, out_shape, images)
    dx = np.full(x_shape, np.nan, np.float32)
    conv.check_conv2d("backward_data_vec", dx, w, dout, cols, *args)
    in_parts(conv2d_backward_data_vec_parts, dout, w, dx, cols, *args)
    np.testing.assert_allclose(dx, ref_dx, **tol)

    cols = _scratch("backward_weight_vec", x_shape, w_shape, out_shape, images)
    dw = np.full(w_shape, np.nan, np.float32)
    conv.check_conv2d("backward_weight_vec", x, dw, dout, cols, *args)
    in_parts(conv2d_backward_weight_vec_parts, dout, x, dw, cols, *args)
    positions = out_shape[0] * out_shape[2] * out_shape[3]
    np.testing.assert_allclose(dw, ref_dw, rtol=1e-5, atol=1e-6 * positions ** 0.5 * 8)


@pytest.mark.parametrize("mr, nv, n", [(6, 1, 1), (6, 4, 4), (6, 4, 2), (4, 6, 3)])
def test_a_tile_of_any_shape_sums_its_strided_products(mr, nv, n):
    """The generated tile (AVX2's 6 x 1 too, and a shorter last tile of ``n`` vectors): ``out[r*os +
    j] = sum over (c, kh, kw) of w[min(r, rows-1)*wrs + c*wcs + kh*wkh + kw*wkw] * x[c*cs + kh*rs +
    kw + j]``, from zero, then added to; rows past ``rows`` repeat the last filter."""
    tile = _compile_tile(_tiles_source(mr, nv), "tile")

    @numba.njit
    def run(n, x, cs, rs, w, wo, wrs, wcs, wkh, wkw, rows, out, os, c_, kh_, kw_, first):
        tile(n, x, 0, cs, rs, 1, w, wo, wrs, wcs, wkh, wkw, rows, out, 0, os, 0, c_, kh_, kw_, first)

    rng = np.random.default_rng(3)
    c_, kh_, kw_, rows, cs, rs, os = 3, 2, 3, mr - 1, 200, 40, 16 * nv
    x = rng.standard_normal(c_ * cs).astype(np.float32)
    w = rng.standard_normal(rows * c_ * kh_ * kw_).astype(np.float32)
    wrs, wcs, wkh, wkw = c_ * kh_ * kw_, 1, c_ * kw_, -c_       # a transposed, flipped weight
    wo = (kw_ - 1) * c_
    out = np.full(mr * os, np.nan, np.float32)
    run(n, x, cs, rs, w, wo, wrs, wcs, wkh, wkw, rows, out, os, c_, kh_, kw_, True)
    want = np.zeros((mr, 16 * n))
    for r in range(mr):
        for c in range(c_):
            for kh in range(kh_):
                for kw in range(kw_):
                    wv = w[wo + min(r, rows - 1) * wrs + c * wcs + kh * wkh + kw * wkw]
                    want[r] += wv * x[c * cs + kh * rs + kw:][:16 * n].astype(np.float64)
    got = out.reshape(mr, os)
    np.testing.assert_allclose(got[:, :16 * n], want, rtol=1e-5, atol=1e-5)
    assert np.isnan(got[:, 16 * n:]).all()      # a shorter tile writes only its vectors
    run(n, x, cs, rs, w, wo, wrs, wcs, wkh, wkw, rows, out, os, c_, kh_, kw_, False)
    np.testing.assert_allclose(out.reshape(mr, os)[:, :16 * n], 2 * want, rtol=1e-5, atol=1e-5)


def test_tile_sizes_fit_the_scratch_bounds():
    """The scratch is sized for any tile up to 8 filters x 96 outputs (``vec_layout``)."""
    assert 1 <= MR <= 8 and 16 <= NR <= 96 and NR % 16 == 0


@pytest.mark.parametrize("dtype, w_shape, stride, pad, dilate, groups", [
    (np.float64, (4, 2, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    (np.float32, (4, 2, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    (np.float32, (4, 2, 3, 3), (1, 1), (1, 1), (2, 2), 1),
    (np.float32, (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 2),
    (np.float32, (4, 2, 3, 3), (1, 1), (3, 1), (1, 1), 1),
])
def test_tile_kernels_reject_other_dtypes_and_geometries(dtype, w_shape, stride, pad, dilate, groups):
    x = np.zeros((1, 2, 8, 8), dtype)
    oh, ow = conv.conv2d_output_size((8, 8), w_shape[2:], stride, pad, dilate)
    out = np.zeros((1, 4, oh, ow), dtype)
    cols = np.zeros((1, 1 << 16), dtype)
    with pytest.raises(KernelArgError,
                       match=r"conv2d_forward_vec: takes float32 at stride 1.*'x' \(1,2,8,8\)"):
        conv.check_conv2d("forward_vec", x, np.zeros(w_shape, dtype), out, cols, stride, pad, dilate, groups)


def test_tile_scratch_too_short_is_an_error():
    x, w, out = (np.zeros(s, np.float32) for s in ((2, 3, 6, 6), (4, 3, 3, 3), (2, 4, 6, 6)))
    least = conv.conv2d_cols_shape("forward_vec", x.shape, w.shape, out.shape, 1, max_elems=0)
    with pytest.raises(KernelArgError, match=r"argument 'cols' has shape \(1,10\)"):
        conv.check_conv2d("forward_vec", x, w, out, np.zeros((1, 10), np.float32), (1, 1), (1, 1), (1, 1), 1)
    conv.check_conv2d("forward_vec", x, w, out, np.zeros(least, np.float32), (1, 1), (1, 1), (1, 1), 1)


def test_which_layers_prefer_the_tile_kernels():
    """With AVX-512's tile: planes of 28 x 28 and more in float32 at stride 1 do (ResNet's 56 x 56
    and 28 x 28 layers, Inception's 147 x 147 and 35 x 35 ones), forward and data gradient; smaller
    planes forward only, unless tiny or Winograd's over many positions; into fewer than 16 channels,
    float64, strides and groups do not."""
    prefers_vec = functools.partial(conv_shapes.prefers_vec, tile=(6, 4))
    geo = ((1, 1), (1, 1), (1, 1), 1)
    s1 = ((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 56, 56))
    assert prefers_vec(*s1, *geo, "float32") and prefers_vec(*s1, *geo, "float32", gradient=True)
    assert not prefers_vec(*s1, *geo, "float64")
    s2 = ((2, 128, 28, 28), (128, 128, 3, 3), (2, 128, 28, 28))
    assert prefers_vec(*s2, *geo, np.float32) and prefers_vec(*s2, *geo, np.float32, gradient=True)
    assert prefers_vec((2, 32, 149, 149), (32, 32, 3, 3), (2, 32, 147, 147), (1, 1), (0, 0), (1, 1), 1,
                       "float32")
    s3 = ((2, 256, 14, 14), (256, 256, 3, 3), (2, 256, 14, 14))
    assert prefers_vec(*s3, *geo, "float32") and not prefers_vec(*s3, *geo, "float32", gradient=True)
    s3_32 = ((32, 256, 14, 14), (256, 256, 3, 3), (32, 256, 14, 14))     # Winograd's
    assert not prefers_vec(*s3_32, *geo, "float32")
    i17 = ((32, 160, 17, 17), (160, 160, 1, 7), (32, 160, 17, 17), (1, 1), (0, 3), (1, 1), 1)
    assert prefers_vec(*i17, "float32") and not prefers_vec(*i17, "float32", gradient=True)
    lenet2 = ((2, 20, 12, 12), (50, 20, 5, 5), (2, 50, 8, 8), (1, 1), (0, 0), (1, 1), 1)    # 3.2 M MACs
    assert not prefers_vec(*lenet2, "float32")
    assert not prefers_vec((2, 768, 17, 17), (192, 768, 1, 1), (2, 192, 17, 17), (1, 1), (0, 0), (1, 1), 1,
                           "float32")     # 1x1: GEMM
    assert prefers_vec((64,) + lenet2[0][1:], lenet2[1], (64,) + lenet2[2][1:], *lenet2[3:], "float32")
    assert prefers_vec(*s1, *geo, "float32", gradient="weight")
    assert not prefers_vec(*s3, *geo, "float32", gradient="weight")
    assert not prefers_vec(*s2, *geo, "float32", gradient="weight")
    seven_one = ((2, 64, 35, 35), (64, 64, 7, 1), (2, 64, 35, 35), (1, 1), (3, 0), (1, 1), 1)
    assert prefers_vec(*seven_one, "float32") and not prefers_vec(*seven_one, "float32", gradient="weight")
    vgg = ((2, 3, 224, 224), (64, 3, 3, 3), (2, 64, 224, 224))
    assert prefers_vec(*vgg, *geo, "float32") and not prefers_vec(*vgg, *geo, "float32", gradient=True)
    assert not prefers_vec(*s1[:2], (2, 64, 28, 28), (2, 2), (1, 1), (1, 1), 1, "float32")
    assert not prefers_vec((2, 64, 56, 56), (64, 32, 3, 3), (2, 64, 56, 56), (1, 1), (1, 1), (1, 1), 2,
                           "float32")


def test_avx2s_tile_takes_forwards_and_data_gradients_of_few_channels():
    """AVX2's narrow tile (packed weight): forwards of at most 64 input channels (SqueezeNet's
    expansion, VGG's 3-channel input, Inception's 32- and 48-channel layers, ResNet's 64 -> 64) and
    data gradients whose convolution reads at most 64 channels (the layer's filters); not layers of
    more channels, and no weight gradient. AVX-512's wide tile takes them all."""
    def prefers(shapes, geo=((1, 1), (1, 1), (1, 1), 1), gradient=False, tile=(6, 1)) -> bool:
        return conv_shapes.prefers_vec(*shapes, *geo, "float32", gradient, tile=tile)
    s1 = ((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 56, 56))
    sq55 = ((2, 16, 55, 55), (64, 16, 3, 3), (2, 64, 55, 55))
    vgg = ((2, 3, 224, 224), (64, 3, 3, 3), (2, 64, 224, 224))
    i35x5 = ((2, 48, 35, 35), (64, 48, 5, 5), (2, 64, 35, 35))
    five = ((1, 1), (2, 2), (1, 1), 1)
    lenet2 = ((64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8))
    valid = ((1, 1), (0, 0), (1, 1), 1)
    assert prefers(sq55) and prefers(vgg) and prefers(i35x5, five) and prefers(lenet2, valid)
    assert prefers(s1) and prefers(s1, gradient=True) and not prefers(s1, gradient="weight")
    c64, c65 = (((2, c, 147, 147), (64, c, 3, 3), (2, 64, 147, 147)) for c in (64, 65))
    assert prefers(c64) and not prefers(c65) and prefers(c65, tile=(6, 4))
    f64, f65 = (((2, 32, 147, 147), (f, 32, 3, 3), (2, f, 147, 147)) for f in (64, 65))
    assert prefers(f64, gradient=True) and not prefers(f65, gradient=True)
    assert prefers(f65) and prefers(f65, gradient=True, tile=(6, 4))
    assert prefers(s1, gradient="weight", tile=(6, 4))
    assert not prefers(sq55, tile=(0, 0))


def test_a_window_nearly_as_big_as_its_image_keeps_the_gemm_kernels():
    """The tiles run over the padded input plane: a window as big as the image (one output
    position) would do thousands of times its multiply-adds, so every pass keeps im2col + GEMM,
    while the same layer with a 3 x 3 window still gets the tiles."""
    from symjit.lower.cpu.nn import _forward_kind, _gradient_kind
    geo = ((1, 1), (0, 0), (1, 1), 1)
    prefers_vec = functools.partial(conv_shapes.prefers_vec, tile=(6, 4))     # AVX-512's tile
    whole = ((4, 3, 224, 224), (256, 3, 224, 224), (4, 256, 1, 1))
    for gradient in (False, True, "weight"):
        assert not prefers_vec(*whole, *geo, "float32", gradient)
    small = ((4, 3, 224, 224), (256, 3, 3, 3), (4, 256, 222, 222))
    assert prefers_vec(*small, *geo, "float32") and prefers_vec(*small, *geo, "float32", "weight")
    p = get_op("Convolution").parse_params({"kernel": "(224, 224)", "num_filter": "256"})
    f32 = np.dtype(np.float32)
    assert not _forward_kind(*whole, p, f32).endswith("_vec")
    assert _gradient_kind("backward_weight", *whole, p, f32) == "backward_weight"


def test_the_flat_forward_needs_the_batch_in_one_block():
    x = np.ones((3, 4, 10, 10), np.float32)
    w = np.ones((5, 4, 3, 3), np.float32)
    out = np.empty((3, 5, 10, 10), np.float32)
    cols = _scratch("forward_vec", x.shape, w.shape, out.shape, 2)   # blocks of two images
    with pytest.raises(ValueError, match="does not hold the whole batch"):
        in_parts(conv2d_forward_vec_flat_parts, x, w, out, cols, *GEOMETRY[:1], (1, 1), *GEOMETRY[1:])


def test_tile_scratch_holds_several_images_whatever_the_block_budget():
    """The compiler's block budget (one ResNet 56 x 56 image here) does not cut the tile kernels'
    batch into blocks of one image: their budget holds ``VEC_BLOCK_IMAGES`` images (the batch when
    smaller), and a budget that holds more (LeNet's second layer) is kept."""
    from symjit.kernels.cpu.conv_shapes import VEC_BLOCK_IMAGES, conv2d_block_elems, vec_images_per_block
    x_shape, w_shape = (32, 64, 56, 56), (64, 64, 3, 3)
    assert conv2d_block_elems(w_shape, 1) < 2 * vec_layout(1, 64, 64, 56, 56, 3, 3, 1, 1, 1, 1)[2]
    for kind, weight in (("forward_vec", False), ("backward_data_vec", False), ("backward_weight_vec", True)):
        for batch in (32, 2):
            xs = (batch, *x_shape[1:])
            budget = conv2d_block_elems(w_shape, 1, kind, xs, xs)
            length = conv.conv2d_cols_shape(kind, xs, w_shape, xs, 1, budget)[1]
            length -= 0 if weight else vec_packed_scratch(64, 64, 9)   # (AVX2's packed weight)
            nb = vec_images_per_block(length, batch, 64, 64, 56, 56, 3, 3, 1, 1, 1, 1, weight)
            assert nb == min(batch, VEC_BLOCK_IMAGES)
            assert length == vec_layout(nb, 64, 64, 56, 56, 3, 3, 1, 1, 1, 1, weight)[2]
    x, w, out = (64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8)   # LeNet's second layer
    assert conv2d_block_elems(w, 1, "forward_vec", x, out) == conv2d_block_elems(w, 1)
