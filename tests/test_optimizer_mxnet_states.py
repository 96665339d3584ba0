"""Optimizer states in MXNet 1.x's layout: the order of a float16 weight's multi-precision state,
state files MXNet writes (a pickle, read without unpickling), and files of symjit's own format 1."""
from __future__ import annotations

import json
import pickle
import sys
import types

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError
from symjit.optimizer import _META


def _reduce(self):
    raw = mx.nd.save_tobuffer([mx.nd.array(self.values)])[24:-8]   # the list's one array record
    return type(self), (None,), {"handle": bytearray(raw)}


@pytest.fixture()
def mxnet_pickler(monkeypatch):
    """A stand-in for MXNet 1.x's NDArray, pickled as MXNet's is: ``(NDArray, (None,), {'handle':
    bytearray})`` under the name ``mxnet.ndarray.ndarray.NDArray``, the bytes in MXNet's
    per-array layout."""
    def init(self, values):
        self.values = np.asarray(values, dtype=np.float32)
    cls = type("NDArray", (), {"__init__": init, "__reduce__": _reduce,
                               "__module__": "mxnet.ndarray.ndarray"})
    for name in ("mxnet", "mxnet.ndarray", "mxnet.ndarray.ndarray"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules["mxnet.ndarray.ndarray"].NDArray = cls
    return cls


@pytest.mark.parametrize("make, master_at", [
    (lambda: mx.optimizer.SGD(momentum=0.9, multi_precision=True), 1),
    (lambda: mx.optimizer.NAG(momentum=0.9, multi_precision=True), 1),
    (lambda: mx.optimizer.LARS(momentum=0.9, multi_precision=True), 1),
    (lambda: mx.optimizer.Adam(multi_precision=True), 0),
    (lambda: mx.optimizer.FTML(multi_precision=True), 0),
])
def test_float16_state_puts_the_master_copy_where_mxnet_does(make, master_at):
    w16 = mx.nd.array([1.0, 2.0], dtype="float16")
    state = make().create_state_multi_precision(0, w16)
    assert isinstance(state, tuple) and len(state) == 2
    master = state[master_at]
    assert master.dtype == np.float32 and master.asnumpy().tolist() == [1.0, 2.0]
    opt = make()
    opt.update_multi_precision(0, w16, mx.nd.array([1.0, 1.0], dtype="float16"), state)
    assert not np.array_equal(state[master_at].asnumpy(), [1.0, 2.0])       # the master moved
    np.testing.assert_array_equal(w16.asnumpy(), state[master_at].asnumpy().astype(np.float16))


def test_sgd_refuses_a_float16_state_in_the_other_order():
    opt = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    w16 = mx.nd.array([1.0], dtype="float16")
    with pytest.raises(mx.base.ParamError, match=r"\(state, float32 master weight\)"):
        opt.update_multi_precision(0, w16, w16.copy(), (mx.nd.zeros((1,)), None))


def test_states_written_by_mxnet_load_and_train_on(mxnet_pickler):
    # what MXNet's Updater.get_states() returns for SGD with momentum: a float32 weight's momentum
    # and a float16 weight's (momentum, master)
    blob = pickle.dumps({0: mxnet_pickler([0.5, -0.5]), 1: (mxnet_pickler([0.25]), mxnet_pickler([3.0]))})
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=1.0, momentum=0.5, multi_precision=True))
    upd.set_states(blob)
    assert upd.states[0].asnumpy().tolist() == [0.5, -0.5]
    mom, master = upd.states[1]
    assert (mom.asnumpy().tolist(), master.asnumpy().tolist()) == ([0.25], [3.0])
    w0, w1 = mx.nd.array([1.0, 1.0]), mx.nd.array([9.0], dtype="float16")
    upd(0, mx.nd.array([1.0, 1.0]), w0)
    upd(1, mx.nd.array([1.0], dtype="float16"), w1)
    # symjit keeps SGD's momentum negated (weight += state): -0.25 + 0.5 * 0.5 - 1 ... per element
    np.testing.assert_allclose(w0.asnumpy(), [1.0 + 0.5 * 0.5 - 1.0, 1.0 - 0.5 * 0.5 - 1.0])
    np.testing.assert_allclose(w1.asnumpy(), [3.0 + 0.5 * 0.25 - 1.0])   # from the master, not 9


def test_mxnet_states_with_the_optimizer_load_the_states_only(mxnet_pickler, monkeypatch):
    # stands for MXNet's pickled optimizer (an object with its settings): never rebuilt
    monkeypatch.setitem(sys.modules, "mxnet.optimizer", types.ModuleType("mxnet.optimizer"))
    sgd = type("SGD", (), {"__module__": "mxnet.optimizer"})
    sys.modules["mxnet.optimizer"].SGD = sgd
    settings = sgd()
    settings.lr = 123.0
    blob = pickle.dumps(({"w": mxnet_pickler([1.0])}, settings))
    upd = mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.5))
    with pytest.warns(UserWarning, match="not read"):
        upd.set_states(blob)
    assert upd.states["w"].asnumpy().tolist() == [1.0]
    assert upd.optimizer.lr == 0.5


def test_a_pickled_array_with_bad_bytes_is_a_format_error(mxnet_pickler, monkeypatch):
    monkeypatch.setattr(mxnet_pickler, "__reduce__",
                        lambda self: (mxnet_pickler, (None,), {"handle": bytearray(b"\x01\x02")}))
    with pytest.raises(FormatError, match="pickled NDArray"):
        mx.optimizer.get_updater(mx.optimizer.SGD()).set_states(pickle.dumps({0: mxnet_pickler([1.0])}))


def _as_format_1(blob: bytes) -> bytes:
    arrays = mx.nd.load_frombuffer(blob)
    meta = json.loads(arrays[_META].asnumpy().tobytes().decode())
    assert meta["version"] == 2
    meta["version"] = 1
    for entry in meta["states"]:       # format 1 kept (master, state) for every optimizer
        if isinstance(entry[1], list):
            entry[1].reverse()
    arrays[_META] = mx.nd.array(np.frombuffer(json.dumps(meta).encode(), np.uint8), dtype="uint8")
    return mx.nd.save_tobuffer(arrays)


def test_symjit_format_1_files_load_in_the_new_order():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9, multi_precision=True))
    upd(0, mx.nd.array([1.0], dtype="float16"), mx.nd.array([2.0], dtype="float16"))
    old = _as_format_1(upd.get_states())
    back = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9, multi_precision=True))
    back.set_states(old)
    for mine, theirs in zip(upd.states[0], back.states[0]):
        assert mine.dtype == theirs.dtype
        np.testing.assert_array_equal(mine.asnumpy(), theirs.asnumpy())
