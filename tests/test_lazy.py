"""The lazy engine (symjit.lazy): queued NDArray calls, assignments and optimizer updates give
exactly what running each at once gives; a read, ``waitall`` and an executor run the queue; errors
come at the call that caused them; views and in-place writes see the right versions; a training
step's updates run as one compiled program, compiled once."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit import lazy
from symjit.imperative import nd_function, queueable
from symjit.ops.registry import get_op

from .cases import cases_by_family


def _eager_and_lazy(fn, replays=0):
    """``fn()``'s arrays as numpy, run at once and queued (compiled at the first run of the
    queue when ``replays`` is 0)."""
    with lazy.enabled(False):
        eager = [x.asnumpy() for x in fn()]
    with lazy.enabled(True, replays=replays):
        lazy.reset_stats()
        queued = [x.asnumpy() for x in fn()]
        counts = lazy.stats()
    return eager, queued, counts


def _same(eager, queued):
    assert len(eager) == len(queued)
    for e, q in zip(eager, queued):
        assert e.dtype == q.dtype and e.shape == q.shape
        np.testing.assert_array_equal(q, e)      # bit for bit (NaNs where eager has them)


def _single_call(case):
    """(operator, inputs in order, params) of a case whose symbol is one queueable call on its
    variables, else None."""
    sym = case.build({n: mx.sym.Variable(n) for n in case.inputs})
    if len(sym._outputs) != 1:
        return None
    node = sym._outputs[0][0]
    if node.op is None or not queueable(node.op) or any(src.op is not None for src, _ in node.inputs):
        return None
    names = [src.name for src, _ in node.inputs]
    return node.op.name, names, {k: node.params[k] for k in node.given}


@pytest.mark.parametrize("family", ["elemwise", "elemwise_math", "broadcast"])
def test_op_cases_fused_in_one_queue_match_eager_calls_bit_for_bit(family):
    calls = [(c, found) for c in cases_by_family()[family] if (found := _single_call(c)) is not None]
    assert len(calls) >= 10, family

    def run():
        outs = []
        for case, (op, names, params) in calls:
            ins = [mx.nd.array(case.inputs[n], dtype="float32") for n in names]
            y = nd_function(op)(*ins, **params)
            outs.append(y * 0.5 + y)          # a chain the fused program computes in one kernel
        return outs

    eager, queued, counts = _eager_and_lazy(run)
    _same(eager, queued)
    assert counts["queued"] >= 3 * len(calls) and counts["replayed"] == 0
    assert counts["programs"] == counts["compiles"] == counts["flushes"] >= 1


def test_a_read_runs_the_queue_and_waitall_too():
    a = mx.nd.array([1.0, 2.0, 3.0])
    with lazy.enabled():
        lazy.reset_stats()
        b = a * 2 + 1
        assert lazy.stats()["queued"] == 2 and lazy.stats()["flushes"] == 0
        assert b.shape == (3,) and b.dtype == np.float32          # known without running
        assert b.asnumpy().tolist() == [3.0, 5.0, 7.0]
        assert lazy.stats()["flushes"] == 1
        c = b - a
        mx.nd.waitall()
        assert lazy.stats()["flushes"] == 2
        assert c._store.tolist() == [2.0, 3.0, 4.0]     # the storage itself, read without a flush
        d = c * c
        assert bool((d == 4)[0]) and lazy.stats()["flushes"] == 3     # a host branch


def test_shape_and_dtype_errors_come_at_the_call():
    with lazy.enabled():
        lazy.reset_stats()
        with pytest.raises(mx.MXNetError, match=r"broadcast_add.*\(2, ?3\).*\(4,?\)"):
            mx.nd.broadcast_add(mx.nd.ones((2, 3)), mx.nd.ones((4,)))
        with pytest.raises(mx.MXNetError, match="broadcast_add"):
            mx.nd.broadcast_add(mx.nd.ones((2,)), mx.nd.ones((2,), dtype="float64"))
        with pytest.raises(mx.MXNetError, match="does not fit"):
            w = mx.nd.ones((3,))
            w += mx.nd.ones((2, 3))
        assert lazy.stats()["queued"] == 0


def test_data_errors_come_from_the_call_that_checks_them_and_a_failed_queue_names_its_ops(monkeypatch):
    a = mx.nd.array([1.0, 2.0, 3.0])
    with lazy.enabled(True, replays=0):
        x = a + 1                         # queued
        with pytest.raises(mx.MXNetError, match="take"):    # a data check: never queued
            mx.nd.take(x, mx.nd.array([5.0]), mode="raise")
        assert x.asnumpy().tolist() == [2.0, 3.0, 4.0]

        def fail(self, arrays):
            raise mx.MXNetError("a kernel failed")
        monkeypatch.setattr(lazy._Program, "run", fail)
        y = mx.nd.broadcast_mul(a, a) + a
        with pytest.raises(mx.MXNetError, match=r"broadcast_mul, broadcast_add.*a kernel failed"):
            y.asnumpy()


@pytest.mark.parametrize("replays", [0, 1])
def test_writes_then_reads_of_one_array_see_their_versions(replays):
    def run():
        a = mx.nd.ones((4,))
        a += 1
        b = a * 3                      # reads a's second version
        a += 10                        # a third
        c = a + b
        a[:] = a * 2                   # a's storage written from its own last version
        return [a, b, c]

    eager, queued, counts = _eager_and_lazy(run, replays)
    _same(eager, queued)
    assert [x.tolist() for x in queued] == [[24.0] * 4, [6.0] * 4, [18.0] * 4]
    assert counts["flushes"] == 1


def test_views_of_pending_arrays_read_their_values():
    a = mx.nd.array(np.arange(6, dtype=np.float32))
    with lazy.enabled(True, replays=0):
        lazy.reset_stats()
        t = a * 2
        v = t[1:3]                      # a view made without running anything
        r = (a + 100).reshape((2, 3))[1]   # a view of a result nobody else holds
        assert lazy.stats()["flushes"] == 0
        assert v.asnumpy().tolist() == [2.0, 4.0]
        assert r.asnumpy().tolist() == [103.0, 104.0, 105.0]
        v += 1                           # a write through a view shows in the array
        assert t.asnumpy().tolist() == [0.0, 3.0, 5.0, 6.0, 8.0, 10.0]


def test_in_place_update_then_read_and_overlapping_views():
    w0 = np.arange(1, 7, dtype=np.float32).reshape(2, 3)

    def run():
        w = mx.nd.array(w0)
        store = w._store
        g = mx.nd.ones((2, 3))
        w[:] -= 0.5 * g
        u = w + 1
        x = mx.nd.array(np.arange(8, dtype=np.float32))
        y = x[1:5] + x[0:4]              # overlapping views of one array
        x[0:4] += x[2:6]                 # an in-place write overlapping its other operand
        assert w._store is store         # the update went into w's own buffer
        return [w, u, y, x]

    eager, queued, _ = _eager_and_lazy(run)
    _same(eager, queued)
    assert queued[0].tolist() == (w0 - 0.5).tolist()


def test_an_array_read_where_its_new_value_is_not_written_goes_through_a_temporary():
    def run():
        w = mx.nd.ones((1, 3))
        s = mx.nd.zeros((2, 3)) + w        # reads w broadcast to another shape
        u = w * 2                          # reads w, but the write below does not wait for it
        w[:] = w + 4
        return [w, s, u]

    eager, queued, counts = _eager_and_lazy(run)
    _same(eager, queued)
    assert [x.tolist() for x in queued] == [[[5.0] * 3], [[1.0] * 3] * 2, [[2.0] * 3]]
    assert counts["compiles"] == 1


def _mlp_executor(seed=0):
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(
        mx.sym.Variable("data"), num_hidden=16, name="fc1"), act_type="relu"), num_hidden=4, name="fc2"),
        name="softmax")
    ex = net.simple_bind(mx.cpu(), data=(8, 10))
    rng = np.random.default_rng(seed)
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    for n in params:
        ex.arg_dict[n][:] = rng.uniform(-0.3, 0.3, ex.arg_dict[n].shape)
    ex.arg_dict["data"][:] = rng.normal(size=(8, 10))
    ex.arg_dict["softmax_label"][:] = rng.integers(0, 4, 8)
    return ex, params


def _train(step, steps=4):
    """The weights after each step and the engine's counts of each step's queue."""
    ex, params = _mlp_executor()
    seen = []
    for _ in range(steps):
        ex.forward(is_train=True)
        ex.backward()
        lazy.reset_stats()
        step(ex, params)
        mx.nd.waitall()
        seen.append(([ex.arg_dict[n].asnumpy() for n in params], lazy.stats()))
    return seen


def _sgd_in_place(ex, params):
    for n in params:
        ex.arg_dict[n][:] -= 0.1 * (ex.grad_dict[n] * 0.125)


def _sgd_assigned(ex, params):
    for n in params:
        w = ex.arg_dict[n]
        w[:] = w - 0.1 * ex.grad_dict[n]


@pytest.mark.parametrize("step", [_sgd_in_place, _sgd_assigned])
def test_hand_sgd_step_is_one_program_compiled_once_and_matches_eager(step):
    with lazy.enabled(False):
        eager = _train(step)
    with lazy.enabled(True):
        queued = _train(step)
    for (we, _), (wq, counts) in zip(eager, queued):
        _same(we, wq)
        assert counts["flushes"] == 1
    first, second, third = (counts for _, counts in queued[:3])
    assert first["replayed"] > 0 and first["programs"] == 0        # a new sequence runs call by call
    assert second["programs"] == 1 and second["compiles"] == 1     # seen again: one program
    assert third["programs"] == 1 and third["compiles"] == 0 and third["replayed"] == 0


def test_updater_loop_queues_each_steps_updates_and_matches_eager():
    def run():
        ex, params = _mlp_executor(1)
        updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-4,
                                                            rescale_grad=1 / 8))
        seen = []
        for _ in range(3):
            ex.forward(is_train=True)
            ex.backward()
            lazy.reset_stats()
            for k, n in enumerate(params):
                updater(k, ex.grad_dict[n], ex.arg_dict[n])
            assert lazy.stats()["flushes"] == 0
            values = [ex.arg_dict[n].asnumpy() for n in params]
            seen.append((values + [updater.states[k].asnumpy() for k in range(len(params))], lazy.stats()))
        return seen, len(params)

    with lazy.enabled(False):
        eager, _ = run()
    with lazy.enabled(True):
        queued, n = run()
    for (we, _), (wq, counts) in zip(eager, queued):
        _same(we, wq)
        assert counts["updates"] == n and counts["flushes"] == 1


def test_autograd_recording_runs_at_once_and_its_gradients_hold():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with lazy.enabled():
        x2 = x * 1.0 + 0.0             # pending when the recording starts
        lazy.reset_stats()
        with mx.autograd.record():
            y = (x * x2 * 3).sum()
        assert lazy.stats()["queued"] == 0
        y.backward()
        assert x.grad.asnumpy().tolist() == [3.0, 6.0, 9.0]      # x2 is a constant of the recording


def test_settings_switch_the_engine():
    from symjit.config import Config
    assert Config.from_env({"SYMJIT_LAZY": "1"}).lazy and not Config.from_env({"SYMJIT_LAZY": "0"}).lazy
    assert Config.from_env({}).lazy is Config.lazy
    with pytest.raises(mx.MXNetError, match="SYMJIT_LAZY"):
        Config.from_env({"SYMJIT_LAZY": "maybe"})
    with lazy.enabled(False):
        lazy.reset_stats()
        (mx.nd.ones((2,)) + 1).wait_to_read()
        assert lazy.stats()["queued"] == 0
    assert queueable(get_op("broadcast_add")) and not queueable(get_op("dot"))
