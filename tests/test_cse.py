"""Common subexpression elimination at bind (MXNET_ELIMINATE_COMMON_EXPR, on by default)."""
import numpy as np
import pytest

import symjit as mx
from symjit.config import Config
from symjit.symbol.cse import eliminate_common_expr

A, B, C = (mx.sym.Variable(n) for n in "abc")


def _saved(sym):
    return len(sym.get_internals()) - len(eliminate_common_expr(sym).get_internals())


@pytest.mark.parametrize("build, saved", [
    (lambda: (A * 3) - (A * 4), 0),                               # different constants
    (lambda: mx.sym.exp(A - B) / mx.sym.exp(A - B), 2),           # a chain of two repeated ops
    (lambda: mx.sym.sum(A * B, axis=1) + mx.sym.sum(A * B, axis=0), 1),   # params differ above
    (lambda: mx.sym.Group([mx.sym.sin(A), mx.sym.sin(A)]), 0),    # merged, then a copy per head
    (lambda: mx.sym.Group([mx.sym.sin(A) + C, mx.sym.sin(A) + C]), 1),
    (lambda: mx.sym.Dropout(A, p=0.5) * mx.sym.Dropout(A, p=0.5), 0),   # each draws its own mask
    (lambda: mx.sym.random.uniform(shape=(2,)) + mx.sym.random.uniform(shape=(2,)), 0),
])
def test_repeated_computations_are_merged(build, saved):
    assert _saved(build()) == saved


def test_merged_heads_keep_arrays_of_their_own():
    y = mx.sym.Group([mx.sym.sin(A) * 2, mx.sym.sin(A) * 2])
    ex = y.simple_bind(mx.cpu(), a=(3,))
    assert ex.get_optimized_symbol().list_outputs() != y.list_outputs()
    assert list(ex.output_dict) == y.list_outputs()   # the bound symbol's names
    ex.arg_dict["a"][:] = np.array([0.1, 0.2, 0.3])
    o1, o2 = ex.forward()
    np.testing.assert_allclose(o1.asnumpy(), 2 * np.sin([0.1, 0.2, 0.3]), rtol=1e-6)
    o1[:] = 0
    np.testing.assert_allclose(o2.asnumpy(), 2 * np.sin([0.1, 0.2, 0.3]), rtol=1e-6)


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_merged_and_unmerged_programs_agree(grad_req):
    y = mx.sym.tanh(A * B + C) * mx.sym.tanh(A * B + C) + (A * B) * 0.5
    rng = np.random.default_rng(3)
    vals = {n: rng.standard_normal((2, 3)) for n in "abc"}
    results = []
    for merge in (True, False):
        ex = y.simple_bind(mx.cpu(), grad_req=grad_req, a=(2, 3), b=(2, 3), c=(2, 3),
                           type_dict={n: "float64" for n in "abc"})
        assert isinstance(ex, mx.executor.Executor)
        if not merge:
            ex = mx.executor.Executor(y, mx.cpu(), ex.arg_arrays, ex.grad_arrays, grad_req,
                                      config=Config.from_env().replace(eliminate_common_expr=False))
            assert ex.get_optimized_symbol() is y
        else:
            assert len(ex.get_optimized_symbol().get_internals()) < len(y.get_internals())
        for n, v in vals.items():
            ex.arg_dict[n][:] = v
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward(mx.nd.ones((2, 3), dtype="float64"))
        results.append([out] + [ex.grad_dict[n].asnumpy().copy() for n in "abc"])
    for merged, plain in zip(*results):
        np.testing.assert_allclose(merged, plain, rtol=1e-12)


def test_the_environment_setting_turns_it_off(monkeypatch):
    y = mx.sym.exp(A) + mx.sym.exp(A)
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "0")
    assert y.simple_bind(mx.cpu(), a=(2,)).get_optimized_symbol() is y
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1")
    assert y.simple_bind(mx.cpu(), a=(2,)).get_optimized_symbol() is not y
