"""Dropout with p > 0 through compiled kernels: the mask is random, so checks are statistical."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.cpu.random import seed as numba_seed

import symjit as mx

SHAPE = (40, 50)


def _bind(**params):
    x = np.random.default_rng(3).uniform(0.5, 1.5, SHAPE)
    sym = mx.sym.Dropout(mx.sym.Variable("x"), **params)
    ex = sym.bind(mx.cpu(), {"x": mx.nd.array(x, dtype="float64")},
                  args_grad={"x": mx.nd.zeros(SHAPE, dtype="float64")})
    return ex, x


def _mask(ex, x, is_train):
    return ex.forward(is_train=is_train)[0].asnumpy() / x


def test_training_mask_values_fraction_and_backward():
    numba_seed(11)
    ex, x = _bind(p=0.5)
    mask = _mask(ex, x, True)
    assert set(np.unique(mask.round(12)).tolist()) <= {0.0, 2.0}
    assert abs(float((mask == 0).mean()) - 0.5) < 0.05   # 2000 draws: sd of the fraction ~0.011
    head = np.random.default_rng(5).uniform(-1, 1, SHAPE)
    ex.backward([mx.nd.array(head, dtype="float64")])
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), head * mask, rtol=1e-12)


def test_masks_differ_between_passes():
    ex, x = _bind(p=0.5)
    assert not np.array_equal(_mask(ex, x, True), _mask(ex, x, True))


def test_p_scales_kept_elements():
    numba_seed(2)
    ex, x = _bind(p=0.2)
    mask = _mask(ex, x, True)
    kept = mask[mask != 0]
    np.testing.assert_allclose(kept, 1.0 / 0.8, rtol=1e-12)
    assert abs(kept.size / mask.size - 0.8) < 0.05


def test_p_one_keeps_nothing_and_scales_by_infinity():
    # MXNet scales the (all-zero) mask by 1/(1 - p) = inf: outputs and gradients are NaN
    ex, x = _bind(p=1.0)
    assert np.isnan(ex.forward(is_train=True)[0].asnumpy()).all()
    ex.backward([mx.nd.ones(SHAPE, dtype="float64")])
    assert np.isnan(ex.grad_dict["x"].asnumpy()).all()
    np.testing.assert_array_equal(ex.forward(is_train=False)[0].asnumpy(), x)   # inference: identity


@pytest.mark.parametrize("mode,drops", [("training", False), ("always", True)])
def test_inference_mode(mode, drops):
    ex, x = _bind(p=0.5, mode=mode)
    mask = _mask(ex, x, False)
    if drops:
        assert 0.4 < float((mask == 0).mean()) < 0.6
    else:
        np.testing.assert_array_equal(mask, np.ones(SHAPE))


def test_axes_share_the_mask():
    ex, x = _bind(p=0.5, axes=(0,))
    mask = _mask(ex, x, True)
    np.testing.assert_allclose(mask, np.broadcast_to(mask[:1], SHAPE), rtol=1e-12)
    head = np.ones(SHAPE)
    ex.backward([mx.nd.array(head, dtype="float64")])
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), mask, rtol=1e-12)


def test_mx_random_seed_makes_dropout_masks_reproducible():
    net = mx.sym.Dropout(mx.sym.Variable("x"), p=0.5)
    masks = []
    for _ in range(2):
        mx.random.seed(5)
        ex = net.simple_bind(mx.cpu(), x=(8, 16))
        ex.arg_dict["x"][:] = 1.0
        masks.append(ex.forward(is_train=True)[0].asnumpy())
    np.testing.assert_array_equal(masks[0], masks[1])
    assert 0 < (masks[0] == 0).sum() < masks[0].size
