"""mx.model: checkpoints (symjit's and MXNet 1.9.1's) and FeedForward fit/predict/score."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError, MXNetError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mxnet"
PREFIX = str(DATA / "mlp")


def mlp(hidden: int = 8, classes: int = 2):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def blobs(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two linearly separable classes in 4-D."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] - X[:, 2] > 0).astype(np.float32)
    X[:, 0] += np.where(y > 0, 1.0, -1.0)   # a margin
    return X, y


def expected() -> tuple[np.ndarray, np.ndarray]:
    e = json.loads((DATA / "mlp-0005-expected.json").read_text())
    return np.array(e["input"], np.float32), np.array(e["output"], np.float64)


# -- checkpoints ------------------------------------------------------------------------------

def test_checkpoint_round_trip(tmp_path):
    prefix = str(tmp_path / "net")
    net = mlp()
    arg = {"fc1_weight": mx.nd.array(np.arange(32, dtype=np.float32).reshape(8, 4)),
           "fc1_bias": mx.nd.ones((8,))}
    aux = {"bn_moving_var": mx.nd.array(np.array([1.5, 2.5], np.float32))}
    mx.model.save_checkpoint(prefix, 7, net, arg, aux)
    assert (tmp_path / "net-symbol.json").exists() and (tmp_path / "net-0007.params").exists()
    raw = mx.nd.load(prefix + "-0007.params")
    assert sorted(raw) == ["arg:fc1_bias", "arg:fc1_weight", "aux:bn_moving_var"]
    sym, arg2, aux2 = mx.model.load_checkpoint(prefix, 7)
    assert sym.list_arguments() == net.list_arguments()
    assert sym.tojson() == net.tojson()
    np.testing.assert_array_equal(arg2["fc1_weight"].asnumpy(), np.arange(32).reshape(8, 4))
    np.testing.assert_array_equal(arg2["fc1_bias"].asnumpy(), np.ones(8))
    np.testing.assert_array_equal(aux2["bn_moving_var"].asnumpy(), [1.5, 2.5])
    assert mx.model.load_params(prefix, 7)[0].keys() == arg2.keys()


def test_do_checkpoint_uses_model_save(tmp_path):
    prefix = str(tmp_path / "cb")
    cb = mx.callback.do_checkpoint(prefix)
    cb(0, mlp(), {"w": mx.nd.ones((2,))}, {})
    assert mx.model.load_checkpoint(prefix, 1)[1]["w"].asnumpy().tolist() == [1.0, 1.0]


def test_load_checkpoint_rejects_bad_files(tmp_path):
    prefix = str(tmp_path / "bad")
    mlp().save(prefix + "-symbol.json")
    mx.nd.save(prefix + "-0001.params", [mx.nd.ones((2,))])
    with pytest.raises(FormatError, match="unnamed list"):
        mx.model.load_checkpoint(prefix, 1)
    mx.nd.save(prefix + "-0002.params", {"weird": mx.nd.ones((2,))})
    with pytest.raises(FormatError, match="'weird'"):
        mx.model.load_checkpoint(prefix, 2)
    with pytest.raises(MXNetError):
        mx.model.load_checkpoint(prefix, 3)   # missing file


def test_mxnet_checkpoint_loads_and_predicts():
    sym, arg, aux = mx.model.load_checkpoint(PREFIX, 5)
    assert sorted(aux) == ["bn1_moving_mean", "bn1_moving_var"]
    x, want = expected()
    # batch 4 over 6 samples: the last batch is padded and must be trimmed
    model = mx.model.FeedForward(sym, arg_params=arg, aux_params=aux, numpy_batch_size=4)
    out = model.predict(x)
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    loaded = mx.model.FeedForward.load(PREFIX, 5, numpy_batch_size=6)
    assert loaded.begin_epoch == 5
    np.testing.assert_allclose(loaded.predict(x), want, rtol=1e-5, atol=1e-6)


def test_predict_return_data_and_num_batch():
    sym, arg, aux = mx.model.load_checkpoint(PREFIX, 5)
    x, want = expected()
    model = mx.model.FeedForward(sym, arg_params=arg, aux_params=aux, numpy_batch_size=4)
    out, data, label = model.predict(mx.io.NDArrayIter(x, np.arange(6.0), batch_size=4), return_data=True)
    np.testing.assert_array_equal(data, x)
    np.testing.assert_array_equal(label, np.arange(6.0))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    first = model.predict(x, num_batch=1)
    np.testing.assert_allclose(first, want[:4], rtol=1e-5, atol=1e-6)


def test_score_ignores_padding():
    sym, arg, aux = mx.model.load_checkpoint(PREFIX, 5)
    x, want = expected()
    y = want.argmax(1).astype(np.float32)
    y[5] = (y[5] + 1) % 3          # one wrong label out of 6, in the padded last batch
    model = mx.model.FeedForward(sym, arg_params=arg, aux_params=aux, numpy_batch_size=4)
    acc = model.score(mx.io.NDArrayIter(x, y, batch_size=4), "acc")
    assert acc == pytest.approx(5 / 6)


# -- training ---------------------------------------------------------------------------------

def test_fit_reaches_high_accuracy_and_calls_callbacks(caplog):
    X, y = blobs()
    mx.random.seed(1)
    batches, epochs = [], []
    model = mx.model.FeedForward(mlp(), num_epoch=4, numpy_batch_size=20, learning_rate=0.5,
                                 momentum=0.9, initializer=mx.init.Xavier())
    with caplog.at_level(logging.INFO):
        model.fit(X, y, eval_data=(X, y),
                  batch_end_callback=lambda p: batches.append((p.epoch, p.nbatch)),
                  epoch_end_callback=lambda e, s, a, x: epochs.append((e, sorted(a), sorted(x))))
    assert len(batches) == 4 * 10
    assert batches[:3] == [(0, 1), (0, 2), (0, 3)] and batches[-1] == (3, 10)
    assert [e[0] for e in epochs] == [0, 1, 2, 3]
    assert epochs[0][1] == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    text = caplog.text
    assert "Epoch[3] Train-accuracy=" in text and "Epoch[3] Time cost=" in text
    assert "Epoch[3] Validation-accuracy=" in text
    assert model.score(mx.io.NDArrayIter(X, y, batch_size=50)) > 0.95
    pred = model.predict(X)
    assert pred.shape == (200, 2)
    assert (pred.argmax(1) == y).mean() > 0.95


def _fit_params(ctx, kvstore="local", work_load_list=None):
    X, y = blobs(120)
    mx.random.seed(3)
    model = mx.model.FeedForward(mlp(), ctx=ctx, num_epoch=2, numpy_batch_size=20, learning_rate=0.3,
                                 momentum=0.9, wd=1e-3, initializer=mx.init.Xavier())
    model.fit(X, y, kvstore=kvstore, work_load_list=work_load_list)
    return {k: v.asnumpy() for k, v in model.arg_params.items()}


def test_multi_context_fit_equals_single_context():
    single = _fit_params(mx.cpu(0))
    for ctx, kv, wl in (([mx.cpu(0), mx.cpu(1)], "local", None),
                        ([mx.cpu(0), mx.cpu(1)], None, [1, 3])):
        multi = _fit_params(ctx, kv, wl)
        assert multi.keys() == single.keys()
        for k in single:
            np.testing.assert_allclose(multi[k], single[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_one_sgd_step_matches_numpy():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 3)).astype(np.float32)
    y = np.array([0, 1, 1, 0, 1, 0], np.float32)
    W = rng.normal(size=(2, 3)).astype(np.float32)
    b = np.array([0.1, -0.2], np.float32)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc"),
                               name="softmax")
    model = mx.model.FeedForward(net, num_epoch=1, numpy_batch_size=6, learning_rate=0.5, wd=0.1,
                                 arg_params={"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(b)})
    model.fit(X, y)
    z = X @ W.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    g = p - np.eye(2)[y.astype(int)]
    W_new = W - 0.5 * (g.T @ X / 6 + 0.1 * W)        # weights decay
    b_new = b - 0.5 * (g.sum(0) / 6)                  # biases do not (wd_mult 0)
    np.testing.assert_allclose(model.arg_params["fc_weight"].asnumpy(), W_new, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.arg_params["fc_bias"].asnumpy(), b_new, rtol=1e-5, atol=1e-6)


def test_epoch_size_limits_batches_and_monitor_is_driven():
    X, y = blobs(100)

    class Mon:
        def __init__(self):
            self.installed, self.tics, self.tocs = 0, 0, 0

        def install(self, exe):
            self.installed += 1

        def tic(self):
            self.tics += 1

        def toc_print(self):
            self.tocs += 1

    mon = Mon()
    batches = []
    model = mx.model.FeedForward(mlp(), num_epoch=2, epoch_size=3, numpy_batch_size=10)
    model.fit(X, y, monitor=mon, batch_end_callback=lambda p: batches.append(p.nbatch))
    assert batches == [1, 2, 3, 1, 2, 3]
    assert (mon.installed, mon.tics, mon.tocs) == (1, 6, 6)


def test_save_load_and_create(tmp_path):
    X, y = blobs(60)
    mx.random.seed(0)
    model = mx.model.FeedForward.create(mlp(), X, y, num_epoch=1, numpy_batch_size=20,
                                        learning_rate=0.1)
    prefix = str(tmp_path / "ff")
    model.save(prefix)
    assert (tmp_path / "ff-0001.params").exists()
    again = mx.model.FeedForward.load(prefix, 1)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))


def test_init_attr_and_given_params_are_respected():
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("fc_weight", init=mx.init.Constant(0.25))
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, weight=w, num_hidden=2, name="fc"),
                               name="softmax")
    model = mx.model.FeedForward(net, num_epoch=0, arg_params={"fc_bias": mx.nd.ones((2,))})
    model.fit(np.ones((4, 3), np.float32), np.zeros(4, np.float32))
    np.testing.assert_array_equal(model.arg_params["fc_weight"].asnumpy(), np.full((2, 3), 0.25))
    np.testing.assert_array_equal(model.arg_params["fc_bias"].asnumpy(), np.ones(2))


def test_bad_input_errors():
    X, y = blobs(20)
    with pytest.raises(MXNetError, match="num_epoch"):
        mx.model.FeedForward(mlp()).fit(X, y)
    with pytest.raises(MXNetError, match="y must be given"):
        mx.model.FeedForward(mlp(), num_epoch=1).fit(X)
    with pytest.raises(MXNetError, match="same number of samples"):
        mx.model.FeedForward(mlp(), num_epoch=1).fit(X, y[:5])
    with pytest.raises(MXNetError, match="not used by the symbol"):
        mx.model.FeedForward(mlp(), num_epoch=1, arg_params={"zzz": mx.nd.ones((1,))}).fit(X, y)
    with pytest.raises(MXNetError, match=r"fc1_weight.*\(3,3\)"):
        mx.model.FeedForward(mlp(), num_epoch=1,
                             arg_params={"fc1_weight": mx.nd.ones((3, 3))}).fit(X, y)
    with pytest.raises(MXNetError, match="no parameters"):
        mx.model.FeedForward(mlp()).predict(X)
    with pytest.raises(MXNetError, match="DataIter"):
        mx.model.FeedForward(mlp(), num_epoch=1).fit([[1.0]], y)


def test_fit_with_a_monitor_logs_outputs_weights_and_backward_gradients(caplog):
    X, y = blobs(60)
    mx.random.seed(0)
    model = mx.model.FeedForward(mlp(), num_epoch=1, numpy_batch_size=20, learning_rate=0.1)
    with caplog.at_level(logging.INFO):
        model.fit(X, y, monitor=mx.mon.Monitor(2, pattern=".*"))
    lines = [r.getMessage().split() for r in caplog.records if r.getMessage().startswith("Batch:")]
    by_batch: dict[str, set] = {}
    for _, batch, name, *_ in lines:
        by_batch.setdefault(batch, set()).add(name)
    assert sorted(by_batch) == ["1", "3"]          # 3 batches per epoch, every 2nd watched
    names = by_batch["1"]
    weights = {n for n in model.symbol.list_arguments() if n.endswith(("weight", "bias"))}
    assert weights <= names
    assert {f"{n.rsplit('_', 1)[0]}_backward_{n.rsplit('_', 1)[1]}" for n in weights} <= names
    assert {n for n in model.symbol.get_internals().list_outputs() if n.endswith("_output")} <= names
