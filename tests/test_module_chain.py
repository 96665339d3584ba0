"""SequentialModule and PythonLossModule against the single Module of the same network."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError

R = np.random.default_rng(4)
X = R.normal(size=(8, 5)).astype(np.float32)
Y = R.integers(0, 3, 8).astype(np.float32)


def batch():
    return mx.io.DataBatch([mx.nd.array(X)], [mx.nd.array(Y)])


def params():
    return {"fc1_weight": mx.nd.array(R.normal(0, 0.3, (6, 5))), "fc1_bias": mx.nd.zeros((6,)),
            "fc2_weight": mx.nd.array(R.normal(0, 0.3, (3, 6))), "fc2_bias": mx.nd.zeros((3,))}


def whole():
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc1"),
                          act_type="relu", name="relu1")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def hidden():
    fc1 = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc1")
    return mx.sym.Activation(fc1, act_type="relu", name="relu1")


def first():
    return mx.mod.Module(hidden(), label_names=None)


def grads_of(mod):
    out = {}
    mods = getattr(mod, "_modules", [mod])
    for m in mods:
        if hasattr(m, "_exec_group"):
            group = m._exec_group
            out.update({n: g[0].asnumpy() for n, g in zip(group.param_names, group.grad_arrays)})
    return out


def test_sequential_equals_the_whole_network():
    p = params()
    ref = mx.mod.Module(whole())
    ref.bind([("data", X.shape)], [("softmax_label", Y.shape)])
    ref.init_params(arg_params=p)
    ref.forward(batch(), is_train=True)
    ref.backward()
    fc2 = mx.sym.FullyConnected(mx.sym.Variable("h"), num_hidden=3, name="fc2")
    second = mx.mod.Module(mx.sym.SoftmaxOutput(fc2, name="softmax"), data_names=["h"])
    seq = mx.mod.SequentialModule().add(first()).add(second, take_labels=True, auto_wiring=True)
    seq.bind([("data", X.shape)], [("softmax_label", Y.shape)])
    seq.init_params(arg_params=p)
    seq.forward(batch(), is_train=True)
    seq.backward()
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), ref.get_outputs()[0].asnumpy(), rtol=1e-6)
    want = grads_of(ref)
    for name, g in grads_of(seq).items():
        np.testing.assert_allclose(g, want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert sorted(seq.get_params()[0]) == sorted(p)
    seq.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    metric = mx.metric.create("ce")
    seq.update_metric(metric, [mx.nd.array(Y)])
    before = metric.get()[1]
    for _ in range(20):
        seq.forward(batch(), is_train=True)
        seq.backward()
        seq.update()
    metric.reset()
    seq.forward(batch(), is_train=False)
    seq.update_metric(metric, [mx.nd.array(Y)])
    assert metric.get()[1] < 0.5 * before
    with pytest.raises(MXNetError, match="unknown options"):
        mx.mod.SequentialModule().add(first(), take_label=True)


def test_python_loss_module_gives_softmax_gradients():
    def softmax_ce_grad(scores, labels):
        s = scores.asnumpy()
        e = np.exp(s - s.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        prob[np.arange(len(prob)), labels.asnumpy().astype(int)] -= 1
        return prob

    p = params()
    ref = mx.mod.Module(whole())
    ref.bind([("data", X.shape)], [("softmax_label", Y.shape)])
    ref.init_params(arg_params=p)
    ref.forward(batch(), is_train=True)
    ref.backward()
    scores = mx.mod.Module(mx.sym.FullyConnected(hidden(), num_hidden=3, name="fc2"), label_names=None)
    seq = mx.mod.SequentialModule().add(scores).add(mx.mod.PythonLossModule(grad_func=softmax_ce_grad),
                                                    take_labels=True, auto_wiring=True)
    seq.bind([("data", X.shape)], [("softmax_label", Y.shape)])
    seq.init_params(arg_params=p)
    seq.forward(batch(), is_train=True)
    seq.backward()
    want = grads_of(ref)
    for name, g in grads_of(seq).items():
        np.testing.assert_allclose(g, want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    loss = mx.mod.PythonLossModule()
    loss.bind([("data", (2, 3))], [("softmax_label", (2,))])
    loss.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))]), is_train=True)
    with pytest.raises(MXNetError, match="no grad_func"):
        loss.backward()
