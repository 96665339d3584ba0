"""mx.gluon.loss: each loss against its formula in numpy, imperative and hybridized, with
sample weights, and its gradient through autograd."""
import numpy as np
import pytest

import symjit as mx
from symjit import autograd
from symjit.gluon import loss as gloss

RNG = np.random.default_rng(3)
P = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)
B = (RNG.random((3, 4)) > 0.5).astype(np.float32)
S = np.sign(RNG.standard_normal((3, 4))).astype(np.float32)
W = RNG.random((3, 1)).astype(np.float32)


def _softplus(x):
    return np.logaddexp(0, x)


def _log_softmax(x):
    return x - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)) - x.max(-1, keepdims=True)


CASES = {
    "L2": (gloss.L2Loss(), Y, lambda p, y: 0.5 * (p - y) ** 2),
    "L1": (gloss.L1Loss(weight=2.0), Y, lambda p, y: 2 * np.abs(p - y)),
    "SigmoidBCE": (gloss.SigmoidBCELoss(), B,
                   lambda p, y: y * _softplus(-p) + (1 - y) * _softplus(p)),
    "SigmoidBCE_from_sigmoid": (gloss.SigmoidBCELoss(from_sigmoid=True), B,
                                lambda p, y: -(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))),
    "SoftmaxCE_dense": (gloss.SoftmaxCELoss(sparse_label=False), np.abs(Y) / np.abs(Y).sum(-1, keepdims=True),
                        lambda p, y: -(y * _log_softmax(p)).sum(-1, keepdims=True)),
    "KLDiv": (gloss.KLDivLoss(from_logits=False), np.abs(Y) / np.abs(Y).sum(-1, keepdims=True),
              lambda p, y: y * (np.log(y + 1e-12) - _log_softmax(p))),
    "Huber": (gloss.HuberLoss(rho=0.5), Y,
              lambda p, y: np.where(np.abs(p - y) > 0.5, np.abs(p - y) - 0.25, np.abs(p - y) ** 2)),
    "Hinge": (gloss.HingeLoss(), S, lambda p, y: np.maximum(0, 1 - p * y)),
    "SquaredHinge": (gloss.SquaredHingeLoss(), S, lambda p, y: np.maximum(0, 1 - p * y) ** 2),
    "Logistic_binary": (gloss.LogisticLoss(label_format="binary"), B,
                        lambda p, y: _softplus(-p * (2 * y - 1))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_loss_matches_numpy(case):
    loss, label, fn = CASES[case]
    p = np.abs(P) / (1 + np.abs(P)) if "from_sigmoid" in case else P
    pred = mx.nd.array(p)
    pred.attach_grad()
    expected = (fn(p.astype(np.float64), label) * W).mean(axis=1)
    with autograd.record():
        out = loss(pred, mx.nd.array(label), mx.nd.array(W))
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    eps = 1e-3       # the gradient of the summed loss, by central differences in float64
    num = np.zeros_like(p, dtype=np.float64)
    for i in np.ndindex(p.shape):
        d = np.zeros(p.shape)
        d[i] = eps
        num[i] = ((fn(p + d, label) * W).mean(1).sum() - (fn(p - d, label) * W).mean(1).sum()) / (2 * eps)
    np.testing.assert_allclose(pred.grad.asnumpy(), num, rtol=1e-2, atol=1e-3)


def test_sparse_softmax_ce_hybridized_equals_imperative():
    loss = gloss.SoftmaxCrossEntropyLoss()
    label = mx.nd.array([0, 3, 1])
    expected = -_log_softmax(P.astype(np.float64))[np.arange(3), [0, 3, 1]]
    np.testing.assert_allclose(loss(mx.nd.array(P), label).asnumpy(), expected, rtol=1e-5)
    loss.hybridize()
    np.testing.assert_allclose(loss(mx.nd.array(P), label).asnumpy(), expected, rtol=1e-5)


def test_triplet_poisson_and_cosine():
    a, pos, neg = (mx.nd.array(RNG.standard_normal((2, 3)).astype(np.float32)) for _ in range(3))
    an, pn, nn_ = a.asnumpy(), pos.asnumpy(), neg.asnumpy()
    np.testing.assert_allclose(gloss.TripletLoss()(a, pos, neg).asnumpy(),
                               np.maximum(0, ((pn - an) ** 2 - (nn_ - an) ** 2).sum(1) + 1), rtol=1e-5)
    target = np.array([[1.0, 0.0, 2.0], [3.0, 1.0, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(gloss.PoissonNLLLoss()(a, mx.nd.array(target)).asnumpy(),
                               (np.exp(an) - target * an).mean(), rtol=1e-5)
    cos = (an * pn).sum(1) / np.linalg.norm(an, axis=1) / np.linalg.norm(pn, axis=1)
    got = gloss.CosineEmbeddingLoss()(a, pos, mx.nd.array([1, -1])).asnumpy()
    np.testing.assert_allclose(got, [1 - cos[0], max(0, cos[1])], rtol=1e-5, atol=1e-6)
