"""The NDArray class: attributes, views, in-place writes, operators, conversions, contexts."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symjit as mx
from symjit.base import DTypeError, MXNetError, ShapeError


def ptr(a: mx.nd.NDArray) -> int:
    return a._data.ctypes.data


# -- attributes and printing ---------------------------------------------------------------------

def test_attributes() -> None:
    a = mx.nd.zeros((2, 3, 4), dtype="float16")
    assert a.shape == (2, 3, 4) and a.size == 24 and a.ndim == 3
    assert a.dtype is np.float16 and a.stype == "default"
    assert a.context == mx.cpu() and a.ctx == mx.cpu(0)
    assert len(a) == 2
    assert isinstance(a._data, np.ndarray) and a._data.flags.c_contiguous


def test_repr_matches_mxnet() -> None:
    assert repr(mx.nd.array([[1, 2]])) == "\n[[1. 2.]]\n<NDArray 1x2 @cpu(0)>"
    assert repr(mx.nd.array([3], dtype="int32")) == "\n[3]\n<NDArray 1 @cpu(0)>"


def test_transpose_property() -> None:
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    assert a.T.asnumpy().tolist() == [[1, 4], [2, 5], [3, 6]]
    v = mx.nd.array([1, 2])
    assert v.T is v


# -- views and writes ----------------------------------------------------------------------------

def test_first_axis_slices_are_views() -> None:
    a = mx.nd.array(np.arange(12).reshape(4, 3))
    s = a[1:3]
    assert s.shape == (2, 3)
    s[:] = -1
    assert a.asnumpy()[1:3].tolist() == [[-1] * 3] * 2
    row = a[3]
    row += 100
    assert a.asnumpy()[3].tolist() == [109.0, 110.0, 111.0]
    a[0] = 5
    assert row.asnumpy().tolist() == [109.0, 110.0, 111.0] and a.asnumpy()[0].tolist() == [5.0] * 3
    assert np.shares_memory(s._data, a._data) and np.shares_memory(row._data, a._data)


def test_integer_index_of_1d_gives_shape_1_view() -> None:
    a = mx.nd.array([1, 2, 3])
    e = a[-1]
    assert e.shape == (1,)
    e[:] = 9
    assert a.asnumpy().tolist() == [1, 2, 9]


def test_iteration_yields_rows() -> None:
    a = mx.nd.array([[1, 2], [3, 4]])
    rows = [r.asnumpy().tolist() for r in a]
    assert rows == [[1, 2], [3, 4]]


def test_reshape_is_view_with_codes() -> None:
    a = mx.nd.zeros((2, 3, 4))
    r = a.reshape((0, -1))
    assert r.shape == (2, 12)
    r[:] = 1
    assert a.asnumpy().sum() == 24
    assert a.reshape(4, 6).shape == (4, 6)
    assert a.reshape(shape=(-3, 4)).shape == (6, 4)
    assert a.reshape((-2,)).shape == (2, 3, 4)
    assert a.reshape((0, -4, 3, -1, 4)).shape == (2, 3, 1, 4)
    assert a.reshape((-1, 0), reverse=True).shape == (6, 4)
    with pytest.raises(ShapeError, match=r"\(2,3,4\)"):
        a.reshape((5, -1))
    with pytest.raises(ShapeError, match="more than one -1"):
        a.reshape((-1, -1))


def test_basic_and_advanced_indexing_read() -> None:
    ref = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = mx.nd.array(ref)
    assert np.array_equal(a[1, 2].asnumpy(), ref[1, 2])
    assert np.array_equal(a[:, 1:3, ::2].asnumpy(), ref[:, 1:3, ::2])
    assert np.array_equal(a[::-1].asnumpy(), ref[::-1])
    assert a[1, 2, 3].asnumpy().tolist() == [23.0]
    assert np.array_equal(a[mx.nd.array([1, 0])].asnumpy(), ref[[1, 0]])
    c = a[:, 1:3, ::2]
    c[:] = 0  # a non-contiguous selection is a copy, as in MXNet
    assert np.array_equal(a.asnumpy(), ref)
    with pytest.raises(IndexError, match="out of bounds"):
        a[2]
    with pytest.raises(MXNetError, match=r"\(2,3,4\)"):
        a[0, 5]


def test_setitem_forms_never_reallocate() -> None:
    a = mx.nd.zeros((3, 2))
    p = ptr(a)
    a[:] = 1.5
    a[1] = mx.nd.array([2, 3])
    a[2:3] = np.array([[4, 5]])
    a[0, 1] = 7
    a[:, 0] = mx.nd.array([9, 9, 9])
    a[mx.nd.array([2])] = -1
    assert ptr(a) == p
    assert a.asnumpy().tolist() == [[9, 7], [9, 3], [-1, -1]]
    with pytest.raises(MXNetError, match=r"shape \(3,\).*\(3,2\)"):
        a[:] = np.ones(3)
    with pytest.raises(DTypeError, match="cannot assign"):
        a[:] = "x"


def test_inplace_operators_keep_buffer() -> None:
    a = mx.nd.array([[1, 2], [3, 4]])
    p = ptr(a)
    a += 1
    a -= mx.nd.array([1, 1])
    a *= mx.nd.array([[2], [3]])
    a /= 2
    a **= 2
    a %= 5
    assert ptr(a) == p
    ref = np.array([[1, 2], [3, 4]], np.float32)
    ref = np.mod(((ref + 1 - 1) * np.array([[2], [3]]) / 2) ** 2, 5)
    assert np.allclose(a.asnumpy(), ref)
    v = mx.nd.ones((2, 1))
    with pytest.raises(ShapeError, match=r"\(2,3\) does not fit .* \(2,1\)"):
        v += mx.nd.ones((1, 3))
    with pytest.raises(ShapeError, match=r"\(2,2\) and \(3,\)"):
        a += mx.nd.ones((3,))


# -- operators -----------------------------------------------------------------------------------

OPS = {
    "+": (lambda x, y: x + y), "-": (lambda x, y: x - y), "*": (lambda x, y: x * y),
    "/": (lambda x, y: x / y), "**": (lambda x, y: x ** y),
}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(OPS)),
       st.sampled_from([((2, 3), (2, 3)), ((2, 1), (1, 3)), ((3,), (2, 3)), ((4, 1, 2), (3, 1))]),
       st.integers(0, 1000))
def test_binary_broadcasting_matches_numpy(op: str, shapes: tuple, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2, shapes[0]).astype(np.float32)
    y = rng.uniform(0.5, 2, shapes[1]).astype(np.float32)
    got = OPS[op](mx.nd.array(x), mx.nd.array(y))
    assert got.dtype is np.float32
    assert np.allclose(got.asnumpy(), OPS[op](x, y), rtol=1e-6)


def test_scalars_on_both_sides_keep_dtype() -> None:
    x = np.array([1.0, 2.0, 4.0], np.float32)
    a = mx.nd.array(x)
    for got, want in [(a + 1.5, x + 1.5), (1.5 + a, 1.5 + x), (a - 1, x - 1), (10 - a, 10 - x),
                      (a * 3, x * 3), (3 * a, 3 * x), (a / 2, x / 2), (2 / a, 2 / x),
                      (a ** 2, x ** 2), (2 ** a, 2 ** x), (a % 3, x % 3), (7 % a, 7 % x),
                      (-a, -x), (abs(-a), x), (np.float32(2) * a, 2 * x), (a + np.float64(1), x + 1)]:
        assert got.dtype is np.float32
        assert np.allclose(got.asnumpy(), want)
    f16 = mx.nd.array([1, 2], dtype="float16") * 0.5
    assert f16.dtype is np.float16 and f16.asnumpy().tolist() == [0.5, 1.0]


def test_integer_semantics() -> None:
    a = mx.nd.array([7, -7, 7, -7, 5], dtype="int32")
    b = mx.nd.array([2, 2, -2, -2, 0], dtype="int32")
    assert (a / b).asnumpy().tolist() == [3, -3, -3, 3, 0]  # C truncation; x/0 -> 0
    assert (a % b).asnumpy().tolist() == [1, 1, -1, -1, 0]  # divisor's sign; x%0 -> 0
    assert (a + 2.7).dtype is np.int32 and (a + 2.7).asnumpy().tolist() == [9, -5, 9, -5, 7]
    assert (mx.nd.array([4.0, -1.0]) % 0).asnumpy().tolist() == [0.0, 0.0]


def test_comparisons_return_array_dtype() -> None:
    a = mx.nd.array([1, 2, 3])
    b = mx.nd.array([3, 2, 1])
    assert (a == b).asnumpy().tolist() == [0, 1, 0] and (a == b).dtype is np.float32
    assert (a != b).asnumpy().tolist() == [1, 0, 1]
    assert (a > b).asnumpy().tolist() == [0, 0, 1]
    assert (a >= 2).asnumpy().tolist() == [0, 1, 1]
    assert (a < 2).asnumpy().tolist() == [1, 0, 0]
    assert (2 <= a).asnumpy().tolist() == [0, 1, 1]
    i = mx.nd.array([1, 5], dtype="int64") > 2
    assert i.dtype is np.int64 and i.asnumpy().tolist() == [0, 1]
    assert (a == None) is False  # noqa: E711 - falls back to identity like MXNet


def test_operator_errors() -> None:
    with pytest.raises(ShapeError, match=r"\(2,3\) and \(4,\)"):
        mx.nd.ones((2, 3)) + mx.nd.ones((4,))
    with pytest.raises(DTypeError, match="float32 and int32"):
        mx.nd.ones((2,)) * mx.nd.ones((2,), dtype="int32")
    with pytest.raises(DTypeError, match="unsupported operand type str"):
        mx.nd.ones((2,)) + "a"
    with pytest.raises(MXNetError, match="different contexts"):
        mx.nd.ones((2,)) + mx.nd.NDArray(np.ones(2, np.float32), mx.cpu(1))


# -- conversions and copies ----------------------------------------------------------------------

def test_copies_and_conversions() -> None:
    a = mx.nd.array([[1, 2], [3, 4]])
    n = a.asnumpy()
    n[0, 0] = 100
    assert a.asnumpy()[0, 0] == 1
    c = a.copy()
    c[:] = 0
    assert a.asnumpy().sum() == 10
    dst = mx.nd.zeros((2, 2), dtype="int32")
    p = ptr(dst)
    assert a.copyto(dst) is dst and ptr(dst) == p and dst.asnumpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ShapeError, match=r"\(2,2\).*\(3,\)"):
        a.copyto(mx.nd.zeros(3))
    assert a.as_in_context(mx.cpu()) is a
    moved = a.as_in_context(mx.cpu(1))
    assert moved.context == mx.cpu(1) and moved.asnumpy().tolist() == [[1, 2], [3, 4]]
    assert a.copyto(mx.cpu_pinned()).context == mx.cpu_pinned()
    i = a.astype("int8")
    assert i.dtype is np.int8 and a.astype(np.float32, copy=False) is a
    assert a.astype("float32") is not a


def test_scalar_conversions_and_truth() -> None:
    s = mx.nd.array([2.5])
    assert s.asscalar() == np.float32(2.5) and isinstance(s.asscalar(), np.float32)
    assert float(s) == 2.5 and int(s) == 2 and bool(s)
    assert not bool(mx.nd.zeros((1,))) and not bool(mx.nd.empty((0,)))
    with pytest.raises(ShapeError, match="exactly one element"):
        mx.nd.ones((2,)).asscalar()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.ones((2,)))
    assert np.array(mx.nd.ones((2,))).tolist() == [1.0, 1.0]
    assert [1, 2, 3][mx.nd.array([1], dtype="int32")] == 2
    mx.nd.ones(1).wait_to_read()
    mx.waitall()


# -- contexts ------------------------------------------------------------------------------------

NO_GPU_SCRIPT = """
import pytest, symjit as mx
from symjit.base import MXNetError
assert mx.num_gpus() == 0
with pytest.raises(MXNetError, match="no GPU"):
    mx.nd.zeros((2,), ctx=mx.gpu(0))
with pytest.raises(MXNetError, match="no GPU"):
    mx.nd.ones((2,)).as_in_context(mx.gpu())
with pytest.raises(MXNetError, match="ctx must be a Context"):
    mx.nd.zeros((2,), ctx=3)
print("ok")
"""


def test_gpu_without_device_is_a_clear_error() -> None:
    """GPUs hidden (and no simulator): creating an array on gpu(i) says so clearly."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    proc = subprocess.run([sys.executable, "-c", NO_GPU_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_current_context_is_used() -> None:
    with mx.cpu(2):
        assert mx.nd.ones((1,)).context == mx.cpu(2)
        assert (mx.nd.ones((1,)) + 1).context == mx.cpu(2)


GPU_SCRIPT = """
import numpy as np, symjit as mx
a = mx.nd.array([[1, 2], [3, 4]], ctx=mx.gpu(0))
assert not isinstance(a._data, np.ndarray) and a.context == mx.gpu(0)
row = a[1]
row[:] = 7
b = (a * 2 + 1).as_in_context(mx.cpu())
assert b.asnumpy().tolist() == [[3, 5], [15, 15]], b
a += 1
assert a.asnumpy().tolist() == [[2, 3], [8, 8]]
assert mx.nd.sum(a).asnumpy().tolist() == [21]
back = b.copyto(mx.gpu(0))
assert back.context == mx.gpu(0) and back.reshape((-1,)).asnumpy().tolist() == [3, 5, 15, 15]
print("ok")
"""


def test_gpu_storage_under_cuda_simulator() -> None:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", GPU_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_zero_filled_storage_is_zero_and_keeps_a_negative_zero_fill():
    """A +0 fill allocates zeroed pages (calloc); every other fill is written, -0.0 included."""
    from symjit.ndarray import storage
    ctx = mx.cpu()
    for fill in (0, 0.0, np.float32(0), np.asarray(0.0, np.float32), False):
        out = storage.alloc((3, 5), np.dtype("float32"), ctx, fill)
        assert out.shape == (3, 5) and out.dtype == np.float32 and not out.any()
        assert not np.signbit(out).any()
    neg = storage.alloc((4,), np.dtype("float64"), ctx, np.asarray(-0.0))
    assert np.signbit(neg).all() and not neg.any()
    assert storage.alloc((2,), np.dtype("int32"), ctx, 7).tolist() == [7, 7]
    assert mx.nd.zeros((2, 3), dtype="int8").asnumpy().tolist() == [[0] * 3] * 2
