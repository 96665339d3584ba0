"""The fused update of many parameters (``Updater`` given lists, ``Module.update``, a KVStore push of
many keys): one kernel call per kernel and dtype, with results identical to one call per index."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import ShapeError
from symjit.ndarray.optim_ops import MultiUpdate

SHAPES = [(12, 7), (12,), (5, 12), (5,), (1,), (0,)]
NAMES = {i: n for i, n in enumerate(["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                      "scale_weight", "empty_bias"])}
SPECS = [("sgd", {"momentum": 0.9}), ("sgd", {}), ("nag", {"momentum": 0.9}), ("adam", {}),
         ("rmsprop", {}), ("rmsprop", {"centered": True, "clip_weights": 0.5}), ("adagrad", {}),
         ("adadelta", {}), ("adamax", {}), ("nadam", {}), ("signum", {"wd_lh": 0.01}),
         ("signum", {"momentum": 0.0}), ("ftml", {}), ("ftrl", {}), ("dcasgd", {"momentum": 0.9}),
         ("dcasgd", {}), ("sgld", {}), ("lamb", {}), ("lamb", {"bias_correction": False, "lower_bound": 0.1,
                                                                "upper_bound": 2.0}),
         ("lars", {"momentum": 0.9, "eta": 0.01}), ("lars", {}),
         ("lbsgd", {"momentum": 0.9, "batch_scale": 2, "warmup_epochs": 1, "updates_per_epoch": 2}),
         ("lbsgd", {"warmup_strategy": "lars", "batch_scale": 2})]


def _arrays(seed: int, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def _run(name: str, kwargs: dict, fused: bool, dtypes=None, steps: int = 3):
    opt = mx.optimizer.create(name, learning_rate=0.1, wd=1e-2, rescale_grad=0.5, clip_gradient=1.0,
                              param_idx2name=NAMES, **kwargs)
    updater = mx.optimizer.get_updater(opt)
    mx.random.seed(11)                       # SGLD's noise: the same draws in both runs
    dtypes = dtypes or [np.float32] * len(SHAPES)
    ws = [mx.nd.array(w, dtype=d) for w, d in zip(_arrays(0), dtypes)]
    for step in range(steps):
        gs = [mx.nd.array(g, dtype=d) for g, d in zip(_arrays(step + 1), dtypes)]
        if fused:
            updater(list(range(len(ws))), gs, ws)
        else:
            for i, (g, w) in enumerate(zip(gs, ws)):
                updater(i, g, w)
    return [w.asnumpy() for w in ws], opt


@pytest.mark.parametrize("name,kwargs", SPECS, ids=[f"{n}{sorted(k)}" for n, k in SPECS])
def test_fused_equals_one_call_per_index_exactly(name, kwargs):
    one, opt1 = _run(name, kwargs, fused=False)
    many, opt2 = _run(name, kwargs, fused=True)
    for i, (a, b) in enumerate(zip(one, many)):
        assert np.array_equal(a, b), f"{name} {kwargs} index {i}"
    assert opt1._index_update_count == opt2._index_update_count and opt1.num_update == opt2.num_update
    assert len(opt2._tables) == 1 and all(t is not None for t in opt2._tables.values())


def test_mixed_dtypes_make_one_table_per_dtype():
    dtypes = [np.float32, np.float64, np.float32, np.float64, np.float32, np.float64]
    one, _ = _run("sgd", {"momentum": 0.9}, fused=False, dtypes=dtypes)
    many, opt = _run("sgd", {"momentum": 0.9}, fused=True, dtypes=dtypes)
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(one, many))
    assert sorted(len(k[1]) for k in opt._tables) == [3, 3]


def test_the_table_is_built_once_and_rebuilt_when_an_array_changes(monkeypatch):
    built = []
    real_init = MultiUpdate.__init__

    def counting(self, kernel, rows):
        built.append(kernel)
        real_init(self, kernel, rows)
    monkeypatch.setattr(MultiUpdate, "__init__", counting)
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.5))
    ws = [mx.nd.ones((3,)), mx.nd.ones((2,))]
    gs = [mx.nd.ones((3,)), mx.nd.ones((2,))]
    for _ in range(3):
        updater([0, 1], gs, ws)
    assert built == ["multi_sgd_update"]
    assert [w.asnumpy().tolist() for w in ws] == [[-0.5] * 3, [-0.5] * 2]
    gs[1] = mx.nd.ones((2,)) * 2                        # another grad array: a new table
    updater([0, 1], gs, ws)
    assert built == ["multi_sgd_update"] * 2
    assert ws[1].asnumpy().tolist() == [-1.5, -1.5]


def test_parameters_sharing_memory_update_in_order():
    """Two indices over one weight: each sees the other's update, as one call per index does."""
    got = []
    for fused in (False, True):
        updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.5, momentum=0.5))
        w = mx.nd.array([1.0, 2.0])
        g = mx.nd.array([1.0, -1.0])
        for _ in range(2):
            if fused:
                updater([0, 1], [g, g], [w, w])
            else:
                updater(0, g, w)
                updater(1, g, w)
        got.append(w.asnumpy())
    assert np.array_equal(got[0], got[1])
    assert not MultiUpdate.disjoint([(w,), (w,)])
    x = mx.nd.zeros((6,))
    assert MultiUpdate.disjoint([(x[0:2], x[0:1]), (x[2:4],), (x[4:6],)])
    assert not MultiUpdate.disjoint([(x[0:4],), (x[2:3],)])
    assert not MultiUpdate.disjoint([(x[0:2], x[0:5]), (x[2:3],)])


def test_an_optimizer_with_its_own_update_gets_one_call_per_index():
    calls = []

    class Halve(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            calls.append(index)
            weight[:] = weight.asnumpy() / 2

    updater = mx.optimizer.get_updater(Halve())
    ws = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    updater([4, 7], [mx.nd.ones((2,)), mx.nd.ones((3,))], ws)
    assert calls == [4, 7] and ws[1].asnumpy().tolist() == [0.5] * 3
    assert not Halve()._fusable() and mx.optimizer.Adam()._fusable()


def test_bad_arrays_in_a_list_name_the_index():
    updater = mx.optimizer.get_updater(mx.optimizer.SGD())
    ws = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    with pytest.raises(ShapeError, match=r"SGD.update \(index 9\): grad shape \(2,\) does not match "
                                         r"the weight's \(3,\)"):
        updater([8, 9], [mx.nd.ones((2,)), mx.nd.ones((2,))], ws)


def test_kvstore_push_of_many_keys_is_one_update_and_equals_key_by_key(monkeypatch):
    calls = []
    real_call = MultiUpdate.__call__

    def counting(self, scalars):
        calls.append(len(scalars))
        real_call(self, scalars)
    monkeypatch.setattr(MultiUpdate, "__call__", counting)
    keys, vals = ["a", "b", "c"], _arrays(5)[:3]
    got = []
    for together in (True, False):
        kv = mx.kv.create("local")
        kv.init(keys, [mx.nd.array(v) for v in vals])
        kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
        for step in range(2):
            grads = [[mx.nd.array(g), mx.nd.array(g * 0.5)] for g in _arrays(step + 7)[:3]]
            if together:
                kv.push(keys, grads)
            else:
                for k, g in zip(keys, grads):
                    kv.push(k, g)
        outs = [mx.nd.zeros(v.shape) for v in vals]
        kv.pull(keys, out=outs)
        got.append([o.asnumpy() for o in outs])
    assert calls == [3, 3]
    assert all(np.array_equal(a, b) for a, b in zip(*got))


def test_module_update_is_one_kernel_call_per_step(monkeypatch):
    calls = []
    real_call = MultiUpdate.__call__

    def counting(self, scalars):
        calls.append(len(scalars))
        real_call(self, scalars)
    monkeypatch.setattr(MultiUpdate, "__call__", counting)
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 5)).astype(np.float32), rng.integers(0, 3, 8).astype(np.float32)
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=4), num_epoch=2, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    assert calls == [4] * 4      # 2 epochs x 2 batches, each one call for the 4 parameters


def test_every_update_kernel_has_both_targets_and_both_forms():
    """Each CPU update kernel (one parameter, and the table form for many) has its GPU twin."""
    from symjit.kernels.cpu import optim as cpu
    from symjit.kernels.cuda import optim as gpu
    names = set(cpu.__all__) - {"view"}
    assert names == set(gpu.__all__) - {"multi_launch"}
    singles = {n for n in names if not n.startswith("multi_")}
    assert {f"multi_{n}" for n in singles} == names - singles


def test_lars_momentum_follows_the_learning_rate_as_in_mxnet():
    """MXNet's momentum correction: the momentum times (this call's rate / the previous call's);
    a bias keeps the plain rate (no trust ratio) and no weight decay."""
    rates = iter([0.1, 0.05, 0.025])

    class Halving:
        def __call__(self, num_update):
            return self.lr

    sched = Halving()
    opt = mx.optimizer.LARS(momentum=0.9, eta=0.5, lr_scheduler=sched, param_idx2name={0: "fc_bias"})
    w = mx.nd.ones((3,))
    state = opt.create_state(0, w)
    expect, mom, last = np.ones(3), np.zeros(3), None
    for g in (1.0, -2.0, 0.5):
        sched.lr = next(rates)
        opt.update(0, w, mx.nd.full((3,), g), state)
        ratio = 1.0 if last is None else sched.lr / last
        mom = 0.9 * ratio * mom - sched.lr * g
        expect, last = expect + mom, sched.lr
        np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-6)
