"""MXNet's fluent methods on Symbols and NDArrays (symjit/fluent.py): every one exists on both
classes and equals the function it stands for."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.fluent import FLUENT


@pytest.mark.parametrize("cls", [mx.sym.Symbol, mx.nd.NDArray])
def test_every_fluent_method_exists(cls):
    missing = [m for m in FLUENT if not hasattr(cls, m)]
    assert not missing, f"{cls.__name__} lacks {missing}"


CALLS = [("sum", {"axis": 1}), ("mean", {}), ("softmax", {}), ("transpose", {}), ("exp", {}),
         ("reshape", {"shape": (3, 2)}), ("expand_dims", {"axis": 0}), ("clip", {"a_min": 0.2, "a_max": 0.6}),
         ("argmax", {"axis": 1}), ("astype", {"dtype": "float64"}), ("flatten", {}),
         ("tile", {"reps": (2, 1)}),
         ("slice_axis", {"axis": 1, "begin": 0, "end": 2}), ("norm", {}), ("square", {}), ("log_softmax", {})]


@pytest.mark.parametrize("method, kwargs", CALLS)
def test_fluent_equals_function(method, kwargs):
    x = np.random.default_rng(0).uniform(0.1, 1.0, (2, 3)).astype(np.float32)
    fn = FLUENT[method]
    nd_got = getattr(mx.nd.array(x), method)(**kwargs).asnumpy()
    nd_want = getattr(mx.nd, fn)(mx.nd.array(x), **kwargs).asnumpy()
    np.testing.assert_array_equal(nd_got, nd_want)
    sym = getattr(mx.sym.var("x"), method)(**kwargs)
    got = sym.bind(mx.cpu(), {"x": mx.nd.array(x)}).forward()[0].asnumpy()
    np.testing.assert_allclose(got, nd_want, rtol=1e-6)
