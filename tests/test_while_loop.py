"""Symbolic contrib.while_loop as one host-run node (symjit/symbol/while_loop.py): results and
gradients against the NDArray loop recorded by autograd (Python, as MXNet's), programs compiled
once whatever max_iterations, partial shapes through the step, JSON, nesting and errors. Finite
differences: tests/cases/control_flow.py."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.compiler.passes.fuse import fuse
from symjit.lower.cpu import CPU

R = np.random.default_rng(11)


def _step(ns, w, b):
    def step(i, h):
        y = ns.tanh(ns.broadcast_mul(h, w))
        return [y, i * 1.0], [i + 1, ns.broadcast_add(y * 0.5, b)]
    return step


def _cond(limit):
    return lambda i, h: i < limit


def _nd_reference(values, limit, steps, heads):
    """The NDArray loop under autograd: outputs, finals and the gradients of h, w, b."""
    i, h, w, b = (mx.nd.array(values[k]) for k in ("i", "h", "w", "b"))
    for v in (h, w, b):
        v.attach_grad()
    with mx.autograd.record():
        (ys, iis), (fi, fh) = mx.nd.contrib.while_loop(_cond(limit), _step(mx.nd, w, b), [i, h],
                                                       max_iterations=steps)
        total = (ys * heads[0]).sum() + (fh * heads[3]).sum()
    total.backward()
    return [ys.asnumpy(), iis.asnumpy(), fi.asnumpy(), fh.asnumpy()], [h.grad.asnumpy(), w.grad.asnumpy(),
                                                                       b.grad.asnumpy()]


def _symbol(limit, steps):
    w, b = mx.sym.var("w"), mx.sym.var("b")
    (ys, iis), (fi, fh) = mx.sym.contrib.while_loop(_cond(limit), _step(mx.sym, w, b),
                                                    [mx.sym.var("i"), mx.sym.var("h")], max_iterations=steps)
    return mx.sym.Group([ys, iis, fi, fh])


@pytest.mark.parametrize("limit, steps", [(3.0, 6), (10.0, 4)], ids=["stops", "max"])
def test_values_and_gradients_equal_the_recorded_ndarray_loop(limit, steps):
    values = {"i": np.array([0.0]), "h": R.uniform(-1, 1, (2, 3)), "w": R.uniform(-1, 1, (2, 3)),
              "b": R.uniform(-1, 1, (3,))}
    sym = _symbol(limit, steps)
    args = {k: mx.nd.array(v) for k, v in values.items()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in values.items() if k != "i"}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req={"i": "null", "h": "write", "w": "write",
                                                             "b": "write"})
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    heads = [R.uniform(-1, 1, o.shape) for o in outs]
    heads[1][:] = 0
    heads[2][:] = 0
    ex.backward([mx.nd.array(h) for h in heads])
    want_outs, want_grads = _nd_reference(values, limit, steps, [mx.nd.array(h) for h in heads])
    ran = int(min(limit, steps))
    for got, want in zip(outs, want_outs):
        np.testing.assert_allclose(got[:ran] if got.shape[0] == steps else got,
                                   want[:ran] if want.shape[0] == steps else want, rtol=1e-5, atol=1e-6)
    assert not outs[0][ran:].any()                          # rows after the last step: zeros
    for name, want in zip(("h", "w", "b"), want_grads):
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), want, rtol=1e-5, atol=1e-6)
    # inference passes of the same executor, then training again: each pass starts afresh
    again = [o.asnumpy() for o in ex.forward(is_train=False)]
    np.testing.assert_allclose(again[3], outs[3], rtol=1e-6)


def test_a_loop_that_never_steps_passes_its_variables_and_their_gradients_through():
    sym = _symbol(0.0, 3)
    h = R.uniform(-1, 1, (2, 3))
    args = {"i": mx.nd.array([0]), "h": mx.nd.array(h), "w": mx.nd.ones((2, 3)), "b": mx.nd.ones((3,))}
    grads = {k: mx.nd.ones(a.shape) for k, a in args.items() if k != "i"}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req={"i": "null", "h": "write", "w": "write",
                                                             "b": "write"})
    ys, iis, fi, fh = (o.asnumpy() for o in ex.forward(is_train=True))
    assert ys.shape == (3, 2, 3) and not ys.any() and not iis.any() and fi.tolist() == [0.0]
    np.testing.assert_array_equal(fh, h.astype(np.float32))
    head = R.uniform(-1, 1, (2, 3))
    ex.backward([mx.nd.ones(ys.shape), mx.nd.ones(iis.shape), mx.nd.ones((1,)), mx.nd.array(head)])
    np.testing.assert_allclose(ex.grad_dict["h"].asnumpy(), head, rtol=1e-6)
    assert not ex.grad_dict["w"].asnumpy().any() and not ex.grad_dict["b"].asnumpy().any()


def test_a_thousand_steps_are_two_programs_not_a_thousand_copies():
    sym = _symbol(700.0, 1000)
    from symjit.compiler.passes.build import build_forward
    g = build_forward(sym, {"i": (1,), "h": (2, 3), "w": (2, 3), "b": (3,)},
                      {n: np.dtype("float32") for n in "ihwb"}, False)
    groups = fuse(g, CPU, enabled=True)
    assert [op.op.name for op in g.ops] == ["_while_loop"] and len(groups) == 1 and groups[0].host
    ex = sym.bind(mx.cpu(), {"i": mx.nd.array([0]), "h": mx.nd.ones((2, 3)), "w": mx.nd.ones((2, 3)) * 0.1,
                             "b": mx.nd.zeros((3,))})
    ys, iis, fi, _ = ex.forward()
    assert fi.asnumpy().tolist() == [700.0] and iis.asnumpy()[:700, 0].tolist() == list(range(700))
    assert not ys.asnumpy()[700:].any()


def test_shapes_the_step_gives_its_weights_reach_simple_bind():
    def step(h):
        return [], [mx.sym.FullyConnected(h, weight=mx.sym.var("w"), no_bias=True, num_hidden=4)]
    _, (h,) = mx.sym.contrib.while_loop(lambda h: mx.sym.sum(h) < 1e9, step, [mx.sym.var("h")],
                                        max_iterations=3)
    args, outs, _ = h.infer_shape_partial(h=(2, 4))
    assert dict(zip(h.list_arguments(), args)) == {"h": (2, 4), "w": (4, 4)} and outs == [(2, 4)]
    ex = h.simple_bind(mx.cpu(), h=(2, 4))
    ex.arg_dict["h"][:] = 1.0
    ex.arg_dict["w"][:] = np.eye(4) * 2
    assert ex.forward()[0].asnumpy().tolist() == [[8.0] * 4] * 2


def test_the_loop_survives_json():
    sym = _symbol(3.0, 5)
    back = mx.sym.load_json(sym.tojson())
    args = {"i": mx.nd.array([0]), "h": mx.nd.array(R.uniform(-1, 1, (2, 3))),
            "w": mx.nd.array(R.uniform(-1, 1, (2, 3))), "b": mx.nd.array(R.uniform(-1, 1, (3,)))}
    a = [o.asnumpy() for o in sym.bind(mx.cpu(), dict(args)).forward()]
    b = [o.asnumpy() for o in back.bind(mx.cpu(), dict(args)).forward()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_nested_loops_and_their_gradient():
    def outer(i, x):
        _, (j, y) = mx.sym.contrib.while_loop(lambda j, y: j < 2, lambda j, y: ([], [j + 1, y * x]),
                                              [i * 0, x], max_iterations=3)
        return [y], [i + 1, y * 0.5]
    x0 = mx.sym.var("x")
    outs, (_, final) = mx.sym.contrib.while_loop(lambda i, x: i < 2, outer, [mx.sym.var("i"), x0],
                                                 max_iterations=2)
    ex = final.bind(mx.cpu(), {"i": mx.nd.array([0]), "x": mx.nd.array([1.5])},
                    args_grad={"x": mx.nd.zeros((1,))}, grad_req={"i": "null", "x": "write"})
    # the inner loop makes x^3 (two steps from y = x); outer: x1 = x^3 / 2, x2 = x1^3 / 2 = x^9 / 16
    assert ex.forward(is_train=True)[0].asnumpy().tolist() == pytest.approx([1.5 ** 9 / 16], rel=1e-6)
    ex.backward(mx.nd.ones((1,)))
    assert ex.grad_dict["x"].asnumpy().tolist() == pytest.approx([9 * 1.5 ** 8 / 16], rel=1e-6)


def test_errors_name_the_loop():
    v = mx.sym.var("v")
    _, (grown,) = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) < 5,
                                            lambda v: ([], [mx.sym.concat(v, v, dim=0)]), [v],
                                            max_iterations=3)
    with pytest.raises(mx.MXNetError, match=r"loop variable 0 enters the step as \(2,\) and leaves it as "
                                            r"\(4,\)"):
        grown.infer_shape(v=(2,))
    _, (wide,) = mx.sym.contrib.while_loop(lambda v: v < 5, lambda v: ([], [v + 1]), [v], max_iterations=3)
    with pytest.raises(mx.MXNetError, match=r"the condition must give one element, got \(2,\)"):
        wide.infer_shape(v=(2,))
    _, (dropped,) = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) < 5,
                                              lambda v: ([], [mx.sym.Dropout(v, p=0.5) + 1]), [v],
                                              max_iterations=3)
    ex = dropped.simple_bind(mx.cpu(), v=(2,))
    assert ex.forward(is_train=False)[0].asnumpy().tolist() == [3.0, 3.0]    # inference: no draws
    with pytest.raises(mx.MXNetError, match="_while_loop .*draws random numbers \\(Dropout"):
        ex.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match="cond must return one single-output symbol"):
        mx.sym.contrib.while_loop(lambda v: [v, v], lambda v: ([], [v]), [v], max_iterations=2)
