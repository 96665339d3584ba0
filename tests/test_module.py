"""mx.mod.Module: bind/init/forward/backward/update against numpy, fit, predict, checkpoints."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mxnet"
PREFIX = str(DATA / "mlp")


def linear(classes: int = 2):
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=classes, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def mlp():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=2, name="fc2"), name="softmax")


def blobs(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] - X[:, 2] > 0).astype(np.float32)
    X[:, 0] += np.where(y > 0, 1.0, -1.0)
    return X, y


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def expected() -> tuple[np.ndarray, np.ndarray]:
    e = json.loads((DATA / "mlp-0005-expected.json").read_text())
    return np.array(e["input"], np.float32), np.array(e["output"], np.float64)


def test_mxnet_checkpoint_module_predict_trims_padding():
    x, want = expected()
    mod = mx.mod.Module.load(PREFIX, 5)
    mod.bind(data_shapes=[("data", (4, 8))], for_training=False)
    out = mod.predict(mx.io.NDArrayIter(x, batch_size=4))     # 6 samples: last batch padded by 2
    assert out.shape == (6, 3)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    parts = mod.predict(mx.io.NDArrayIter(x, batch_size=4), merge_batches=False)
    assert [p[0].shape for p in parts] == [(4, 3), (2, 3)]
    whole = mod.predict(x)              # an array runs as one batch (re-binding for its shape)
    np.testing.assert_allclose(whole.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_step_matches_manual_executor_and_numpy_sgd():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, 3)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2], np.float32)
    W = rng.normal(size=(3, 3)).astype(np.float32)
    b = np.array([0.1, -0.2, 0.3], np.float32)
    mod = mx.mod.Module(linear(3))
    mod.bind(data_shapes=[("data", (6, 3))], label_shapes=[("softmax_label", (6,))])
    mod.init_params(arg_params={"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(b)})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5, "wd": 0.1, "momentum": 0.9})
    batch = mx.io.DataBatch([mx.nd.array(X)], [mx.nd.array(y)])
    # the same step by hand on a plain executor
    ex = linear(3).simple_bind(mx.cpu(), data=(6, 3))
    ex.copy_params_from({"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(b)})
    ex.forward(is_train=True, data=X, softmax_label=y)
    ex.backward()
    g = softmax(X @ W.T + b) - np.eye(3)[y.astype(int)]
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), g.T @ X, rtol=1e-5, atol=1e-6)
    mom_w, mom_b, w, bb = np.zeros_like(W), np.zeros_like(b), W.copy(), b.copy()
    for _ in range(2):       # two steps: momentum state carries over
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
        g = softmax(X @ w.T + bb) - np.eye(3)[y.astype(int)]
        mom_w = 0.9 * mom_w - 0.5 * (g.T @ X / 6 + 0.1 * w)
        mom_b = 0.9 * mom_b - 0.5 * (g.sum(0) / 6)     # bias: wd_mult 0
        w, bb = w + mom_w, bb + mom_b
    arg, _ = mod.get_params()
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), bb, rtol=1e-5, atol=1e-6)
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), softmax(X @ w.T + bb), rtol=1e-5, atol=1e-6)


def test_fixed_params_and_input_grads():
    X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    y = np.array([0, 1, 0, 1], np.float32)
    W = np.full((2, 3), 0.2, np.float32)
    mod = mx.mod.Module(linear(), fixed_param_names=["fc_weight"])
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("softmax_label", (4,))], inputs_need_grad=True)
    mod.init_params(arg_params={"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.zeros((2,))})
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(X)], [mx.nd.array(y)]))
    g = softmax(X @ W.T) - np.eye(2)[y.astype(int)]
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), g @ W, rtol=1e-5, atol=1e-6)
    mod.update()
    arg, _ = mod.get_params()
    np.testing.assert_array_equal(arg["fc_weight"].asnumpy(), W)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), -g.sum(0) / 4, rtol=1e-5, atol=1e-6)


def test_fit_reaches_high_accuracy_and_calls_callbacks(caplog):
    X, y = blobs()
    mx.random.seed(0)
    batches, epochs = [], []
    mod = mx.mod.Module(mlp())
    with caplog.at_level(logging.INFO):
        mod.fit(mx.io.NDArrayIter(X, y, batch_size=20, shuffle=True),
                eval_data=mx.io.NDArrayIter(X, y, batch_size=20), num_epoch=4,
                optimizer_params={"learning_rate": 0.5, "momentum": 0.9}, initializer=mx.init.Xavier(),
                batch_end_callback=lambda p: batches.append((p.epoch, p.nbatch)),
                epoch_end_callback=lambda e, s, a, x: epochs.append((e, s, sorted(a))))
    assert len(batches) == 40 and batches[0] == (0, 0) and batches[-1] == (3, 9)
    assert [e[0] for e in epochs] == [0, 1, 2, 3] and epochs[0][1] is mod.symbol
    assert epochs[0][2] == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    assert "Epoch[3] Train-accuracy=" in caplog.text and "Epoch[3] Validation-accuracy=" in caplog.text
    assert "Epoch[0] Time cost=" in caplog.text
    (name, acc), = mod.score(mx.io.NDArrayIter(X, y, batch_size=20), "acc")
    assert name == "accuracy" and acc > 0.95


def _fit(context, kvstore="local"):
    X, y = blobs(120)
    mx.random.seed(4)
    mod = mx.mod.Module(mlp(), context=context)
    mod.fit(mx.io.NDArrayIter(X, y, batch_size=20, shuffle=True), num_epoch=2, kvstore=kvstore,
            optimizer_params={"learning_rate": 0.3, "momentum": 0.9, "wd": 1e-3},
            initializer=mx.init.Xavier())
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_multi_context_fit_equals_single_context():
    single = _fit(mx.cpu(0))
    for kv in ("local", None):
        multi = _fit([mx.cpu(0), mx.cpu(1)], kv)
        for k in single:
            np.testing.assert_allclose(multi[k], single[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_score_and_predict_skip_padding():
    X, y = blobs(10)
    W = np.array([[1.0, 0, -1, 0], [-1, 0, 1, 0]], np.float32)
    mod = mx.mod.Module(linear())
    mod.bind(data_shapes=[("data", (4, 4))], label_shapes=[("softmax_label", (4,))], for_training=False)
    mod.set_params({"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.zeros((2,))}, {})
    pred = mod.predict(mx.io.NDArrayIter(X, y, batch_size=4))
    ref = softmax(X @ W.T)
    np.testing.assert_allclose(pred.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    y2 = ref.argmax(1).astype(np.float32)
    y2[-1] = 1 - y2[-1]            # the one wrong label; padding repeats samples 0 and 1
    (_, acc), = mod.score(mx.io.NDArrayIter(X, y2, batch_size=4), "acc")
    assert acc == pytest.approx(9 / 10)


def test_checkpoint_with_optimizer_states(tmp_path):
    X, y = blobs(40)
    mx.random.seed(0)
    it = mx.io.NDArrayIter(X, y, batch_size=10)
    mod = mx.mod.Module(mlp())
    mod.fit(it, num_epoch=1, optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    prefix = str(tmp_path / "m")
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-0001.params", "m-0001.states", "m-symbol.json"]
    again = mx.mod.Module.load(prefix, 1, load_optimizer_states=True)
    again.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    again.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for i, state in mod._updater.states.items():
        np.testing.assert_array_equal(again._updater.states[i].asnumpy(), state.asnumpy())
    # one more epoch on both gives the same weights (states restored)
    with pytest.warns(UserWarning, match="already initialized"):
        it.reset()
        mod.fit(it, num_epoch=2, begin_epoch=1, optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        it.reset()
        again.fit(it, num_epoch=2, begin_epoch=1)
    for k, v in mod.get_params()[0].items():
        np.testing.assert_allclose(again.get_params()[0][k].asnumpy(), v.asnumpy(), rtol=1e-6)


def test_reshape_and_shapes():
    mod = mx.mod.Module(linear())
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(initializer=mx.init.One())
    assert mod.data_names == ["data"] and mod.output_names == ["softmax_output"]
    assert mod.data_shapes[0].shape == (4, 3) and mod.label_shapes[0].shape == (4,)
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]), is_train=False)
    assert mod.get_outputs()[0].shape == (2, 2) and mod.output_shapes == [("softmax_output", (2, 2))]
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), np.full((2, 2), 0.5))
    mod.reshape([("data", (5, 3))], [("softmax_label", (5,))])
    assert mod.output_shapes == [("softmax_output", (5, 2))]


def test_bad_usage_errors():
    mod = mx.mod.Module(linear())
    with pytest.raises(MXNetError, match="bind"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]))
    with pytest.raises(MXNetError, match="data_shapes name"):
        mod.bind(data_shapes=[("x", (2, 3))])
    with pytest.raises(MXNetError, match="not arguments"):
        mx.mod.Module(linear(), data_names=["nope"])
    mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
    with pytest.raises(MXNetError, match="init_params"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]))
    with pytest.raises(MXNetError, match="'zzz'"):    # (missing parameters are reported first)
        mod.init_params(arg_params={"zzz": mx.nd.ones((1,))}, allow_missing=True)
    with pytest.raises(MXNetError, match="fc_bias.*not presented"):
        mod.init_params(arg_params={"fc_weight": mx.nd.ones((2, 3))})
    with pytest.raises(MXNetError, match=r"fc_weight.*\(3,3\)"):
        mod.init_params(arg_params={"fc_weight": mx.nd.ones((3, 3)), "fc_bias": mx.nd.ones((2,))})
    mod.init_params(arg_params={"fc_weight": mx.nd.ones((2, 3))}, allow_missing=True)
    with pytest.raises(MXNetError, match="init_optimizer"):
        mod.update()
    with pytest.raises(MXNetError, match="num_epoch"):
        mx.mod.Module(linear()).fit(mx.io.NDArrayIter(np.ones((2, 3)), np.zeros(2), batch_size=2))
    with pytest.raises(MXNetError, match="too many|empty"):
        m = mx.mod.Module(linear(), context=[mx.cpu(0), mx.cpu(1), mx.cpu(2)])
        m.bind(data_shapes=[("data", (2, 3))])


def test_input_grads_are_none_under_grad_req_null():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    for ctxs in ([mx.cpu()], [mx.cpu(0), mx.cpu(1)]):
        mod = mx.mod.Module(net, label_names=None, context=ctxs)
        mod.bind(data_shapes=[("data", (4, 5))], label_shapes=None, inputs_need_grad=True, grad_req="null")
        mod.init_params()
        mod.forward(mx.io.DataBatch(data=[mx.nd.ones((4, 5))]), is_train=True)
        mod.backward([mx.nd.ones((4, 3))])
        assert mod.get_input_grads() == [None]
        assert mod.get_input_grads(merge_multi_context=False) == [[None] * len(ctxs)]


def test_outputs_merge_and_head_gradients_split_along_the_layout_batch_axis():
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(data=data, act_type="relu", __layout__="TNC") * 2
    net = mx.sym.Activation(net, act_type="relu", __layout__="TNC")
    mod = mx.mod.Module(net, ("data",), None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[mx.io.DataDesc("data", (3, 8, 7), layout="TNC")], inputs_need_grad=True)
    mod.init_params()
    x = np.random.default_rng(2).uniform(0.1, 1, (3, 8, 7))
    mod.forward(mx.io.DataBatch(data=[mx.nd.array(x)], label=None))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), 2 * x, rtol=1e-6)
    assert [o.shape for o in mod.get_outputs(merge_multi_context=False)[0]] == [(3, 4, 7)] * 2
    head = np.arange(3 * 8 * 7, dtype=np.float32).reshape(3, 8, 7)
    mod.backward([mx.nd.array(head)])
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), 2 * head)


def test_bucketing_checkpoint_writes_mxnets_files_and_loads_back(tmp_path):
    def sym_gen(n):
        total = mx.sym.sum(mx.sym.Variable("data"), axis=1, keepdims=True)    # weights fit every bucket
        return mx.sym.FullyConnected(total, num_hidden=2, name="fc"), ("data",), ()

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    mod.bind([("data", (2, 4))], for_training=False)
    mod.init_params(mx.init.Uniform(1.0))
    batch = mx.io.DataBatch([mx.nd.ones((2, 3))], bucket_key=3, provide_data=[("data", (2, 3))])
    mod.forward(batch)
    want = mod.get_outputs()[0].asnumpy()
    prefix = str(tmp_path / "net")
    mod.save_checkpoint(prefix, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["net-0002.params", "net-3-symbol.json", "net-4-symbol.json", "net.buckets"]
    assert mx.nd.load(prefix + ".buckets")[0].asnumpy().tolist() == [4, 3]
    back = mx.mod.BucketingModule.load(prefix, 2, sym_gen=sym_gen, default_bucket_key=4)
    back.bind([("data", (2, 4))], for_training=False)
    np.testing.assert_array_equal(back.get_params()[0]["fc_weight"].asnumpy(),
                                  mod.get_params()[0]["fc_weight"].asnumpy())
    back.forward(batch)
    np.testing.assert_allclose(back.get_outputs()[0].asnumpy(), want, rtol=1e-6)
    with pytest.raises(mx.MXNetError, match="sym_gen and default_bucket_key are required"):
        mx.mod.BucketingModule.load(prefix, 2)
