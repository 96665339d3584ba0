"""mx.mon.Monitor over an executor: interval, pattern, statistic, log format."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import symjit as mx


def _exe():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=(2, 3))
    ex.arg_dict["data"][:] = np.arange(6.0).reshape(2, 3)
    ex.arg_dict["fc_weight"][:] = 1.0
    ex.arg_dict["fc_bias"][:] = 0.5
    return ex


def test_interval_pattern_and_default_statistic():
    ex = _exe()
    mon = mx.mon.Monitor(2, pattern="fc_.*")
    mon.install(ex)
    seen = []
    for _ in range(4):
        mon.tic()
        ex.forward()
        seen.append(mon.toc())
    assert [len(s) for s in seen] == [3, 0, 3, 0]      # batches 1 and 3 only
    first = {name: float(text) for _, name, text in seen[0]}
    out = np.arange(6.0).reshape(2, 3) @ np.ones((3, 2)) + 0.5
    assert np.isclose(first["fc_output"], np.linalg.norm(out) / np.sqrt(out.size))
    assert np.isclose(first["fc_weight"], 1.0) and np.isclose(first["fc_bias"], 0.5)
    assert "data" not in first


def test_custom_stat_sort_and_log_format(caplog):
    ex = _exe()
    mon = mx.mon.Monitor(1, stat_func=lambda x: mx.nd.max(x), sort=True)
    mon.install(ex)
    mon.tic()
    ex.forward()
    with caplog.at_level(logging.INFO):
        mon.toc_print()
    names = [r.getMessage().split()[2] for r in caplog.records]
    assert names == sorted(names) and "fc_output" in names and "data" in names
    line = next(r.getMessage() for r in caplog.records if "fc_output" in r.getMessage())
    assert line.startswith("Batch:       1") and line.rstrip().endswith("12.5")


def _mlp_bn():
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, num_hidden=8, name="fc1")
    net = mx.sym.BatchNorm(net, name="bn1", fix_gamma=False)
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _train(ex, steps, mon=None):
    rng = np.random.default_rng(0)
    params = [n for n in ex.arg_dict if n not in ("data", "softmax_label")]
    for _ in range(steps):
        if mon is not None:
            mon.tic()
        ex.forward(is_train=True, data=rng.normal(size=(4, 5)), softmax_label=rng.integers(0, 3, 4))
        ex.backward()
        for n in params:
            ex.arg_dict[n][:] -= 0.1 * ex.grad_dict[n]
        if mon is not None:
            yield mon.toc()


def _bound_mlp():
    ex = _mlp_bn().simple_bind(mx.cpu(), data=(4, 5), grad_req={
        n: "write" for n in ("fc1_weight", "fc1_bias", "bn1_gamma", "bn1_beta", "fc2_weight", "fc2_bias")})
    init = mx.init.Xavier()
    mx.random.seed(3)
    for n, a in ex.arg_dict.items():
        if n not in ("data", "softmax_label"):
            init(mx.init.InitDesc(n), a)
    for n, a in ex.aux_dict.items():
        init(mx.init.InitDesc(n), a)
    return ex


def test_backward_gradients_and_intermediates_are_reported_by_mxnet_names():
    ex = _bound_mlp()
    stats = {}
    ex.set_monitor_callback(lambda name, arr: stats.setdefault(name, arr.asnumpy().copy()), monitor_all=True)
    list(_train(ex, 1))
    for name in ("fc1_output", "bn1_output", "tanh1_output", "fc2_output", "softmax_output",
                 "fc1_data", "fc1_weight", "bn1_gamma", "bn1_moving_mean", "softmax_label",
                 "fc2_backward_weight", "fc2_backward_bias", "fc2_backward_data", "tanh1_backward_data",
                 "bn1_backward_data", "bn1_backward_gamma", "bn1_backward_beta", "fc1_backward_weight",
                 "fc1_backward_bias", "softmax_backward_data"):
        assert name in stats, (name, sorted(stats))
    x, w1 = stats["fc1_data"], stats["fc1_weight"]
    assert np.allclose(stats["fc1_output"], x @ w1.T + stats["fc1_bias"], atol=1e-5)
    assert np.allclose(stats["tanh1_output"], np.tanh(stats["bn1_output"]), atol=1e-6)
    # SoftmaxOutput's gradient, then each backward node's outputs as the chain rule gives them
    p = stats["softmax_output"]
    onehot = np.eye(3)[stats["softmax_label"].astype(int)]
    assert np.allclose(stats["softmax_backward_data"], p - onehot, atol=1e-6)
    dfc2 = stats["softmax_backward_data"]
    assert np.allclose(stats["fc2_backward_weight"], dfc2.T @ stats["tanh1_output"], atol=1e-5)
    assert np.allclose(stats["fc2_backward_bias"], dfc2.sum(0), atol=1e-6)
    assert np.allclose(stats["fc2_backward_data"], dfc2 @ stats["fc2_weight"], atol=1e-5)
    t = stats["tanh1_output"]
    assert np.allclose(stats["tanh1_backward_data"], stats["fc2_backward_data"] * (1 - t * t), atol=1e-5)
    dz = stats["bn1_backward_data"]
    assert np.allclose(stats["fc1_backward_weight"], dz.T @ x, atol=1e-5)
    assert np.allclose(stats["fc1_backward_bias"], dz.sum(0), atol=1e-5)
    # and they are the gradients the executor hands out
    assert np.allclose(stats["fc1_backward_weight"], ex.grad_dict["fc1_weight"].asnumpy())


def test_watched_batches_compute_what_the_fused_program_computes():
    plain, watched = _bound_mlp(), _bound_mlp()
    mon = mx.mon.Monitor(2, pattern=".*backward.*")
    mon.install(watched)
    list(_train(plain, 5))
    logs = list(_train(watched, 5, mon))
    assert [len(t) > 0 for t in logs] == [True, False, True, False, True]
    assert all("_backward_" in name for t in logs for _, name, _ in t)
    assert set(watched._programs) == {"train", "train_mon"}
    for name in plain.arg_dict:
        assert np.allclose(plain.arg_dict[name].asnumpy(), watched.arg_dict[name].asnumpy(), atol=1e-5), name
    for name in plain.aux_dict:
        assert np.allclose(plain.aux_dict[name].asnumpy(), watched.aux_dict[name].asnumpy(), atol=1e-5), name


def test_plain_callback_and_its_removal():
    ex = _exe()
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    ex.forward()
    assert seen == [("fc_output", (2, 2))]
    ex.set_monitor_callback(None)
    ex.forward()
    assert len(seen) == 1


def test_monitor_all_reports_a_variable_input_under_its_own_name_then_the_ops():
    """With monitor_all, each input of an op is reported as ``<op>_<argument>``, and an input that
    is a variable first under the variable's own name; a computed input only under the op's."""
    data = mx.sym.Variable("data")
    net = mx.sym.relu(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="act")
    ex = net.simple_bind(mx.cpu(), data=(2, 4), grad_req="null")
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    ex.forward()
    assert seen == ["data", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias", "fc_output",
                    "act_data", "act_output"]
    seen.clear()
    both = mx.sym.concat(data, data, dim=0, name="cat")
    ex = both.simple_bind(mx.cpu(), data=(2, 4), grad_req="null")
    ex.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    ex.forward()
    assert seen == ["data", "cat_arg0", "data", "cat_arg1", "cat_output"]


def test_a_monitor_callback_can_take_its_array_through_a_ctypes_handle():
    """MXNet's raw monitor code casts the array to an NDArrayHandle and builds NDArray(handle):
    a handle names the live array, NDArray(handle) is a view of it, read-only when asked, and a
    handle naming no array is a clear error."""
    import ctypes

    from symjit.base import NDArrayHandle
    from symjit.ndarray import NDArray
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    ex = net.simple_bind(mx.cpu(), data=(3, 4), grad_req="null")
    ex.arg_dict["fc_weight"][:] = 1.0
    mins = {}

    def callback(name, arr):
        view = NDArray(ctypes.cast(arr, NDArrayHandle), writable=False)
        mins[name] = mx.nd.min(view).asscalar()
        assert view.shape == arr.shape
        with pytest.raises(mx.MXNetError, match="read-only"):
            view[:] = 0
    ex.set_monitor_callback(callback, monitor_all=True)
    ex.forward(data=np.arange(12.0).reshape(3, 4))
    assert mins["fc_data"] == 0.0 and mins["fc_weight"] == 1.0
    assert mins["fc_output"] == 6.0 + mins["fc_bias"]
    with pytest.raises(mx.MXNetError, match="names no live NDArray"):
        NDArray(ctypes.c_void_p(12345))
