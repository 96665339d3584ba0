"""mx.nd.CachedOp: a symbol called on NDArrays as one operator. Its inputs come in list_inputs
order, each call sees the arrays' current values, ``out=`` receives the results, aux states are
updated in the caller's arrays by a training pass, and under autograd.record() gradients reach
its inputs (the forward pass kept by its executor, or recomputed in predict mode)."""
import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError

RNG = np.random.default_rng(5)


def _arr(*shape):
    return mx.nd.array(RNG.uniform(-1, 1, shape).astype(np.float32))


def _affine():
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    return mx.sym.FullyConnected(x, weight=w, bias=b, num_hidden=3) * 2


def _affine_np(x, w, b):
    return (x @ w.T + b) * 2


def test_each_call_sees_the_current_values_and_out_is_written():
    op = mx.nd.CachedOp(_affine())
    x, w, b = _arr(4, 5), _arr(3, 5), _arr(3)
    first = op(x, w, b).asnumpy()
    np.testing.assert_allclose(first, _affine_np(x.asnumpy(), w.asnumpy(), b.asnumpy()), rtol=1e-5, atol=1e-6)
    b[:] = b + 1.5                      # changed in place: the next call reads it
    np.testing.assert_allclose(op(x, w, b).asnumpy(), first + 3.0, rtol=1e-5, atol=1e-5)
    dst = mx.nd.zeros((4, 3))
    back = op(x, w, mx.nd.zeros((3,)), out=dst)
    assert back is dst
    np.testing.assert_allclose(dst.asnumpy(), _affine_np(x.asnumpy(), w.asnumpy(), 0), rtol=1e-5, atol=1e-6)
    kept = op(x, w, b)                  # results are copies: the next call leaves them alone
    op(x * 0, w, b)
    np.testing.assert_allclose(kept.asnumpy(), first + 3.0, rtol=1e-5, atol=1e-5)


def test_several_outputs_come_as_a_list_in_output_order():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    op = mx.nd.CachedOp(mx.sym.Group([a + b, a * b]))
    s, p = op(mx.nd.array([2.0, 3.0]), mx.nd.array([4.0, 5.0]))
    assert s.asnumpy().tolist() == [6.0, 8.0] and p.asnumpy().tolist() == [8.0, 15.0]
    outs = [mx.nd.zeros((2,)), mx.nd.zeros((2,))]
    assert op(mx.nd.array([1.0, 1.0]), mx.nd.array([2.0, 2.0]), out=outs) is outs
    assert outs[1].asnumpy().tolist() == [2.0, 2.0]


@pytest.mark.parametrize("train", [True, False])
def test_gradients_reach_the_inputs_under_record(train):
    op = mx.nd.CachedOp(_affine())
    x, w, b = _arr(4, 5), _arr(3, 5), _arr(3)
    w.attach_grad()
    b.attach_grad()
    head = _arr(4, 3)
    with mx.autograd.record(train_mode=train):
        shifted = b + 1
        y = op(x, w, shifted) * head
    y.backward()
    g = 2 * head.asnumpy()              # d(sum(head * 2 (xW'+b)))
    np.testing.assert_allclose(w.grad.asnumpy(), g.T @ x.asnumpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), g.sum(0), rtol=1e-5, atol=1e-5)


def test_a_kept_pass_backs_up_twice_with_retain_graph():
    v = mx.sym.var("a")
    op = mx.nd.CachedOp(v * v)
    a = mx.nd.array([1.0, -2.0])
    a.attach_grad(grad_req="add")
    with mx.autograd.record():
        y = op(a) * 3
    y.backward(retain_graph=True)
    y.backward()
    assert a.grad.asnumpy().tolist() == [12.0, -24.0]


def test_a_training_pass_updates_the_callers_aux_states():
    sym = mx.sym.BatchNorm(mx.sym.var("x"), name="bn", momentum=0.5, fix_gamma=False)
    names = sym.list_inputs()
    assert names == ["x", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    op = mx.nd.CachedOp(sym)
    x = mx.nd.array([[1.0, 4.0], [3.0, 8.0]])
    mean, var = mx.nd.zeros((2,)), mx.nd.ones((2,))
    op(x, mx.nd.ones((2,)), mx.nd.zeros((2,)), mean, var)       # predict mode: unchanged
    assert mean.asnumpy().tolist() == [0.0, 0.0]
    with mx.autograd.train_mode():
        op(x, mx.nd.ones((2,)), mx.nd.zeros((2,)), mean, var)
    np.testing.assert_allclose(mean.asnumpy(), [1.0, 3.0], rtol=1e-6)


def test_flags_are_mxnets_and_param_indices_are_bound_as_given():
    op = mx.nd.CachedOp(_affine(), flags=[("static_alloc", True), ("static_shape", "True"),
                                          ("param_indices", "[1, 2]"), ("data_indices", [0])])
    x, w, b = _arr(2, 5), _arr(3, 5), _arr(3)
    first = op(x, w, b).asnumpy()
    w[:] = 0
    np.testing.assert_allclose(op(x, w, b).asnumpy(), np.broadcast_to(2 * b.asnumpy(), (2, 3)), rtol=1e-6)
    assert np.abs(first).sum() > 0
    with pytest.raises(MXNetError, match="unknown flag 'fast'"):
        mx.nd.CachedOp(_affine(), flags=[("fast", 1)])
    with pytest.raises(MXNetError, match=r"param_indices=\[7\]"):
        mx.nd.CachedOp(_affine(), flags={"param_indices": [7]})


def test_bad_calls_are_clear_errors():
    op = mx.nd.CachedOp(_affine())
    x, w, b = _arr(2, 5), _arr(3, 5), _arr(3)
    with pytest.raises(MXNetError, match=r"3 inputs \['x', 'w', 'b'\], got 2 arrays"):
        op(x, w)
    with pytest.raises(MXNetError, match="input 'b' must be an NDArray, got list"):
        op(x, w, [1, 2, 3])
    with pytest.raises(MXNetError, match=r"out\[0\] has shape \(3,3\), output .* has \(2,3\)"):
        op(x, w, b, out=mx.nd.zeros((3, 3)))
    with pytest.raises(MXNetError, match="out must be 1 NDArray"):
        op(x, w, b, out=[mx.nd.zeros((2, 3))] * 2)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        op(x, w, b, data=x)
    with pytest.raises(MXNetError, match="must be a Symbol"):
        mx.nd.CachedOp("x")
    with pytest.raises(MXNetError, match="FullyConnected"):      # shapes: the compiler's own error
        op(x, _arr(3, 4), b)
