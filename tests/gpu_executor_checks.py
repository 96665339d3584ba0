"""Executors and optimizers on ``mx.gpu(0)`` against the CPU, on numba's CUDA simulator (run as a
script with ``NUMBA_ENABLE_CUDASIM=1``; ``tests/test_gpu_executor.py`` does that). Each check
raises on a mismatch; the script prints ``ok <name>`` per check that passed."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError


def _net():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=6, name="fc1"), act_type="relu")
    fc2 = mx.sym.FullyConnected(fc1, num_hidden=4, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _bind(ctx, grad_req="write", sym=None):
    ex = (_net() if sym is None else sym).simple_bind(ctx, data=(3, 5), grad_req=grad_req)
    rng = np.random.default_rng(0)
    for arr in ex.arg_dict.values():
        arr[:] = rng.uniform(-1, 1, arr.shape).astype(np.float32)
    ex.arg_dict["softmax_label"][:] = np.array([0, 3, 1], np.float32)
    return ex


def check_training_step_matches_cpu() -> None:
    """Forward (training) + backward on gpu(0): outputs and gradients are the CPU's, and the
    executor's arrays live on the GPU."""
    cpu, gpu = _bind(mx.cpu()), _bind(mx.gpu(0))
    for ex in (cpu, gpu):
        ex.forward(is_train=True)
        ex.backward()
    assert gpu.outputs[0].context == mx.gpu(0)
    assert not isinstance(gpu.outputs[0]._data, np.ndarray)
    np.testing.assert_allclose(gpu.outputs[0].asnumpy(), cpu.outputs[0].asnumpy(), rtol=1e-5, atol=1e-6)
    for name, g in cpu.grad_dict.items():
        assert gpu.grad_dict[name].context == mx.gpu(0)
        np.testing.assert_allclose(gpu.grad_dict[name].asnumpy(), g.asnumpy(), rtol=1e-5, atol=1e-6)


def check_out_grads_and_grad_req_add() -> None:
    """Head gradients given to backward are copied to the device; ``grad_req='add'`` accumulates."""
    head = np.random.default_rng(1).uniform(-1, 1, (3, 6)).astype(np.float32)
    sym = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc"),
                            act_type="tanh")
    got = {}
    for ctx in (mx.cpu(), mx.gpu(0)):
        ex = sym.simple_bind(ctx, data=(3, 5), grad_req="add")
        for arr in ex.arg_dict.values():
            arr[:] = np.linspace(-1, 1, int(np.prod(arr.shape)), dtype=np.float32).reshape(arr.shape)
        for _ in range(2):
            ex.forward(is_train=True)
            ex.backward(mx.nd.array(head, ctx=ctx))
        got[ctx.device_type] = {n: g.asnumpy() for n, g in ex.grad_dict.items()}
    for name, g in got["cpu"].items():
        np.testing.assert_allclose(got["gpu"][name], g, rtol=1e-5, atol=1e-6)
        assert np.abs(g).max() > 0


def check_inference_and_reshape() -> None:
    """Inference forward, then an executor reshaped to a new batch size, on the GPU."""
    cpu, gpu = _bind(mx.cpu(), "null"), _bind(mx.gpu(0), "null")
    np.testing.assert_allclose(gpu.forward()[0].asnumpy(), cpu.forward()[0].asnumpy(), rtol=1e-5)
    cpu2, gpu2 = cpu.reshape(data=(2, 5), softmax_label=(2,)), gpu.reshape(data=(2, 5), softmax_label=(2,))
    assert gpu2.arg_dict["data"].context == mx.gpu(0)
    for ex in (cpu2, gpu2):
        ex.arg_dict["data"][:] = np.ones((2, 5), np.float32)
    np.testing.assert_allclose(gpu2.forward()[0].asnumpy(), cpu2.forward()[0].asnumpy(), rtol=1e-5)


def check_mixed_contexts_are_a_clear_error() -> None:
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    args = {"data": mx.nd.ones((1, 3)), "fc_weight": mx.nd.ones((2, 3), ctx=mx.gpu(0)),
            "fc_bias": mx.nd.ones((2,), ctx=mx.gpu(0))}
    with pytest.raises(MXNetError, match=r"args\['data'\] lives on cpu\(0\), the executor on gpu\(0\)"):
        sym.bind(mx.gpu(0), args)
    with pytest.raises(MXNetError, match=r"args\['fc_weight'\] lives on gpu\(0\), the executor on cpu\(0\)"):
        sym.bind(mx.cpu(), args)
    with pytest.raises(MXNetError, match="only 1 GPU"):
        sym.simple_bind(mx.gpu(3), data=(1, 3))
    w = mx.nd.ones((2,), ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match=r"grad lives on cpu\(0\), the weight on gpu\(0\)"):
        mx.optimizer.SGD().update(0, w, mx.nd.ones((2,)), None)


def check_optimizers_on_the_device() -> None:
    """Every optimizer's update of gpu arrays equals the CPU's (the same per-element bodies)."""
    rng = np.random.default_rng(2)
    w0 = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    grads = [rng.uniform(-2, 2, (4, 3)).astype(np.float32) for _ in range(3)]
    specs = [("sgd", {"momentum": 0.9, "wd": 0.01, "clip_gradient": 1.0}), ("sgd", {}),
             ("nag", {"momentum": 0.5}), ("adam", {"wd": 0.01}), ("rmsprop", {"clip_weights": 0.5}),
             ("rmsprop", {"centered": True}), ("adagrad", {}), ("adadelta", {})]
    for name, kwargs in specs:
        result = {}
        for ctx in (mx.cpu(), mx.gpu(0)):
            opt = mx.optimizer.create(name, learning_rate=0.1, rescale_grad=0.5, **kwargs)
            updater = mx.optimizer.get_updater(opt)
            w = mx.nd.array(w0, ctx=ctx)
            for g in grads:
                updater(0, mx.nd.array(g, ctx=ctx), w)
            assert w.context == ctx
            result[ctx.device_type] = w.asnumpy()
        np.testing.assert_allclose(result["gpu"], result["cpu"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} {kwargs}")
    _check_fused_updates_on_the_device(rng, specs)
    w, m = mx.nd.ones((3,), ctx=mx.gpu(0)), mx.nd.zeros((3,), ctx=mx.gpu(0))
    mx.nd.sgd_mom_update(w, mx.nd.ones((3,), ctx=mx.gpu(0)), m, lr=0.1, momentum=0.9, out=w)
    np.testing.assert_allclose(w.asnumpy(), [0.9] * 3, rtol=1e-6)


def _check_fused_updates_on_the_device(rng, specs) -> None:
    """Several parameters updated by one launch (the address-table kernels) equal the CPU's
    one-call-per-index updates."""
    shapes = [(4, 3), (3,), (1,), (0,), (2, 5)]
    w0 = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    grads = [[rng.uniform(-2, 2, s).astype(np.float32) for s in shapes] for _ in range(2)]
    for name, kwargs in specs:
        result = {}
        for ctx in (mx.cpu(), mx.gpu(0)):
            opt = mx.optimizer.create(name, learning_rate=0.1, rescale_grad=0.5, **kwargs)
            updater = mx.optimizer.get_updater(opt)
            ws = [mx.nd.array(w, ctx=ctx) for w in w0]
            for step in grads:
                gs = [mx.nd.array(g, ctx=ctx) for g in step]
                if ctx.device_type == "gpu":
                    updater(list(range(len(ws))), gs, ws)
                else:
                    for i, (g, w) in enumerate(zip(gs, ws)):
                        updater(i, g, w)
            result[ctx.device_type] = [w.asnumpy() for w in ws]
            if ctx.device_type == "gpu":
                assert [len(k[1]) for k in opt._tables] == [len(shapes)], opt._tables
        for i, (a, b) in enumerate(zip(result["gpu"], result["cpu"])):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{name} {kwargs} [{i}]")


def check_custom_op_and_batchnorm_between_kernels() -> None:
    """A Custom op's Python code between kernels sees device NDArrays; BatchNorm (block
    reductions) updates its moving statistics on the device as on the CPU."""
    from tests.cases import custom  # noqa: F401  (registers _case_scaled_sigmoid)
    x = mx.sym.Variable("data")
    net = mx.sym.BatchNorm(mx.sym.FullyConnected(x, num_hidden=4, name="fc"), fix_gamma=False,
                           name="bn")
    net = mx.sym.Custom(net, op_type="_case_scaled_sigmoid", scale=2) * 3.0
    got = {}
    for ctx in (mx.cpu(), mx.gpu(0)):
        ex = net.simple_bind(ctx, data=(5, 3))
        rng = np.random.default_rng(3)
        for arr in ex.arg_dict.values():
            arr[:] = rng.uniform(-1, 1, arr.shape).astype(np.float32)
        ex.aux_dict["bn_moving_var"][:] = 1.0
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward(mx.nd.ones((5, 4), ctx=ctx))
        got[ctx.device_type] = [out] + [g.asnumpy() for g in ex.grad_dict.values()] + \
            [a.asnumpy() for a in ex.aux_dict.values()]
    for want, have in zip(got["cpu"], got["gpu"]):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)


def check_dropout_masks_on_the_device() -> None:
    """Dropout on the GPU: mask values 0 or 1/(1-p) at about rate p, the output x * mask and the
    gradient dy * mask, a new mask per pass, the same masks after reseeding mx.random; identity
    at inference; a mask shared along ``axes``."""
    x = mx.sym.Variable("data")
    p = 0.25
    ex = mx.sym.Dropout(x * 1.0, p=p, name="drop").simple_bind(mx.gpu(0), data=(40, 50))
    data = np.random.default_rng(4).uniform(0.5, 1.5, (40, 50)).astype(np.float32)
    ex.arg_dict["data"][:] = data
    mx.random.seed(5)
    first = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(mx.nd.ones((40, 50), ctx=mx.gpu(0)))
    mask = first / data
    kept = np.isclose(mask, 1 / (1 - p), rtol=1e-5)
    assert np.all(kept | (mask == 0)), np.unique(mask)
    assert abs(1 - kept.mean() - p) < 0.05, kept.mean()
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), mask, rtol=1e-5)
    second = ex.forward(is_train=True)[0].asnumpy()
    assert not np.array_equal(first, second)
    mx.random.seed(5)
    np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), first)
    np.testing.assert_allclose(ex.forward(is_train=False)[0].asnumpy(), data)
    shared = mx.sym.Dropout(x, p=0.5, axes=(0,), mode="always").simple_bind(mx.gpu(0), data=(6, 40))
    shared.arg_dict["data"][:] = 1.0
    out = shared.forward()[0].asnumpy()
    assert np.all(out == out[0]) and 0 < (out[0] == 0).sum() < 40, out


def check_monitor_on_the_device() -> None:
    """A Monitor on a GPU executor sees the same names and statistics as on the CPU (its default
    statistic, a norm, computed on the device)."""
    got, sym = {}, _net()
    for ctx in (mx.cpu(), mx.gpu(0)):
        ex = _bind(ctx, sym=sym)
        mon = mx.mon.Monitor(1, pattern=".*")
        mon.install(ex)
        mon.tic()
        ex.forward(is_train=True)
        ex.backward()
        got[ctx.device_type] = mon.toc()
    assert [n for _, n, _ in got["gpu"]] == [n for _, n, _ in got["cpu"]] and got["cpu"], got
    assert any(n == "fc1_backward_weight" for _, n, _ in got["gpu"]), got["gpu"]
    for (_, name, gv), (_, _, cv) in zip(got["gpu"], got["cpu"]):
        np.testing.assert_allclose(float(gv), float(cv), rtol=1e-5, atol=1e-6, err_msg=name)


def check_checkpoint_from_device_arrays() -> None:
    """Parameters trained on the GPU save to MXNet's checkpoint files and load back on the CPU
    (and onto the GPU) with the same values."""
    import os
    import tempfile
    ex = _bind(mx.gpu(0))
    ex.forward(is_train=True)
    ex.backward()
    params = {n: a for n, a in ex.arg_dict.items() if n not in ("data", "softmax_label")}
    prefix = os.path.join(tempfile.mkdtemp(), "gpu_net")
    mx.model.save_checkpoint(prefix, 1, _net(), params, {})
    _, args, _ = mx.model.load_checkpoint(prefix, 1)
    assert sorted(args) == sorted(params)
    for name, arr in params.items():
        assert args[name].context == mx.cpu()
        np.testing.assert_array_equal(args[name].asnumpy(), arr.asnumpy())
    again = mx.nd.load(prefix + "-0001.params")
    moved = again["arg:fc1_weight"].as_in_context(mx.gpu(0))
    np.testing.assert_array_equal(moved.asnumpy(), params["fc1_weight"].asnumpy())


def check_data_parallel_module_with_the_device_kvstore() -> None:
    """``Module(context=[gpu(0), gpu(0)])`` (two executors, half a batch each; the simulator has
    one GPU) trained with ``kvstore='device'`` ends with the single-CPU module's parameters; the
    store keeps the weights on the GPU, where the gradients are summed and updated."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (16, 5)).astype(np.float32)
    y = rng.integers(0, 4, 16).astype(np.float32)
    got = {}
    for name, ctxs, kv in (("cpu", [mx.cpu()], "local"), ("gpu", [mx.gpu(0), mx.gpu(0)], "device")):
        mod = mx.mod.Module(_net(), context=ctxs)
        mx.random.seed(1)
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=8), num_epoch=2, optimizer="sgd", kvstore=kv,
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                initializer=mx.init.Uniform(0.5))
        got[name] = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
        if name == "gpu":
            store = mod._kvstore._store
            assert store and all(v.context == mx.gpu(0) for v in store.values()), store
    for k, v in got["cpu"].items():
        np.testing.assert_allclose(got["gpu"][k], v, rtol=1e-5, atol=1e-6, err_msg=k)
    kv = mx.kv.create("device")
    kv.init("w", mx.nd.ones((3,), ctx=mx.gpu(0)))
    kv.push("w", [mx.nd.ones((3,), ctx=mx.gpu(0)) * i for i in (1, 2)])
    out = [mx.nd.zeros((3,), ctx=mx.gpu(0)), mx.nd.zeros((3,))]
    kv.pull("w", out=out)
    assert [o.asnumpy().tolist() for o in out] == [[3.0] * 3, [3.0] * 3]


CHECKS = [check_training_step_matches_cpu, check_out_grads_and_grad_req_add,
          check_inference_and_reshape, check_mixed_contexts_are_a_clear_error,
          check_optimizers_on_the_device, check_custom_op_and_batchnorm_between_kernels,
          check_dropout_masks_on_the_device, check_monitor_on_the_device,
          check_checkpoint_from_device_arrays, check_data_parallel_module_with_the_device_kvstore]


if __name__ == "__main__":
    # the simulator hands the GIL between its thread-per-CUDA-thread at every poll and barrier:
    # a short switch interval makes that several times faster (a test-harness setting)
    sys.setswitchinterval(1e-3)
    for check in CHECKS:
        check()
        print("ok", check.__name__, flush=True)
