"""mx.autograd: recorded mx.nd computations differentiated by a compiled backward program."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit import autograd as ag


def _numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar function ``f`` at ``x`` (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def _var(a: np.ndarray, req: str = "write") -> mx.nd.NDArray:
    v = mx.nd.array(a, dtype=a.dtype)
    v.attach_grad(req)
    return v


def test_elementwise_gradient_matches_the_derivative():
    xn = np.array([0.5, -1.0, 2.0, 3.0])
    x = _var(xn)
    with ag.record():
        y = mx.nd.exp(x) * x + x / 2 - mx.nd.square(x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.exp(xn) * (1 + xn) + 0.5 - 2 * xn, rtol=1e-12)
    assert x._fresh_grad


def test_broadcast_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((3, 4)), rng.standard_normal((1, 4))
    a, b = _var(an), _var(bn)
    with ag.record():
        loss = mx.nd.sum(mx.nd.tanh(mx.nd.broadcast_mul(a, b) + b))
    loss.backward()

    def f(av, bv):
        return float(np.sum(np.tanh(av * bv + bv)))
    np.testing.assert_allclose(a.grad.asnumpy(), _numeric_grad(lambda v: f(v, bn), an), rtol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), _numeric_grad(lambda v: f(an, v), bn), rtol=1e-6)


def test_dot_and_fully_connected_gradients():
    rng = np.random.default_rng(1)
    xn, wn, bn = rng.standard_normal((5, 3)), rng.standard_normal((4, 3)), rng.standard_normal(4)
    x, w, b = _var(xn), _var(wn), _var(bn)
    og = rng.standard_normal((5, 4))
    with ag.record():
        y = mx.nd.FullyConnected(x, w, b, num_hidden=4) + mx.nd.dot(x, w, transpose_b=True)
    y.backward(mx.nd.array(og, dtype=og.dtype))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * og @ wn, rtol=1e-12)
    np.testing.assert_allclose(w.grad.asnumpy(), 2 * og.T @ xn, rtol=1e-12)
    np.testing.assert_allclose(b.grad.asnumpy(), og.sum(axis=0), rtol=1e-12)


def _mlp_params(rng):
    return {"w1": rng.standard_normal((8, 6)) * 0.5, "b1": rng.standard_normal(8) * 0.1,
            "w2": rng.standard_normal((3, 8)) * 0.5, "b2": rng.standard_normal(3) * 0.1}


def _mlp_loss(x, p, label, nd):
    h = nd.relu(nd.FullyConnected(x, p["w1"], p["b1"], num_hidden=8))
    z = nd.FullyConnected(h, p["w2"], p["b2"], num_hidden=3)
    return nd.mean(-nd.pick(nd.log_softmax(z), label))


def test_mlp_with_softmax_cross_entropy_matches_numpy_and_simple_bind():
    rng = np.random.default_rng(2)
    pn = _mlp_params(rng)
    xn, ln = rng.standard_normal((4, 6)), np.array([0.0, 2.0, 1.0, 2.0])
    params = {k: _var(v) for k, v in pn.items()}
    x, label = mx.nd.array(xn, dtype=xn.dtype), mx.nd.array(ln, dtype=ln.dtype)
    with ag.record():
        loss = _mlp_loss(x, params, label, mx.nd)
    loss.backward()

    def f(name, v):
        q = dict(pn, **{name: v})
        hn = np.maximum(xn @ q["w1"].T + q["b1"], 0)
        z = hn @ q["w2"].T + q["b2"]
        logp = z - z.max(axis=1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
        return float(-logp[np.arange(4), ln.astype(int)].mean())
    for k in pn:
        np.testing.assert_allclose(params[k].grad.asnumpy(), _numeric_grad(lambda v, k=k: f(k, v), pn[k]),
                                   rtol=1e-5, atol=1e-8)

    syms = {k: mx.sym.Variable(k) for k in [*pn, "x", "label"]}
    net = _mlp_loss(syms["x"], syms, syms["label"], mx.sym)
    ex = net.simple_bind(mx.cpu(), grad_req={k: "write" for k in pn},
                         type_dict={k: np.float64 for k in syms}, x=xn.shape, label=ln.shape,
                         **{k: v.shape for k, v in pn.items()})
    ex.forward(is_train=True, x=xn, label=ln, **pn)
    ex.backward()
    for k in pn:
        np.testing.assert_allclose(params[k].grad.asnumpy(), ex.grad_dict[k].asnumpy(), rtol=1e-12)


def test_grad_req_add_accumulates_and_write_overwrites():
    x = _var(np.array([1.0, 2.0]), "add")
    z = _var(np.array([1.0, 2.0]))
    for _ in range(3):
        with ag.record():
            y = x * 3 + z * 3
        y.backward()
    assert x.grad.asnumpy().tolist() == [9.0, 9.0]
    assert z.grad.asnumpy().tolist() == [3.0, 3.0]


def test_mark_variables_and_out_grads_of_a_multi_output_op():
    x, dx = mx.nd.ones((3, 5)), mx.nd.zeros((3, 5))
    ag.mark_variables([x], [dx])
    with ag.record():
        a, b, c = mx.nd.split(x, axis=0, num_outputs=3, squeeze_axis=True)
    ag.backward([a, b, c], [None, mx.nd.array([1, 2, 3, 4, 5]), mx.nd.array([5, 4, 3, 2, 1])])
    assert dx.asnumpy().tolist() == [[1] * 5, [1, 2, 3, 4, 5], [5, 4, 3, 2, 1]]


def test_pause_and_detach_exclude_from_the_gradient():
    x = _var(np.array([2.0, 3.0]))
    with ag.record():
        with ag.pause():
            assert not ag.is_recording()
            c = x * x
        y = x * c + (x * 5).detach() * x
    y.backward()
    assert x.grad.asnumpy().tolist() == [4.0 + 10.0, 9.0 + 15.0]


def test_train_and_predict_mode_change_dropout():
    x = _var(np.ones((20, 20)))
    assert not ag.is_recording() and not ag.is_training()
    with ag.record():
        assert ag.is_recording() and ag.is_training()
        y = mx.nd.Dropout(x, p=0.5)
        yn = y.asnumpy()
        assert set(np.unique(yn)) == {0.0, 2.0}
        y.backward()
        assert (x.grad.asnumpy() == yn).all()        # the mask of the recorded pass
        with ag.predict_mode():
            assert ag.is_recording() and not ag.is_training()
            y = mx.nd.Dropout(x, p=0.5)
            assert (y.asnumpy() == 1).all()
            y.backward()
            assert (x.grad.asnumpy() == 1).all()
    assert (mx.nd.Dropout(x, p=0.5).asnumpy() == 1).all()
    with ag.train_mode():
        assert not ag.is_recording() and ag.is_training()
        assert set(np.unique(mx.nd.Dropout(x, p=0.5).asnumpy())) == {0.0, 2.0}
    assert ag.set_training(True) is False and ag.set_training(False) is True


def test_a_repeated_recording_compiles_its_backward_once():
    rng = np.random.default_rng(3)
    w = _var(rng.standard_normal((4, 3)))
    before, grads = ag.compiles(), []
    for _ in range(4):
        x = mx.nd.array(rng.standard_normal((2, 3)), dtype=np.float64)
        with ag.record():
            loss = mx.nd.sum(mx.nd.sigmoid(mx.nd.dot(x, w, transpose_b=True)))
        loss.backward()
        s = 1 / (1 + np.exp(-(x.asnumpy() @ w.asnumpy().T)))
        grads.append((w.grad.asnumpy(), (s * (1 - s)).T @ x.asnumpy()))
        with ag.pause():
            w[:] = w - 0.1 * w.grad                  # a step changes the leaf's values, not the graph
    assert ag.compiles() - before == 1
    for got, want in grads:
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_backward_errors():
    x = _var(np.ones(2))
    with pytest.raises(mx.MXNetError, match="head 0 of shape .* was not computed from a variable"):
        (x * 2).backward()
    with ag.record():
        y = x + 1
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.asnumpy().tolist() == [1.0, 1.0]
    with pytest.raises(mx.MXNetError, match="already used by a backward pass and freed; pass retain_graph"):
        y.backward()
    with pytest.raises(mx.MXNetError, match="grad_req 'sum'"):
        ag.mark_variables([x], [mx.nd.zeros(2)], "sum")


def test_a_freed_recordings_output_is_a_constant_in_a_later_recording():
    """A backward without retain_graph clears the history of what it differentiated: a new
    recording reads such an array as a constant, so gradients stop there (MXNet's behaviour)."""
    x, w = _var(np.array([1.0, 2.0])), _var(np.array([3.0, 4.0]))
    with ag.record():
        shifted = x + 1
    shifted.backward()
    with ag.record():
        y = (shifted + 1) * w
    y.backward()
    assert w.grad.asnumpy().tolist() == [3.0, 4.0]      # shifted + 1 as recorded
    assert x.grad.asnumpy().tolist() == [1.0, 1.0]      # left from the first backward
    with pytest.raises(mx.MXNetError, match="already used by a backward pass and freed"):
        shifted.backward()
    with ag.record():
        shifted[0] = w[1]                    # an assignment keeps the constant's old values
    shifted.backward()
    assert w.grad.asnumpy().tolist() == [0.0, 1.0]


def test_grad_returns_new_arrays_and_namespaces():
    x = _var(np.array([3.0]))
    with ag.record():
        y = x * x
    assert ag.grad(y, [x])[0].asnumpy().tolist() == [6.0]
    assert x.grad.asnumpy().tolist() == [0.0]
    assert mx.autograd is ag
    cag = mx.contrib.autograd     # MXNet's older API over mx.autograd
    a, b = mx.nd.array([2.0, 3.0]), mx.nd.array([5.0, 7.0])
    grads, out = cag.grad_and_loss(lambda p, q: p * q + p)(a, b)
    assert [g.asnumpy().tolist() for g in grads] == [[6.0, 8.0], [2.0, 3.0]]
    assert out.asnumpy().tolist() == [12.0, 24.0]
    assert cag.grad(lambda p, q: p * q, argnum=1)(a, b)[0].asnumpy().tolist() == [2.0, 3.0]
    with cag.train_section():
        assert ag.is_recording() and ag.is_training()
        with cag.test_section():
            assert not ag.is_recording() and not ag.is_training()
    assert not ag.is_recording()


@pytest.mark.gpu
def test_recorded_gradient_on_gpu():
    x = mx.nd.array([1.0, 2.0], ctx=mx.gpu(0))
    x.attach_grad()
    with ag.record():
        y = mx.nd.exp(x) * x
    y.backward()
    assert x.grad.context == mx.gpu(0)
    np.testing.assert_allclose(x.grad.asnumpy(), np.exp([1.0, 2.0]) * [2.0, 3.0], rtol=1e-6)


def test_views_slices_casts_and_copies_are_recorded():
    xn = np.arange(12.0).reshape(3, 4) / 10
    wn = np.random.default_rng(4).standard_normal((3, 4))
    x = _var(xn)
    with ag.record():
        a = x.reshape((4, 3)).T.T.reshape((3, 4))        # a view, the transpose property
        b = x[1] * 2 + x[0:2].sum()                      # a row, a slice of rows
        c = x[:, 1:3]                                    # a basic key that copies
        d = x[[0, 2], [1, 1]]                            # an advanced key (a repeated column)
        e = x.astype("float32").astype("float64").copy()
        y = (mx.nd.sum(a * mx.nd.array(wn, dtype=wn.dtype)) + mx.nd.sum(b * b) + mx.nd.sum(c * c)
             + mx.nd.sum(d * 3) + mx.nd.sum(e * e * e))
    y.backward()

    def f(v):
        bv = v[1] * 2 + v[0:2].sum()
        return float(np.sum(v * wn) + np.sum(bv * bv) + np.sum(v[:, 1:3] ** 2)
                     + np.sum(v[[0, 2], [1, 1]] * 3) + np.sum(v ** 3))
    np.testing.assert_allclose(x.grad.asnumpy(), _numeric_grad(f, xn), rtol=1e-6, atol=1e-8)


def test_assignments_and_copyto_are_recorded():
    zn = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    z = _var(zn)
    weights = np.arange(15.0).reshape(3, 5)
    with ag.record():
        buf = mx.nd.zeros((3, 5), dtype=np.float64)
        buf[0] = z * 2
        buf[2, 1:3] = z[0:2] * z[0:2]
        buf[1] = 7
        r = mx.nd.zeros((5,), dtype=np.float64)
        (z * z).copyto(r)
        loss = mx.nd.sum(buf * mx.nd.array(weights, dtype=np.float64)) + mx.nd.sum(r)
    loss.backward()

    def f(v):
        bn = np.zeros((3, 5))
        bn[0], bn[2, 1:3], bn[1] = v * 2, v[0:2] ** 2, 7
        return float(np.sum(bn * weights) + np.sum(v * v))
    assert loss.asnumpy()[0] == f(zn)
    np.testing.assert_allclose(z.grad.asnumpy(), _numeric_grad(f, zn), rtol=1e-6)


def test_in_place_change_of_a_recorded_input_is_an_error():
    x = _var(np.array([1.0, 2.0]))
    c = mx.nd.array([3.0, 4.0], dtype=np.float64)
    with ag.record():
        y = x * c
    c[:] = 0                                   # the backward would read the new values
    with pytest.raises(mx.MXNetError, match="changed in place after it was recorded"):
        y.backward()
    with ag.record():
        y = x * c
    x += 1                                     # a variable, updated before backward
    with pytest.raises(mx.MXNetError, match="changed in place after it was recorded"):
        y.backward()
    with ag.record():
        with pytest.raises(mx.MXNetError, match="writes in place into a variable"):
            x[0] = x[1] * 2
        y = x * 2
        v = y.reshape((2,))
        with pytest.raises(mx.MXNetError, match="into a view"):
            mx.nd.exp(x, out=v)
        with pytest.raises(mx.MXNetError, match="into a view"):
            v[:] = 5
        with ag.pause():
            v[:] = 5                            # a write through a view: y no longer holds its record
        with pytest.raises(mx.MXNetError, match="changed in place after it was recorded"):
            y * 3
        a = mx.nd.ones((2,), dtype=np.float64)
        a += x                                  # an array no recording reached, updated in place
        loss = a * x
    loss.backward()
    assert x.grad.asnumpy().tolist() == [1 + 2 * 2.0, 1 + 2 * 3.0]


def test_random_ops_while_recording_are_constants_or_errors():
    x = _var(np.ones((50,)))
    with ag.record():
        noise = mx.nd.random.normal(0, 1, shape=(50,), dtype="float64")
        like = mx.nd.random.uniform_like(x) * 1.0          # recorded input, no gradient
        y = x * noise + x * like
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), noise.asnumpy() + like.asnumpy())
    data = _var(np.ones((2, 1, 3)))
    params = _var(np.ones(10))                          # two tanh layers of one unit
    state = mx.nd.zeros((2, 1, 1), dtype=np.float64)
    with ag.record(), pytest.raises(mx.MXNetError, match="RNN draws random numbers"):
        mx.nd.RNN(data, params, state, state_size=1, num_layers=2, mode="rnn_tanh", p=0.5)


def _fd_first_derivative(f, xn: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the gradient ``f`` computes (float64): the second derivative."""
    def g(v):
        x = _var(v)
        with ag.record():
            y = f(x)
        return ag.grad(y, [x])[0].asnumpy()
    return (g(xn + eps) - g(xn - eps)) / (2 * eps)


@pytest.mark.parametrize("name, lo, hi", [("sin", -2, 2), ("tanh", -2, 2), ("sigmoid", -3, 3),
                                          ("log", 0.5, 3), ("rsqrt", 0.5, 3), ("arcsinh", -2, 2),
                                          ("arccos", -0.8, 0.8), ("erf", -1, 1), ("rcbrt", 0.5, 3)])
def test_create_graph_gives_second_derivatives(name, lo, hi):
    xn = np.linspace(lo, hi, 4)
    op = getattr(mx.nd, name)
    x = _var(xn)
    head1, head2 = np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.25, 1.0, -1.0, 2.0])
    with ag.record():
        y = op(x)
        dy = ag.grad(y, [x], head_grads=mx.nd.array(head1, dtype="float64"), create_graph=True)[0]
        d2y = ag.grad(dy, [x], head_grads=mx.nd.array(head2, dtype="float64"), create_graph=True)[0]
    expected = _fd_first_derivative(op, xn) * head1 * head2
    np.testing.assert_allclose(d2y.asnumpy(), expected, rtol=1e-5, atol=1e-7)
    d2y.backward()     # a third derivative, through the recorded second one
    x3 = _fd_first_derivative(lambda v: ag.grad(op(v), [v], create_graph=True)[0], xn)
    np.testing.assert_allclose(x.grad.asnumpy(), x3 * head1 * head2, rtol=1e-4, atol=1e-6)


def test_create_graph_of_a_composite_expression_and_of_linear_ops():
    xn, wn = np.array([[0.3, -1.2], [2.0, 0.5]]), np.array([[1.5, -0.5], [0.25, 2.0]])
    x, w = _var(xn), _var(wn)

    def f(x):
        return mx.nd.sum(mx.nd.exp(mx.nd.dot(x, w)) * x)
    with ag.record():
        gx = ag.grad(f(x), [x], create_graph=True)[0]
        total = mx.nd.sum(gx * gx)
    total.backward()

    def total_of(v):
        xv = _var(v)
        with ag.record():
            g = ag.grad(f(xv), [xv], create_graph=True)[0]
        return float(mx.nd.sum(g * g).asscalar())
    np.testing.assert_allclose(x.grad.asnumpy(), _numeric_grad(total_of, xn), rtol=1e-5)
    assert ag.compiles() > 0
    with ag.record():                    # a linear function: its second derivative is zero
        dy = ag.grad(x * 3 + 1, [x], create_graph=True)[0]
    assert dy.asnumpy().tolist() == [[3.0, 3.0], [3.0, 3.0]]
    dy.backward()
    assert x.grad.asnumpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with ag.record():
        y = x * x
    ag.grad(y, [x], create_graph=True)            # retain_graph defaults to create_graph
    assert ag.grad(y, [x])[0].asnumpy().tolist() == (2 * xn).tolist()


class _DivMul(ag.Function):
    def forward(self, x, y):
        self.save_for_backward(x, y)
        return x / y, x * y

    def backward(self, dm, dn):
        x, y = self.saved_tensors
        return dm / y + dn * y, dn * x - dm * x / (y * y)


def test_function_backward_between_compiled_parts():
    xn, yn = np.array([0.5, 1.5, -2.0]), np.array([2.0, -0.5, 1.0])
    x, y = _var(xn), _var(yn)
    with ag.record():
        a = mx.nd.sin(x)
        m, n = _DivMul()(a, y)
        out = mx.nd.exp(m) + n * a
    out.backward()

    def total(xv, yv):
        av = np.sin(xv)
        return np.sum(np.exp(av / yv) + av * yv * av)
    np.testing.assert_allclose(x.grad.asnumpy(), _numeric_grad(lambda v: total(v, yn), xn), rtol=1e-6)
    np.testing.assert_allclose(y.grad.asnumpy(), _numeric_grad(lambda v: total(xn, v), yn), rtol=1e-6)
    with ag.record():          # the heads are the Function's outputs; grad() leaves x.grad alone
        m, n = _DivMul()(x, y)
    gx, gy = ag.grad([m, n], [x, y])
    np.testing.assert_allclose(gx.asnumpy(), 1 / yn + yn, rtol=1e-12)
    np.testing.assert_allclose(gy.asnumpy(), xn - xn / yn ** 2, rtol=1e-12)


def test_function_rules_and_errors():
    class AddOne(ag.Function):
        def forward(self, x):
            return x + 1

        def backward(self, dy):
            return dy, dy            # one gradient too many

    f = AddOne()
    with ag.record():
        c = f(mx.nd.zeros((2,)))     # no variable: not recorded, a constant
    assert c.asnumpy().tolist() == [1.0, 1.0] and not ag.tracked(c)
    with pytest.raises(mx.MXNetError, match="called once only"):
        f(mx.nd.zeros((2,)))
    x = _var(np.ones(2))
    with ag.record():
        y = AddOne()(x)
    with pytest.raises(mx.MXNetError, match="backward returned 2 gradients for 1 inputs"):
        y.backward()

    class Same(ag.Function):
        def forward(self, x):
            return x

        def backward(self, dy):
            return dy * 2
    with ag.record():
        y = Same()(x)
    assert y is not x and ag.tracked(y)
    with pytest.raises(mx.MXNetError, match="create_graph=True through an autograd.Function"):
        ag.grad(y, [x], create_graph=True)


def test_get_symbol_writes_numbers_as_scalar_operators():
    x, z = _var(np.ones(1)), _var(np.ones(1))
    with ag.record():
        y = x * x + 2 * x - 1
        w = 3 - x / 2 + z ** 2
    sym = ag.get_symbol(y)
    assert sym.list_arguments() == ["leaf0"]
    assert sym.eval(leaf0=mx.nd.array([3.0]))[0].asnumpy().tolist() == [14.0]
    sym = ag.get_symbol(w)
    assert len(sym.list_arguments()) == 2
    ops = [n["op"] for n in __import__("json").loads(sym.tojson())["nodes"]]
    assert {"_rminus_scalar", "_div_scalar", "_power_scalar"} <= set(ops)
    args = dict(zip(sym.list_arguments(), [mx.nd.array([4.0]), mx.nd.array([3.0])]))
    assert sym.eval(**args)[0].asnumpy().tolist() == [10.0]


def _last_program():
    return list(mx.autograd._PROGRAMS.values())[-1]


def test_backward_reads_the_values_the_recorded_calls_computed():
    """The compiled backward takes the recorded outputs as inputs: the forward operators whose
    outputs it holds do not run again (exp's gradient reads exp's own output)."""
    x = mx.nd.array([0.5, 1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.exp(x)
        z = mx.nd.sin(y) * y
    z.backward()
    prog = _last_program()
    ops = {n.op.name for n in prog.exe._symbol._topo() if n.op is not None}
    assert "exp" not in ops and "sin" not in ops, ops
    assert any(n.endswith(":held") for n in prog.exe._symbol.list_arguments())
    e = np.exp(x.asnumpy())
    np.testing.assert_allclose(x.grad.asnumpy(), (np.cos(e) * e + np.sin(e)) * e, rtol=1e-5)
    assert y._ag_node[0].held is None          # freed with the recording


def test_an_intermediate_written_after_recording_is_recomputed_as_recorded():
    """A recorded output written in place after its consumers were recorded: the backward cannot
    read it, and recomputes the recorded values from the leaves instead."""
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * 3
        z = (y * y).sum()
    y[:] = 100.0
    z.backward()
    assert not isinstance(_last_program(), mx.autograd._HeldProgram)
    np.testing.assert_allclose(x.grad.asnumpy(), 18 * x.asnumpy())    # d(9x^2)/dx


def test_retained_recording_reads_its_held_values_twice():
    x = mx.nd.array([1.0, -2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.relu(x * x * x)
    y.backward(retain_graph=True)
    first = x.grad.asnumpy().copy()
    y.backward()
    np.testing.assert_allclose(first, [3.0, 0.0])
    np.testing.assert_allclose(x.grad.asnumpy(), first)


def test_kept_backward_programs_are_bounded_by_the_memory_they_hold(monkeypatch):
    def step(n):
        x = mx.nd.ones((n, 64))
        x.attach_grad()
        with ag.record():
            y = (x * 2).sum()
        y.backward()
        return x.grad.asnumpy()

    ag.clear_programs()
    monkeypatch.setattr(ag, "MAX_PROGRAM_BYTES", 1 << 30)
    step(256)
    step(512)
    assert ag.cached_programs() == 2
    ag.clear_programs()
    monkeypatch.setattr(ag, "MAX_PROGRAM_BYTES", 64 * 1024)   # below one program's arrays
    step(256)
    assert ag.cached_programs() == 1                          # the newest is kept
    np.testing.assert_array_equal(step(512), np.full((512, 64), 2.0, np.float32))
    assert ag.cached_programs() == 1                          # the older one was dropped
    ag.clear_programs()
