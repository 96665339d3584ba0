"""mx.gluon.Trainer: the key-value store it makes (or not), updates on the store or per context,
allreduce_grads + update, learning-rate schedules counted once per step, states saved and loaded,
and the store dropped when the weights are set anew. Expected weights are worked out by hand: SGD
with momentum ``m`` keeps ``mom = m * mom - lr * grad`` and adds it to the weight."""
import numpy as np
import pytest

import symjit as mx
from symjit import autograd, gluon

CTXS = [mx.cpu(0), mx.cpu(1)]


def _param(ctxs=CTXS, name="x", **kwargs):
    x = gluon.Parameter(name, shape=(3,), **kwargs)
    x.initialize(ctx=ctxs, init="zeros")
    return x


def _backward(x, scale=None):
    """Gradient 1 on every context (``scale``: the i-th context's gradient is ``scale[i]``)."""
    with autograd.record():
        ys = [w * (1 if scale is None else scale[i]) + 1 for i, w in enumerate(x.list_data())]
    for y in ys:
        y.backward()


def _values(x):
    return [d.asnumpy().tolist() for d in x.list_data()]


def test_one_context_has_no_store_and_updates_directly():
    x = _param([mx.cpu(0)])
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5})
    _backward(x)
    trainer.step(1)
    assert trainer._kvstore is None and trainer._update_on_kvstore is None and trainer._kv_initialized
    assert _values(x) == [[-1.0] * 3]
    assert len(trainer._updaters) == 1


def test_several_contexts_update_on_the_store_with_momentum():
    x = _param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5})
    assert not trainer._kv_initialized and trainer._kvstore is None    # made at the first step
    _backward(x)
    trainer.step(1)
    assert trainer._kvstore.type == "device" and trainer._update_on_kvstore is True
    assert _values(x) == [[-2.0] * 3] * 2                             # the two gradients summed
    x.lr_mult = 0.5                                                    # read at each update
    _backward(x)
    trainer.step(1)
    assert _values(x) == [[-4.0] * 3] * 2                             # mom = -1 - 0.5 * 2 = -2
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        trainer.update(1)
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        trainer.allreduce_grads()


def test_allreduce_then_update_per_context():
    x = _param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5}, update_on_kvstore=False)
    _backward(x, scale=[0.0, 1.0])
    grads = [g.asnumpy()[0] for g in x.list_grad()]
    assert grads == [0.0, 1.0]
    trainer.allreduce_grads()
    assert [g.asnumpy()[0] for g in x.list_grad()] == [1.0, 1.0]
    trainer.update(1)
    assert trainer._update_on_kvstore is False and len(trainer._updaters) == 2
    assert _values(x) == [[-1.0] * 3] * 2
    assert all(0 in u.states for u in trainer._updaters)               # a momentum per context


def test_store_objects_and_update_on_kvstore_choices(monkeypatch):
    x = _param()
    kv = mx.kv.create("teststore")                                     # cannot run the optimizer
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5}, kvstore=kv)
    _backward(x)
    trainer.step(1)
    assert trainer._kvstore is kv and trainer._update_on_kvstore is False
    assert _values(x) == [[-2.0] * 3] * 2
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        gluon.Trainer([x], "sgd", kvstore=kv, update_on_kvstore=True)._init_kvstore()
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    trainer = gluon.Trainer([_param()], "sgd", kvstore="local")
    trainer._init_kvstore()
    assert trainer._kvstore.type == "local" and trainer._update_on_kvstore is False
    trainer = gluon.Trainer([_param()], "sgd", kvstore="local", update_on_kvstore=True)
    trainer._init_kvstore()
    assert trainer._update_on_kvstore is True                          # the argument wins
    assert gluon.Trainer([_param()], "sgd", kvstore=None)._init_kvstore() is None
    with pytest.raises(TypeError, match="kvstore must be"):
        gluon.Trainer([_param()], "sgd", kvstore=3)._init_kvstore()


def test_parameters_on_different_contexts_are_an_error():
    a, b = _param([mx.cpu(0)], "a"), _param(CTXS, "b")
    with pytest.raises(AssertionError, match="same set of contexts"):
        gluon.Trainer([a, b], "sgd")


@pytest.mark.parametrize("on_kv", [None, False])
def test_lr_scheduler_counts_one_update_per_step(on_kv):
    x = _param()
    sched = mx.lr_scheduler.FactorScheduler(2, factor=0.1, base_lr=1.0)
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "lr_scheduler": sched},
                            update_on_kvstore=on_kv)
    rates = []
    for _ in range(5):
        _backward(x)
        trainer.step(1)
        rates.append(trainer.learning_rate)
    np.testing.assert_allclose(rates, [1.0, 1.0, 0.1, 0.1, 0.01])
    opt = trainer._optimizer
    assert opt.num_update == 5
    if on_kv is False:                                                 # counted per device id
        assert sorted(opt._all_index_update_counts) == [0, 1]
        assert all(c[0] == 5 for c in opt._all_index_update_counts.values())


@pytest.mark.parametrize("on_kv", [None, False])
def test_states_round_trip_and_follow_the_parameters(tmp_path, on_kv):
    x = _param(lr_mult=1.0)
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 0.1, "momentum": 0.9}, update_on_kvstore=on_kv)
    _backward(x)
    trainer.step(1)
    updater = trainer._kvstore._updater if trainer._update_on_kvstore else trainer._updaters[0]
    saved = {k: v.asnumpy().copy() for k, v in updater.states.items()}
    f = str(tmp_path / "trainer.states")
    trainer.save_states(f)
    trainer.load_states(f)
    updaters = [trainer._kvstore._updater] if trainer._update_on_kvstore else trainer._updaters
    for u in updaters:
        assert u.optimizer is trainer._optimizer
        assert {k: v.asnumpy().tolist() for k, v in u.states.items()} == \
            {k: v.tolist() for k, v in saved.items()}
    x.lr_mult = 2.0                                                    # the loaded optimizer sees it
    assert trainer._optimizer._get_lr(0) == pytest.approx(0.2)


def test_setting_the_weights_drops_the_store():
    params = gluon.ParameterDict()
    x = params.get("x", shape=(3,))
    params.initialize(ctx=CTXS, init="zeros")
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore="local")
    _backward(x)
    trainer.step(1)
    assert trainer._update_on_kvstore
    np.testing.assert_allclose(np.array(_values(x)), -0.2, rtol=1e-6)
    x.set_data(mx.nd.zeros((3,)))
    assert trainer._kvstore is None and trainer._kv_initialized is False
    _backward(x)
    trainer.step(1)                                                    # from the new weights
    np.testing.assert_allclose(np.array(_values(x)), -0.2, rtol=1e-6)


def test_stale_gradients_on_the_store_path():
    x, y = _param(name="x"), _param(name="y")
    trainer = gluon.Trainer([x, y], "sgd", {"learning_rate": 1.0})
    _backward(x)
    with pytest.raises(UserWarning, match="Parameter `y`.*not been updated"):
        trainer.step(1)
    assert _values(x) == [[0.0] * 3] * 2                               # nothing was updated
    trainer.step(1, ignore_stale_grad=True)
    assert _values(x) == [[-2.0] * 3] * 2 and _values(y) == [[0.0] * 3] * 2


def test_dict_parameters_in_sorted_order():
    params = {"b_weight": _param(name="b_weight"), "a_weight": _param(name="a_weight")}
    trainer = gluon.Trainer(params, "sgd")
    assert [p.name for p in trainer._params] == ["a_weight", "b_weight"]
    assert trainer._param2idx == {"a_weight": 0, "b_weight": 1}
    assert all(p._trainer is trainer for p in params.values())
