"""Gluon pooling layers with channel-last layouts and 3-D windows (built from the channel-first
1-D/2-D Pooling operator): outputs against a direct numpy pooling over each window, gradients
against the window's first maximum (max) or its share of the window (avg), imperative and
hybridized alike."""
import itertools

import numpy as np
import pytest

import symjit as mx
from symjit import autograd
from symjit.gluon import nn

RNG = np.random.default_rng(5)


def _windows(shape, k, s, p, ceil):
    """Per output position: the window's slices (clipped to the data) and its padded size."""
    spatial = shape[2:]
    outs = [(n + 2 * pp - kk + (ss - 1 if ceil else 0)) // ss + 1
            for n, kk, ss, pp in zip(spatial, k, s, p)]
    for idx in itertools.product(*map(range, outs)):
        lo = [i * ss - pp for i, ss, pp in zip(idx, s, p)]
        hi = [min(a + kk, n + pp) for a, kk, n, pp in zip(lo, k, spatial, p)]
        padded = int(np.prod([b - a for a, b in zip(lo, hi)]))
        yield idx, tuple(slice(max(a, 0), min(b, n)) for a, b, n in zip(lo, hi, spatial)), padded, outs


def _reference(x, k, s, p, kind, ceil, include_pad):
    """Forward output and the gradient of its sum, channel-first."""
    out, grad = None, np.zeros_like(x)
    for idx, win, padded, outs in _windows(x.shape, k, s, p, ceil):
        out = np.zeros(x.shape[:2] + tuple(outs)) if out is None else out
        block = x[(slice(None), slice(None), *win)]
        flat = block.reshape(x.shape[0], x.shape[1], -1)
        if kind == "max":
            out[(slice(None), slice(None), *idx)] = flat.max(-1)
            first = np.zeros_like(flat)
            np.put_along_axis(first, flat.argmax(-1)[..., None], 1.0, -1)   # the first maximum
            grad[(slice(None), slice(None), *win)] += first.reshape(block.shape)
        else:
            n = padded if include_pad else flat.shape[-1]
            out[(slice(None), slice(None), *idx)] = flat.sum(-1) / n
            grad[(slice(None), slice(None), *win)] += 1.0 / n
    return out, grad


def _run(layer, x, hybrid):
    layer.hybridize(hybrid)
    data = mx.nd.array(x)
    data.attach_grad()
    with autograd.record():
        y = layer(data)
    y.backward()
    return y.asnumpy(), data.grad.asnumpy()


CASES = [   # (layer class, kernel, stride, pad, ceil_mode, count_include_pad, layout)
    (nn.MaxPool3D, (3, 2, 3), (2, 1, 2), (1, 0, 1), True, None, "NCDHW"),
    (nn.AvgPool3D, (3, 3, 2), (1, 2, 2), (1, 1, 0), False, False, "NDHWC"),
    (nn.AvgPool3D, (2, 2, 2), (2, 2, 2), (1, 1, 1), True, True, "NCDHW"),
    (nn.MaxPool2D, (3, 2), (2, 1), (1, 0), False, None, "NHWC"),
    (nn.AvgPool1D, (3,), (2,), (1,), True, False, "NWC"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].__name__}-{c[6]}-{c[4]}-{c[5]}")
def test_pooling_layouts_and_3d_windows_match_a_direct_pooling(case):
    cls, k, s, p, ceil, include, layout = case
    n = len(k)
    x = RNG.standard_normal((2, 3) + (5, 6, 7)[:n]).astype(np.float32)
    kind = "max" if "Max" in cls.__name__ else "avg"
    want, want_grad = _reference(x.astype(np.float64), k, s, p, kind, ceil, include)
    last = layout.index("C") != 1
    to_layout = (0, *range(2, n + 2), 1)
    back = (0, n + 1, *range(1, n + 1))
    given = x.transpose(to_layout) if last else x
    kwargs = {} if include is None else {"count_include_pad": include}
    layer = cls(k, s, p, ceil_mode=ceil, layout=layout, **kwargs)
    for hybrid in (False, True):
        out, grad = _run(layer, given, hybrid)
        if last:
            out, grad = out.transpose(back), grad.transpose(back)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_global_3d_pooling_reduces_each_channel(layout):
    x = RNG.standard_normal((2, 3, 4, 3, 5)).astype(np.float32)
    given = x if layout == "NCDHW" else x.transpose(0, 2, 3, 4, 1)
    expect_shape = (2, 3, 1, 1, 1) if layout == "NCDHW" else (2, 1, 1, 1, 3)
    for cls, reduce in ((nn.GlobalMaxPool3D, np.max), (nn.GlobalAvgPool3D, np.mean)):
        out = cls(layout=layout)(mx.nd.array(given))
        assert out.shape == expect_shape
        np.testing.assert_allclose(out.asnumpy().ravel(), reduce(x, axis=(2, 3, 4)).ravel(), rtol=1e-5)
