"""Program functions compiled once a program is run often (symjit.compiler.program_tier): a bind
compiles its kernels, and a step whose program function numba's cache lacks calls its kernels from
the host until the program has run ``Config.program_runs`` forward passes; then the program
functions compile and run. The results are the program functions' own, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.config import Config
from symjit.executor import Executor

SHAPES = {"data": (2, 3, 6, 6), "conv_weight": (4, 3, 3, 3), "conv_bias": (4,),
          "fc_weight": (5, 144), "fc_bias": (5,), "softmax_label": (2,)}


def _net(act: str):
    x = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv"),
                          act_type=act)
    h = mx.sym.FullyConnected(mx.sym.flatten(h * 1.375), num_hidden=5, name="fc")   # a rare program
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _executor(cfg: Config, act: str = "relu") -> tuple[Executor, dict]:
    """An executor of the test net (a program no other test of this process compiles: ``act``)."""
    rng = np.random.default_rng(3)
    args = {n: mx.nd.array(rng.uniform(-1, 1, s).astype(np.float32)) for n, s in SHAPES.items()}
    args["softmax_label"] = mx.nd.array([1, 4])
    grads = {n: mx.nd.zeros(s) for n, s in SHAPES.items() if n not in ("data", "softmax_label")}
    return Executor(_net(act), mx.cpu(), args, grads, "write", None, config=cfg), grads


def _pass(ex: Executor, grads: dict) -> list[np.ndarray]:
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward()
    return [out] + [grads[n].asnumpy() for n in sorted(grads)]


def test_environment_setting_is_read_and_checked():
    assert Config.from_env({}).program_runs == 8
    assert Config.from_env({"SYMJIT_PROGRAM_RUNS": "0"}).program_runs == 0
    with pytest.raises(MXNetError, match="SYMJIT_PROGRAM_RUNS='-2'"):
        Config.from_env({"SYMJIT_PROGRAM_RUNS": "-2"})


def test_steps_call_their_kernels_until_the_program_is_a_loop(tmp_path):
    cfg = Config.from_env().replace(cache_dir=tmp_path, program_runs=3, aot="off")
    ex, grads = _executor(cfg)
    later = ex._later.deferred("train")
    module = ex._program("train").module
    segments = [s for segs in ex._program("train").program.segments.values() for s in segs]
    assert later and later <= {s.name for s in segments if s.kind == "njit"}, (later, segments)
    assert all(not getattr(module, n).overloads for n in later)       # nothing linked at the bind
    first = [_pass(ex, grads) for _ in range(2)]
    assert ex._later.deferred("train") == later
    assert all(not getattr(module, n).overloads for n in later)
    rest = [_pass(ex, grads) for _ in range(3)]     # the third forward pass compiles them
    assert not ex._later.deferred("train")
    assert all(getattr(module, n).overloads for n in later)
    # the same program compiled at its bind: the same numbers on every pass
    now, now_grads = _executor(cfg.replace(program_runs=0))
    assert not now._later.deferred("train")
    for got in first + rest:
        for a, b in zip(got, _pass(now, now_grads)):
            np.testing.assert_array_equal(a, b)


def test_a_program_function_in_the_cache_runs_from_the_bind(tmp_path):
    cfg = Config.from_env().replace(cache_dir=tmp_path, program_runs=1, aot="off")
    ex, grads = _executor(cfg, "sigmoid")
    assert ex._later.deferred("train")
    _pass(ex, grads)                    # one pass: a loop for this setting, so it compiles
    assert not ex._later.deferred("train")
    again, _ = _executor(cfg.replace(program_runs=50), "sigmoid")
    assert not again._later.deferred("train")


def test_a_bound_program_calls_its_kernels_until_its_runs_took_long_enough(tmp_path, monkeypatch):
    """An imperative call's or a lazy queue's program (``BoundProgram``) links its kernels into a
    program function only once it has run ``program_runs`` times and those runs took
    ``HOSTED_SECONDS``: the same results before and after, bit for bit."""
    import symjit.imperative_bound as bound
    from symjit.compiler.codegen.generate import PROGRAM_CALLS_LIMIT
    from symjit.compiler.pipeline import compile_symbol
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sym = mx.sym.sum(mx.sym.exp(a) * 1.625, axis=1, keepdims=True) + mx.sym.sinh(b)   # a rare program
    cfg = Config.from_env().replace(cache_dir=tmp_path, program_runs=2, aot="off",
                                    program_calls=PROGRAM_CALLS_LIMIT)
    shapes = {"a": (3, 5), "b": (3, 1)}
    c = compile_symbol(sym, shapes, {n: np.float32 for n in shapes}, {}, False, cfg)
    assert any(s.kind == "njit" for s in c.program.segments["forward"])
    prog = bound.BoundProgram(c, ["a", "b"], mx.cpu(), "test", cfg)
    later = [name for _, name in prog._later]
    assert later and all(not getattr(c.module, n).overloads for n in later)
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-1, 1, (3, 5)).astype(np.float32), rng.uniform(-1, 1, (3, 1)).astype(np.float32)

    def run() -> np.ndarray:
        out = np.empty((3, 1), np.float32)
        prog.run([x, y, out])
        return out
    monkeypatch.setattr(bound, "HOSTED_SECONDS", 3600.0)
    hosted = [run() for _ in range(5)]          # run often, but not for long: still the kernels
    assert prog._later and all(not getattr(c.module, n).overloads for n in later)
    monkeypatch.setattr(bound, "HOSTED_SECONDS", 0.0)
    linked = [run() for _ in range(2)]
    assert not prog._later and all(getattr(c.module, n).overloads for n in later)
    for got in hosted + linked:
        np.testing.assert_array_equal(got, hosted[0])
    np.testing.assert_allclose(hosted[0], (np.exp(x) * 1.625).sum(axis=1, keepdims=True) + np.sinh(y),
                               rtol=1e-5)
