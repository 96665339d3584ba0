"""contrib.foreach / while_loop / cond in symbols against the NDArray versions (Python loops, as
MXNet's), their JSON round trip, and their errors. Gradients: tests/cases/control_flow.py."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx


def _body(ns):
    def step(xs, states):
        x, y = xs
        h, (c,) = states
        new_h = ns.tanh(ns.dot(x, ns_w[ns]) + h)
        new_c = c + y
        return [new_h, [ns.broadcast_mul(new_h, y.sum())]], [new_h, [new_c]]
    return step


ns_w: dict = {}


def test_foreach_symbol_equals_ndarray_loop_and_survives_json():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, (4, 2, 3)), rng.uniform(-1, 1, (4, 2))
    h0, c0, w = rng.uniform(-1, 1, (2, 5)), np.zeros((2,)), rng.uniform(-1, 1, (3, 5))
    ns_w[mx.nd] = mx.nd.array(w, dtype="float64")
    (o1, [o2]), (h, [c]) = mx.nd.contrib.foreach(
        _body(mx.nd), [mx.nd.array(x, dtype="float64"), mx.nd.array(y, dtype="float64")],
        [mx.nd.array(h0, dtype="float64"), [mx.nd.array(c0, dtype="float64")]])
    ns_w[mx.sym] = mx.sym.var("w")
    (s1, [s2]), (sh, [sc]) = mx.sym.contrib.foreach(
        _body(mx.sym), [mx.sym.var("x"), mx.sym.var("y")], [mx.sym.var("h0"), [mx.sym.var("c0")]])
    net = mx.sym.Group([s1, s2, sh, sc])
    assert sorted(net.list_arguments()) == ["c0", "h0", "w", "x", "y"]
    values = {"x": x, "y": y, "h0": h0, "c0": c0, "w": w}
    args = {k: mx.nd.array(v, dtype="float64") for k, v in values.items()}
    for sym in (net, mx.sym.load_json(net.tojson())):
        got = [a.asnumpy() for a in sym.bind(mx.cpu(), args).forward()]
        for g, want in zip(got, (o1, o2, h, c)):
            np.testing.assert_allclose(g, want.asnumpy(), rtol=1e-12)
    _, out_shapes, _ = net.infer_shape(x=(4, 2, 3), y=(4, 2), h0=(2, 5), c0=(2,), w=(3, 5))
    assert out_shapes == [(4, 2, 5), (4, 2, 5), (2, 5), (2,)]


def test_foreach_over_a_1d_array_steps_through_one_element_arrays():
    """As MXNet's arrays have no 0-d shape, a step of a 1-D data input is a ``(1,)`` array, in
    the symbol as in the NDArray loop, and the step outputs stack to ``(steps, 1)``."""
    data, s0 = np.arange(3.0), np.array([0.5])

    def step(xs, states):
        return [xs[0] * states[0]], [states[0] * 2]
    (o,), (h,) = mx.nd.contrib.foreach(step, [mx.nd.array(data)], [mx.nd.array(s0)])
    (so,), (sh,) = mx.sym.contrib.foreach(step, [mx.sym.var("d")], [mx.sym.var("s")])
    net = mx.sym.Group([so, sh])
    assert net.infer_shape(d=(3,), s=(1,))[1] == [(3, 1), (1,)]
    for steps in (3, 1):
        args = {"d": mx.nd.array(data[:steps]), "s": mx.nd.array(s0)}
        got_o, got_h = (a.asnumpy() for a in net.bind(mx.cpu(), args).forward())
        want = (data[:steps] * 0.5 * 2.0 ** np.arange(steps))[:, None]
        np.testing.assert_allclose(got_o, want, rtol=1e-6)
        np.testing.assert_allclose(got_h, [0.5 * 2 ** steps], rtol=1e-6)
    np.testing.assert_allclose(o.asnumpy(), (data * 0.5 * 2.0 ** np.arange(3))[:, None], rtol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), [4.0], rtol=1e-6)


def test_foreach_body_must_use_every_data_input_and_state():
    """As MXNet 1.9.1: a body that leaves a data input or a state unused is an AssertionError
    when the symbol is built, naming which one."""
    d, s0, s1 = mx.sym.var("d"), mx.sym.var("s0"), mx.sym.var("s1")
    with pytest.raises(AssertionError, match="does not use its state 1"):
        mx.sym.contrib.foreach(lambda x, s: (x, [s[0] + 1, s[0] + 2]), d, [s0, s1])
    with pytest.raises(AssertionError, match="does not use its data input 0"):
        mx.sym.contrib.foreach(lambda x, s: (s[0] * 2, [s[0] + 1]), d, [s0])


def test_while_loop_symbol_equals_ndarray_loop():
    cond = lambda i, s: i <= 5                            # noqa: E731  (MXNet's documented example)
    func = lambda i, s: ([i + s], [i + 1, s + i])         # noqa: E731
    outs, (i, s) = mx.nd.contrib.while_loop(cond, func, (mx.nd.array([0]), mx.nd.array([1])),
                                            max_iterations=8)
    sym_outs, sym_vars = mx.sym.contrib.while_loop(cond, func, [mx.sym.var("i"), mx.sym.var("s")],
                                                   max_iterations=8)
    ex = mx.sym.Group(sym_outs + sym_vars).bind(mx.cpu(), {"i": mx.nd.array([0]), "s": mx.nd.array([1])})
    got = [a.asnumpy().ravel().tolist() for a in ex.forward()]
    assert got[0] == outs[0].asnumpy().ravel().tolist() == [1, 2, 4, 7, 11, 16, 0, 0]
    assert got[1:] == [[6.0], [16.0]] == [i.asnumpy().tolist(), s.asnumpy().tolist()]


def test_long_ndarray_loops_stack_their_outputs_through_small_concats():
    from symjit import imperative
    imperative.clear_calls()
    outs, (i, s) = mx.nd.contrib.while_loop(lambda i, s: i <= 37, lambda i, s: ([i * 2], [i + 1, s + i]),
                                            (mx.nd.array([1]), mx.nd.array([0])), max_iterations=40)
    assert outs[0].shape == (40, 1) and s.asscalar() == sum(range(38))
    assert outs[0].asnumpy().ravel().tolist() == [2.0 * k for k in range(1, 38)] + [0.0] * 3
    steps, _ = mx.nd.contrib.foreach(lambda x, st: (x + st[0], st), mx.nd.arange(35).reshape((35, 1)),
                                     [mx.nd.ones((1,))])
    assert steps.asnumpy().ravel().tolist() == list(range(1, 36))
    widths = [int(dict(key[1])["num_args"]) for key in imperative._CALLS if key[0] == "Concat"]
    assert widths and max(widths) <= 16      # never an argument per step


def test_while_loop_keeps_the_structure_of_nested_loop_variables():
    def cond(total, rest):                       # called with the top-level items, as MXNet does
        return total.sum() < 20

    def func(total, rest):
        (pair,) = rest
        return [total], [total + pair, [pair * 2]]

    outs, (total, [pair]) = mx.nd.contrib.while_loop(
        cond, func, [mx.nd.array([1.0, 1.0]), [mx.nd.array([1.0, 2.0])]], max_iterations=5)
    assert total.asnumpy().tolist() == [8.0, 15.0] and pair.asnumpy().tolist() == [8.0, 16.0]
    assert outs[0].asnumpy().tolist() == [[1, 1], [2, 3], [4, 7], [0, 0], [0, 0]]
    sym_outs, (s_total, [s_pair]) = mx.sym.contrib.while_loop(
        cond, func, [mx.sym.var("t"), [mx.sym.var("p")]], max_iterations=5)
    ex = mx.sym.Group([sym_outs[0], s_total, s_pair]).bind(
        mx.cpu(), {"t": mx.nd.array([1.0, 1.0]), "p": mx.nd.array([1.0, 2.0])})
    got = [a.asnumpy().tolist() for a in ex.forward()]
    assert got == [outs[0].asnumpy().tolist(), [8.0, 15.0], [8.0, 16.0]]
    with pytest.raises(mx.MXNetError, match="func returned 1 loop variables, expected 2"):
        mx.nd.contrib.while_loop(cond, lambda t, r: ([], [t]), [mx.nd.ones((2,)), [mx.nd.ones((2,))]],
                                 max_iterations=2)


def test_while_loop_gradient_follows_the_steps_that_ran():
    x = mx.sym.var("x")
    _, final = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) < 10, lambda v: ([], [v * 2]), [x],
                                         max_iterations=6)
    ex = final[0].simple_bind(mx.cpu(), x=(2,))
    ex.arg_dict["x"][:] = np.array([1.0, 1.0])        # 2 -> 4 -> 8 -> 16: doubles 3 times
    assert ex.forward(is_train=True)[0].asnumpy().tolist() == [8.0, 8.0]
    ex.backward(mx.nd.ones((2,)))
    assert ex.grad_dict["x"].asnumpy().tolist() == [8.0, 8.0]


@pytest.mark.parametrize("flag, want", [(1.0, [6.0, 12.0]), (0.0, [-4.0, -3.0])])
def test_cond_picks_a_branch_and_its_gradient(flag, want):
    a, p = mx.sym.var("a"), mx.sym.var("p")
    out = mx.sym.contrib.cond(p, lambda: a * 6, lambda: a - 5)
    ex = out.simple_bind(mx.cpu(), a=(2,), p=(1,), grad_req={"a": "write", "p": "null"})
    ex.arg_dict["a"][:] = np.array([1.0, 2.0])
    ex.arg_dict["p"][:] = np.array([flag])
    assert ex.forward(is_train=True)[0].asnumpy().tolist() == want
    ex.backward(mx.nd.ones((2,)))
    assert ex.grad_dict["a"].asnumpy().tolist() == ([6.0, 6.0] if flag else [1.0, 1.0])
    nd_out = mx.nd.contrib.cond(mx.nd.array([flag]), lambda: mx.nd.array([1.0, 2.0]) * 6,
                                lambda: mx.nd.array([1.0, 2.0]) - 5)
    assert nd_out.asnumpy().tolist() == want


def test_control_flow_errors_are_clear():
    with pytest.raises(mx.MXNetError, match="state 0 enters the body as \\(3,\\) and leaves it as \\(1,\\)"):
        outs, _ = mx.sym.contrib.foreach(lambda x, s: (x, [mx.sym.sum(s[0], keepdims=True)]),
                                         mx.sym.var("d"), [mx.sym.var("s")])
        outs.infer_shape(d=(2, 3), s=(3,))
    with pytest.raises(mx.MXNetError, match="max_iterations should be specified"):
        mx.sym.contrib.while_loop(lambda v: v < 1, lambda v: ([], [v]), [mx.sym.var("v")])
    with pytest.raises(mx.MXNetError, match="then_func gave 2 outputs, else_func 1"):
        v = mx.sym.var("v")
        mx.sym.contrib.cond(v, lambda: [v, v], lambda: [v])


def test_boolean_mask_on_ndarrays_and_a_clear_error_in_symbols():
    data = mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 1, 0])).asnumpy().tolist() == [[4, 5, 6]]
    assert mx.nd.contrib.boolean_mask(data, mx.nd.array([1, 0, 1]), axis=1).asnumpy().tolist() == \
        [[1, 3], [4, 6], [7, 9]]
    with pytest.raises(mx.MXNetError, match=r"index must be 1-D with data.shape\[0\] elements"):
        mx.nd.contrib.boolean_mask(data, mx.nd.array([1, 0]))
    with pytest.raises(mx.base.DataDependentShape, match="static shapes"):
        mx.sym.contrib.boolean_mask(mx.sym.var("d"), mx.sym.var("i"))


def test_a_hybridized_block_with_boolean_mask_runs_imperatively_and_says_so():
    class Masked(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, data, index):     # noqa: N803
            return F.contrib.boolean_mask(data, index) * 3

    block = Masked()
    block.hybridize()
    data = mx.nd.array([[1, 2], [3, 4], [5, 6]])
    data.attach_grad()
    with pytest.warns(UserWarning, match="Masked is hybridized, but it runs imperatively"):
        with mx.autograd.record():
            out = block(data, mx.nd.array([1, 0, 1]))
    out.backward()
    assert out.asnumpy().tolist() == [[3, 6], [15, 18]]
    assert data.grad.asnumpy().tolist() == [[3, 3], [0, 0], [3, 3]]
    assert block(data, mx.nd.array([0, 1, 0])).asnumpy().tolist() == [[9, 12]]   # no second trace


def test_backward_index_copy_is_index_copys_gradient():
    og = np.arange(15.0).reshape(5, 3)
    grads = mx.nd.contrib.backward_index_copy(mx.nd.array(og), mx.nd.zeros((5, 3)), mx.nd.array([0, 4, 2]),
                                              mx.nd.ones((3, 3)))
    want_old = og.copy()
    want_old[[0, 4, 2]] = 0
    assert grads[0].asnumpy().tolist() == want_old.tolist()
    assert grads[1].asnumpy().tolist() == og[[0, 4, 2]].tolist()


def test_backward_hawkesll_equals_the_bound_gradient():
    from .cases.hawkes import CASES
    case = CASES[0]
    names = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")
    ins = {n: mx.nd.array(case.inputs[n], dtype=case.inputs[n].dtype) for n in names}
    heads = [mx.nd.array(np.linspace(-1, 1, 4)), mx.nd.array(np.linspace(0, 1, 12).reshape(4, 3))]
    got = mx.nd.contrib.backward_hawkesll(*heads, *[ins[n] for n in names])
    sym = case.build({n: mx.sym.var(n) for n in names})
    wrt = ("lda", "alpha", "beta", "state")
    ex = sym.bind(mx.cpu(), ins, args_grad={n: mx.nd.zeros(ins[n].shape, dtype="float64") for n in wrt},
                  grad_req={n: ("write" if n in wrt else "null") for n in names})
    ex.forward(is_train=True)
    ex.backward(heads)
    for g, n in zip(got, wrt):
        np.testing.assert_allclose(g.asnumpy(), ex.grad_dict[n].asnumpy(), rtol=1e-12)


def _sized_by_the_body():
    w = mx.sym.var("w")

    def step(x, states):
        h = mx.sym.FullyConnected(x, weight=w, no_bias=True, num_hidden=4) + states[0]
        return h * 2, [h]
    return mx.sym.contrib.foreach(step, mx.sym.var("data"), [mx.sym.var("h")])


def test_foreach_shapes_with_unknown_sizes_flow_through_the_body():
    (out, [last]) = _sized_by_the_body()
    net = mx.sym.Group([out, last])
    assert net.list_arguments() == ["data", "h", "w"]
    # the weight's input size from the data slice, the state's shape from what the body makes of it
    args, outs, _ = net.infer_shape_partial(data=(5, 2, 3))
    assert args == [(5, 2, 3), (2, 4), (4, 3)] and outs == [(5, 2, 4), (2, 4)]
    # a partly known weight is completed; the steps stay unknown while the data's are
    args, outs, _ = net.infer_shape_partial(data=(0, 2, 3), w=(4, 0))
    assert args == [(0, 2, 3), (2, 4), (4, 3)] and outs == [(0, 2, 4), (2, 4)]
    assert net.infer_shape(data=(0, 2, 3)) == (None, None, None)
    with pytest.raises(mx.MXNetError, match="_foreach.*in the loop body.*FullyConnected"):
        net.infer_shape_partial(data=(5, 2, 3), w=(4, 7))


def test_a_hybridized_block_unrolling_with_foreach_initializes_its_deferred_weights():
    from symjit.gluon.contrib.rnn.rnn_cell import dynamic_unroll

    class Unrolled(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__(prefix="unr_")
            with self.name_scope():
                self.cell = mx.gluon.rnn.GRUCell(4)        # input size left to inference

        def hybrid_forward(self, F, x, h):
            return dynamic_unroll(self.cell, x, [h], layout="NTC")

    x = mx.nd.array(np.random.default_rng(2).uniform(-1, 1, (2, 5, 3)))
    h = mx.nd.zeros((2, 4))
    results = []
    for hybrid in (False, True):
        net = Unrolled()
        net.initialize(mx.init.Constant(0.3))
        net.hybridize(hybrid)
        out, [last] = net(x, h)
        assert net.cell.i2h_weight.shape == (12, 3)
        results.append((out.asnumpy(), last.asnumpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][0][:, -1], rtol=1e-5, atol=1e-6)


@pytest.fixture
def fresh_subgraph_names(monkeypatch):
    from collections import defaultdict
    counts: defaultdict = defaultdict(int)
    monkeypatch.setattr(mx.attribute.AttrScope, "_subgraph_names", counts)
    return counts


class _Branchy(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.contrib.cond(x.sum() > 0, lambda: x + 1, lambda: x - 1, name="pick")


def test_control_flow_counts_its_subgraph_names(fresh_subgraph_names):
    x = mx.nd.array([1.0, -3.0])
    for _ in range(2):                      # two blocks, each traced once by hybridize
        net = _Branchy()
        net.hybridize()
        assert net(x).asnumpy().tolist() == [0.0, -4.0]
    assert dict(fresh_subgraph_names) == {"pick_pred": 2, "pick_then": 2, "pick_else": 2}
    v = mx.sym.var("v")
    mx.sym.contrib.while_loop(lambda a: a < 5, lambda a: (a, a + 1), [v], max_iterations=4, name="w")
    # one condition and one step subgraph per loop, however many steps it unrolls
    assert fresh_subgraph_names["w_cond"] == 1 and fresh_subgraph_names["w_func"] == 1


def test_nested_control_flow_names_its_subgraphs_under_the_enclosing_one(fresh_subgraph_names):
    def step(x, states):
        y = mx.sym.contrib.cond(x.sum() > 0, lambda: x * 2, lambda: x, name="inner")
        return y, [states[0] + y]
    mx.sym.contrib.foreach(step, mx.sym.var("d"), [mx.sym.var("s")], name="outer")
    mx.sym.contrib.foreach(step, mx.sym.var("d"), [mx.sym.var("s")], name="outer")
    assert dict(fresh_subgraph_names) == {
        "outer": 2, "outer0$inner_pred": 1, "outer0$inner_then": 1, "outer0$inner_else": 1,
        "outer1$inner_pred": 1, "outer1$inner_then": 1, "outer1$inner_else": 1}


class _Counter(mx.gluon.HybridBlock):
    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def hybrid_forward(self, F, i, total):
        return F.contrib.while_loop(lambda i, total: i <= self.steps,
                                    lambda i, total: (i, (i + 1, total + i)),
                                    [i, total], max_iterations=self.steps)


def test_a_hybridized_loop_of_hundreds_of_steps_binds_in_seconds():
    """The unrolled graph has thousands of kernel groups and buffers: code generation and the
    memory plan grow about linearly with them (they grew with the cube: minutes at 600 steps)."""
    import time
    net = _Counter(600)
    net.hybridize()
    start = time.perf_counter()
    outs, (i, total) = net(mx.nd.array([1], dtype="int64"), mx.nd.array([0], dtype="int64"))
    assert total.asscalar() == 600 * 601 // 2 and i.asscalar() == 601
    assert outs.shape == (600, 1) and outs[599].asscalar() == 600
    assert time.perf_counter() - start < 60
