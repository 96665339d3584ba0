"""mx.contrib.svrg_optimization: the SVRG gradient of SVRGModule and its helper optimizers."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import ParamError
from symjit.contrib.svrg_optimization import SVRGModule
from symjit.contrib.svrg_optimization.svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer


def _regression(batch=4, n=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 2))
    y = x @ np.array([1.5, -2.0]) + 0.5
    it = mx.io.NDArrayIter(x, y, batch_size=batch, label_name="y")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc"),
                                        mx.sym.var("y"), name="lro")
    return x, y, it, net


def _grads(w, b, x, y):
    """Sum over the rows of the squared-error gradient of LinearRegressionOutput (pred - label)."""
    err = x @ w[0] + b[0] - y
    return (err[:, None] * x).sum(axis=0)[None, :], np.array([err.sum()])


def test_update_uses_batch_gradient_minus_snapshot_plus_full_gradient():
    x, y, it, net = _regression()
    mod = SVRGModule(net, data_names=["data"], label_names=["y"], update_freq=1)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(initializer=mx.init.Constant(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2})
    arg, _ = mod.get_params()
    w_snap, b_snap = arg["fc_weight"].asnumpy(), arg["fc_bias"].asnumpy()
    assert w_snap.tolist() == [[np.float32(0.1)] * 2]
    mod.update_full_grads(it)
    mu_w = (_grads(w_snap, b_snap, x[:4], y[:4])[0] + _grads(w_snap, b_snap, x[4:], y[4:])[0]) / 2
    mu_b = (_grads(w_snap, b_snap, x[:4], y[:4])[1] + _grads(w_snap, b_snap, x[4:], y[4:])[1]) / 2
    np.testing.assert_allclose(mod._param_dict[0]["fc_weight"].asnumpy(), mu_w, rtol=1e-5)
    # move the weights away from the snapshot, then one SVRG step on the second batch
    mod.set_params({"fc_weight": mx.nd.array([[0.5, -0.5]]), "fc_bias": mx.nd.array([0.0])}, {})
    it.reset()
    next(it)
    batch = next(it)
    mod.forward_backward(batch)
    mod.update()
    w, b = np.array([[0.5, -0.5]]), np.array([0.0])
    gw, gb = _grads(w, b, x[4:], y[4:])
    sw, sb = _grads(w_snap, b_snap, x[4:], y[4:])
    lr_scaled = 0.2 / 4                             # rescale_grad = 1 / batch size
    want_w = w - lr_scaled * (gw - sw + mu_w)
    want_b = b - lr_scaled * (gb - sb + mu_b)
    arg, _ = mod.get_params()
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), want_w, rtol=1e-5)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), want_b, rtol=1e-5)


def test_fit_converges_on_a_linear_problem():
    _, _, it, net = _regression(batch=8, n=64, seed=3)
    mod = SVRGModule(net, data_names=["data"], label_names=["y"], update_freq=2)
    mod.fit(it, num_epoch=30, optimizer="sgd", optimizer_params={"learning_rate": 0.5}, eval_metric="mse")
    assert mod.score(it, "mse")[0][1] < 1e-3


def test_bind_binds_the_snapshot_module_and_checks_shapes():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1)
    mod = SVRGModule(net, data_names=["data"], label_names=None, update_freq=3)
    with pytest.raises(TypeError, match="pairs"):
        mod.bind(data_shapes=["data", mx.nd.zeros((2, 1))])
    with pytest.raises(TypeError, match="tuple of ints"):
        mod.bind(data_shapes=[("data", mx.nd.array([2, 1]))])
    mod.bind(data_shapes=[("data", (2, 1))])
    assert mod.binded and mod._mod_aux.binded


@pytest.mark.parametrize("freq, err", [(None, TypeError), (1.5, TypeError), (0, ParamError),
                                       (-2, ParamError)])
def test_update_freq_must_be_a_positive_int(freq, err):
    with pytest.raises(err, match="update_freq"):
        SVRGModule(mx.sym.var("data"), label_names=None, update_freq=freq)


def test_svrg_optimizer_routes_full_keys_to_assignment_on_a_kvstore():
    opt = _SVRGOptimizer(default_optimizer="sgd", learning_rate=0.5,
                         param_idx2name={0: "fc_weight", 1: "fc_weight_full", 2: "fullyconnected0_weight"})
    assert isinstance(opt.default_opt, mx.optimizer.SGD) and opt.default_opt.lr == 0.5
    assert isinstance(mx.optimizer.create("_assignmentoptimizer"), _AssignmentOptimizer)
    kv = mx.kv.create("local")
    kv.set_optimizer(opt)
    for key in (0, 1, 2):
        kv.init(key, mx.nd.ones((2,)))
        kv.push(key, mx.nd.full((2,), 4.0))
    got = {}
    for key in (0, 1, 2):
        out = mx.nd.zeros((2,))
        kv.pull(key, out=out)
        got[key] = out.asnumpy().tolist()
    assert got == {0: [-1.0, -1.0], 1: [4.0, 4.0], 2: [-1.0, -1.0]}   # only *_full is assigned
    with pytest.raises(ParamError, match="index 7"):
        opt.create_state(7, mx.nd.ones((1,)))


def test_init_optimizer_installs_the_svrg_optimizer_with_full_names():
    _, _, it, net = _regression()
    mod = SVRGModule(net, data_names=["data"], label_names=["y"], update_freq=2)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    mod.init_optimizer(kvstore=mx.kv.create("local"), optimizer="adam",
                       optimizer_params={"learning_rate": 0.01})
    assert isinstance(mod._optimizer, _SVRGOptimizer)
    assert isinstance(mod._optimizer.default_opt, mx.optimizer.Adam)
    names = sorted(mod._optimizer.idx2name.values())
    assert names == ["fc_bias", "fc_bias_full", "fc_weight", "fc_weight_full"]
