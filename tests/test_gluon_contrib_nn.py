"""mx.gluon.contrib's layers: the pixel shuffles against an element-by-element numpy reference
(imperative and hybridized), SparseEmbedding's rows and gradient (dense here), SyncBatchNorm as
BatchNorm on one device, the deformable convolutions reduced to a plain convolution by zero
offsets, and IntervalSampler under contrib.data."""
import itertools

import numpy as np
import pytest

import symjit as mx
from symjit import autograd, gluon
from symjit.gluon import contrib
from symjit.gluon.contrib.nn import (
    PixelShuffle1D,
    PixelShuffle2D,
    PixelShuffle3D,
    SparseEmbedding,
    SyncBatchNorm,
)


def _shuffle_reference(x, factors):
    """out[n, c, X1*f1 + j1, ...] = x[n, c*F + (j1, ..., jk) in row-major order, X1, ...]."""
    n, cf, *spatial = x.shape
    total = int(np.prod(factors))
    out = np.zeros((n, cf // total, *[s * f for s, f in zip(spatial, factors)]), x.dtype)
    for b, c in itertools.product(range(n), range(cf // total)):
        for j, offsets in enumerate(itertools.product(*[range(f) for f in factors])):
            for pos in itertools.product(*[range(s) for s in spatial]):
                target = tuple(p * f + o for p, f, o in zip(pos, factors, offsets))
                out[(b, c, *target)] = x[(b, c * total + j, *pos)]
    return out


@pytest.mark.parametrize("layer, factors, spatial", [
    (PixelShuffle1D(3), (3,), (4,)),
    (PixelShuffle2D((2, 3)), (2, 3), (3, 2)),
    (PixelShuffle2D(2), (2, 2), (2, 2)),
    (PixelShuffle3D((2, 1, 3)), (2, 1, 3), (2, 3, 2)),
], ids=["1d", "2d", "2d_one_factor", "3d"])
def test_pixel_shuffle_matches_numpy(layer, factors, spatial):
    x = np.random.RandomState(0).uniform(size=(2, 2 * int(np.prod(factors)), *spatial)).astype(np.float32)
    want = _shuffle_reference(x, factors)
    assert np.array_equal(layer(mx.nd.array(x)).asnumpy(), want)
    layer.hybridize()
    assert np.array_equal(layer(mx.nd.array(x)).asnumpy(), want)
    sym = layer(mx.sym.var("data"))
    assert sym.infer_shape(data=x.shape)[1] == [want.shape]


def test_pixel_shuffle_bad_factor():
    with pytest.raises(ValueError, match="PixelShuffle2D: factor must be"):
        PixelShuffle2D((2, 2, 2))
    with pytest.raises(ValueError, match="PixelShuffle1D: factor must be"):
        PixelShuffle1D(0)


def test_sparse_embedding_rows_and_row_sparse_gradient():
    layer = SparseEmbedding(6, 3)
    layer.initialize()
    gluon.Trainer(layer.collect_params(), "sgd")
    plain = gluon.nn.Embedding(6, 3)
    plain.initialize()
    plain.weight.set_data(layer.weight._reduce())
    x = mx.nd.array([[4, 1], [1, 0]])
    with autograd.record():
        y = layer(x)
    y.backward()
    assert y.shape == (2, 2, 3)
    assert np.array_equal(y.asnumpy(), plain(x).asnumpy())
    grad = layer.weight.grad()
    assert np.array_equal(grad.asnumpy()[:, 0], [1, 2, 0, 0, 1, 0])        # rows counted once per index
    assert grad.stype == "row_sparse" and grad.indices.asnumpy().tolist() == [0, 1, 4]
    assert layer.weight.stype == "row_sparse" and repr(layer) == "SparseEmbedding(6 -> 3, float32)"


def test_sync_batch_norm_is_batch_norm_on_one_device():
    x = mx.nd.array(np.random.RandomState(1).normal(size=(4, 3, 2)).astype(np.float32))
    sync, plain = SyncBatchNorm(in_channels=3, num_devices=1), gluon.nn.BatchNorm(in_channels=3)
    for layer in (sync, plain):
        layer.initialize(mx.init.Uniform())
    plain.gamma.set_data(sync.gamma.data())
    plain.beta.set_data(sync.beta.data())
    outs = []
    for layer in (sync, plain):
        with autograd.record():
            outs.append(layer(x))
    np.testing.assert_allclose(outs[0].asnumpy(), outs[1].asnumpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sync.running_mean.data().asnumpy(), plain.running_mean.data().asnumpy(),
                               rtol=1e-6, atol=1e-7)
    xs = x.asnumpy()
    normed = (xs - xs.mean(axis=(0, 2), keepdims=True)) / np.sqrt(xs.var(axis=(0, 2), keepdims=True) + 1e-5)
    want = normed * sync.gamma.data().asnumpy()[None, :, None] + sync.beta.data().asnumpy()[None, :, None]
    np.testing.assert_allclose(outs[0].asnumpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls", [contrib.cnn.DeformableConvolution,
                                 contrib.cnn.ModulatedDeformableConvolution])
def test_deformable_convolution_with_zero_offsets_is_a_convolution(cls):
    x = mx.nd.array(np.random.RandomState(2).uniform(size=(2, 2, 5, 4)).astype(np.float32))
    layer = cls(3, kernel_size=(3, 2), padding=1)
    layer.initialize(mx.init.Xavier())      # the offsets' convolution starts at zero
    conv = gluon.nn.Conv2D(3, kernel_size=(3, 2), padding=1, in_channels=2)
    conv.initialize()
    y = layer(x)
    conv.weight.set_data(layer.deformable_conv_weight.data())
    conv.bias.set_data(layer.deformable_conv_bias.data())
    np.testing.assert_allclose(y.asnumpy(), conv(x).asnumpy(), rtol=1e-5, atol=1e-5)
    taps = (3 if cls is contrib.cnn.ModulatedDeformableConvolution else 2) * 6
    assert layer.offset_weight.shape == (taps, 2, 3, 2)
    assert sorted(k[len(layer.prefix):] for k in layer.collect_params()) == [
        "deformable_conv_bias", "deformable_conv_weight", "offset_bias", "offset_weight"]
    with pytest.raises(ValueError, match="layout 'NHWC' is not supported"):
        cls(3, layout="NHWC")


def test_interval_sampler_under_contrib_data():
    assert list(contrib.data.IntervalSampler(7, 3)) == [0, 3, 6, 1, 4, 2, 5]
    assert list(contrib.data.sampler.IntervalSampler(7, 3, rollover=False)) == [0, 3, 6]
