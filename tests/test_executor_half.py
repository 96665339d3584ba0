"""float16 binds: the program runs in float32 on widened copies, results rounded to float16 once."""
import numpy as np
import pytest

import symjit as mx

RNG = np.random.default_rng(7)


def _net():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    bn = mx.sym.BatchNorm(mx.sym.FullyConnected(x, weight=w, num_hidden=3, no_bias=True, name="fc"),
                          fix_gamma=False, name="bn")
    return mx.sym.tanh(bn) * 2


def _bind(dtype, grad_req="write"):
    sym = _net()
    ex = sym.simple_bind(mx.cpu(), grad_req=grad_req, x=(4, 5), type_dict={"x": dtype, "w": dtype})
    vals = {"x": RNG.standard_normal((4, 5)), "w": RNG.standard_normal((3, 5)) * 0.5}
    return ex, vals


def test_float16_bind_matches_float32_rounded():
    ex16, vals = _bind("float16")
    ex32 = _net().simple_bind(mx.cpu(), x=(4, 5))
    for n, v in vals.items():
        ex16.arg_dict[n][:] = v.astype(np.float16)
        ex32.arg_dict[n][:] = v.astype(np.float16).astype(np.float32)
    for n in ("bn_gamma",):
        ex16.arg_dict[n][:] = 1.5
        ex32.arg_dict[n][:] = 1.5
    head = RNG.standard_normal((4, 3))
    out16 = ex16.forward(is_train=True)[0]
    ex16.backward(mx.nd.array(head, dtype="float16"))
    out32 = ex32.forward(is_train=True)[0]
    ex32.backward(mx.nd.array(head.astype(np.float16).astype(np.float32)))
    assert out16.dtype == np.float16 and ex16.grad_dict["w"].dtype == np.float16
    np.testing.assert_array_equal(out16.asnumpy(), out32.asnumpy().astype(np.float16))
    for n in ("x", "w", "bn_gamma", "bn_beta"):
        assert ex16.grad_dict[n].dtype == ex16.arg_dict[n].dtype
        np.testing.assert_array_equal(ex16.grad_dict[n].asnumpy(),
                                      ex32.grad_dict[n].asnumpy().astype(ex16.grad_dict[n].dtype))
    # the training pass updated the moving statistics of the bound aux arrays
    np.testing.assert_allclose(ex16.aux_dict["bn_moving_mean"].asnumpy(),
                               ex32.aux_dict["bn_moving_mean"].asnumpy(), rtol=1e-3, atol=1e-3)
    assert np.abs(ex16.aux_dict["bn_moving_mean"].asnumpy()).max() > 0


def test_float16_grad_add_accumulates_from_the_bound_array():
    x = mx.sym.Variable("x")
    ex = (x * 3).simple_bind(mx.cpu(), grad_req="add", x=(3,), type_dict={"x": "float16"})
    ex.arg_dict["x"][:] = 1
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones((3,), dtype="float16"))
    assert ex.grad_dict["x"].asnumpy().tolist() == [6.0, 6.0, 6.0]
    ex.grad_dict["x"][:] = 0          # the user's reset reaches the float32 copy
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((3,), dtype="float16"))
    assert ex.grad_dict["x"].asnumpy().tolist() == [3.0, 3.0, 3.0]


def test_float16_forward_kwargs_and_rounding():
    x = mx.sym.Variable("x")
    ex = (x / 3).bind(mx.cpu(), {"x": mx.nd.zeros((2,), dtype="float16")})
    out = ex.forward(x=np.array([1.0, 2.0]))[0].asnumpy()
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, (np.array([1.0, 2.0], np.float32) / 3).astype(np.float16))


def test_mixed_dtypes_share_the_non_half_arrays():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    arr_b = mx.nd.array([1.0, 2.0], dtype="float64")
    ex = (mx.sym.Cast(a, dtype="float64") + b).bind(
        mx.cpu(), {"a": mx.nd.array([0.5, 0.25], dtype="float16"), "b": arr_b})
    out = ex.forward()[0]
    assert out.dtype == np.float64 and out.asnumpy().tolist() == [1.5, 2.25]
    arr_b[:] = 10                     # the float64 argument is the inner executor's own
    assert ex.forward()[0].asnumpy().tolist() == [10.5, 10.25]


def test_cast_to_float16_inside_a_graph_rounds_where_the_value_is_made():
    x = mx.sym.Variable("x")
    half = mx.sym.Cast(x, dtype="float16", name="to_half")
    y = mx.sym.Group([half, mx.sym.Cast(half, dtype="float32") * 3])
    ex = y.simple_bind(mx.cpu(), x=(4,))
    assert isinstance(ex, mx.executor.HalfExecutor)
    data = np.array([1.0004, 65519.0, 1e-8, -0.1], dtype=np.float32)
    ex.arg_dict["x"][:] = data
    out_half, out = ex.forward(is_train=True)
    assert out_half.dtype == np.float16 and out.dtype == np.float32
    np.testing.assert_array_equal(out_half.asnumpy(), data.astype(np.float16))
    np.testing.assert_array_equal(out.asnumpy(), data.astype(np.float16).astype(np.float32) * 3)
    ex.backward([mx.nd.ones((4,), dtype="float16"), mx.nd.ones((4,))])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), np.full(4, 4.0, np.float32))
    ops = [op.op.name for op in ex._inner._programs["train"].forward_graph.ops]
    assert ops[:2] == ["Cast", "_round_half"]


def test_float16_sources_and_samplers_are_rounded():
    y = mx.sym.ones((3,), dtype="float16") / 3 + mx.sym.Cast(mx.sym.Variable("x"), dtype="float16")
    ex = y.simple_bind(mx.cpu(), x=(3,))
    ex.arg_dict["x"][:] = 0.1
    out = ex.forward()[0].asnumpy()
    assert out.dtype == np.float16
    # ones/3 computed in float32 from exact ones, x rounded when cast: one rounding at the end
    np.testing.assert_array_equal(out, (np.float32(1) / 3 + np.float32(np.float16(0.1))).astype(np.float16))


@pytest.mark.gpu
def test_float16_bind_on_gpu_equals_cpu():
    x = mx.sym.Variable("x")
    y = mx.sym.sigmoid(x) * 2
    data = RNG.standard_normal((2, 3)).astype(np.float16)
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        ex = y.simple_bind(ctx, x=(2, 3), type_dict={"x": "float16"})
        ex.arg_dict["x"][:] = data
        out = ex.forward(is_train=True)[0]
        ex.backward(mx.nd.ones((2, 3), ctx=ctx, dtype="float16"))
        results.append((out.asnumpy(), ex.grad_dict["x"].asnumpy()))
    assert results[1][0].dtype == np.float16 and results[1][1].dtype == np.float16
    for a, b in zip(*results):
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=1e-3)


def test_float16_arguments_meet_float16_samplers():
    y = mx.sym.random.uniform(low=2, high=3, shape=(2, 3), dtype="float16") + mx.sym.Variable("x")
    x = mx.nd.zeros((2, 3), dtype="float16")
    ex = y.bind(mx.cpu(), {"x": x}, args_grad={"x": mx.nd.zeros((2, 3), dtype="float16")})
    out = ex.forward(is_train=True)[0].asnumpy()
    assert out.dtype == np.float16 and ((out >= 2) & (out <= 3)).all()
    np.testing.assert_array_equal(out, out.astype(np.float16))   # float16 numbers
    ex.backward(mx.nd.ones((2, 3), dtype="float16"))
    assert ex.grad_dict["x"].asnumpy().tolist() == [[1.0] * 3] * 2
