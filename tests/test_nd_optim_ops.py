"""The update operators called on NDArrays (``mx.nd.sgd_update``, ...): MXNet's semantics (a new
array, or the weight itself with ``out=weight``; states changed in place), one compiled kernel for
any learning rate, clear errors, and the ``mx.optimizer`` classes agreeing with the operators they
are the update rules of. The formulas themselves are checked per op in tests/cases/update.py."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.imperative import cached_calls, clear_calls

from . import update_refs as R


def _g(grad, rescale, clip):
    g = grad * rescale
    return np.clip(g, -clip, clip) if clip >= 0 else g


@pytest.mark.parametrize("wd, rescale, clip", [(0.0, 1.0, -1.0), (1e-3, 0.01, -1.0), (1e-2, 1.0, 0.3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sgd_and_momentum_steps(wd, rescale, clip, dtype):
    rng = np.random.default_rng(0)
    w0, g0 = rng.normal(size=(7, 5)).astype(dtype), rng.normal(size=(7, 5)).astype(dtype)
    w, g, m = mx.nd.array(w0, dtype=dtype), mx.nd.array(g0, dtype=dtype), mx.nd.zeros((7, 5), dtype=dtype)
    ww, mm = w0.astype(np.float64), np.zeros((7, 5))
    for _ in range(3):
        assert mx.nd.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9, wd=wd, rescale_grad=rescale,
                                    clip_gradient=clip, out=w) is w
        mm = 0.9 * mm - 0.1 * (_g(g0, rescale, clip) + wd * ww)
        ww = ww + mm
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(w.asnumpy(), ww, rtol=tol, atol=tol)
    np.testing.assert_allclose(m.asnumpy(), mm, rtol=tol, atol=tol)
    w2 = mx.nd.array(w0, dtype=dtype)
    new = mx.nd.sgd_update(w2, g, lr=0.5, wd=wd, rescale_grad=rescale, clip_gradient=clip)
    want = w0 - 0.5 * (_g(g0, rescale, clip) + wd * w0)
    np.testing.assert_allclose(new.asnumpy(), want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(w2.asnumpy(), w0)      # without out=, the weight stays


def test_a_new_learning_rate_reuses_the_compiled_kernel():
    w, g, mean, var = mx.nd.ones((4,)), mx.nd.ones((4,)), mx.nd.zeros((4,)), mx.nd.zeros((4,))
    mx.nd.adam_update(w, g, mean, var, lr=0.1, out=w)
    before = cached_calls()
    for t in range(2, 6):
        mx.nd.adam_update(w, g, mean, var, lr=0.1 / t, wd=0.01 * t, out=w)
    assert cached_calls() == before


def test_bad_inputs_are_clear_errors():
    with pytest.raises(mx.MXNetError, match=r"sgd_mom_update.*mom.*\(3,\).*\(2,\)"):
        mx.nd.sgd_mom_update(mx.nd.ones((2,)), mx.nd.ones((2,)), mx.nd.zeros((3,)), lr=0.1)
    with pytest.raises(mx.MXNetError, match=r"sgd_update: required parameter 'lr'"):
        mx.nd.sgd_update(mx.nd.ones((2,)), mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match=r"mp_sgd_update.*weight32.*float32.*float64"):
        mx.nd.mp_sgd_update(mx.nd.ones((2,)), mx.nd.ones((2,)), mx.nd.ones((2,), dtype="float64"), lr=0.1)
    with pytest.raises(mx.MXNetError, match=r"multi_sgd_update.*'lrs' has 1 values for num_weights=2"):
        mx.nd.multi_sgd_update(*[mx.nd.ones((2,))] * 4, lrs=(0.1,), wds=(0.0, 0.0), num_weights=2)


def test_float16_updates_compute_in_float32_and_write_their_states_back():
    """float16 weights (no float16 kernels): the float32 kernel on widened copies, the new weight
    and the changed states rounded back, as MXNet's float16 updates compute element by element."""
    rng = np.random.default_rng(3)
    w0, g0 = (rng.standard_normal(5).astype(np.float16) for _ in range(2))
    m0 = rng.standard_normal(5).astype(np.float16)
    w, m = mx.nd.array(w0, dtype="float16"), mx.nd.array(m0, dtype="float16")
    out = mx.nd.sgd_mom_update(w, mx.nd.array(g0, dtype="float16"), m, lr=0.25, momentum=0.9, wd=0.01,
                               out=w)
    w32, m32 = mx.nd.array(w0, dtype="float32"), mx.nd.array(m0, dtype="float32")
    mx.nd.sgd_mom_update(w32, mx.nd.array(g0, dtype="float32"), m32, lr=0.25, momentum=0.9, wd=0.01,
                         out=w32)
    assert out is w and w.dtype is np.float16 and m.dtype is np.float16
    np.testing.assert_array_equal(w.asnumpy(), w32.asnumpy().astype(np.float16))
    np.testing.assert_array_equal(m.asnumpy(), m32.asnumpy().astype(np.float16))
    # multi-precision: the float32 master copy is updated in place, the output is float16
    master = mx.nd.array(w0, dtype="float32")
    new = mx.nd.mp_sgd_update(mx.nd.array(w0, dtype="float16"), mx.nd.array(g0, dtype="float16"), master,
                              lr=0.5)
    expect = w0.astype(np.float32) - np.float32(0.5) * g0.astype(np.float32)
    assert new.dtype is np.float16
    np.testing.assert_array_equal(master.asnumpy(), expect)
    np.testing.assert_array_equal(new.asnumpy(), expect.astype(np.float16))


def test_multi_update_writes_every_weight_in_place():
    ws = [mx.nd.ones((2, 3)), mx.nd.ones((4,))]
    gs = [mx.nd.ones((2, 3)), mx.nd.ones((4,)) * 2]
    ms = [mx.nd.zeros((2, 3)), mx.nd.zeros((4,))]
    outs = mx.nd.multi_sgd_mom_update(ws[0], gs[0], ms[0], ws[1], gs[1], ms[1], lrs=(0.1, 0.2),
                                      wds=(0.0, 0.0), momentum=0.5, num_weights=2, out=ws)
    assert outs[0] is ws[0] and outs[1] is ws[1]
    np.testing.assert_allclose(ws[0].asnumpy(), 0.9, rtol=1e-6)
    np.testing.assert_allclose(ws[1].asnumpy(), 0.6, rtol=1e-6)
    np.testing.assert_allclose(ms[1].asnumpy(), -0.4, rtol=1e-6)


def test_contrib_adamw_skips_a_non_finite_rescale():
    w, g, m, v = mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.zeros((3,)), mx.nd.zeros((3,))
    for scale in (float("nan"), float("inf"), 0.0):
        mx.nd.contrib.adamw_update(w, g, m, v, scale, lr=0.1, eta=1.0, out=w)
        assert w.asnumpy().tolist() == [1.0] * 3 and m.asnumpy().tolist() == [0.0] * 3
    mx.nd.contrib.adamw_update(w, g, m, v, mx.nd.array([1.0]), lr=0.1, eta=1.0, epsilon=0.0, out=w)
    np.testing.assert_allclose(w.asnumpy(), 1.0 - 0.1 * 0.1 / np.sqrt(0.001), rtol=1e-5)


def test_contrib_multi_lamb_equals_the_two_phases():
    rng = np.random.default_rng(3)
    shapes = [(3, 2), (5,)]
    w0 = [rng.uniform(-1, 1, s) for s in shapes]
    g0 = [rng.uniform(-1, 1, s) for s in shapes]
    ws = [mx.nd.array(x, dtype="float64") for x in w0]
    means = [mx.nd.zeros(s, dtype="float64") for s in shapes]
    vars_ = [mx.nd.zeros(s, dtype="float64") for s in shapes]
    mx.nd.contrib.multi_lamb_update(ws, [mx.nd.array(x, dtype="float64") for x in g0], means, vars_,
                                    step_count=[1, 2], lrs=[0.1, 0.2], wds=[0.01, 0.0], out=ws)
    for j, s in enumerate(shapes):
        m, v = np.zeros(s), np.zeros(s)
        d = R.lamb_phase1(w0[j], g0[j], m, v, t=[1, 2][j], wd=[0.01, 0.0][j])[0]
        want = R.lamb_phase2(w0[j], d, np.array([np.linalg.norm(w0[j])]), np.array([np.linalg.norm(d)]),
                             lr=[0.1, 0.2][j])[0]
        np.testing.assert_allclose(ws[j].asnumpy(), want, rtol=1e-10)
        np.testing.assert_allclose(means[j].asnumpy(), m, rtol=1e-10)


OPTIMIZERS = [  # optimizer, the op it runs, the op's states from the optimizer's, the op's params
    (lambda: mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5, clip_gradient=0.3),
     "sgd_mom_update", lambda s: [s],
     dict(lr=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5, clip_gradient=0.3)),
    (lambda: mx.optimizer.NAG(learning_rate=0.1, momentum=0.9, wd=0.01),
     "nag_mom_update", lambda s: [s], dict(lr=0.1, momentum=0.9, wd=0.01)),
    (lambda: mx.optimizer.RMSProp(learning_rate=0.1, gamma1=0.8, wd=0.01, clip_weights=0.7),
     "rmsprop_update", lambda s: [s[0]], dict(lr=0.1, gamma1=0.8, wd=0.01, clip_weights=0.7, epsilon=1e-8)),
    (lambda: mx.optimizer.Signum(learning_rate=0.1, momentum=0.9, wd=0.01, wd_lh=0.02),
     "signum_update", lambda s: [s], dict(lr=0.1, momentum=0.9, wd=0.01, wd_lh=0.02)),
    (lambda: mx.optimizer.Ftrl(learning_rate=0.1, lamda1=0.01, beta=1.0, wd=0.01),
     "ftrl_update", lambda s: list(s), dict(lr=0.1, lamda1=0.01, beta=1.0, wd=0.01)),
    (lambda: mx.optimizer.Signum(learning_rate=0.1, momentum=0.0, wd=0.01, clip_gradient=0.3),
     "signsgd_update", lambda s: [], dict(lr=0.1, wd=0.01, clip_gradient=0.3)),
]


def test_ftml_and_its_operator_agree():
    """FTML's ``t`` is the update count, which the operator takes as a param."""
    rng = np.random.default_rng(6)
    w0, g0 = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3))
    opt = mx.optimizer.FTML(learning_rate=0.1, beta1=0.6, beta2=0.99, epsilon=1e-6, wd=0.01,
                            clip_gradient=0.4)
    w, w_op = mx.nd.array(w0, dtype="float64"), mx.nd.array(w0, dtype="float64")
    state = opt.create_state(0, w)
    st_op = [s.copy() for s in state]
    for t in range(1, 4):
        opt.update(0, w, mx.nd.array(g0 * t, dtype="float64"), state)
        mx.nd.ftml_update(w_op, mx.nd.array(g0 * t, dtype="float64"), *st_op, lr=0.1, beta1=0.6, beta2=0.99,
                          epsilon=1e-6, t=t, wd=0.01, clip_grad=0.4, out=w_op)
    np.testing.assert_array_equal(w.asnumpy(), w_op.asnumpy())
    for a, b in zip(state, st_op):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@pytest.mark.parametrize("make, op, states, params", OPTIMIZERS)
def test_optimizer_and_its_operator_agree(make, op, states, params):
    rng = np.random.default_rng(5)
    w0, g0 = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3))
    opt = make()
    w = mx.nd.array(w0, dtype="float64")
    state = opt.create_state(0, w)
    w_op = mx.nd.array(w0, dtype="float64")
    st_op = [s.copy() for s in states(state)]
    for _ in range(3):
        opt.update(0, w, mx.nd.array(g0, dtype="float64"), state)
        getattr(mx.nd, op)(w_op, mx.nd.array(g0, dtype="float64"), *st_op, out=w_op, **params)
    np.testing.assert_array_equal(w.asnumpy(), w_op.asnumpy())
    for a, b in zip(states(state), st_op):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_reset_arrays_zeroes_arrays_of_any_shapes_and_dtypes_without_compiling(monkeypatch):
    """``mx.nd.reset_arrays`` fills each array in place as ``a[:] = 0`` does: a call on arrays of
    shapes, dtypes and counts not seen before compiles nothing."""
    from symjit import imperative

    def no_compile(*args, **kwargs):
        raise AssertionError("reset_arrays compiled a kernel")
    rng = np.random.default_rng(3)
    arrays = [mx.nd.array(rng.uniform(1, 2, size=tuple(rng.integers(1, 7, size=rank))), dtype=dt)
              for rank, dt in zip([1, 2, 3, 4, 2, 1], ["float16", "float32", "float64", "float32",
                                                        "int32", "float64"])]
    monkeypatch.setattr(imperative, "compile_symbol", no_compile)
    assert mx.nd.reset_arrays(*arrays, num_arrays=len(arrays)) == []
    for a in arrays:
        assert a.asnumpy().dtype == np.dtype(a.dtype) and not a.asnumpy().any()
    with pytest.raises(mx.MXNetError, match="num_arrays=3 but 1"):
        mx.nd.reset_arrays(arrays[0], num_arrays=3)
    with pytest.raises(mx.MXNetError, match="argument 1 is a float"):
        mx.nd.reset_arrays(arrays[0], 1.0, num_arrays=2)


def _into_calls(op: str) -> list:
    """The compiled calls of ``op`` made for outputs passed over their inputs' arrays."""
    from symjit import imperative
    return [c for key, c in imperative._CALLS.items() if key[0] == op and isinstance(key[-1], tuple)
            and key[-1] and isinstance(key[-1][0], tuple)]


@pytest.mark.parametrize("name, n_states", [("sgd_update", 0), ("sgd_mom_update", 1), ("adam_update", 2),
                                            ("rmsprop_update", 1)])
def test_an_update_into_its_weight_equals_one_into_a_new_array_and_takes_the_weight_once(name, n_states):
    """``out=weight``: the kernel gets the weight once (two names for one buffer would fail LLVM's
    overlap check and run the scalar loop) and makes its flat views before its loop."""
    clear_calls()
    rng = np.random.default_rng(5)
    w0, g0 = rng.normal(size=(6, 7)).astype(np.float32), rng.normal(size=(6, 7)).astype(np.float32)
    states0 = [np.abs(rng.normal(size=(6, 7))).astype(np.float32) for _ in range(n_states)]
    params = dict(lr=0.1, wd=0.01, **({"momentum": 0.9} if name == "sgd_mom_update" else {}))
    fn = getattr(mx.nd, name)
    fresh = fn(mx.nd.array(w0), mx.nd.array(g0), *[mx.nd.array(s) for s in states0], **params)
    w = mx.nd.array(w0)
    assert fn(w, mx.nd.array(g0), *[mx.nd.array(s) for s in states0], out=w, **params) is w
    np.testing.assert_array_equal(w.asnumpy(), fresh.asnumpy())
    (call,) = _into_calls(f"_rt_{name}")
    program, graph = call.compiled.program, call.compiled.graph
    weight = graph.args["in0_weight"]
    assert any(weight in ids for ids in program.kernels.values())
    assert all(graph.outputs[0] not in ids for ids in program.kernels.values())
    for _, text in program.kernel_texts.values():
        body = text.split("\n    for ", 1)
        assert len(body) == 2 and "reshape" not in body[1], text


def test_elementwise_calls_into_an_input_take_it_once():
    clear_calls()
    x0, y0 = np.arange(12, dtype=np.float32).reshape(3, 4), np.full((3, 4), 0.5, np.float32)
    x, y = mx.nd.array(x0), mx.nd.array(y0)
    for _ in range(2):     # the second call takes the repeated call's fast path
        mx.nd.elemwise_mul(x, y, out=x)
    x += y
    np.testing.assert_array_equal(x.asnumpy(), x0 * 0.25 + 0.5)
    calls = _into_calls("elemwise_mul")
    assert calls and all(c.compiled.graph.outputs[0] not in ids for c in calls
                         for ids in c.compiled.program.kernels.values())


def test_repeated_updates_into_the_weight_take_the_fast_path_with_each_calls_params(monkeypatch):
    """After its first call, an update into its weight skips the generic path: its float params
    (a learning rate changing every step) go into the scalar vector the runner keeps, and the
    states it writes have their write counts moved."""
    from symjit import imperative
    rng = np.random.default_rng(9)
    w0, g0 = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    w, g, m = mx.nd.array(w0), mx.nd.array(g0), mx.nd.zeros((4, 5))
    generic = []
    real = imperative._invoke_update
    monkeypatch.setattr(imperative, "_invoke_update", lambda *a: generic.append(1) or real(*a))
    ww, mm = w0.astype(np.float32).astype(np.float64), np.zeros((4, 5))
    for step in range(4):
        lr = 0.1 / (step + 1)
        count = m._cell()[0]
        assert mx.nd.sgd_mom_update(w, g, m, lr=lr, momentum=0.9, wd=0.01, out=w) is w
        assert m._cell()[0] > count
        mm = 0.9 * mm - lr * (g0 + 0.01 * ww)
        ww = ww + mm
        np.testing.assert_allclose(w.asnumpy(), ww, rtol=1e-5, atol=1e-6)
    assert generic == [1]
    mx.nd.sgd_mom_update(w, g, m, lr="0.1", momentum=0.9, wd=0.01, out=w)   # not a number: generic
    assert generic == [1, 1]
    other = mx.nd.zeros((4, 5))
    mx.nd.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9, wd=0.01, out=other)  # another array
    assert generic == [1, 1, 1]
