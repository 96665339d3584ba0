"""linalg factorisations beyond the case tables: values recorded from MXNet 1.9.1 (its LAPACK sign
conventions), and the errors for matrices that cannot be factored."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx

A = np.array([[4.0, 2, 0.6], [2, 5, 1], [0.6, 1, 3]])
B = np.array([[1.0, -2, 3, 0.5], [0.3, 2, -1, 1]])


def test_gelqf_and_syevd_match_mxnet_recorded_outputs():
    """Printed by MXNet 1.9.1 (pip, CPU) for these inputs, 4 decimals."""
    q, lo = mx.nd.linalg.gelqf(mx.nd.array(B))
    np.testing.assert_allclose(q.asnumpy(), [[-0.2649, 0.5298, -0.7947, -0.1325],
                                             [-0.3991, -0.6134, -0.1657, -0.661]], atol=1e-4)
    np.testing.assert_allclose(lo.asnumpy(), [[-3.7749, 0.0], [1.6424, -1.8419]], atol=1e-4)
    u, lam = mx.nd.linalg.syevd(mx.nd.array(A))
    np.testing.assert_allclose(u.asnumpy(), [[-0.6395, 0.6456, -0.4174], [-0.5014, 0.0613, 0.8631],
                                             [0.5828, 0.7612, 0.2845]], atol=1e-4)
    np.testing.assert_allclose(lam.asnumpy(), [2.3725, 2.7225, 6.905], atol=1e-4)
    np.testing.assert_allclose(mx.nd.linalg.extracttrian(mx.nd.array(np.arange(1.0, 10).reshape(3, 3)),
                                                         lower=False).asnumpy(), [1, 2, 5, 3, 6, 9])


def test_potrf_grad_is_mxnets_symmetric_one():
    """MXNet 1.9.1's gradient of potrf for head gradient arange(9), recorded."""
    x = mx.sym.Variable("A")
    ex = mx.sym.linalg.potrf(x).simple_bind(mx.cpu(), A=(3, 3), grad_req="write")
    ex.forward(is_train=True, A=mx.nd.array(A))
    ex.backward(mx.nd.array(np.arange(9.0).reshape(3, 3)))
    np.testing.assert_allclose(ex.grad_dict["A"].asnumpy(),
                               [[-0.1547, 0.1668, 0.4753], [0.1668, 0.7671, 1.3307],
                                [0.4753, 1.3307, 2.3958]], atol=2e-4)


def test_factorisations_refuse_bad_matrices():
    with pytest.raises(mx.MXNetError, match=r"_linalg_potrf .*not positive definite"):
        mx.nd.linalg.potrf(mx.nd.array(-A)).asnumpy()
    with pytest.raises(mx.MXNetError, match=r"_linalg_inverse .*singular"):
        mx.nd.linalg.inverse(mx.nd.array(np.ones((2, 3, 3)))).asnumpy()
    with pytest.raises(mx.MXNetError, match=r"more rows than columns"):
        mx.nd.linalg.gelqf(mx.nd.ones((3, 2)))
    with pytest.raises(mx.MXNetError, match=r"must be \(a batch of\) square"):
        mx.nd.linalg.det(mx.nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match=r"not a triangle's size"):
        mx.nd.linalg.maketrian(mx.nd.ones((4,)))
    with pytest.raises(mx.MXNetError, match=r"does not fit B"):
        mx.nd.linalg.trsm(mx.nd.ones((3, 3)), mx.nd.ones((2, 2)))
    assert mx.nd.linalg.det(mx.nd.array([[1.0, 2], [2, 4]])).asnumpy().tolist() == [0.0]
