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


def test_softmax_ce_takes_labels_with_the_class_axis_kept():
    label = np.array([[0.0], [3.0], [1.0]], dtype=np.float32)
    expected = -_log_softmax(P.astype(np.float64))[np.arange(3), [0, 3, 1]]
    loss = gloss.SoftmaxCELoss()
    for hybrid in (False, True):
        if hybrid:
            loss.hybridize()
        pred = mx.nd.array(P)
        pred.attach_grad()
        with autograd.record():
            out = loss(pred, mx.nd.array(label))
        out.backward()
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5)
        soft = np.exp(_log_softmax(P.astype(np.float64)))
        soft[np.arange(3), [0, 3, 1]] -= 1                 # d(-log softmax[label]) / d pred
        np.testing.assert_allclose(pred.grad.asnumpy(), soft, rtol=1e-4, atol=1e-6)


def test_cosine_embedding_against_broadcast_ops():
    """The loss against its formula in mx.nd's broadcast ops; broadcast_maximum drops the ``axis``
    keyword it does not have, as MXNet's does."""
    a, b = (mx.nd.array(RNG.standard_normal((3, 2)).astype(np.float32)) for _ in range(2))
    label = mx.nd.array([1, -1, -1])
    norms = [mx.nd.sqrt(mx.nd.sum(v ** 2, axis=1, keepdims=True)) for v in (a, b)]
    cos = mx.nd.sum(a * b, axis=1, keepdims=True) / (norms[0] * norms[1])
    expected = mx.nd.where(label == 1, 1 - cos.reshape((-1,)),
                           mx.nd.broadcast_maximum(mx.nd.array([0]), cos, axis=1).reshape((-1,)))
    np.testing.assert_allclose(gloss.CosineEmbeddingLoss()(a, b, label).asnumpy(), expected.asnumpy(),
                               rtol=1e-5, atol=1e-6)


def _ctc_numpy(scores, labels, blank):
    """-log p(labels | scores) of one sequence (scores (T, C) before the softmax) by the forward
    recursion over the labels with blanks between them, in float64."""
    p = np.exp(scores - scores.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    ext = [blank]
    for c in labels:
        ext += [c, blank]
    alpha = np.zeros(len(ext))
    alpha[0], alpha[1] = p[0, blank], p[0, ext[1]] if len(ext) > 1 else 0
    for t in range(1, len(p)):
        prev = alpha.copy()
        for s in range(len(ext)):
            total = prev[s] + (prev[s - 1] if s else 0)
            if s > 1 and ext[s] != blank and ext[s] != ext[s - 2]:
                total += prev[s - 2]
            alpha[s] = total * p[t, ext[s]]
    return -np.log(alpha[-1] + (alpha[-2] if len(ext) > 1 else 0))


def test_ctc_loss_layouts_lengths_and_weights():
    T, N, C = 5, 2, 4                                       # channel 3 is the blank
    scores = RNG.standard_normal((N, T, C)).astype(np.float32)
    labels = np.array([[1, 0, -1], [2, 2, 1]], dtype=np.float32)
    expected = [_ctc_numpy(scores[0].astype(np.float64), [1, 0], 3),
                _ctc_numpy(scores[1].astype(np.float64), [2, 2, 1], 3)]
    ntc = gloss.CTCLoss()
    np.testing.assert_allclose(ntc(mx.nd.array(scores), mx.nd.array(labels)).asnumpy(), expected, rtol=1e-5)
    tnc = gloss.CTCLoss(layout="TNC", label_layout="TN", weight=2.0)
    tnc.hybridize()
    got = tnc(mx.nd.array(scores.transpose(1, 0, 2)), mx.nd.array(labels.T), None, None,
              mx.nd.array([1.0, 0.5]))
    np.testing.assert_allclose(got.asnumpy(), [2 * expected[0], expected[1]], rtol=1e-5)
    # lengths: the first sequence's last frame and the second label's last entry are cut off
    got = ntc(mx.nd.array(scores), mx.nd.array(labels), mx.nd.array([4, 5]), mx.nd.array([2, 2]))
    cut = [_ctc_numpy(scores[0, :4].astype(np.float64), [1, 0], 3),
           _ctc_numpy(scores[1].astype(np.float64), [2, 2], 3)]
    np.testing.assert_allclose(got.asnumpy(), cut, rtol=1e-5)
    with pytest.raises(ValueError, match="layout must be 'NTC' or 'TNC'"):
        gloss.CTCLoss(layout="NCT")


def _sdml_numpy(x1, x2, smoothing):
    n = len(x1)
    d = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    log_p = -d - np.log(np.exp(-d).sum(1, keepdims=True))
    labels = np.where(np.eye(n) > 0, 1 - smoothing, smoothing / (n - 1))
    return (labels * (np.log(labels + 1e-12) - log_p)).mean(1)


def test_sdml_loss_formula_hybridized_and_gradient():
    x1 = RNG.standard_normal((4, 3)).astype(np.float32)
    x2 = (x1 + 0.1 * RNG.standard_normal((4, 3))).astype(np.float32)
    loss = gloss.SDMLLoss(smoothing_parameter=0.2)
    expected = _sdml_numpy(x1.astype(np.float64), x2.astype(np.float64), 0.2)
    a = mx.nd.array(x1)
    a.attach_grad()
    with autograd.record():
        out = loss(a, mx.nd.array(x2))
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-4, atol=1e-6)
    eps, num = 1e-4, np.zeros(x1.shape)
    for i in np.ndindex(x1.shape):
        d = np.zeros(x1.shape)
        d[i] = eps
        num[i] = (_sdml_numpy(x1 + d, x2.astype(np.float64), 0.2).sum()
                  - _sdml_numpy(x1 - d, x2.astype(np.float64), 0.2).sum()) / (2 * eps)
    np.testing.assert_allclose(a.grad.asnumpy(), num, rtol=1e-2, atol=1e-4)
    loss.hybridize()
    got = loss(mx.nd.array(x1), mx.nd.array(x2))
    np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="SDMLLoss: x1 and x2"):
        gloss.SDMLLoss()(mx.nd.ones((3, 2)), mx.nd.ones((2, 2)))
