"""The fast paths of a recorded training loop: repeated recorded ``mx.nd`` calls, the compiled
backward called on the recording's own buffers, gradients written into the gradient buffers."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit import autograd as ag
from symjit.imperative_bound import BoundProgram

RNG = np.random.default_rng(7)
W0 = RNG.standard_normal((5, 4)).astype(np.float32)
B0 = RNG.standard_normal(5).astype(np.float32)


@pytest.fixture(autouse=True)
def _compiled_at_once(monkeypatch):
    """Programs compile at their bind (no interpreted first passes), so the second step of a
    loop already runs the compiled backward on the recording's buffers."""
    monkeypatch.setenv("SYMJIT_INTERPRET", "0")


def _params(req: str = "write") -> tuple[mx.nd.NDArray, mx.nd.NDArray]:
    w, b = mx.nd.array(W0), mx.nd.array(B0)
    w.attach_grad(req)
    b.attach_grad(req)
    return w, b


def _step(x: np.ndarray, w: mx.nd.NDArray, b: mx.nd.NDArray, out_grad=None) -> mx.nd.NDArray:
    with ag.record():
        h = mx.nd.relu(mx.nd.FullyConnected(mx.nd.array(x), w, b, num_hidden=5))
        loss = mx.nd.sum(h * h)
    loss.backward(out_grad)
    return h


def _expected(x: np.ndarray, w: np.ndarray, b: np.ndarray, scale: float = 1.0) -> tuple:
    z = x @ w.T + b
    dz = scale * 2 * np.maximum(z, 0) * (z > 0)
    return dz.T @ x, dz.sum(0)


def _close(got: mx.nd.NDArray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_a_loop_compiles_its_backward_once_and_runs_it_on_its_own_buffers():
    w, b = _params()
    grads = (w.grad, b.grad)
    before = ag.compiles()
    for _ in range(4):
        x = RNG.standard_normal((3, 4)).astype(np.float32)
        h = _step(x, w, b)
        dw, db = _expected(x, W0, B0)
        _close(w.grad, dw)
        _close(b.grad, db)
        assert h._ag_node[0].op == "relu" and h._ag_node[0].held is None     # freed
        assert (w.grad, b.grad) == grads                      # the same buffers, written
    assert ag.compiles() - before == 1
    prog = list(ag._PROGRAMS.values())[-1]
    assert isinstance(prog, ag._HeldProgram) and isinstance(prog.direct, BoundProgram)


def test_repeated_recorded_calls_leave_the_entries_of_the_first_call():
    """A repeated call under record() takes the fast path: its entry has the same operator,
    params and structure key as the first call's, and its value is the same."""
    x = mx.nd.array([[1.0, -2.0], [3.0, 0.5]])
    x.attach_grad()
    entries, values = [], []
    for _ in range(3):
        with ag.record():
            y = mx.nd.log_softmax(x, axis=1)
        entries.append(y._ag_node[0])
        values.append(y.asnumpy())
        y.backward()
    first = entries[0]
    for e in entries[1:]:
        assert (e.op, e.params, e.n_out, e.train) == (first.op, first.params, first.n_out, first.train)
        assert e.sig == ("log_softmax", (("axis", "1"),), True)
    np.testing.assert_array_equal(values[0], values[2])
    with ag.record(train_mode=False):           # another mode: an entry of its own mode
        y = mx.nd.log_softmax(x, axis=1)
    assert y._ag_node[0].train is False
    y.backward()
    with ag.record():                           # a constant input: nothing recorded
        c = mx.nd.log_softmax(mx.nd.array([[1.0, 2.0]]), axis=1)
        c2 = mx.nd.log_softmax(mx.nd.array([[1.0, 2.0]]), axis=1)
    assert c._ag_node is None and c2._ag_node is None


def test_a_changed_batch_shape_and_grad_req_give_their_own_right_gradients():
    w, b = _params()
    x3 = RNG.standard_normal((3, 4)).astype(np.float32)
    x6 = RNG.standard_normal((6, 4)).astype(np.float32)
    for x in (x3, x3, x6, x6, x3):
        _step(x, w, b)
        _close(w.grad, _expected(x, W0, B0)[0])
    w, b = _params("add")
    for n in range(1, 4):
        _step(x3, w, b)
        _close(w.grad, n * _expected(x3, W0, B0)[0])
        _close(b.grad, n * _expected(x3, W0, B0)[1])


def test_leaves_written_between_steps_are_read_as_they_are_now():
    w, b = _params()
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    for scale in (1.0, 2.0, -1.0, 0.5):
        w[:] = W0 * scale          # an update between steps
        _step(x, w, b)
        _close(w.grad, _expected(x, W0 * scale, B0)[0])
    with ag.record():
        loss = mx.nd.sum(mx.nd.relu(mx.nd.FullyConnected(mx.nd.array(x), w, b, num_hidden=5)))
    b += 1.0                       # a write after the call was recorded: refused
    with pytest.raises(mx.MXNetError, match="changed in place after it was recorded"):
        loss.backward()


def test_a_gradient_buffer_the_program_reads_is_not_written_before_it_is_read():
    """The head gradient is the variable's own gradient buffer, and the gradient is its transpose
    (written in place, it would overwrite elements still to be read): the gradient goes through
    an array of the program's and is copied in afterwards."""
    x = mx.nd.array(RNG.standard_normal((3, 3)).astype(np.float32))
    x.attach_grad()
    head = np.arange(9, dtype=np.float32).reshape(3, 3)
    for _ in range(3):
        x.grad[:] = head
        with ag.record():
            y = mx.nd.transpose(x)
        y.backward(x.grad)
        _close(x.grad, head.T)


def test_a_noncontiguous_or_other_dtype_value_takes_the_copying_path():
    w, b = _params()
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    _step(x, w, b)
    for _ in range(2):
        head = mx.nd.array(np.full((3, 5), 2.0), dtype="float64")     # cast into the program
        with ag.record():
            h = mx.nd.FullyConnected(mx.nd.array(x), w, b, num_hidden=5)
        h.backward(head)
        _close(w.grad, np.full((3, 5), 2.0).T @ x)


def test_the_compiled_backward_leaves_batchnorm_running_statistics_to_the_recorded_call():
    """A gradient that computes a training BatchNorm again (for its batch statistics) reads the
    running statistics from copies: each recorded step moves them once, on the program's own
    buffers as on the first, copying step."""
    gamma, beta = mx.nd.ones((3,)), mx.nd.zeros((3,))
    mean, var = mx.nd.zeros((3,)), mx.nd.ones((3,))
    want_mean, want_var = np.zeros(3), np.ones(3)
    for _ in range(4):
        x = RNG.uniform(size=(8, 3)).astype(np.float32)
        d = mx.nd.array(x)
        d.attach_grad()
        with ag.record():
            y = mx.nd.BatchNorm(d, gamma, beta, mean, var, momentum=0.9)
            loss = mx.nd.sum(y * y)
        loss.backward()
        want_mean = 0.9 * want_mean + 0.1 * x.mean(0)
        want_var = 0.9 * want_var + 0.1 * x.var(0)
        np.testing.assert_allclose(mean.asnumpy(), want_mean, rtol=1e-5)
        np.testing.assert_allclose(var.asnumpy(), want_var, rtol=1e-5)
    prog = list(ag._PROGRAMS.values())[-1]
    assert isinstance(prog, ag._HeldProgram) and isinstance(prog.direct, BoundProgram)


def test_a_recording_with_float16_values_runs_its_float16_executor_every_step():
    """A gradient program over float16 values computes on widened copies (its executor's own
    float32 arrays), so it never runs on the recording's float16 buffers: each step's gradient is
    right, the first as the ones after it."""
    w = mx.nd.array(RNG.standard_normal((5, 3)))
    w.attach_grad()
    for _ in range(3):
        idx = RNG.integers(0, 5, size=(4,))
        data = mx.nd.array(idx, dtype="float16")
        with ag.record():
            loss = mx.nd.sum(mx.nd.Embedding(data, w, input_dim=5, output_dim=3) * 2)
        loss.backward()
        want = np.zeros((5, 3))
        np.add.at(want, idx, 2.0)
        _close(w.grad, want)


def test_dropout_and_samplers_are_recorded_each_call():
    """Calls the recorder records otherwise keep doing so when repeated: each training-mode
    Dropout draws its own mask, and its gradient is that mask."""
    x = mx.nd.ones((64,))
    x.attach_grad()
    masks = []
    for _ in range(3):
        with ag.record():
            y = mx.nd.Dropout(x, p=0.5)
        y.backward()
        masks.append(y.asnumpy())
        np.testing.assert_array_equal(x.grad.asnumpy(), y.asnumpy())
    assert not np.array_equal(masks[1], masks[2])


def test_a_thread_records_its_own_calls():
    """The recording state is the thread's own; every thread records (the fast path and the
    first call alike)."""
    import threading
    got = []

    def train():
        x = mx.nd.array([1.0, 2.0])
        x.attach_grad()
        for _ in range(3):
            with ag.record():
                y = mx.nd.relu(x) * x
            y.backward()
            got.append(x.grad.asnumpy().tolist())
    t = threading.Thread(target=train)
    t.start()
    t.join()
    assert got == [[2.0, 4.0]] * 3
    assert not ag.is_recording()
