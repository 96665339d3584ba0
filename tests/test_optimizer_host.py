"""The optimizers of ``optimizer_host`` (Adamax, Nadam, Signum, FTML, Ftrl, DCASGD, SGLD, LAMB, LARS, LBSGD)
against numpy float64 re-implementations of MXNet 1.x's update rules, over several steps, with
learning-rate/weight-decay multipliers, rescaling and clipping; also through an Updater given
many indices, state save/load, and on a GPU (simulator)."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.optim_table import UPDATES

import symjit as mx

from .test_optim_kernels import check_on_the_device

SHAPE = (3, 4)
LR, WD, RESCALE, CLIP = 0.05, 0.1, 0.5, 0.3
COMMON = dict(learning_rate=LR, wd=WD, rescale_grad=RESCALE, clip_gradient=CLIP)


def clip(g):
    return np.clip(g, -CLIP, CLIP)


def ref_adamax(w, g, s, t, lr, wd, b1=0.9, b2=0.999):
    g = clip(RESCALE * g + wd * w)
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["u"] = np.maximum(b2 * s.get("u", 0.0), np.abs(g))
    return w - lr / (1 - b1 ** t) * s["m"] / s["u"]


def ref_nadam(w, g, s, t, lr, wd, b1=0.9, b2=0.999, eps=1e-8, decay=0.004):
    g = clip(RESCALE * g + wd * w)
    mt = b1 * (1 - 0.5 * 0.96 ** (t * decay))
    mt1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * decay))
    s["sched"] = s.get("sched", 1.0) * mt
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    m_bar = (1 - mt) * g / (1 - s["sched"]) + mt1 * s["m"] / (1 - s["sched"] * mt1)
    return w - lr * m_bar / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)


def ref_signum(w, g, s, t, lr, wd, mom=0.9, wd_lh=0.01):
    g = clip(RESCALE * g)
    s["m"] = mom * s.get("m", 0.0) - (1 - mom) * (wd * w + g)
    return (1 - lr * wd_lh) * w + lr * np.sign(s["m"])


def ref_signsgd(w, g, s, t, lr, wd):
    return (1 - lr * wd) * w - lr * np.sign(clip(RESCALE * g))


def ref_ftml(w, g, s, t, lr, wd, b1=0.6, b2=0.999, eps=1e-8):
    g = clip(RESCALE * g + wd * w)
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    d = (1 - b1 ** t) / lr * (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)
    s["z"] = b1 * s.get("z", 0.0) + (1 - b1) * g - (d - b1 * s.get("d", 0.0)) * w
    s["d"] = d
    return -s["z"] / d


def ref_ftrl(w, g, s, t, lr, wd, l1=0.01, beta=1.0):
    g = clip(RESCALE * g)
    n = s.get("n", 0.0)
    s["z"] = s.get("z", 0.0) + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
    s["n"] = n + g * g
    z = s["z"]
    return np.where(np.abs(z) > l1, (np.sign(z) * l1 - z) / ((beta + np.sqrt(s["n"])) / lr + wd), 0.0)


def ref_dcasgd(w, g, s, t, lr, wd, mom=0.9, lamda=0.04):
    g = clip(RESCALE * g)
    prev = s.get("prev", s.setdefault("w0", w))
    s["m"] = mom * s.get("m", 0.0) - lr * (g + wd * w + lamda * g * g * (w - prev))
    s["prev"] = w
    return w + s["m"]


def ref_lamb(w, g, s, t, lr, wd, b1=0.9, b2=0.999, eps=1e-6):
    g = clip(RESCALE * g)
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    r = (s["m"] / (1 - b1 ** t)) / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps) + wd * w
    r1, r2 = np.linalg.norm(w), np.linalg.norm(r)
    return w - lr * (r1 / r2 if r1 > 0 and r2 > 0 else 1.0) * r


def ref_lars(w, g, s, t, lr, wd, mom=0.9, eta=0.01):
    """MXNet's LARS: the layer's rate from the norms of w and of rescale * grad (not clipped); the
    plain rate where a norm is 0; then SGD with momentum on the clipped gradient."""
    wn, gn = np.linalg.norm(w), np.linalg.norm(RESCALE * g)
    lr = lr * eta * wn / (gn + wd * wn) if wn > 0 and gn > 0 else lr
    s["m"] = mom * s.get("m", 0.0) - lr * (clip(RESCALE * g) + wd * w)
    return w + s["m"]


def ref_lbsgd(strategy, scale=3, per_epoch=2, warmup=2, begin=1, mom=0.9):
    """MXNet's LBSGD: gradients summed over ``scale`` updates (counted from begin * per_epoch), their
    mean applied by sgd_mom_update with lr times the warmup factor or the LARS trust ratio."""
    def ref(w, g, s, t, lr, wd):
        s["n"] = s.get("n", begin * per_epoch) + 1
        s["sum"] = s.get("sum", 0.0) + g
        if s["n"] % scale:
            return w
        mean, s["sum"] = s["sum"] / scale, 0.0
        if strategy == "lars":
            w2, g2 = (w ** 2).sum(), (mean ** 2).sum()
            mult = min(max(np.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01), 100.0)
        else:
            ramp, frac = warmup * per_epoch, s["n"] / (warmup * per_epoch)
            shape = {"linear": frac, "power2": frac ** 2, "sqrt": np.sqrt(frac)}[strategy]
            mult = scale if s["n"] >= ramp else 1.0 + (scale - 1.0) * shape
        s["m"] = mom * s.get("m", 0.0) - lr * mult * (clip(RESCALE * mean) + wd * w)
        return w + s["m"]
    return ref


def _lbsgd(strategy):
    return lambda: mx.optimizer.LBSGD(momentum=0.9, warmup_strategy=strategy, warmup_epochs=2, batch_scale=3,
                                      updates_per_epoch=2, begin_epoch=1, **COMMON)


CASES = {
    "adamax": (lambda: mx.optimizer.Adamax(**COMMON), ref_adamax),
    "nadam": (lambda: mx.optimizer.Nadam(**COMMON), ref_nadam),
    "signum": (lambda: mx.optimizer.Signum(wd_lh=0.01, **COMMON), ref_signum),
    "signsgd": (lambda: mx.optimizer.Signum(momentum=0.0, **COMMON), ref_signsgd),
    "ftml": (lambda: mx.optimizer.FTML(**COMMON), ref_ftml),
    "ftrl": (lambda: mx.optimizer.Ftrl(**COMMON), ref_ftrl),
    "dcasgd": (lambda: mx.optimizer.DCASGD(momentum=0.9, **COMMON), ref_dcasgd),
    "lamb": (lambda: mx.optimizer.LAMB(**COMMON), ref_lamb),
    "lars": (lambda: mx.optimizer.LARS(momentum=0.9, eta=0.01, **COMMON), ref_lars),
    **{f"lbsgd_{k}": (_lbsgd(k), ref_lbsgd(k)) for k in ("linear", "power2", "sqrt", "lars")},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_the_documented_rule(name, steps=9):
    rng = np.random.default_rng(1)
    make, ref = CASES[name]
    opt = make()
    opt.set_lr_mult({0: 2.0})
    opt.set_wd_mult({0: 0.5})
    w0 = rng.uniform(-0.5, 0.5, SHAPE)
    weight = mx.nd.array(w0)
    state = opt.create_state(0, weight)
    expect, ref_state = w0.copy(), {}
    for t in range(1, steps + 1):
        g = rng.normal(0.0, 1.0, SHAPE)
        opt.update(0, weight, mx.nd.array(g), state)
        expect = ref(expect, g, ref_state, t, LR * 2.0, WD * 0.5)
        np.testing.assert_allclose(weight.asnumpy(), expect, rtol=2e-4, atol=2e-5, err_msg=f"{name} step {t}")
    cls = {"signsgd": "signum"}.get(name, name.split("_")[0])
    assert mx.optimizer.create(cls).__class__.__name__.lower() == cls


def test_sgld_is_seeded_and_has_the_documented_mean():
    w = mx.nd.zeros((20000,))
    opt = mx.optimizer.SGLD(learning_rate=0.01, rescale_grad=1.0)
    mx.random.seed(3)
    opt.update(0, w, mx.nd.ones((20000,)), None)
    got = w.asnumpy()
    assert abs(got.mean() - (-0.005)) < 0.003 and abs(got.std() - 0.1) < 0.005
    w2 = mx.nd.zeros((20000,))
    mx.random.seed(3)
    mx.optimizer.SGLD(learning_rate=0.01).update(0, w2, mx.nd.ones((20000,)), None)
    np.testing.assert_array_equal(w2.asnumpy(), got)


def test_updater_many_indices_and_states_round_trip():
    rng = np.random.default_rng(2)
    ws = [mx.nd.array(rng.normal(size=(4,))) for _ in range(3)]
    gs = [mx.nd.array(rng.normal(size=(4,))) for _ in range(3)]
    one = mx.optimizer.get_updater(mx.optimizer.Adamax(learning_rate=0.1))
    many = mx.optimizer.get_updater(mx.optimizer.Adamax(learning_rate=0.1))
    copies = [w.copy() for w in ws]
    for _ in range(2):
        for i in range(3):
            one(i, gs[i], ws[i])
        many([0, 1, 2], gs, copies)
    for a, b in zip(ws, copies):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    restored = mx.optimizer.get_updater(mx.optimizer.Adamax(learning_rate=0.1))
    restored.set_states(one.get_states(dump_optimizer=True))   # with the update counts
    for i in range(3):
        one(i, gs[i], ws[i])
        restored(i, gs[i], copies[i])
        np.testing.assert_array_equal(ws[i].asnumpy(), copies[i].asnumpy())


@pytest.mark.gpu
def test_on_a_gpu():
    for name in ("adamax", "lamb", "ftrl", "lars", "lbsgd_lars"):
        make, _ = CASES[name]
        cpu_opt, gpu_opt = make(), make()
        w_cpu, w_gpu = mx.nd.ones((5,)), mx.nd.ones((5,), ctx=mx.gpu(0))
        s_cpu, s_gpu = cpu_opt.create_state(0, w_cpu), gpu_opt.create_state(0, w_gpu)
        for step in range(3):
            g = np.linspace(-1, 1, 5) * (step + 1)
            cpu_opt.update(0, w_cpu, mx.nd.array(g), s_cpu)
            gpu_opt.update(0, w_gpu, mx.nd.array(g, ctx=mx.gpu(0)), s_gpu)
        np.testing.assert_allclose(w_gpu.asnumpy(), w_cpu.asnumpy(), rtol=1e-6)
        assert w_gpu.context == mx.gpu(0)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["adamax", "nadam", "signum", "signsgd", "ftml", "ftrl", "dcasgd", "lamb",
                                  "lars", "lbsgd_linear", "lbsgd_lars", "sgld"])
def test_fused_on_a_gpu_equals_the_cpu(name):
    """The compiled rules' one launch for many parameters (an Updater given lists) on a GPU; SGLD
    with the same seed draws the same noise on both."""
    make = CASES[name][0] if name != "sgld" else (lambda: mx.optimizer.SGLD(**COMMON))
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        mx.random.seed(5)
        updater = mx.optimizer.get_updater(make())
        ws = [mx.nd.array(np.linspace(-1, 1, n) + 0.5, ctx=ctx) for n in (5, 3)]
        for step in range(2):
            gs = [mx.nd.array(np.linspace(1, -1, n) * (step + 1), ctx=ctx) for n in (5, 3)]
            updater([0, 1], gs, ws)
        results.append([w.asnumpy() for w in ws])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(UPDATES))
def test_every_update_kernel_on_a_gpu_matches_the_numpy_reference(name):
    """Both GPU forms of every row of kernels/optim_table.py (tests/test_optim_kernels.py)."""
    for variant in (0, 1):
        check_on_the_device(name, variant)


def test_lbsgd_rejects_unknown_settings():
    with pytest.raises(mx.MXNetError, match="warmup_strategy must be one of"):
        mx.optimizer.LBSGD(warmup_strategy="cosine")
    with pytest.raises(mx.MXNetError, match="batch_scale must be >= 1"):
        mx.optimizer.LBSGD(batch_scale=0)
    plain = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    large = mx.optimizer.LBSGD(learning_rate=0.1, momentum=0.9)
    a, b = mx.nd.ones((3,)), mx.nd.ones((3,))
    sa, sb = plain.create_state(0, a), large.create_state(0, b)
    for g in (0.5, -1.0, 2.0):               # batch_scale 1: plain SGD with momentum
        plain.update(0, a, mx.nd.full((3,), g), sa)
        large.update(0, b, mx.nd.full((3,), g), sb)
    np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-6)
