"""``Config.program_calls`` (``SYMJIT_PROGRAM_CALLS``): how many kernel calls of a CPU program step
run through one compiled program function before the executor calls them one by one."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.compiler.codegen.generate import PROGRAM_CALLS_LIMIT
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config
from symjit.executor import Executor


def _net():
    x = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=6, name="fc1"), act_type="tanh")
    h = mx.sym.FullyConnected(h, num_hidden=5, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


SHAPES = {"data": (4, 3), "fc1_weight": (6, 3), "fc1_bias": (6,), "fc2_weight": (5, 6),
          "fc2_bias": (5,), "softmax_label": (4,)}


def _kinds(program_calls):
    net = _net()
    c = compile_symbol(net, SHAPES, {n: np.float32 for n in SHAPES}, {"fc1_weight": "write"}, True,
                       Config(cache=False, program_calls=program_calls), target="cpu", load=False)
    return {phase: [(s.kind, len(s.launches)) for s in segs] for phase, segs in c.program.segments.items()}


def test_environment_setting_is_read_and_checked():
    assert Config.from_env({}).program_calls is None
    assert Config.from_env({"SYMJIT_PROGRAM_CALLS": "0"}).program_calls == 0
    assert Config.from_env({"SYMJIT_PROGRAM_CALLS": "40"}).program_calls == 40
    for bad in ("-1", "two", "1.5", "\u00b2"):
        with pytest.raises(MXNetError, match=f"SYMJIT_PROGRAM_CALLS={bad!r}"):
            Config.from_env({"SYMJIT_PROGRAM_CALLS": bad})


def test_a_step_longer_than_the_limit_calls_its_kernels_from_the_host():
    default = _kinds(None)
    assert all(k == "njit" for segs in default.values() for k, _ in segs), default
    calls = {phase: n for phase, segs in default.items() for _, n in segs}
    assert PROGRAM_CALLS_LIMIT >= max(calls.values()) > 1, calls
    assert _kinds(0) == {phase: [("calls", n)] for phase, n in calls.items()}
    shortest = min(calls.values())
    assert _kinds(shortest) == {phase: [("njit" if n <= shortest else "calls", n)]
                                for phase, n in calls.items()}


def test_host_called_kernels_compute_what_the_program_function_computes():
    rng = np.random.default_rng(0)
    arrays = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in SHAPES.items()}
    arrays["softmax_label"] = np.array([0, 4, 2, 1], np.float32)
    results = []
    for program_calls in (None, 0):
        args = {n: mx.nd.array(a) for n, a in arrays.items()}
        grads = {n: mx.nd.zeros(SHAPES[n]) for n in ("fc1_weight", "fc2_bias")}
        reqs = {n: ("write" if n in grads else "null") for n in SHAPES}
        ex = Executor(_net(), mx.cpu(), args, grads, reqs, None,
                      config=Config.from_env().replace(program_calls=program_calls))
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward()
        kinds = {s.kind for segs in ex._program("train").program.segments.values() for s in segs}
        assert kinds == {"calls" if program_calls == 0 else "njit"}, kinds
        results.append([out] + [ex.grad_dict[n].asnumpy() for n in sorted(grads)])
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)
    assert np.abs(results[0][1]).sum() > 0


def _elementwise():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    return mx.sym.tanh(mx.sym.broadcast_mul(mx.sym.exp(a), b) + a)


def _with_sum():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    return mx.sym.broadcast_add(mx.sym.broadcast_mul(mx.sym.sum(mx.sym.exp(a), axis=1, keepdims=True), b), a)


@pytest.mark.parametrize("shape", [(3, 4), (300, 400)])
@pytest.mark.parametrize("make", [_elementwise, _with_sum])
def test_elementwise_and_reduction_programs_call_their_kernels_from_the_host(shape, make):
    """A program of only elementwise, broadcast and reduction groups runs its kernels from the host
    by default, small or big (no program function to compile), computing what the program
    functions compute, bit for bit; a program with a GEMM keeps its program functions (the test
    above)."""
    rng = np.random.default_rng(1)
    arrays = {"a": rng.uniform(-1, 1, shape).astype(np.float32),
              "b": rng.uniform(-1, 1, (1, shape[1])).astype(np.float32)}
    head = rng.uniform(-1, 1, shape).astype(np.float32)
    results = []
    for program_calls in (None, PROGRAM_CALLS_LIMIT):
        args = {n: mx.nd.array(a) for n, a in arrays.items()}
        grads = {n: mx.nd.zeros(a.shape) for n, a in arrays.items()}
        ex = Executor(make(), mx.cpu(), args, grads, "write", None,
                      config=Config.from_env().replace(program_calls=program_calls, interpret_calls=0))
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward(mx.nd.array(head))
        segs = [s for segs in ex._program("train").program.segments.values() for s in segs]
        # a one-kernel step calls it from the host whatever the limit (no program function)
        assert [s.kind for s in segs] == ["calls" if program_calls is None or len(s.launches) == 1
                                          else "njit" for s in segs], segs
        assert program_calls is None or any(s.kind == "njit" for s in segs)
        results.append([out] + [ex.grad_dict[n].asnumpy() for n in ("a", "b")])
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)
    assert np.abs(results[0][2]).sum() > 0


def test_a_one_kernel_step_calls_its_kernel_from_the_host():
    """A step of one kernel call has no program function, even in a program with a hand-written
    kernel (BatchNorm's), which keeps program functions for its longer steps: the function would
    only call that kernel, and compiling it would link and optimise the kernel a second time."""
    net = mx.sym.BatchNorm(mx.sym.Variable("data"), fix_gamma=False, eps=1e-3, name="bn")
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (6, 4)).astype(np.float64)
    gamma, beta = rng.uniform(0.5, 1.5, 4), rng.uniform(-1, 1, 4)
    head = rng.uniform(-1, 1, (6, 4))
    cfg = Config.from_env().replace(program_calls=PROGRAM_CALLS_LIMIT, interpret_calls=0)
    args = {"data": mx.nd.array(x, dtype="float64"), "bn_gamma": mx.nd.array(gamma, dtype="float64"),
            "bn_beta": mx.nd.array(beta, dtype="float64")}
    grads = {n: mx.nd.zeros(a.shape, dtype="float64") for n, a in args.items()}
    aux = {"bn_moving_mean": mx.nd.zeros((4,), dtype="float64"),
           "bn_moving_var": mx.nd.ones((4,), dtype="float64")}
    ex = Executor(net, mx.cpu(), args, grads, "write", aux, config=cfg)
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(mx.nd.array(head, dtype="float64"))
    steps = {phase: [(s.kind, len(s.launches)) for s in segs]
             for phase, segs in ex._program("train").program.segments.items()}
    assert steps == {"forward": [("calls", 1)], "backward": [("calls", 1)]}, steps
    xhat = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3)
    np.testing.assert_allclose(out, gamma * xhat + beta, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ex.grad_dict["bn_beta"].asnumpy(), head.sum(0), rtol=1e-12)
    np.testing.assert_allclose(ex.grad_dict["bn_gamma"].asnumpy(), (head * xhat).sum(0), rtol=1e-12)
    dx = gamma / np.sqrt(x.var(0) + 1e-3) * (head - head.mean(0) - xhat * (head * xhat).mean(0))
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), dx, rtol=1e-10, atol=1e-12)


def test_programs_differing_only_in_consts_share_their_program_function():
    """A program function takes its kernels' consts as arguments: two binds that differ only in a
    softmax's temperature compile one program module, and each computes with its own value."""
    x = mx.sym.Variable("data")
    shapes = {"data": (3, 4), "fc_weight": (5, 4), "fc_bias": (5,)}
    rng = np.random.default_rng(3)
    arrays = {n: rng.uniform(-1, 1, s) for n, s in shapes.items()}
    sources = set()
    for t in (2.0, 3.0):
        net = mx.sym.softmax(mx.sym.FullyConnected(mx.sym.exp(x), num_hidden=5, name="fc"), temperature=t)
        cfg = Config.from_env().replace(program_calls=PROGRAM_CALLS_LIMIT, interpret_calls=0)
        ex = Executor(net, mx.cpu(), {n: mx.nd.array(a, dtype="float64") for n, a in arrays.items()},
                      None, "null", None, config=cfg)
        out = ex.forward()[0].asnumpy()
        prog = ex._program("infer").program
        seg, = prog.segments["forward"]
        assert seg.kind == "njit" and seg.consts, (seg.kind, seg.consts)
        sources.add(prog.module_source)
        z = np.exp(arrays["data"]) @ arrays["fc_weight"].T + arrays["fc_bias"]
        want = np.exp(z / t - (z / t).max(1, keepdims=True))
        np.testing.assert_allclose(out, want / want.sum(1, keepdims=True), rtol=1e-12)
    assert len(sources) == 1
