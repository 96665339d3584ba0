"""Autograd through sparse arrays: gradients computed dense, stored in the gradient's storage type."""
import numpy as np
import pytest
import scipy.sparse as sps

import symjit as mx
from symjit.base import MXNetError

X = np.array([[0.0, 0.5, 0.0], [0.0, 0.0, 0.0], [1.5, 0.0, -2.0]], np.float32)
STYPES = ("default", "row_sparse", "csr")


@pytest.mark.parametrize("array_stype", STYPES)
@pytest.mark.parametrize("grad_stype", [None, *STYPES])
def test_gradient_storage_type(array_stype, grad_stype):
    x = mx.nd.zeros((2, 2), stype=array_stype)
    x.attach_grad(stype=grad_stype)
    assert x.grad.stype == (grad_stype or array_stype)
    assert x.detach().stype == array_stype


def test_attach_grad_refuses_unknown_storage_type():
    with pytest.raises(MXNetError, match="attach_grad: stype='dense'"):
        mx.nd.ones((2,)).attach_grad(stype="dense")


@pytest.mark.parametrize("stype", STYPES)
def test_fallback_gradients_match_dense(stype):
    x = mx.nd.array(X).tostype(stype)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.exp(x) * 2 + x * x
    y.backward()
    assert x.grad.stype == stype
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.exp(X) + 2 * X, rtol=1e-6)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_recorded_sparse_results_keep_their_history(stype):
    x = mx.nd.array(X).tostype(stype)
    x.attach_grad()
    with mx.autograd.record():
        h = x * 3                        # a sparse result, recorded
        assert h.stype == stype
        y = mx.nd.sum(h * h)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 18 * X, rtol=1e-6)


def test_sparse_head_gradient():
    x = mx.nd.array(X).tostype("csr")
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    y.backward(out_grad=mx.nd.ones_like(y).tostype("csr"))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full(X.shape, 2, np.float32))


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_dot_weight_gradient_is_row_sparse(weight_stype):
    rng = np.random.RandomState(3)
    lhs = sps.random(4, 6, density=0.3, random_state=rng, dtype=np.float32).tocsr()
    w = mx.nd.array(rng.rand(6, 2)).tostype(weight_stype)
    w.attach_grad(stype="row_sparse")
    c = mx.nd.sparse.csr_matrix(lhs)
    with mx.autograd.record():
        y = mx.nd.dot(c, w)
    y.backward()
    assert w.grad.stype == "row_sparse"
    expect = lhs.toarray().T @ np.ones((4, 2), np.float32)
    np.testing.assert_allclose(w.grad.asnumpy(), expect, rtol=1e-6)
    assert set(w.grad.indices.asnumpy()) == set(np.flatnonzero(expect.any(axis=1)))


def test_grad_req_add_accumulates_into_sparse_gradient():
    x = mx.nd.array(X)
    x.attach_grad(grad_req="add", stype="row_sparse")
    for _ in range(2):
        with mx.autograd.record():
            y = x * x
        y.backward()
    assert x.grad.stype == "row_sparse"
    np.testing.assert_allclose(x.grad.asnumpy(), 4 * X)
    assert x.grad.indices.asnumpy().tolist() == [0, 2]


def test_mark_variables_with_sparse_gradient_buffers():
    x = mx.nd.array(X).tostype("row_sparse")
    g = mx.nd.zeros_like(x)
    mx.autograd.mark_variables([x], [g])
    with mx.autograd.record():
        y = mx.nd.sin(x)
    y.backward()
    assert g.stype == "row_sparse"
    np.testing.assert_allclose(g.asnumpy(), np.cos(X), rtol=1e-6)
