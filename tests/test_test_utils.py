"""mx.test_utils: each check passes on correct results and fails (AssertionError) on wrong ones."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit import test_utils as tu
from symjit.base import MXNetError

R = np.random.default_rng(11)
MNIST = str(Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist")


# -- comparisons ---------------------------------------------------------------------------------
def test_assert_almost_equal_tolerances_and_message():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    tu.assert_almost_equal(a, a + 1e-5)                      # float32 defaults: rtol 1e-4, atol 1e-3
    tu.assert_almost_equal(mx.nd.array(a), a)                # NDArrays compare too
    with pytest.raises(AssertionError) as err:
        tu.assert_almost_equal(a, a + np.array([[0, 0], [0, 0.5]], dtype=np.float32), names=("x", "y"))
    msg = str(err.value)
    assert "(1, 1)" in msg and "x=4.0" in msg and "y=4.5" in msg and "1 of 4 elements" in msg
    b64 = a.astype(np.float64)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(b64, b64 + 1e-3)              # float64: rtol 1e-5, atol 1e-20
    tu.assert_almost_equal(b64, b64 + 1e-3, rtol=1e-2)
    tu.assert_almost_equal(a, a + 1e-3)                      # ... which float32's defaults accept
    with pytest.raises(AssertionError, match="shapes"):
        tu.assert_almost_equal(np.ones(3), np.ones(4))
    nan = np.array([np.nan, 1.0])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(nan, nan)
    tu.assert_almost_equal(nan, nan, equal_nan=True)
    assert tu.almost_equal(a, a) and not tu.almost_equal(a, a + 1)
    assert tu.same(a, a.copy()) and not tu.same(a, a[:1])
    tu.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError):
        tu.assert_exception(lambda: None, ValueError)


def test_random_data_and_contexts():
    x = tu.rand_ndarray((3, 4), dtype="float64")
    assert x.shape == (3, 4) and x.dtype == np.float64 and x.context == mx.cpu()
    assert np.std(tu.rand_ndarray((4000,)).asnumpy()) == pytest.approx(1.0, rel=0.1)
    csr = tu.rand_ndarray((20, 30), stype="csr", density=0.2)
    assert csr.stype == "csr" and 0 < np.count_nonzero(csr.asnumpy()) < 20 * 30
    rsp, (data, indices) = tu.rand_sparse_ndarray((10, 3), "row_sparse", density=0.5)
    assert rsp.stype == "row_sparse" and data.shape == (len(indices), 3)
    np.testing.assert_array_equal(rsp.asnumpy()[indices], data)
    with pytest.raises(MXNetError, match="stype must be"):
        tu.rand_ndarray((2, 2), stype="coo")
    for shape, n in ((tu.rand_shape_2d(), 2), (tu.rand_shape_3d(4, 5, 6), 3), (tu.rand_shape_nd(5, 3), 5)):
        assert len(shape) == n and all(d >= 1 for d in shape)
    a, b = tu.random_arrays((2, 3), (4,))
    assert a.shape == (2, 3) and b.dtype == np.float32
    assert tu.default_context() == mx.cpu()
    with mx.Context("cpu", 1):
        assert tu.default_context() == mx.cpu(1)
    with tu.environment("SYMJIT_TEST_UTILS_X", "1"):
        assert os.environ["SYMJIT_TEST_UTILS_X"] == "1"
    assert "SYMJIT_TEST_UTILS_X" not in os.environ


# -- symbolic checks -------------------------------------------------------------------------------
def _fc():
    return mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")


def test_check_symbolic_forward_and_backward():
    x = R.normal(size=(2, 4))
    w, b = R.normal(size=(3, 4)), R.normal(size=(3,))
    want = x @ w.T + b
    out = tu.check_symbolic_forward(_fc(), {"data": x, "fc_weight": w, "fc_bias": b}, [want],
                                    dtype=np.float64)
    np.testing.assert_allclose(out[0], want)
    with pytest.raises(AssertionError):
        tu.check_symbolic_forward(_fc(), [x, w, b], [want + 0.1], dtype=np.float64)
    head = R.normal(size=(2, 3))
    grads = {"data": head @ w, "fc_weight": head.T @ x, "fc_bias": head.sum(0)}
    got = tu.check_symbolic_backward(_fc(), [x, w, b], [head], grads, dtype=np.float64)
    np.testing.assert_allclose(got["fc_bias"], head.sum(0))
    with pytest.raises(AssertionError, match="fc_weight"):
        tu.check_symbolic_backward(_fc(), [x, w, b], [head], dict(grads, fc_weight=grads["fc_weight"] * 2),
                                   dtype=np.float64)
    # grad_req='add' adds to the arrays' previous (random) values; 'null' leaves a gradient unchecked
    tu.check_symbolic_backward(_fc(), [x, w, b], [head], grads, grad_req="add", dtype=np.float64)
    tu.check_symbolic_backward(_fc(), [x, w, b], [head], dict(grads, data=grads["data"] + 5),
                               grad_req={"data": "null", "fc_weight": "write", "fc_bias": "write"},
                               dtype=np.float64)
    with pytest.raises(MXNetError, match="3 arrays for the 2 arguments"):
        tu.check_symbolic_forward(mx.sym.Variable("a") + mx.sym.Variable("b"), [x, x, x], [x])


class WrongGradient(mx.operator.CustomOp):
    """y = x**2 with the gradient of x**3 (deliberately wrong)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0].asnumpy() ** 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0].asnumpy() * 3 * in_data[0].asnumpy() ** 2)


@mx.operator.register("test_utils_wrong_grad")
class WrongGradientProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data"]

    def infer_shape(self, in_shape):
        return in_shape, in_shape, []

    def create_operator(self, ctx, shapes, dtypes):
        return WrongGradient()


def test_check_numeric_gradient_passes_and_catches_a_wrong_gradient():
    x = mx.sym.Variable("x")
    loc = {"x": R.uniform(0.5, 1.5, size=(3, 4))}
    tu.check_numeric_gradient(mx.sym.tanh(x) * x, loc, dtype=np.float64, numeric_eps=1e-5, rtol=1e-5)
    tu.check_numeric_gradient(_fc(), [R.normal(size=(2, 4)), R.normal(size=(3, 4)), R.normal(size=(3,))])
    tu.check_numeric_gradient(_fc(), [R.normal(size=(2, 4)), R.normal(size=(3, 4)), R.normal(size=(3,))],
                              grad_nodes=["fc_weight"])
    with pytest.raises(AssertionError, match="NUMERICAL_x"):
        tu.check_numeric_gradient(mx.sym.Custom(x, op_type="test_utils_wrong_grad"), loc, dtype=np.float64)
    with pytest.raises(MXNetError, match="grad_nodes"):
        tu.check_numeric_gradient(mx.sym.tanh(x), loc, grad_nodes=["y"])
    # None for the step and the relative tolerance means their defaults (callers pass optional
    # settings through); a wrong gradient still fails
    tu.check_numeric_gradient(mx.sym.tanh(x) * x, loc, numeric_eps=None, rtol=None, dtype=np.float64)
    with pytest.raises(AssertionError, match="NUMERICAL_x"):
        tu.check_numeric_gradient(mx.sym.Custom(x, op_type="test_utils_wrong_grad"), loc, numeric_eps=None,
                                  rtol=None, dtype=np.float64)


def test_numeric_gradient_default_step_follows_the_dtype(monkeypatch):
    # MXNet 1.9's power-of-two steps; the projection's weights are all in [0.1, 1.1)
    seen = []
    real = tu.numeric_grad

    def spy(executor, location, eps, **kw):
        seen.append((eps, executor.arg_dict["__random_proj"].asnumpy().copy()))
        return real(executor, location, eps=eps, **kw)
    monkeypatch.setattr(tu, "numeric_grad", spy)
    x = mx.sym.Variable("x")
    for dtype, eps in ((np.float32, 2.0 ** -9), (np.float64, 2.0 ** -14)):
        tu.check_numeric_gradient(mx.sym.tanh(x), [R.uniform(-1, 1, size=(3, 4))], dtype=dtype)
        assert seen[-1][0] == eps
        assert seen[-1][1].min() >= 0.1 and seen[-1][1].max() < 1.1


def test_check_consistency_compares_precisions():
    net = mx.sym.Activation(_fc(), act_type="tanh")
    specs = [{"ctx": mx.cpu(), "data": (4, 5), "type_dict": {"data": np.float64}},
             {"ctx": mx.cpu(), "data": (4, 5), "type_dict": {"data": np.float32}}]
    truth = tu.check_consistency(net, specs)
    assert set(truth) == {"data", "fc_weight", "fc_bias", net.list_outputs()[0]}
    assert truth["fc_weight"].dtype == np.float64
    wrong = {k: v + 0.5 for k, v in truth.items()}
    with pytest.raises(AssertionError, match="ctx 0"):
        tu.check_consistency(net, specs, ground_truth=wrong, arg_params=None)


def test_check_consistency_inputs_are_shared():
    """Given arg_params, both contexts compute from them: a mismatch in the ops shows."""
    net = _fc()
    params = {"data": R.normal(size=(2, 4)), "fc_weight": R.normal(size=(3, 4)), "fc_bias": np.zeros(3)}
    specs = [{"ctx": mx.cpu(), "data": (2, 4), "type_dict": {"data": np.float64}}] * 2
    truth = tu.check_consistency([net, net * 1.001], specs, arg_params=params, raise_on_err=False)
    np.testing.assert_allclose(truth["fc_output"], params["data"] @ params["fc_weight"].T)
    with pytest.raises(AssertionError):
        tu.check_consistency([net, net * 1.001], specs, arg_params=params, tol=1e-6)


def test_mnist_helpers():
    data = tu.get_mnist(MNIST)
    assert data["train_data"].shape == (60000, 1, 28, 28) and data["test_label"].shape == (10000,)
    train, val = tu.get_mnist_iterator(100, (784,), num_parts=2, part_index=1, path=MNIST)
    assert train.provide_data[0].shape == (100, 784) and train.num_data == 30000
    assert val.num_data == 10000
    with pytest.raises(MXNetError, match="784 pixels"):
        tu.get_mnist_iterator(10, (3, 3), path=MNIST)


@pytest.mark.gpu
def test_check_consistency_cpu_against_gpu():
    net = mx.sym.Activation(_fc(), act_type="relu")
    tu.check_consistency(net, [{"ctx": mx.cpu(), "data": (2, 3), "type_dict": {"data": np.float64}},
                               {"ctx": mx.gpu(0), "data": (2, 3), "type_dict": {"data": np.float64}}])


def test_big_arrays_are_compared_in_one_pass_with_numpys_rule():
    """Arrays of FAST_CLOSE_ELEMENTS or more float elements go through the compiled one-pass
    check first; it agrees with numpy's allclose on every kind of element (close, far, NaN,
    infinities), and a failing comparison still reports the largest violation."""
    from symjit.kernels.cpu.compare import all_close

    from symjit.testing_support import FAST_CLOSE_ELEMENTS
    rng = np.random.default_rng(0)
    n = FAST_CLOSE_ELEMENTS
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 1.0, -1.0]
    for dtype in (np.float16, np.float32, np.float64):
        for _ in range(200):
            a = rng.choice(specials, 6).astype(dtype)
            b = (a + rng.choice([0.0, 1e-9, 1e-3, 1.0], 6) * rng.choice([0, 1], 6)).astype(dtype)
            b[rng.integers(0, 6)] = rng.choice(specials)
            for equal_nan in (False, True):
                want = np.allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=equal_nan)
                assert all_close(a.astype(np.float64), b.astype(np.float64), 1e-5, 1e-8, equal_nan) == want
        x = rng.standard_normal((n // 64, 64)).astype(dtype)
        tu.assert_almost_equal(mx.nd.array(x, dtype=dtype), x * (1 + 1e-7), rtol=1e-3, atol=0)
        y = x.copy()
        y[3, 5] += 1.0
        with pytest.raises(AssertionError, match=r"Largest error at \(3, 5\)"):
            tu.assert_almost_equal(x, y, rtol=1e-5, atol=1e-8)
        assert not tu.almost_equal(x, y) and tu.almost_equal(x, x.copy())
