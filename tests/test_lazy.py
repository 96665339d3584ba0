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
        with mx.np_shape(), pytest.raises(mx.MXNetError, match=r"is 0-d \(shape \(\)\)"):
            mx.nd.relu(mx.nd.ones(()))          # (compiled operators take no 0-d array)
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


def test_updater_loop_runs_each_update_at_once_and_matches_eager():
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
            assert lazy.stats()["queued"] == lazy.stats()["flushes"] == 0     # nothing waits
            values = [ex.arg_dict[n].asnumpy() for n in params]
            seen.append((values + [updater.states[k].asnumpy() for k in range(len(params))], lazy.stats()))
        return seen, len(params)

    with lazy.enabled(False):
        eager, _ = run()
    with lazy.enabled(True):
        queued, n = run()
    for (we, _), (wq, counts) in zip(eager, queued):
        _same(we, wq)
        assert counts["queued"] == counts["flushes"] == 0 and n > 0


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
    assert Config.from_env({}).lazy is True       # on by default
    with pytest.raises(mx.MXNetError, match="SYMJIT_LAZY"):
        Config.from_env({"SYMJIT_LAZY": "maybe"})
    with lazy.enabled(False):
        lazy.reset_stats()
        (mx.nd.ones((2,)) + 1).wait_to_read()
        assert lazy.stats()["queued"] == 0
    assert queueable(get_op("broadcast_add")) and not queueable(get_op("dot"))




# -- the fast path: queues following the remembered one (symjit.lazy_replay) ------------------------

def _steps(step, steps, way):
    """Each step's arrays (numpy) and counts, running ``step(state)`` on the same fresh state
    the ``way`` given (lazy on, fast path on); ``step`` returns the arrays to compare, read
    after the step (which runs its queue)."""
    on, fast = way
    rng = np.random.default_rng(0)
    state = {n: mx.nd.array(rng.normal(size=s)) for n, s in
             (("w", (6, 5)), ("g", (6, 5)), ("v", (6, 5)), ("b", (5,)), ("c", (6, 1)))}
    state["vn"] = state["v"].asnumpy()
    seen = []
    with lazy.enabled(on, replays=1, fast=fast):
        for i in range(steps):
            state["i"] = i
            lazy.reset_stats()
            arrays = step(state)
            values = [a.asnumpy() for a in arrays]
            seen.append((values, lazy.stats()))
    return seen


def _three_ways(step, steps=6):
    """``step`` eager, on the generic path and on the fast path: each step's values are equal
    bit for bit; the fast path's counts per step (the generic path followed nothing)."""
    eager = _steps(step, steps, (False, None))
    generic = _steps(step, steps, (True, False))
    fast = _steps(step, steps, (True, True))
    for (e, _), (g, counts), (f, _) in zip(eager, generic, fast):
        _same(e, g)
        _same(e, f)
        assert counts["followed"] == 0
    return [counts for _, counts in fast]


def _sgd_step(state):
    w, g, b = state["w"], state["g"], state["b"]
    w[:] -= 0.1 * g
    b[:] = b - 0.5 * b
    return [w, b]


def test_fast_path_follows_a_loops_queue_and_matches_eager_and_the_generic_path_bit_for_bit():
    counts = _three_ways(_sgd_step)
    assert counts[0]["followed"] == 0                   # nothing remembered yet: the generic path
    for c in counts[2:]:                                # then each step follows the last one's
        assert c["followed"] == c["queued"] == 5 and c["programs"] == c["flushes"] == 1
        assert c["diverged"] == c["compiles"] == c["replayed"] == 0


def test_fast_path_on_the_examples_hand_sgd_runs_one_program_per_step():
    with lazy.enabled(False):
        eager = _train(_sgd_in_place, steps=5)
    with lazy.enabled(True):
        fast = _train(_sgd_in_place, steps=5)
    for (we, _), (wq, _) in zip(eager, fast):
        _same(we, wq)
    for _, counts in fast[2:]:
        assert counts["followed"] == counts["queued"] > 0 and counts["programs"] == 1
        assert counts["diverged"] == counts["compiles"] == 0


def _diverging(change):
    """A step of four calls, the second ``change(i, t, state)``."""
    def step(state):
        w, i = state["w"], state["i"]
        t = w * 2.0
        u = change(i, t, state)
        r = u + w
        w += 1.0
        return [t, u, r, w]
    return step


@pytest.mark.parametrize("change, diverges", [
    (lambda i, t, s: t * s["v"] if i != 3 else t - s["v"], True),                  # another operator
    (lambda i, t, s: mx.nd.clip(t, a_min=-1.0, a_max=1.0 if i != 3 else 2.0), True),  # another param
    (lambda i, t, s: t * s["v"] if i != 3 else t * s["c"], True),                  # another shape
    (lambda i, t, s: t * s["v"] if i != 3 else t * t, True),                        # another data flow
    (lambda i, t, s: t * s["v"] if i != 3 else t * mx.nd.array(s["vn"]), False),   # a new array
], ids=["op", "param", "shape", "data-flow", "new-array"])
def test_a_call_that_differs_leaves_the_fast_path_and_the_queue_runs_right(change, diverges):
    counts = _three_ways(_diverging(change))
    assert counts[2]["followed"] == counts[2]["queued"] == 4 and counts[2]["programs"] == 1
    if diverges:     # the differing call and the rest take the generic path
        assert counts[3]["diverged"] == 1 and counts[3]["followed"] == 1
    else:            # a new array of the remembered shape, apart from the others: the same buffer
        assert counts[3]["diverged"] == 0 and counts[3]["followed"] == 4
    assert counts[5]["followed"] == 4 and counts[5]["diverged"] == 0


def test_a_read_in_the_middle_of_a_followed_queue_hands_it_to_the_generic_path():
    def step(state):
        w, v, i = state["w"], state["v"], state["i"]
        t = w * v
        if i == 3:
            t.asnumpy()             # a read where the remembered queue went on
        u = t + 1.0
        w[:] = u * 0.5
        return [t, u, w]

    counts = _three_ways(step)
    assert counts[2]["followed"] == 4 and counts[2]["flushes"] == 1
    assert counts[3]["diverged"] == 1 and counts[3]["flushes"] == 2 and counts[3]["followed"] == 1
    assert counts[4]["followed"] == 4 and counts[4]["diverged"] == 0


def test_an_output_kept_where_the_remembered_queue_dropped_it_falls_back():
    def step(state):
        w, v, i = state["w"], state["v"], state["i"]
        t = w * v                   # dropped by every step but the fourth, which reads it after
        w[:] = t + w
        return [w, t] if i == 3 else [w]

    counts = _three_ways(step)
    assert counts[2]["followed"] == 3 and counts[2]["programs"] == 1
    assert counts[3]["diverged"] == 1 and counts[3]["followed"] == 3
    assert counts[5]["followed"] == 3 and counts[5]["diverged"] == 0


def test_new_arrays_each_step_take_the_fast_path_but_not_two_over_the_same_memory():
    def step(state):
        i = state["i"]
        x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4) + i)    # new each step
        y = x * 2.0 + 1.0
        z = mx.nd.array(np.ones((3, 4), np.float32)) if i != 3 else x.reshape((3, 4))
        return [y, y + z]

    counts = _three_ways(step)
    assert counts[2]["followed"] == 3 and counts[2]["programs"] == 1
    assert counts[3]["diverged"] == 1 and counts[3]["followed"] == 2     # z is x's memory
    assert counts[5]["followed"] == 3


def test_a_view_of_a_queued_result_where_an_array_was_expected_falls_back():
    def step(state):
        w, v, i = state["w"], state["v"], state["i"]
        t = w * 2.0
        u = (v if i != 3 else t[:]) + 1.0       # t[:]: a view of the pending t
        return [t, u]

    counts = _three_ways(step)
    assert counts[2]["followed"] == 2
    assert counts[3]["diverged"] == 1 and counts[3]["flushes"] == 2


def test_a_failing_followed_program_names_its_operators(monkeypatch):
    from symjit import lazy_replay
    a = mx.nd.array([1.0, 2.0, 3.0])
    with lazy.enabled(True):
        for _ in range(3):
            (mx.nd.broadcast_mul(a, a) + a).asnumpy()

        def fail(trace, cur):
            raise mx.MXNetError("a kernel failed")
        monkeypatch.setattr(lazy_replay, "_run_program", fail)
        lazy.reset_stats()
        y = mx.nd.broadcast_mul(a, a) + a
        assert lazy.stats()["followed"] == 2
        with pytest.raises(mx.MXNetError, match=r"broadcast_mul, broadcast_add.*a kernel failed"):
            y.asnumpy()


def test_a_shape_error_in_a_followed_queue_still_names_the_operator():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((2, 3))
    with lazy.enabled(True):
        for _ in range(3):
            (a * b + a).asnumpy()
        lazy.reset_stats()
        t = a * b
        assert lazy.stats()["followed"] == 1
        with pytest.raises(mx.MXNetError, match=r"broadcast_add.*\(2, ?3\).*\(4,?\)"):
            mx.nd.broadcast_add(t, mx.nd.ones((4,)))
        assert t.asnumpy().tolist() == [[1.0] * 3] * 2


def test_a_single_call_then_a_read_runs_at_once_once_it_repeats():
    x = mx.nd.array([-1.0, 2.0])
    with lazy.enabled(True):
        lazy.reset_stats()
        values = [mx.nd.relu(x).asnumpy().tolist() for _ in range(4)]
        counts = lazy.stats()
        assert (x * 3.0).asnumpy().tolist() == [-3.0, 6.0]       # another call queues
        assert lazy.stats()["queued"] == 3
    assert values == [[0.0, 2.0]] * 4
    assert counts["queued"] == 2 and counts["eager"] == 2


def test_queues_of_elementwise_calls_compile_flat_and_broadcasts_do_not():
    x = mx.nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    r = mx.nd.array(np.arange(4, dtype=np.float32))
    for run, flat in ((lambda: x * 2.0 + x, True), (lambda: x * 2.0 + r, False)):
        with lazy.enabled(False):
            eager = run().asnumpy()
        with lazy.enabled(True, replays=0):
            lazy.ENGINE.programs.clear()
            np.testing.assert_array_equal(run().asnumpy(), eager)
            assert [p.flat for p in lazy.ENGINE.programs.values()] == [flat]


def test_an_array_updated_in_place_is_written_directly_by_a_kernel_taking_it_once():
    n = 8192
    w0 = np.linspace(-1, 1, n, dtype=np.float32).reshape(n // 8, 8)
    g = mx.nd.array(np.ones_like(w0))

    def run():
        w = mx.nd.array(w0)
        w[:] -= 0.25 * g
        return [w]

    lazy.ENGINE.programs.clear()
    eager, queued, counts = _eager_and_lazy(run)
    _same(eager, queued)
    assert counts["programs"] == 1
    (program,) = lazy.ENGINE.programs.values()
    assert program.direct == [True]
    compiled = program.bound.compiled
    w_value = compiled.graph.args[f"b{program.outs[0]}"]
    assert compiled.program.kernels and all(     # w read and written under one name
        compiled.graph.outputs[0] not in ids for ids in compiled.program.kernels.values())
    assert any(w_value in ids for ids in compiled.program.kernels.values())


def test_updates_after_a_followed_queue_run_it_first():
    w, g = mx.nd.ones((3,)), mx.nd.ones((3,))
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.5))
    with lazy.enabled(True):
        for _ in range(3):
            w[:] = w * 2.0 + 1.0
            w.wait_to_read()
        lazy.reset_stats()
        w[:] = w * 2.0 + 1.0
        assert lazy.stats()["followed"] == 3
        updater(0, g, w)                    # the queued arithmetic runs first, then the update
        assert lazy.stats()["flushes"] == 1 and w._store.tolist() == [30.5] * 3


def test_a_stream_of_calls_longer_than_a_queue_follows_queue_after_queue():
    def run():
        x, y = mx.nd.zeros((5,)), mx.nd.ones((5,))
        for _ in range(3 * lazy.MAX_OPS + 10):
            x += y
        return [x]

    eager, queued, counts = _eager_and_lazy(run, replays=1)
    _same(eager, queued)
    assert queued[0].tolist() == [3.0 * lazy.MAX_OPS + 10] * 5
    assert counts["followed"] >= lazy.MAX_OPS and counts["programs"] >= 1
