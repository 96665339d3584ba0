"""mx.kv: the MXNet KVStore tutorial's steps, list-of-keys forms, optimizers, states and errors.

Expected numbers are worked out by hand from the tutorial's description (push replaces the stored
value with the sum; an updater ``stored += input * 2`` adds twice the sum).
"""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError

SHAPE = (2, 3)
CONTEXTS = [mx.cpu(i) for i in range(4)]


def full(value: float) -> np.ndarray:
    return np.full(SHAPE, value, dtype=np.float32)


def pulled(kv: mx.kvstore.KVStore, key) -> np.ndarray:
    out = mx.nd.zeros(SHAPE)
    kv.pull(key, out=out)
    return out.asnumpy()


def double_updater(log: list):
    def update(key, input, stored):
        log.append(key)
        stored += input * 2
    return update


def test_tutorial_sequence():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones(SHAPE) * 2)
    a = mx.nd.zeros(SHAPE)
    kv.pull(3, out=a)
    np.testing.assert_array_equal(a.asnumpy(), full(2))

    kv.push(3, mx.nd.ones(SHAPE) * 8)          # no updater: the stored value is replaced
    kv.pull(3, out=a)
    np.testing.assert_array_equal(a.asnumpy(), full(8))

    kv.push(3, [mx.nd.ones(SHAPE, ctx) for ctx in CONTEXTS])   # 1+1+1+1 replaces 8
    kv.pull(3, out=a)
    np.testing.assert_array_equal(a.asnumpy(), full(4))

    log: list = []
    kv._set_updater(double_updater(log))
    kv.pull(3, out=a)                           # setting an updater changes nothing stored
    np.testing.assert_array_equal(a.asnumpy(), full(4))
    kv.push(3, mx.nd.ones(SHAPE))               # 4 + 1*2
    kv.pull(3, out=a)
    np.testing.assert_array_equal(a.asnumpy(), full(6))
    assert log == [3]

    b = [mx.nd.ones(SHAPE, ctx) for ctx in CONTEXTS]   # pull onto several devices
    kv.pull(3, out=b)
    for arr, ctx in zip(b, CONTEXTS):
        np.testing.assert_array_equal(arr.asnumpy(), full(6))
        assert arr.context == ctx

    keys = [5, 7, 9]                            # list of keys, one device
    kv.init(keys, [mx.nd.ones(SHAPE)] * len(keys))
    kv.push(keys, [mx.nd.ones(SHAPE)] * len(keys))    # 1 + 1*2
    b = [mx.nd.zeros(SHAPE)] * len(keys)
    kv.pull(keys, out=b)
    np.testing.assert_array_equal(b[1].asnumpy(), full(3))
    assert log == [3, 5, 7, 9]

    b = [[mx.nd.ones(SHAPE, ctx) for ctx in CONTEXTS]] * len(keys)   # list of keys, 4 devices
    kv.push(keys, b)                            # 3 + 4*2
    kv.pull(keys, out=b)
    np.testing.assert_array_equal(b[1][1].asnumpy(), full(11))
    assert log == [3, 5, 7, 9, 5, 7, 9]
    for k in keys:
        np.testing.assert_array_equal(pulled(kv, k), full(11))


@pytest.mark.parametrize("name", ["local", "device", "local_update_cpu", "local_allreduce_cpu",
                                  "local_allreduce_device"])
def test_create_local_types(name):
    kv = mx.kvstore.create(name)
    assert (kv.type, kv.rank, kv.num_workers) == (name, 0, 1)
    kv.barrier()
    kv._barrier()


@pytest.mark.parametrize("name", ["horovod", "byteps", "nccl", "dist_async_device"])
def test_create_unsupported_refused(name):
    with pytest.raises(MXNetError, match=name):
        mx.kv.create(name)


def test_create_unknown_type():
    with pytest.raises(MXNetError, match="unknown kvstore type 'foo'"):
        mx.kv.create("foo")


def test_str_keys_and_init_copies_value():
    kv = mx.kv.create()
    w = mx.nd.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    kv.init("w", w)
    w[:] = 0                                    # the store keeps its own copy
    np.testing.assert_array_equal(pulled(kv, "w"), np.arange(1, 7, dtype=np.float32).reshape(SHAPE))
    assert 3 not in kv._store


def test_push_copies_sum_and_keeps_inputs():
    kv = mx.kv.create()
    kv.init(0, mx.nd.zeros(SHAPE))
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(SHAPE))
    y = mx.nd.ones(SHAPE, mx.cpu(1)) * 10
    kv.push(0, [x, y])
    x[:] = -1                                   # the pushed arrays are not aliased
    expected = np.arange(6, dtype=np.float32).reshape(SHAPE) + 10
    np.testing.assert_array_equal(pulled(kv, 0), expected)
    np.testing.assert_array_equal(y.asnumpy(), full(10))


def test_duplicate_keys_in_one_push_are_summed():
    kv = mx.kv.create()
    kv.init(1, mx.nd.zeros(SHAPE))
    log: list = []
    kv._set_updater(double_updater(log))
    kv.push([1, 1], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE) * 3])   # 0 + (1+3)*2
    np.testing.assert_array_equal(pulled(kv, 1), full(8))
    assert log == [1]


def test_updater_receives_sum_key_and_stored_array():
    kv = mx.kv.create()
    kv.init("k", mx.nd.ones(SHAPE))
    seen = {}

    def updater(key, recv, stored):
        seen.update(key=key, recv=recv.asnumpy(), stored=stored.asnumpy())
        stored[:] = recv * stored

    kv.set_updater(updater)
    kv.push("k", [mx.nd.ones(SHAPE) * 2, mx.nd.ones(SHAPE) * 5])
    assert seen["key"] == "k"
    np.testing.assert_array_equal(seen["recv"], full(7))
    np.testing.assert_array_equal(seen["stored"], full(1))
    np.testing.assert_array_equal(pulled(kv, "k"), full(7))


def test_set_optimizer_sgd():
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(SHAPE).astype(np.float32)
    g1 = rng.standard_normal(SHAPE).astype(np.float32)
    g2 = rng.standard_normal(SHAPE).astype(np.float32)
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.array(w0))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv.push(0, [mx.nd.array(g1), mx.nd.array(g2)])
    np.testing.assert_allclose(pulled(kv, 0), w0 - np.float32(0.1) * (g1 + g2), rtol=1e-6, atol=1e-6)


def test_set_optimizer_momentum_two_steps():
    w0 = np.ones(SHAPE, np.float32)
    kv = mx.kv.create()
    kv.init(4, mx.nd.array(w0))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.push(4, mx.nd.ones(SHAPE))
    kv.push(4, mx.nd.ones(SHAPE))
    # momentum m = 0.9 m - lr g; w += m: m1 = -0.1, w1 = 0.9; m2 = -0.19, w2 = 0.71
    np.testing.assert_allclose(pulled(kv, 4), full(0.71), rtol=1e-6)


def test_pushpull():
    kv = mx.kv.create()
    kv.init(2, mx.nd.zeros(SHAPE))
    v = [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE) * 2]
    kv.pushpull(2, v)                           # written back into the pushed arrays
    for arr in v:
        np.testing.assert_array_equal(arr.asnumpy(), full(3))
    out = mx.nd.zeros(SHAPE)
    kv.pushpull(2, mx.nd.ones(SHAPE) * 5, out=out)
    np.testing.assert_array_equal(out.asnumpy(), full(5))


def test_optimizer_states_round_trip(tmp_path):
    def run(kv, grads):
        for g in grads:
            kv.push(0, mx.nd.array(g))

    rng = np.random.default_rng(1)
    w0 = rng.standard_normal(SHAPE).astype(np.float32)
    grads = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(3)]

    kv = mx.kv.create()
    kv.init(0, mx.nd.array(w0))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    run(kv, grads[:1])
    fname = tmp_path / "kv.states"
    kv.save_optimizer_states(fname)
    w1 = pulled(kv, 0)
    run(kv, grads[1:])
    w_ref = pulled(kv, 0)

    kv2 = mx.kv.create()
    kv2.init(0, mx.nd.array(w1))
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv2.load_optimizer_states(fname)
    run(kv2, grads[1:])
    np.testing.assert_allclose(pulled(kv2, 0), w_ref, rtol=1e-6)

    # numpy reference of the whole run: m = 0.9 m - 0.1 g; w += m
    w, m = w0.astype(np.float64), np.zeros(SHAPE)
    for g in grads:
        m = 0.9 * m - 0.1 * g
        w = w + m
    np.testing.assert_allclose(w_ref, w, rtol=1e-5, atol=1e-6)


def test_states_need_an_optimizer(tmp_path):
    kv = mx.kv.create()
    with pytest.raises(MXNetError, match="no updater is set"):
        kv.save_optimizer_states(tmp_path / "s")
    kv._set_updater(lambda key, recv, stored: None)
    with pytest.raises(MXNetError, match="has no get_states"):
        kv.save_optimizer_states(tmp_path / "s")


def test_load_states_missing_file(tmp_path):
    kv = mx.kv.create()
    kv.set_optimizer(mx.optimizer.SGD())
    with pytest.raises(MXNetError, match="cannot read"):
        kv.load_optimizer_states(tmp_path / "missing")


def test_load_states_refuses_non_state_file(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x80\x04not a state file")
    kv = mx.kv.create()
    kv.set_optimizer(mx.optimizer.SGD())
    with pytest.raises(MXNetError):
        kv.load_optimizer_states(bad)


def test_errors_uninitialised_and_double_init():
    kv = mx.kv.create()
    with pytest.raises(MXNetError, match="key 3 is not initialised"):
        kv.push(3, mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="key 'w' is not initialised"):
        kv.pull("w", out=mx.nd.ones(SHAPE))
    kv.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="key 3 is already initialised"):
        kv.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="key 4 is already initialised"):
        kv.init([4, 4], [mx.nd.ones(SHAPE)] * 2)
    assert 4 not in kv._store


def test_errors_shape_mismatch_names_key_and_shapes():
    kv = mx.kv.create()
    kv.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match=r"key 3.*\(3,2\).*\(2,3\)"):
        kv.push(3, mx.nd.ones((3, 2)))
    with pytest.raises(MXNetError, match=r"key 3.*out\[1\].*\(4,\)"):
        kv.pull(3, out=[mx.nd.zeros(SHAPE), mx.nd.zeros((4,))])
    np.testing.assert_array_equal(pulled(kv, 3), full(1))   # nothing changed


def test_failed_list_push_changes_nothing():
    kv = mx.kv.create()
    kv.init([1, 2], [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)])
    with pytest.raises(MXNetError, match="key 2"):
        kv.push([1, 2], [mx.nd.ones(SHAPE), mx.nd.ones((1,))])
    np.testing.assert_array_equal(pulled(kv, 1), full(0))


@pytest.mark.parametrize("call", [
    lambda kv: kv.push(3, np.ones(SHAPE)),
    lambda kv: kv.push(3, []),
    lambda kv: kv.push([3], mx.nd.ones(SHAPE)),
    lambda kv: kv.push([3, 3], [mx.nd.ones(SHAPE)]),
    lambda kv: kv.push(3.5, mx.nd.ones(SHAPE)),
    lambda kv: kv.push(True, mx.nd.ones(SHAPE)),
    lambda kv: kv.pull(3),
    lambda kv: kv.init(8, [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)]),
    lambda kv: kv.init([8, "x"], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)]),
    lambda kv: kv.set_optimizer("sgd"),
    lambda kv: kv._set_updater(3),
    lambda kv: kv.row_sparse_pull(3, out=mx.nd.ones(SHAPE), row_ids=mx.nd.zeros((1,))),   # a dense out
    lambda kv: kv.set_gradient_compression({"type": "2bit"}),
])
def test_bad_arguments_raise_mxnet_error(call):
    kv = mx.kv.create()
    kv.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="KVStore"):
        call(kv)


def test_pull_casts_to_out_dtype_and_numpy_int_keys():
    kv = mx.kv.create()
    kv.init(np.int64(6), mx.nd.array([1.5, 2.5]))
    out = mx.nd.zeros((2,), dtype="float64")
    kv.pull(6, out=out)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.asnumpy(), [1.5, 2.5])


# -- broadcast, capabilities and Python stores registered with KVStoreBase ----------------------------
def test_pull_leaves_sparse_outputs_unless_asked():
    """MXNet's pull skips sparse arrays in ``out`` (``ignore_sparse=True``, its default: a sparse
    array takes rows through ``row_sparse_pull``); with ``ignore_sparse=False`` they get the value,
    and dense outputs beside them always do."""
    kv = mx.kv.create()
    kv.init("w", mx.nd.array(np.arange(6, dtype=np.float32).reshape(3, 2)))
    rows = (mx.nd.ones((3, 2)) * 7).tostype("row_sparse")
    dense = mx.nd.zeros((3, 2))
    kv.pull("w", out=[rows, dense])
    assert (rows.asnumpy() == 7).all() and rows.stype == "row_sparse"
    np.testing.assert_array_equal(dense.asnumpy(), np.arange(6).reshape(3, 2))
    kv.pull(["w"], out=[rows])
    assert (rows.asnumpy() == 7).all()
    kv.pull("w", out=rows, ignore_sparse=False)
    np.testing.assert_array_equal(rows.asnumpy(), np.arange(6).reshape(3, 2))


def test_a_store_takes_keys_of_one_type():
    """A store that holds int keys refuses str keys in every call, and the other way round (MXNet's
    rule), naming both types."""
    ints, strs = mx.kv.create(), mx.kv.create()
    ints.init(3, mx.nd.zeros((2,)))
    strs.init("a", mx.nd.zeros((2,)))
    for kv, other in ((ints, "a"), (strs, 3)):
        calls = (("init", (other, mx.nd.zeros((2,))), {}), ("push", (other, mx.nd.ones((2,))), {}),
                 ("pull", (other,), {"out": mx.nd.zeros((2,))}),
                 ("pull", ([other],), {"out": [mx.nd.zeros((2,))]}))
        for method, args, kwargs in calls:
            with pytest.raises(MXNetError, match="keys are (int|str)s, got the (str|int) key"):
                getattr(kv, method)(*args, **kwargs)
    ints.init([4, 5], [mx.nd.ones((2,))] * 2)       # more of its own type
    out = mx.nd.zeros((2,))
    ints.pull(5, out=out)
    assert out.asnumpy().tolist() == [1.0, 1.0]


def test_broadcast_initialises_and_pulls():
    kv = mx.kv.create("device")
    outs = [mx.nd.zeros(SHAPE) for _ in range(3)]
    kv.broadcast("w", mx.nd.ones(SHAPE) * 3, outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 3.0))
    single, pair = mx.nd.zeros((2,)), [mx.nd.zeros((2,)), mx.nd.zeros((2,))]
    mx.kv.create("device").broadcast([1, 2], [mx.nd.array([1, 2]), mx.nd.array([3, 4])], [single, pair])
    assert single.asnumpy().tolist() == [1, 2] and pair[1].asnumpy().tolist() == [3, 4]
    with pytest.raises(MXNetError, match="already initialised"):
        kv.broadcast("w", mx.nd.ones(SHAPE), mx.nd.zeros(SHAPE))
    assert kv.is_capable("optimizer") and isinstance(kv, mx.kv.KVStoreBase)
    with pytest.raises(ValueError, match="capability"):
        kv.is_capable("telepathy")


def test_teststore_sums_without_keeping_values():
    kv = mx.kv.create("teststore")
    assert kv.type == "teststore" and not type(kv).is_capable("optimizer")
    vals = [mx.nd.ones(SHAPE, c) * (i + 1) for i, c in enumerate(CONTEXTS)]
    kv.pushpull(0, vals)                         # in place: every device gets the sum 1+2+3+4
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), np.full(SHAPE, 10.0))
    out = mx.nd.zeros(SHAPE)
    kv.broadcast(0, mx.nd.ones(SHAPE) * 7, out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 7.0))
    with pytest.raises(NotImplementedError):
        kv.set_optimizer(mx.optimizer.SGD())


def test_registered_python_store_is_created_by_name():
    @mx.kv.KVStoreBase.register
    class EchoStore(mx.kv.KVStoreBase):
        @property
        def type(self):
            return "echostore"
    try:
        assert isinstance(mx.kv.create("echostore"), EchoStore)
        with pytest.warns(UserWarning, match="replaces"):
            mx.kv.KVStoreBase.register(type("EchoStore", (mx.kv.KVStoreBase,), {}))
    finally:
        mx.kv.KVStoreBase.kv_registry.pop("echostore")
