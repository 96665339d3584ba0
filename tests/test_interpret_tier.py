"""The interpreted tier (symjit.compiler.tier): a small CPU program's first forward passes run its
kernels as plain Python, with the compiled program's results, then it compiles."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.compiler import tier
from symjit.compiler.tier import INTERPRET_ELEMENTS, kernel_functions
from symjit.config import Config
from symjit.executor import Executor

from .cases import cases_by_family
from .opcheck import bind_case, head_grads_for


def _cfg(**changes) -> Config:
    return Config.from_env().replace(**{"interpret": True, "interpret_calls": None, **changes})


def _graph():
    x, y, b = mx.sym.Variable("x"), mx.sym.Variable("y"), mx.sym.Variable("b")
    z = mx.sym.tanh(x) * mx.sym.exp(y * 0.5) - y / 3.0
    return mx.sym.broadcast_add(mx.sym.broadcast_add(z, b), mx.sym.sum(z, axis=1, keepdims=True))


def _bind(sym, values: dict, cfg: Config, grad_req="write") -> Executor:
    args = {n: mx.nd.array(v, dtype=v.dtype) for n, v in values.items()}
    grads = {n: mx.nd.ones(v.shape, dtype=v.dtype) for n, v in values.items()}
    return Executor(sym, mx.cpu(), args, grads, grad_req, config=cfg)


def _pass(ex: Executor, head: np.ndarray) -> tuple[np.ndarray, dict]:
    out = ex.forward(is_train=True)[0].asnumpy().copy()
    ex.backward(mx.nd.array(head, dtype=head.dtype))
    return out, {n: g.asnumpy().copy() for n, g in ex.grad_dict.items()}


def _values(dtype, seed=0) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-2, 2, (3, 4)).astype(dtype), "y": rng.uniform(-2, 2, (3, 4)).astype(dtype),
            "b": rng.uniform(-1, 1, (1, 4)).astype(dtype)}


def _loaded(ex: Executor, mode: str = "train") -> bool:
    """Whether the program's compiled (numba) module was imported: nothing compiles without it."""
    return ex._programs[mode].module is not None


def _same(got: np.ndarray, want: np.ndarray, dtype) -> None:
    """float64: the same to an ulp (the same IEEE operations, the same libm). float32: within a
    few float32 roundings of the result's scale (Python keeps some intermediates of a fused chain
    in float64 where numba rounds them to float32, which cancellation can show in ulps of a small
    result)."""
    if np.dtype(dtype) == np.float64:
        np.testing.assert_array_max_ulp(got, want, maxulp=1)
    elif np.dtype(dtype) == np.float32:
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
        np.testing.assert_allclose(got, want, rtol=0, atol=8 * np.finfo(np.float32).eps * scale)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_first_passes_run_interpreted_equal_the_compiled_ones_then_it_compiles(dtype):
    values = _values(dtype)
    head = np.linspace(-1, 1, 12).reshape(3, 4).astype(dtype)
    ref = _bind(_graph(), values, _cfg(interpret=False))
    assert _loaded(ref)   # the setting off: compiled at the bind
    want = [_pass(ref, head) for _ in range(2)]
    ex = _bind(_graph(), values, _cfg(interpret_calls=2))
    assert ex._tier.active("train") and not _loaded(ex)
    for (out, grads), (wout, wgrads) in zip([_pass(ex, head) for _ in range(2)], want):
        _same(out, wout, dtype)
        for n in wgrads:   # grad_req='write' over ones: each pass writes the same gradients
            _same(grads[n], wgrads[n], dtype)
    assert not _loaded(ex)   # two interpreted passes compiled nothing
    out, grads = _pass(ex, head)   # the third compiles
    assert _loaded(ex) and not ex._tier.active("train")
    _same(out, want[0][0], dtype)
    np.testing.assert_array_equal(grads["x"], _pass(ref, head)[1]["x"])   # compiled: the same kernels


def test_the_time_budget_decides_when_a_program_compiles(monkeypatch):
    """A finite-difference check's many passes over a few elements stay interpreted; a program
    whose passes have used up the budget compiles at its next forward pass."""
    values, head = _values("float64"), np.ones((3, 4))
    ex = _bind(_graph(), values, _cfg())
    for _ in range(40):
        _pass(ex, head)
    assert ex._tier.active("train") and not _loaded(ex)
    monkeypatch.setattr(tier, "INTERPRET_SECONDS", 1e-9)   # spent by one pass
    ex = _bind(_graph(), values, _cfg())
    _pass(ex, head)
    assert ex._tier.spent("train") and not _loaded(ex)
    _pass(ex, head)
    assert not ex._tier.active("train") and _loaded(ex)


def test_accumulated_gradients_and_the_inference_program():
    values = _values("float64", 1)
    head = np.ones((3, 4))
    ref = _bind(_graph(), values, _cfg(interpret=False), grad_req="add")
    ex = _bind(_graph(), values, _cfg(), grad_req="add")
    for _ in range(2):
        got, want = _pass(ex, head), _pass(ref, head)
        for n in want[1]:
            np.testing.assert_array_max_ulp(got[1][n], want[1][n], maxulp=1)
    infer = ex.forward(is_train=False)[0].asnumpy()   # the training program: no op reads the mode
    assert ex._mode(False) == "train" and ex._tier.active("train") and not _loaded(ex, "train")
    assert "infer" not in ex._programs
    np.testing.assert_array_max_ulp(infer, ref.forward(is_train=False)[0].asnumpy(), maxulp=1)


def test_a_kernel_python_cannot_run_runs_compiled_on_restored_arrays():
    """math.sqrt(negative) raises in Python where compiled code gives NaN: the kernel's arrays are
    put back (an accumulating gradient is not added twice) and the compiled kernel runs."""
    x = mx.sym.Variable("x")
    sym = mx.sym.arcsin(x)
    values = {"x": np.array([0.5, 2.0, -0.25])}
    ref = _bind(sym, values, _cfg(interpret=False), grad_req="add")
    ex = _bind(sym, values, _cfg(), grad_req="add")
    got, want = _pass(ex, np.ones(3)), _pass(ref, np.ones(3))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1]["x"], want[1]["x"])   # NaN where |x| > 1, 1 + g elsewhere
    assert np.isnan(got[1]["x"][1]) and got[1]["x"][0] == want[1]["x"][0] != 1.0
    assert ex._tier.spent("train")   # it compiles at its next forward pass
    _pass(ex, np.ones(3))
    assert not ex._tier.active("train") and _loaded(ex)


def test_a_data_check_raises_the_same_error_interpreted():
    a, i = mx.sym.Variable("a"), mx.sym.Variable("i")
    sym = mx.sym.take(a, i, mode="raise", name="tk")
    errors = []
    for cfg in (_cfg(), _cfg(interpret=False)):
        ex = Executor(sym, mx.cpu(), {"a": mx.nd.ones((3, 4)), "i": mx.nd.array([1.0, 4.0])}, None, "null",
                      config=cfg)
        assert ex._tier.active("infer") == cfg.interpret
        with pytest.raises(MXNetError) as err:
            ex.forward()[0].asnumpy()
        errors.append((type(err.value), str(err.value)))
        ex.arg_dict["i"][:] = np.array([1.0, 2.0])   # good data runs
        np.testing.assert_array_equal(ex.forward()[0].asnumpy(), np.ones((2, 4)))
    assert errors[0] == errors[1] and "take 'tk'" in errors[0][1]


def test_hand_written_kernels_and_large_values_are_compiled():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    fc = mx.sym.FullyConnected(x, w, num_hidden=3, no_bias=True)
    ex = _bind(fc, {"x": np.ones((2, 4)), "w": np.ones((3, 4))}, _cfg())
    assert kernel_functions(ex._programs["train"]) is None
    assert not ex._tier.active("train") and _loaded(ex)
    big = _bind(mx.sym.exp(x), {"x": np.zeros(INTERPRET_ELEMENTS + 1)}, _cfg())
    assert not big._tier.active("train") and _loaded(big)
    small = _bind(mx.sym.sum(mx.sym.exp(x), axis=0), {"x": np.zeros((4, 3))}, _cfg())
    assert small._tier.active("train")   # reductions run their kernels' Python forms
    unread = _bind(mx.sym.Group([mx.sym.exp(x), mx.sym.BlockGrad(w)]),
                   {"x": np.zeros((4, 3)), "w": np.zeros(INTERPRET_ELEMENTS + 1)}, _cfg(), grad_req="null")
    assert not unread._tier.active("train")        # w is read (BlockGrad copies it): too big
    only_shape = _bind(mx.sym.exp(x), {"x": np.zeros((4, 3))}, _cfg())
    assert only_shape._tier.active("train")


def test_an_argument_no_operator_reads_does_not_count_against_the_size():
    from symjit.compiler.tier import small
    x, pad = mx.sym.Variable("x"), mx.sym.Variable("pad")
    cut = mx.sym.slice_axis(mx.sym.concat(x, pad, dim=0), axis=0, begin=0, end=4)   # x itself
    ex = _bind(mx.sym.exp(cut), {"x": np.zeros((4, 3)), "pad": np.zeros((INTERPRET_ELEMENTS, 3))}, _cfg(),
               grad_req={"x": "write", "pad": "null"})
    assert small(ex._programs["train"]) and ex._tier.active("train")


def test_the_settings():
    assert Config.from_env({}).interpret and Config.from_env({}).interpret_calls is None
    assert not Config.from_env({"SYMJIT_INTERPRET": "0"}).interpret
    assert Config.from_env({"SYMJIT_INTERPRET_CALLS": "7"}).interpret_calls == 7
    with pytest.raises(MXNetError, match="SYMJIT_INTERPRET_CALLS"):
        Config.from_env({"SYMJIT_INTERPRET_CALLS": "many"})
    ex = _bind(mx.sym.exp(mx.sym.Variable("x")), {"x": np.zeros(3)}, _cfg(interpret_calls=0))
    assert not ex._tier.active("train") and _loaded(ex)


ELEMENTWISE = ("elemwise", "elemwise_math", "broadcast", "reduce")


@pytest.mark.parametrize("case", [cases_by_family()[f][0] for f in ELEMENTWISE], ids=str)
def test_op_cases_interpreted_equal_compiled(case):
    """The first case of each elementwise family: forward and gradients of the interpreted program
    equal the compiled program's."""
    runs = []
    for interpret in (True, False):
        ex, _, wrt = bind_case(case, interpret=interpret)
        assert ex._tier.active("train" if wrt else "infer") == interpret
        outs = [o.asnumpy().copy() for o in ex.forward(is_train=True)]
        if wrt:
            ex.backward([mx.nd.array(h, dtype=h.dtype) for h in head_grads_for(outs)])
        runs.append(outs + [ex.grad_dict[n].asnumpy().copy() for n in wrt])
    for got, want in zip(*runs):
        _same(got, want, got.dtype)
