"""The float32 tanh/sigmoid formulas of symjit.ops.fastmath against float64 references.

Each compiled float32 result must be the float64 reference rounded to float32, give or take one
ulp (the formulas are evaluated in float64 and rounded once), on a dense grid over the whole useful
range, at special values (0, -0, subnormals, +-inf, NaN) and on random inputs (hypothesis).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from symjit.jitext import install
from symjit.lower.cpu import CPU  # noqa: F401  (the CPU target registers its forms)
from symjit.ops import fastmath
from symjit.ops.fastmath import sigmoid, tanh

install()    # compiling symjit's helpers directly, not through a bind: register them first (the CPU's forms)


@numba.njit(cache=False)
def _tanh_vec(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = tanh(x[i])
    return out


@numba.njit(cache=False)
def _sigmoid_vec(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = sigmoid(x[i])
    return out


def _ref_sigmoid(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps between two float32 arrays of the same sign pattern."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, np.int64(-2**31) - ia, ia)     # monotone integer order of floats
    ib = np.where(ib < 0, np.int64(-2**31) - ib, ib)
    return np.abs(ia - ib)


def _grid() -> np.ndarray:
    dense = np.linspace(-12.0, 12.0, 400001)
    tiny = np.geomspace(1e-38, 1.0, 2000)
    big = np.geomspace(1.0, 3e38, 2000)
    return np.concatenate([dense, tiny, -tiny, big, -big]).astype(np.float32)


def test_tanh_float32_within_one_ulp_of_the_rounded_exact_value() -> None:
    x = _grid()
    got = _tanh_vec(x)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32
    assert _ulp_distance(got, want).max() <= 1


def test_sigmoid_float32_within_one_ulp_including_tiny_results() -> None:
    x = np.concatenate([_grid(), np.linspace(-104.0, -80.0, 5001, dtype=np.float32)])
    got = _sigmoid_vec(x)
    want = _ref_sigmoid(x).astype(np.float32)
    assert got.dtype == np.float32
    assert _ulp_distance(got, want).max() <= 1
    # far tail: exactly 0 where the float32 result underflows, subnormals above it
    assert _sigmoid_vec(np.array([-200.0, -1e30], np.float32)).tolist() == [0.0, 0.0]
    assert 0.0 < _sigmoid_vec(np.array([-100.0], np.float32))[0] < np.finfo(np.float32).tiny


def test_special_values() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45], np.float32)
    t = _tanh_vec(x)
    assert t[0] == 0.0 and not np.signbit(t[0])
    assert t[1] == 0.0 and np.signbit(t[1])
    assert t[2] == 1.0 and t[3] == -1.0
    assert np.isnan(t[4])
    assert t[5] == x[5] and t[6] == x[6]          # tanh(x) == x for subnormals
    s = _sigmoid_vec(x)
    assert s[0] == 0.5 and s[1] == 0.5
    assert s[2] == 1.0 and s[3] == 0.0
    assert np.isnan(s[4])
    assert s[5] == 0.5 and s[6] == 0.5


def test_float64_keeps_libm_exactness() -> None:
    """float64 bodies (finite-difference gradient checks) still call math.tanh / math.exp."""
    x = np.linspace(-30, 30, 10001)
    assert np.array_equal(_tanh_vec(x), np.array([math.tanh(v) for v in x]))
    want = np.array([fastmath._sigmoid_libm(v) for v in x])
    assert np.array_equal(_sigmoid_vec(x), want)


def test_plain_python_calls_use_math() -> None:
    assert tanh(0.3) == math.tanh(0.3)
    assert sigmoid(-2.0) == math.exp(-2.0) / (1.0 + math.exp(-2.0))


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_random_float32_inputs(v: float) -> None:
    x = np.array([v], np.float32)
    assert _ulp_distance(_tanh_vec(x), np.tanh(x.astype(np.float64)).astype(np.float32))[0] <= 1
    assert _ulp_distance(_sigmoid_vec(x), _ref_sigmoid(x).astype(np.float32))[0] <= 1


def test_fit_reproduces_the_shipped_coefficients() -> None:
    p, q, err = fastmath.fit_tanh()
    np.testing.assert_allclose(p, fastmath.TANH_P, rtol=1e-6)
    np.testing.assert_allclose(q, fastmath.TANH_Q, rtol=1e-6)
    assert err < 1e-8
