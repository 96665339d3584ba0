"""The 1x1 convolution in register tiles (``symjit.kernels.cpu.conv_pointwise``) against numpy's
product: planes of one vector, of a vector and a part (the last tile recomputing part of the one
before), of several tasks with a longer last one; filters from one tile's rows to a remainder of
every size, shared out when the tasks are few; NaN-filled outputs; the checks that keep other
dtypes and geometries out; which layers the compiler gives it, and a net calling it."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.cpu.conv_pointwise import (
    check_pointwise,
    conv2d_forward_pointwise_parts,
)
from symjit.kernels.cpu.conv_shapes import vec_tile
from symjit.kernels.cpu.conv_small_rules import prefers_pointwise_tiles
from symjit.kernels.cpu.gemm import KernelArgError

import symjit as mx
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config

from .partsrun import in_parts

pytestmark = pytest.mark.skipif(vec_tile()[0] == 0, reason="the host has neither AVX2 nor AVX-512")

CASES = [   # x shape, filters
    ((2, 3, 4, 4), 6),          # one vector of pixels, one tile of filters
    ((1, 5, 5, 5), 7),          # 25 pixels: a vector and a recomputed one; one image: filters shared
    ((3, 16, 7, 7), 17),        # ResNet's 7 x 7 planes
    ((2, 8, 20, 20), 70),       # 400 pixels: one task of 400
    ((1, 4, 40, 40), 64),       # 1600: six tasks (POINTWISE_RUN), the last of 320
    ((2, 9, 1, 257), 30),       # one task of 257 (a last vector of one new pixel)
    ((4, 32, 14, 14), 256),     # ResNet-50's 14 x 14 layer, smaller
]


@pytest.mark.parametrize("x_shape, f", CASES)
def test_pointwise_tiles_match_numpy(x_shape, f):
    rng = np.random.default_rng(sum(x_shape) + f)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((f, x_shape[1], 1, 1)).astype(np.float32)
    out = np.full((x_shape[0], f, *x_shape[2:]), np.nan, np.float32)
    check_pointwise(x, w, out, 1)
    in_parts(conv2d_forward_pointwise_parts, x, w, out, 1)
    want = np.einsum("fc,nchw->nfhw", w[:, :, 0, 0].astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * x_shape[1] ** 0.5)


@pytest.mark.parametrize("dtype, x_shape, w_shape, groups", [
    (np.float64, (1, 2, 4, 4), (8, 2, 1, 1), 1),
    (np.float32, (1, 2, 6, 6), (8, 2, 3, 3), 1),       # a 3x3 window
    (np.float32, (1, 2, 4, 4), (8, 1, 1, 1), 2),       # groups
    (np.float32, (1, 2, 4, 4), (5, 2, 1, 1), 1),       # fewer filters than a tile's rows
    (np.float32, (1, 2, 3, 5), (8, 2, 1, 1), 1),       # 15 pixels: less than a vector
])
def test_pointwise_tiles_reject_other_dtypes_and_geometries(dtype, x_shape, w_shape, groups):
    x = np.zeros(x_shape, dtype)
    out = np.zeros((1, w_shape[0], *x_shape[2:]), dtype)
    with pytest.raises(KernelArgError, match=r"conv2d_forward_pointwise_parts: takes float32, a 1x1 "):
        check_pointwise(x, np.zeros(w_shape, dtype), out, groups)


def test_pointwise_tiles_check_the_output_shape():
    x, w = np.zeros((2, 3, 4, 4), np.float32), np.zeros((8, 3, 1, 1), np.float32)
    with pytest.raises(KernelArgError, match=r"argument 'out' has shape \(2,8,4,5\)"):
        check_pointwise(x, w, np.zeros((2, 8, 4, 5), np.float32), 1)


def test_which_layers_prefer_the_pointwise_tiles():
    """float32 1x1 layers at stride 1 without padding, 16 filters or more, images of 64 pixels or
    more (ResNet-50's 56 x 56 to 14 x 14 layers, Inception's 8 x 8 ones); not its 7 x 7 ones."""
    geo = ((1, 1), (0, 0), (1, 1), 1)
    assert prefers_pointwise_tiles((2, 64, 56, 56), (256, 64, 1, 1), *geo, "float32")
    assert prefers_pointwise_tiles((32, 2048, 8, 8), (320, 2048, 1, 1), *geo, "float32")
    assert not prefers_pointwise_tiles((2, 512, 7, 7), (2048, 512, 1, 1), *geo, "float32")
    assert not prefers_pointwise_tiles((2, 64, 56, 56), (256, 64, 1, 1), *geo, "float64")
    assert not prefers_pointwise_tiles((2, 64, 56, 56), (8, 64, 1, 1), *geo, "float32")
    assert not prefers_pointwise_tiles((2, 64, 56, 56), (256, 64, 1, 1), (2, 2), (0, 0), (1, 1), 1,
                                       "float32")


def test_a_1x1_layer_runs_the_pointwise_tiles():
    """A 1x1 layer over 10 x 10 images (with BatchNorm and relu in its epilogue) calls the tiles,
    no scratch planned; output and gradients match numpy's."""
    x_shape, w_shape = (2, 24, 10, 10), (32, 24, 1, 1)
    net = mx.sym.Activation(mx.sym.Convolution(mx.sym.Variable("data"), kernel=(1, 1), num_filter=32,
                                               name="conv"), act_type="relu")
    f32 = np.dtype(np.float32)
    c = compile_symbol(net, {"data": x_shape, "conv_weight": w_shape, "conv_bias": (32,)},
                       {"data": f32, "conv_weight": f32, "conv_bias": f32}, {}, False, Config.from_env(),
                       load=False)
    assert "conv2d_forward_pointwise_parts(" in c.program.source
    fwd = next(grp for grp in c.groups if grp.anchor is not None and grp.anchor.name == "conv")
    assert not fwd.workspace and len(c.groups) == 1
    rng = np.random.default_rng(4)
    args = {"data": rng.standard_normal(x_shape), "conv_weight": rng.standard_normal(w_shape) * 0.2,
            "conv_bias": rng.standard_normal(32)}
    ex = net.bind(mx.cpu(), {k: mx.nd.array(v.astype(np.float32)) for k, v in args.items()},
                  args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
    got = ex.forward(is_train=True)[0].asnumpy()
    pre = np.einsum("fc,nchw->nfhw", args["conv_weight"][:, :, 0, 0], args["data"])
    pre += args["conv_bias"][None, :, None, None]
    np.testing.assert_allclose(got, np.maximum(pre, 0.0), rtol=1e-4, atol=1e-4)
    head = rng.standard_normal(got.shape)
    ex.backward(mx.nd.array(head.astype(np.float32)))
    dpre = head * (pre > 0)
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(),
                               np.einsum("fc,nfhw->nchw", args["conv_weight"][:, :, 0, 0], dpre),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ex.grad_dict["conv_weight"].asnumpy()[:, :, 0, 0],
                               np.einsum("nfhw,nchw->fc", dpre, args["data"]), rtol=1e-4, atol=1e-3)
