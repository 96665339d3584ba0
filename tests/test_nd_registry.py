"""``mx.nd`` functions generated from the operator registry (symjit.imperative.nd_function): every
public registered operator is callable on NDArrays, computes what the bound symbol computes, and
bad calls are clear errors."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.ops.registry import aliases, all_ops

R = np.random.default_rng(0)


def test_every_public_operator_is_an_nd_function():
    names = {n for n in [*all_ops(), *aliases()] if not n.startswith("_") and n != "Custom"}
    assert sorted(n for n in names if not callable(getattr(mx.nd, n, None))) == []


def _bound(sym_fn, inputs: dict, **params):
    """The bound symbol's inference output on the same inputs (the oracle)."""
    sym = sym_fn(*[mx.sym.Variable(n) for n in inputs], **params)
    arrays = {n: mx.nd.array(v, dtype=v.dtype) for n, v in inputs.items()}
    aux = {n: arrays.pop(n) for n in sym.list_auxiliary_states()}
    ex = sym.bind(mx.cpu(), arrays, grad_req="null", aux_states=aux or None)
    return [o.asnumpy() for o in ex.forward()]


CALLS = [
    ("FullyConnected", {"data": R.uniform(-1, 1, (3, 4)), "weight": R.uniform(-1, 1, (5, 4)),
                        "bias": R.uniform(-1, 1, 5)}, {"num_hidden": 5}),
    ("Convolution", {"data": R.uniform(-1, 1, (2, 2, 5, 5)), "weight": R.uniform(-1, 1, (3, 2, 3, 3)),
                     "bias": R.uniform(-1, 1, 3)}, {"kernel": (3, 3), "num_filter": 3, "pad": (1, 1)}),
    ("Pooling", {"data": R.uniform(-1, 1, (1, 2, 4, 4))}, {"kernel": (2, 2), "stride": (2, 2)}),
    ("Activation", {"data": R.uniform(-1, 1, (3, 4))}, {"act_type": "tanh"}),
    ("softmax", {"data": R.uniform(-1, 1, (3, 4))}, {"axis": 0}),
    ("BatchNorm", {"data": R.uniform(-1, 1, (4, 3)), "gamma": R.uniform(0.5, 1, 3),
                   "beta": R.uniform(-1, 1, 3), "moving_mean": R.uniform(-1, 1, 3),
                   "moving_var": R.uniform(0.5, 1, 3)}, {"fix_gamma": False}),
    ("take", {"a": R.uniform(-1, 1, (4, 2)), "indices": np.array([3.0, 0.0, 1.0])}, {}),
    ("SliceChannel", {"data": R.uniform(-1, 1, (2, 6))}, {"num_outputs": 3}),
]


@pytest.mark.parametrize("op, inputs, params", CALLS, ids=[c[0] for c in CALLS])
def test_nd_function_equals_the_bound_symbol(op, inputs, params):
    want = _bound(getattr(mx.sym, op), inputs, **params)
    got = getattr(mx.nd, op)(*[mx.nd.array(v, dtype=v.dtype) for v in inputs.values()], **params)
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6, atol=1e-7)


def test_inputs_by_name_out_and_errors():
    x, w, b = mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), mx.nd.zeros((4,))
    out = mx.nd.zeros((2, 4))
    res = mx.nd.FullyConnected(data=x, weight=w, bias=b, num_hidden=4, out=out)
    assert res is out and out.asnumpy().tolist() == [[3.0] * 4] * 2
    for call, words in ((lambda: mx.nd.FullyConnected(x, w, num_hidden=4), ["FullyConnected", "bias"]),
                        (lambda: mx.nd.FullyConnected(x, w, b, wieght=w, num_hidden=4), ["wieght"]),
                        (lambda: mx.nd.FullyConnected(x, [1, 2], num_hidden=4), ["positional input 1"]),
                        (lambda: mx.nd.Activation(x, act_type="nope"), ["act_type", "nope"])):
        with pytest.raises(mx.MXNetError) as err:
            call()
        assert all(wd in str(err.value) for wd in words), str(err.value)
