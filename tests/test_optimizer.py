"""mx.optimizer: every rule against a numpy re-implementation of MXNet 1.x's documented formula."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import symjit as mx
from symjit.base import DTypeError, FormatError, MXNetError, ParamError, ShapeError

SHAPE = (3, 4)
LR, WD, RESCALE, CLIP = 0.05, 0.1, 0.5, 0.3
LR_MULT, WD_MULT = 2.0, 0.5


def _clip(g, c):
    return g if c is None else np.clip(g, -c, c)


# -- numpy references (float64), one step each; `s` is the state dict, `t` the 1-based step -------
# MXNet computes an update in the weight's dtype, its float hyperparameters cast to it: Adam's
# 1 - beta2 is then 1.0000467e-3 for float32, not 1e-3 (4.7e-5 relative), which the reference
# must do too (`as_dtype`); the other rules' hyperparameters round within the tolerance.

def ref_sgd(w, g, s, t, lr, wd, mom=0.0):
    g = _clip(RESCALE * g, CLIP)
    if not mom:
        return w - lr * (g + wd * w)
    s["m"] = mom * s.get("m", 0.0) + lr * (g + wd * w)   # documented: weight -= state
    return w - s["m"]


def ref_nag(w, g, s, t, lr, wd, mom=0.9):
    g = _clip(RESCALE * g, CLIP) + wd * w
    s["m"] = mom * s.get("m", 0.0) - lr * g
    return w + mom * s["m"] - lr * g


def ref_adam(w, g, s, t, lr, wd, b1=0.9, b2=0.999, eps=1e-8, as_dtype=np.float64):
    k1, k2 = float(as_dtype(b1)), float(as_dtype(b2))   # the kernel's; the host's lr_t: exact
    g = _clip(RESCALE * g + wd * w, CLIP)
    s["m"] = k1 * s.get("m", 0.0) + (1 - k1) * g
    s["v"] = k2 * s.get("v", 0.0) + (1 - k2) * g * g
    lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    return w - lr_t * s["m"] / (np.sqrt(s["v"]) + eps)


def ref_rmsprop(w, g, s, t, lr, wd, g1=0.9, eps=1e-8):
    g = _clip(RESCALE * g + wd * w, CLIP)
    s["n"] = (1 - g1) * g * g + g1 * s.get("n", 0.0)
    return w - lr * g / np.sqrt(s["n"] + eps)


def ref_rmsprop_centered(w, g, s, t, lr, wd, g1=0.9, g2=0.8, eps=1e-8, cw=0.6):
    g = _clip(RESCALE * g + wd * w, CLIP)
    s["n"] = (1 - g1) * g * g + g1 * s.get("n", 0.0)
    s["a"] = (1 - g1) * g + g1 * s.get("a", 0.0)
    s["d"] = g2 * s.get("d", 0.0) - lr * g / np.sqrt(s["n"] - s["a"] ** 2 + eps)
    return np.clip(w + s["d"], -cw, cw)


def ref_adagrad(w, g, s, t, lr, wd, eps=1e-7):
    g = _clip(RESCALE * g, CLIP)
    s["h"] = s.get("h", 0.0) + g * g
    return w - lr * (g / np.sqrt(s["h"] + eps) + wd * w)


def ref_adadelta(w, g, s, t, lr, wd, rho=0.9, eps=1e-5):
    g = _clip(RESCALE * g, CLIP)
    s["g"] = rho * s.get("g", 0.0) + (1 - rho) * g * g
    d = np.sqrt(s.get("d", 0.0) + eps) / np.sqrt(s["g"] + eps) * g
    s["d"] = rho * s.get("d", 0.0) + (1 - rho) * d * d
    return w - d - wd * w


COMMON = dict(learning_rate=LR, wd=WD, rescale_grad=RESCALE, clip_gradient=CLIP)
CASES = {
    "sgd": (lambda: mx.optimizer.SGD(**COMMON), ref_sgd),
    "sgd_momentum": (lambda: mx.optimizer.SGD(momentum=0.9, **COMMON),
                     lambda *a: ref_sgd(*a, mom=0.9)),
    "nag": (lambda: mx.optimizer.NAG(momentum=0.9, **COMMON), ref_nag),
    "adam": (lambda: mx.optimizer.Adam(**COMMON), ref_adam),
    "rmsprop": (lambda: mx.optimizer.RMSProp(**COMMON), ref_rmsprop),
    "rmsprop_centered": (lambda: mx.optimizer.RMSProp(centered=True, gamma2=0.8, clip_weights=0.6, **COMMON),
                         ref_rmsprop_centered),
    "adagrad": (lambda: mx.optimizer.AdaGrad(**COMMON), ref_adagrad),
    "adadelta": (lambda: mx.optimizer.AdaDelta(**COMMON), ref_adadelta),
}


def _run(name, steps=5, dtype=np.float32, index=0, seed=0):
    rng = np.random.default_rng(seed)
    make, ref = CASES[name]
    opt = make()
    opt.set_lr_mult({index: LR_MULT})
    opt.set_wd_mult({index: WD_MULT})
    w0 = rng.uniform(-0.5, 0.5, SHAPE)
    weight = mx.nd.array(w0.astype(dtype), dtype=dtype)
    buffer = weight._data
    state = opt.create_state(index, weight)
    expect, ref_state = w0.copy(), {}
    for t in range(1, steps + 1):
        g = rng.normal(0.0, 1.0, SHAPE).astype(dtype)
        opt.update(index, weight, mx.nd.array(g, dtype=dtype), state)
        extra = {"as_dtype": dtype} if ref is ref_adam else {}
        expect = ref(expect, g.astype(np.float64), ref_state, t, LR * LR_MULT, WD * WD_MULT, **extra)
        np.testing.assert_allclose(weight.asnumpy(), expect, rtol=1e-5, atol=1e-6, err_msg=f"step {t}")
    assert weight._data is buffer   # updated in place
    return opt, weight, state, ref_state


@pytest.mark.parametrize("name", sorted(CASES))
def test_steps_match_reference(name):
    _run(name)


@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "adadelta"])
def test_float64(name):
    _, weight, _, _ = _run(name, dtype=np.float64)
    assert weight.dtype == np.float64


def test_sgd_momentum_state_is_mxnet_fused_op_sign():
    """MXNet's sgd_mom_update keeps v with ``weight += v``: the negated documented state."""
    _, _, state, ref_state = _run("sgd_momentum", steps=3)
    np.testing.assert_allclose(state.asnumpy(), -ref_state["m"], rtol=1e-5, atol=1e-6)


def test_clipping_is_active_in_the_cases():
    g = np.random.default_rng(0).normal(0.0, 1.0, SHAPE)
    assert (np.abs(RESCALE * g) > CLIP).any()   # so the tests above exercise clip_gradient


def test_no_clip_no_wd_plain_sgd_hand_values():
    opt = mx.optimizer.SGD(learning_rate=0.5)
    w = mx.nd.array([1.0, -2.0])
    opt.update(0, w, mx.nd.array([4.0, 100.0]), None)
    np.testing.assert_allclose(w.asnumpy(), [1.0 - 2.0, -2.0 - 50.0])


def test_adam_bias_correction_each_step_is_lr():
    """With a constant gradient and eps=0 the corrected step is exactly lr: m_t = 1 - b1^t,
    v_t = 1 - b2^t, lr_t * m_t / sqrt(v_t) = lr (with the betas rounded to float32, as MXNet
    computes a float32 update: 1 - b2 is 4.7e-5 above 1e-3 then)."""
    opt = mx.optimizer.Adam(learning_rate=0.01, epsilon=0.0)
    w = mx.nd.zeros((2,))
    state = opt.create_state(0, w)
    for t in range(1, 5):
        opt.update(0, w, mx.nd.ones((2,)), state)
        np.testing.assert_allclose(w.asnumpy(), [-0.01 * t] * 2, rtol=1e-5)
        np.testing.assert_allclose(state[0].asnumpy(), [1 - 0.9 ** t] * 2, rtol=1e-5)
        b2 = float(np.float32(0.999))
        np.testing.assert_allclose(state[1].asnumpy(), [1 - b2 ** t] * 2, rtol=1e-5)


def test_adam_counts_are_per_index():
    """A fresh index starts at t=1 even after other indices were updated."""
    opt = mx.optimizer.Adam(learning_rate=0.1)
    w0, w1 = mx.nd.zeros((1,)), mx.nd.zeros((1,))
    s0, s1 = opt.create_state(0, w0), opt.create_state(1, w1)
    g = mx.nd.array([0.5])
    for _ in range(3):
        opt.update(0, w0, g, s0)
    opt.update(1, w1, g, s1)
    assert opt._index_update_count == {0: 3, 1: 1} and opt.num_update == 3
    # t=1: lr * sqrt(1-b2)/(1-b1) * (1-b1)*g / (sqrt(1-b2)*|g| + eps) = lr (t=4 would give ~0.058)
    np.testing.assert_allclose(w1.asnumpy(), [-0.1], rtol=1e-5)


def test_update_count_and_begin_num_update():
    opt = mx.optimizer.SGD(begin_num_update=10)
    opt._update_count(0)
    opt._update_count(0)
    opt._update_count([1, 2])
    assert opt._index_update_count == {0: 12, 1: 11, 2: 11}
    assert opt.num_update == 12


# -- learning rate, multipliers ------------------------------------------------------------------

class StepScheduler:
    """A tiny local scheduler: base_lr halved every 2 updates."""

    def __init__(self, base_lr=1.0):
        self.base_lr = base_lr

    def __call__(self, num_update):
        return self.base_lr * 0.5 ** (num_update // 2)


def test_lr_scheduler_drives_learning_rate():
    sched = StepScheduler(base_lr=0.8)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    assert opt.learning_rate == 0.8
    w = mx.nd.zeros((1,))
    for expected_lr in (0.8, 0.4, 0.4, 0.2):   # lr uses num_update after counting this step
        before = w.asnumpy()[0]
        opt.update(0, w, mx.nd.ones((1,)), None)
        assert before - w.asnumpy()[0] == pytest.approx(expected_lr, rel=1e-6)
    with pytest.raises(MXNetError, match="lr_scheduler"):
        opt.set_learning_rate(0.1)


def test_learning_rate_overrides_scheduler_base_lr():
    sched = StepScheduler(base_lr=1.0)
    with pytest.warns(UserWarning):
        opt = mx.optimizer.SGD(learning_rate=0.3, lr_scheduler=sched)
    assert sched.base_lr == 0.3 and opt.learning_rate == 0.3


def test_set_learning_rate_and_defaults():
    opt = mx.optimizer.SGD()
    assert opt.learning_rate == 0.01
    opt.set_learning_rate(0.2)
    assert opt.learning_rate == 0.2
    assert mx.optimizer.Adam().learning_rate == 0.001
    assert mx.optimizer.RMSProp().learning_rate == 0.001


def test_wd_mult_defaults_zero_for_non_weight_names():
    names = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta"}
    opt = mx.optimizer.SGD(wd=0.1, param_idx2name=names)
    assert [opt._get_wd(i) for i in range(4)] == [0.1, 0.0, 0.1, 0.0]
    opt.set_wd_mult({"fc_bias": 2.0})
    assert opt._get_wd(1) == pytest.approx(0.2)
    opt.set_lr_mult({1: 3.0, "fc_weight": 0.5})
    assert opt._get_lr(1) == pytest.approx(0.03) and opt._get_lr(0) == pytest.approx(0.005)
    assert opt._get_lr(7) == pytest.approx(0.01)   # unknown index: multiplier 1


def test_mults_from_symbol_attributes():
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("fc_weight", lr_mult=2.0, wd_mult=0.25)
    net = mx.sym.FullyConnected(data=data, weight=weight, num_hidden=3, name="fc")
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.4, sym=net,
                           param_idx2name={0: "fc_weight", 1: "fc_bias"})
    assert opt._get_lr(0) == pytest.approx(0.2) and opt._get_wd(0) == pytest.approx(0.1)
    assert opt._get_lr(1) == pytest.approx(0.1) and opt._get_wd(1) == 0.0
    opt.set_lr_mult({})   # symbol attributes survive a reset
    assert opt._get_lr(0) == pytest.approx(0.2)


def test_param_dict_multipliers():
    class P:
        lr_mult, wd_mult = 4.0, 0.0
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.5, param_dict={0: P()})
    assert opt._get_lr(0) == pytest.approx(0.4) and opt._get_wd(0) == 0.0


# -- registry ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,cls", [("sgd", "SGD"), ("SGD", "SGD"), ("nag", "NAG"), ("Adam", "Adam"),
                                      ("rmsprop", "RMSProp"), ("adagrad", "AdaGrad"),
                                      ("AdaDelta", "AdaDelta")])
def test_create_by_name(name, cls):
    opt = mx.optimizer.create(name, learning_rate=0.5)
    assert type(opt).__name__ == cls and opt.lr == 0.5
    assert type(mx.optimizer.Optimizer.create_optimizer(name)).__name__ == cls


def test_create_unknown_name():
    with pytest.raises(ParamError, match="nosuchopt"):
        mx.optimizer.create("nosuchopt")


def test_register_custom_optimizer():
    @mx.optimizer.register
    class HalfStep(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight.asnumpy() - 0.5 * grad.asnumpy()

    opt = mx.optimizer.create("halfstep")
    assert isinstance(opt, HalfStep)
    w = mx.nd.ones((2,))
    mx.optimizer.get_updater(opt)(0, mx.nd.ones((2,)), w)
    np.testing.assert_allclose(w.asnumpy(), [0.5, 0.5])


# -- updater ---------------------------------------------------------------------------------------

def test_updater_creates_states_lazily_per_index():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9, learning_rate=0.1))
    assert upd.states == {}
    w0, w1 = mx.nd.ones((2,)), mx.nd.ones((3,))
    upd(0, mx.nd.ones((2,)), w0)
    assert list(upd.states) == [0] and upd.states[0].shape == (2,)
    first = upd.states[0]
    upd(0, mx.nd.ones((2,)), w0)
    assert upd.states[0] is first
    upd([1], [mx.nd.ones((3,))], [w1])
    assert sorted(upd.states) == [0, 1] and upd.states[1].shape == (3,)
    # index 0 had two momentum steps, index 1 one: 1 - 0.1 - (0.9*0.1 + 0.1) and 1 - 0.1
    np.testing.assert_allclose(w0.asnumpy(), [1 - 0.1 - 0.19] * 2, rtol=1e-6)
    np.testing.assert_allclose(w1.asnumpy(), [0.9] * 3, rtol=1e-6)


def _train(upd, weights, grads, steps):
    for _ in range(steps):
        for i, (w, g) in enumerate(zip(weights, grads)):
            upd(i, g, w)


@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop_centered"])
def test_states_round_trip(name):
    make = CASES[name][0]
    rng = np.random.default_rng(1)
    grads = [mx.nd.array(rng.normal(size=s)) for s in [(2, 3), (4,)]]
    a_w = [mx.nd.array(rng.normal(size=s)) for s in [(2, 3), (4,)]]
    a = mx.optimizer.get_updater(make())
    _train(a, a_w, grads, 2)
    blob = a.get_states(dump_optimizer=True)
    assert isinstance(blob, bytes)
    b = mx.optimizer.get_updater(make())
    b.set_states(blob)
    assert sorted(b.states) == [0, 1]
    assert b.optimizer._index_update_count == {0: 2, 1: 2}
    b_w = [w.copy() for w in a_w]
    _train(a, a_w, grads, 2)
    _train(b, b_w, grads, 2)
    for x, y in zip(a_w, b_w):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())


def test_states_round_trip_without_optimizer_keeps_arrays():
    upd = mx.optimizer.get_updater(mx.optimizer.Adam())
    upd("w", mx.nd.ones((2,)), mx.nd.zeros((2,)))
    other = mx.optimizer.get_updater(mx.optimizer.Adam())
    other.set_states(upd.get_states())
    assert list(other.states) == ["w"] and isinstance(other.states["w"], tuple)
    for x, y in zip(upd.states["w"], other.states["w"]):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    assert other.optimizer._index_update_count == {}


def test_set_states_refuses_pickle_and_garbage():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    with pytest.raises(FormatError, match="index 0"):
        upd.set_states(pickle.dumps({0: [1, 2]}))            # not a state
    with pytest.raises(FormatError, match="posix.system|os.system"):
        upd.set_states(pickle.dumps({0: os.system}))          # never imported
    with pytest.raises(FormatError):
        upd.set_states(mx.nd.save_tobuffer({"x": mx.nd.ones((1,))}))
    with pytest.raises(ParamError):
        upd.set_states("not bytes")


# -- bad input -------------------------------------------------------------------------------------

def test_shape_mismatch_names_optimizer_index_and_shapes():
    opt = mx.optimizer.SGD()
    with pytest.raises(ShapeError, match=r"SGD.*index 5.*grad.*\(2,3\).*\(3,2\)"):
        opt.update(5, mx.nd.ones((3, 2)), mx.nd.ones((2, 3)), None)


def test_state_mismatch_and_dtype_errors():
    opt = mx.optimizer.Adam()
    w = mx.nd.ones((2,))
    with pytest.raises(ShapeError, match=r"Adam.*state\[1\]"):
        opt.update(0, w, mx.nd.ones((2,)), (mx.nd.zeros((2,)), mx.nd.zeros((3,))))
    with pytest.raises(ParamError, match="2 array"):
        opt.update(0, w, mx.nd.ones((2,)), mx.nd.zeros((2,)))
    with pytest.raises(DTypeError, match="float64.*float32"):
        opt.update(0, w, mx.nd.ones((2,), dtype="float64"), opt.create_state(0, w))
    with pytest.raises(DTypeError, match="multi_precision"):
        w16 = mx.nd.ones((2,), dtype="float16")
        mx.optimizer.SGD().update(0, w16, mx.nd.ones((2,), dtype="float16"), None)


def test_multi_precision_float16():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, multi_precision=True)
    w16 = mx.nd.array(np.array([1.0, 0.5], np.float16), dtype="float16")
    upd = mx.optimizer.get_updater(opt)
    master = np.array([1.0, 0.5])
    mom = np.zeros(2)
    for _ in range(3):
        upd(0, mx.nd.array(np.array([1.0, -2.0], np.float16), dtype="float16"), w16)
        mom = 0.9 * mom + 0.1 * np.array([1.0, -2.0])
        master = master - mom
    assert w16.dtype == np.float16
    np.testing.assert_allclose(upd.states[0][1].asnumpy(), master, rtol=1e-6)   # (momentum, master)
    np.testing.assert_array_equal(w16.asnumpy(), master.astype(np.float16))


def test_updater_rejects_non_ndarrays():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    with pytest.raises(DTypeError, match="index 0"):
        upd(0, np.ones(2), mx.nd.ones((2,)))
    assert upd.states == {}
