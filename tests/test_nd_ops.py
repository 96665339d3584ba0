"""mx.nd module functions (creation, math, reductions, shape ops) and mx.random, against numpy."""
from __future__ import annotations

import re

import numpy as np
import pytest

import symjit as mx
from symjit.base import DTypeError, MXNetError, ParamError, ShapeError

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4)).astype(np.float32)


def nd(x: np.ndarray) -> mx.nd.NDArray:
    """``x`` as an NDArray of the same dtype (mx.nd.array alone would make it float32)."""
    return mx.nd.array(x, dtype=x.dtype)


# -- creation ------------------------------------------------------------------------------------

def test_creation_functions() -> None:
    assert mx.nd.empty((2, 3)).shape == (2, 3) and mx.nd.empty(4).dtype is np.float32
    z = mx.nd.zeros((2, 2), dtype="int64", ctx=mx.cpu())
    assert z.dtype is np.int64 and z.asnumpy().tolist() == [[0, 0], [0, 0]]
    assert mx.nd.ones(3, dtype=np.float16).asnumpy().tolist() == [1, 1, 1]
    f = mx.nd.full((2,), 3.7, dtype="int32")
    assert f.dtype is np.int32 and f.asnumpy().tolist() == [3, 3]
    assert mx.nd.zeros_like(nd(X)).shape == (3, 4) and mx.nd.ones_like(nd(X)).asnumpy().sum() == 12
    assert nd(X).zeros_like().asnumpy().sum() == 0 and nd(X).ones_like().dtype is np.float32
    with pytest.raises(ShapeError, match="shape must be"):
        mx.nd.zeros((2, -1))
    with pytest.raises(DTypeError, match="int16 is not supported"):
        mx.nd.zeros((2,), dtype="int16")


def test_array_dtype_rules() -> None:
    """float32 unless dtype= is given or the source is an NDArray (MXNet 1.x's rule): numpy
    arrays of any dtype included."""
    assert mx.nd.array([1, 2]).dtype is np.float32
    assert mx.nd.array(np.array([1, 2], np.int64)).dtype is np.float32
    f64 = np.array([0.1, 1e-40, 3e39], np.float64)
    got = mx.nd.array(f64)
    assert got.dtype is np.float32
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got.asnumpy(), f64.astype(np.float32))
    assert mx.nd.array(np.array([True, False])).dtype is np.float32
    assert mx.nd.array(np.float64(2.5)).dtype is np.float32
    assert mx.nd.array(np.array([1.0], np.float64), dtype="float64").dtype is np.float64
    assert mx.nd.array(np.array([1, 2], np.int64), dtype=np.int64).dtype is np.int64
    assert mx.nd.array(mx.nd.array([1.0], dtype="float64")).dtype is np.float64
    assert mx.nd.array([1, 2], dtype="uint8").dtype is np.uint8
    src = mx.nd.array([1, 2], dtype="int8")
    copy = mx.nd.array(src)
    assert copy.dtype is np.int8 and not np.shares_memory(copy._data, src._data)
    assert mx.nd.array(5).shape == (1,)
    fresh = mx.nd.array(np.arange(12).reshape(3, 4).T)
    assert fresh._data.flags.c_contiguous
    with pytest.raises(DTypeError, match="array: source must hold numbers"):
        mx.nd.array(["a"])


@pytest.mark.parametrize("source, dtype", [
    (["a", "b"], "<U1"),
    (np.array(["a", "b"]), "<U1"),
    (np.array(["1", "2"]), "<U1"),
    (np.array([b"1"]), "|S1"),
    (np.array([object(), 1], dtype=object), "object"),
    ([object()], "object"),
    (np.array([1 + 2j]), "complex128"),
    ("ab", "<U2"),
])
@pytest.mark.parametrize("dtype_arg", [None, "float32"])
def test_array_rejects_what_is_not_numbers(source, dtype, dtype_arg) -> None:
    """Strings, objects and complex numbers are an error naming the source's dtype, whatever
    dtype= asks for (a string of digits is not parsed)."""
    pattern = f"array: source must hold numbers, got .* of dtype {re.escape(dtype)}"
    with pytest.raises(DTypeError, match=pattern):
        mx.nd.array(source, dtype=dtype_arg)


def test_array_rejects_ragged_lists() -> None:
    with pytest.raises(DTypeError, match="array: cannot convert list to an array"):
        mx.nd.array([[1, 2], [3]])


def test_arange() -> None:
    assert mx.nd.arange(5).asnumpy().tolist() == [0, 1, 2, 3, 4]
    assert mx.nd.arange(1, 2, 0.25).asnumpy().tolist() == [1, 1.25, 1.5, 1.75]
    assert mx.nd.arange(3, 0, -1, dtype="int32").asnumpy().tolist() == [3, 2, 1]
    assert mx.nd.arange(0, 2, repeat=3).asnumpy().tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ParamError, match="step must not be 0"):
        mx.nd.arange(0, 1, 0)
    with pytest.raises(ParamError, match="invalid range"):
        mx.nd.arange(2, 1)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("start, stop, step", [(1.3, 456.6, 1.3), (50, -50, -2), (-2.5, 10, 2.9)])
def test_arange_integer_dtype_casts_start_and_step_first(dtype, start, stop, step) -> None:
    # an integer arange counts from int(start) in steps of int(step) (both truncated toward zero),
    # for ceil((stop - start) / step) values of the given floats
    n = int(np.ceil((stop - start) / step))
    want = (int(start) + np.arange(n, dtype=np.int64) * int(step)).astype(dtype)
    for repeat in (1, 2):
        got = mx.nd.arange(start, stop, step, repeat=repeat, dtype=dtype).asnumpy()
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, np.repeat(want, repeat))


# -- elementwise math ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, ref", [
    ("exp", np.exp), ("log", lambda x: np.log(np.abs(x) + 1)), ("sqrt", lambda x: np.sqrt(np.abs(x))),
    ("square", np.square), ("abs", np.abs), ("sign", np.sign), ("tanh", np.tanh),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("relu", lambda x: np.maximum(x, 0)),
])
def test_unary(name: str, ref) -> None:
    x = X if name not in ("log", "sqrt") else np.abs(X) + (1 if name == "log" else 0)
    want = ref(X) if name not in ("log", "sqrt") else (np.log(x) if name == "log" else np.sqrt(x))
    got = getattr(mx.nd, name)(nd(x))
    assert got.dtype is np.float32 and np.allclose(got.asnumpy(), want, rtol=1e-6)
    assert np.allclose(getattr(nd(x), name)().asnumpy(), want, rtol=1e-6)


def test_binary_functions_and_scalars() -> None:
    y = RNG.standard_normal((1, 4)).astype(np.float32)
    assert np.allclose(mx.nd.maximum(nd(X), nd(y)).asnumpy(), np.maximum(X, y))
    assert np.allclose(mx.nd.minimum(nd(X), 0.1).asnumpy(), np.minimum(X, np.float32(0.1)))
    assert np.allclose(mx.nd.minimum(0.1, nd(X)).asnumpy(), np.minimum(X, np.float32(0.1)))
    assert np.allclose(mx.nd.add(nd(X), nd(y)).asnumpy(), X + y)
    assert np.allclose(mx.nd.broadcast_mul(nd(X), nd(y)).asnumpy(), X * y)
    assert np.allclose(mx.nd.subtract(1, nd(X)).asnumpy(), 1 - X)
    assert mx.nd.greater(nd(X), 0).asnumpy().tolist() == (X > 0).astype(np.float32).tolist()
    assert mx.nd.maximum(2, 3) == 3
    with pytest.raises(ShapeError, match=r"maximum: .*\(3,4\) and \(2,\)"):
        mx.nd.maximum(nd(X), mx.nd.ones(2))
    with pytest.raises(DTypeError, match="equal: unsupported operand type"):
        mx.nd.equal(nd(X), "a")
    out = mx.nd.zeros((3, 4))
    assert mx.nd.add(nd(X), 1, out=out) is out and np.allclose(out.asnumpy(), X + 1)


def test_clip() -> None:
    assert np.array_equal(mx.nd.clip(nd(X), -0.5, 0.5).asnumpy(), np.clip(X, -0.5, 0.5))
    assert np.array_equal(nd(X).clip(0, 1).asnumpy(), np.clip(X, 0, 1))
    assert np.all(mx.nd.clip(nd(X), 1, 0).asnumpy() == 1)     # a_min wins, as in MXNet


# -- reductions ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, ref", [("sum", np.sum), ("mean", np.mean), ("max", np.max),
                                       ("min", np.min), ("prod", np.prod)])
def test_reductions(name: str, ref) -> None:
    fn = getattr(mx.nd, name)
    x3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    full = fn(nd(x3))
    assert full.shape == (1,) and np.allclose(full.asnumpy(), ref(x3), rtol=1e-5)
    assert np.allclose(fn(nd(x3), axis=1).asnumpy(), ref(x3, axis=1), rtol=1e-5)
    assert np.allclose(fn(nd(x3), axis=(0, 2), keepdims=True).asnumpy(),
                       ref(x3, axis=(0, 2), keepdims=True), rtol=1e-5)
    assert np.allclose(fn(nd(x3), axis=1, exclude=True).asnumpy(), ref(x3, axis=(0, 2)), rtol=1e-5)
    assert np.allclose(getattr(nd(x3), name)(axis=-1).asnumpy(), ref(x3, axis=-1), rtol=1e-5)
    with pytest.raises(ShapeError, match=rf"{name} \(inputs: data=\(2,3,4\)\): axis=3 is out of range"):
        fn(nd(x3), axis=3)


def test_reduction_dtypes() -> None:
    i = mx.nd.array([1, 2, 4], dtype="int32")
    assert mx.nd.sum(i).dtype is np.int32 and mx.nd.sum(i).asnumpy().tolist() == [7]
    assert mx.nd.mean(i).asnumpy().tolist() == [2]  # 7/3 truncated to int32
    h = mx.nd.ones((3000,), dtype="float16")
    assert mx.nd.sum(h).dtype is np.float16 and mx.nd.sum(h).asscalar() == 3000


def test_norm_and_arg_reductions() -> None:
    assert np.isclose(mx.nd.norm(nd(X)).asscalar(), np.sqrt((X.astype(np.float64) ** 2).sum()))
    assert np.allclose(mx.nd.norm(nd(X), ord=1, axis=1).asnumpy(), np.abs(X).sum(axis=1))
    with pytest.raises(ParamError, match="ord"):
        mx.nd.norm(nd(X), ord=3)
    am = mx.nd.argmax(nd(X), axis=1)
    assert am.dtype is np.float32 and am.asnumpy().tolist() == np.argmax(X, axis=1).tolist()
    assert mx.nd.argmin(nd(X), axis=0, keepdims=True).shape == (1, 4)
    assert mx.nd.argmax(nd(X)).asnumpy().tolist() == [float(np.argmax(X))]
    assert nd(X).argmin(axis=1).asnumpy().tolist() == np.argmin(X, axis=1).tolist()


def test_dot() -> None:
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((4, 5)).astype(np.float32)
    assert np.allclose(mx.nd.dot(nd(a), nd(b)).asnumpy(), a @ b, rtol=1e-5)
    assert np.allclose(mx.nd.dot(nd(a.T), nd(b), transpose_a=True).asnumpy(), a @ b, rtol=1e-5)
    assert np.allclose(mx.nd.dot(nd(a), nd(b.T), transpose_b=True).asnumpy(), a @ b, rtol=1e-5)
    v = RNG.standard_normal(4).astype(np.float32)
    assert mx.nd.dot(nd(v), nd(v)).shape == (1,)
    x3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    y3 = RNG.standard_normal((4, 2, 2)).astype(np.float32)
    want = np.einsum("ijk,kab->ijab", x3, y3)
    assert np.allclose(mx.nd.dot(nd(x3), nd(y3)).asnumpy(), want, rtol=1e-5)
    with pytest.raises(ShapeError, match=r"dot \(inputs: lhs=\(3,4\), rhs=\(3,4\)\).*dims 4 and 3"):
        mx.nd.dot(nd(a), nd(a))
    with pytest.raises(DTypeError, match="dot .*'rhs' has dtype float64 but the operator expects float32"):
        mx.nd.dot(nd(a), nd(b.astype(np.float64)))


# -- shape functions -----------------------------------------------------------------------------

def test_transpose_concat_stack_split() -> None:
    x3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    assert np.array_equal(mx.nd.transpose(nd(x3)).asnumpy(), x3.T)
    assert np.array_equal(mx.nd.transpose(nd(x3), axes=(1, 0, 2)).asnumpy(), x3.transpose(1, 0, 2))
    with pytest.raises(ShapeError, match="not a permutation"):
        mx.nd.transpose(nd(x3), axes=(0, 0, 1))
    assert np.array_equal(mx.nd.concat(nd(X), nd(X)).asnumpy(), np.concatenate([X, X], axis=1))
    assert np.array_equal(mx.nd.concat(nd(X), nd(X[:1]), dim=0).asnumpy(), np.concatenate([X, X[:1]]))
    assert np.array_equal(mx.nd.concatenate([nd(X), nd(X)]).asnumpy(), np.concatenate([X, X]))
    with pytest.raises(ShapeError, match=r"data\[1\] has shape \(1,4\)"):
        mx.nd.concat(nd(X), nd(X[:1]), dim=1)
    with pytest.raises(DTypeError, match=r"data\[1\] has dtype int32"):
        mx.nd.concat(nd(X), nd(X.astype(np.int32)), dim=0)
    assert np.array_equal(mx.nd.stack(nd(X), nd(X), axis=2).asnumpy(), np.stack([X, X], axis=2))
    parts = mx.nd.split(nd(X), num_outputs=2, axis=1)
    assert [p.asnumpy().tolist() for p in parts] == [X[:, :2].tolist(), X[:, 2:].tolist()]
    sq = mx.nd.split(nd(X), 3, axis=0, squeeze_axis=True)
    assert sq[1].shape == (4,) and np.array_equal(sq[1].asnumpy(), X[1])
    with pytest.raises(ShapeError, match="3 equal parts"):
        mx.nd.split(nd(X), 3, axis=1)


def test_reshape_family() -> None:
    x3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert mx.nd.expand_dims(nd(X), axis=0).shape == (1, 3, 4)
    assert mx.nd.expand_dims(nd(X), axis=-1).shape == (3, 4, 1)
    assert np.array_equal(mx.nd.flatten(nd(x3)).asnumpy(), x3.reshape(2, 12))
    r = mx.nd.reshape(nd(x3), shape=(-1, 4))
    assert r.shape == (6, 4) and not np.shares_memory(r._data, x3)
    assert mx.nd.reshape(nd(x3), (-3, -2)).shape == (6, 4)
    assert np.array_equal(mx.nd.swapaxes(nd(X), 0, 1).asnumpy(), X.T)


def test_one_hot_broadcast_to_where() -> None:
    oh = mx.nd.one_hot(mx.nd.array([0, 2, 5, -1]), 3)
    assert oh.asnumpy().tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]]
    oh2 = mx.nd.one_hot(mx.nd.array([1]), 2, on_value=5, off_value=-1, dtype="int32")
    assert oh2.dtype is np.int32 and oh2.asnumpy().tolist() == [[-1, 5]]
    b = mx.nd.broadcast_to(mx.nd.array([[1], [2]]), shape=(2, 3))
    assert b.asnumpy().tolist() == [[1, 1, 1], [2, 2, 2]]
    with pytest.raises(ShapeError, match=r"cannot broadcast shape \(3,4\) to \(3,5\)"):
        mx.nd.broadcast_to(nd(X), (3, 5))
    c = mx.nd.array([[1, 0], [0, 1]])
    w = mx.nd.where(c, mx.nd.array([[1, 2], [3, 4]]), mx.nd.array([[5, 6], [7, 8]]))
    assert w.asnumpy().tolist() == [[1, 6], [7, 4]]
    rows = mx.nd.where(mx.nd.array([0, 1]), mx.nd.ones((2, 2)), mx.nd.zeros((2, 2)))
    assert rows.asnumpy().tolist() == [[0, 0], [1, 1]]
    with pytest.raises(ShapeError, match=r"condition of shape \(3,\)"):
        mx.nd.where(mx.nd.ones(3), mx.nd.ones((2, 2)), mx.nd.ones((2, 2)))


def test_non_ndarray_arguments_are_named() -> None:
    with pytest.raises(DTypeError, match="sum: positional input 0 must be an NDArray, got ndarray"):
        mx.nd.sum(X)
    with pytest.raises(DTypeError, match="dot: positional input 1 must be an NDArray, got list"):
        mx.nd.dot(nd(X), [1])


# -- random --------------------------------------------------------------------------------------

def test_random_seed_reproduces_and_ranges() -> None:
    mx.random.seed(3)
    a = mx.random.uniform(-2, 3, shape=(50, 40))
    n = mx.nd.random.normal(1, 0.5, shape=(2000,))
    mx.random.seed(3)
    assert np.array_equal(mx.nd.random_uniform(-2, 3, shape=(50, 40)).asnumpy(), a.asnumpy())
    assert np.array_equal(mx.random.normal(1, 0.5, shape=(2000,)).asnumpy(), n.asnumpy())
    x = a.asnumpy()
    assert a.dtype is np.float32 and x.min() >= -2 and x.max() < 3 and abs(x.mean() - 0.5) < 0.15
    assert abs(n.asnumpy().mean() - 1) < 0.1 and abs(n.asnumpy().std() - 0.5) < 0.05
    assert mx.random.uniform().shape == (1,)
    assert mx.random.normal(shape=3, dtype="float64").dtype is np.float64
    assert mx.random.randn(2, 3).shape == (2, 3)


def test_random_with_ndarray_params_and_out() -> None:
    low = mx.nd.array([0, 10])
    high = mx.nd.array([1, 11])
    s = mx.random.uniform(low, high, shape=(100,))
    assert s.shape == (2, 100)
    assert s.asnumpy()[0].max() < 1 and s.asnumpy()[1].min() >= 10
    out = mx.nd.zeros((3, 3))
    p = out._data.ctypes.data
    assert mx.random.normal(out=out) is out and out._data.ctypes.data == p
    assert out.asnumpy().std() > 0


def test_randint_shuffle_and_errors() -> None:
    r = mx.random.randint(-3, 4, shape=(500,))
    assert r.dtype is np.int32 and set(r.asnumpy().tolist()) == set(range(-3, 4))
    data = mx.nd.array(np.arange(20).reshape(10, 2))
    sh = mx.random.shuffle(data)
    assert sorted(map(tuple, sh.asnumpy().tolist())) == sorted(map(tuple, data.asnumpy().tolist()))
    assert np.array_equal(data.asnumpy(), np.arange(20).reshape(10, 2))
    assert (mx.random.exponential(2.0, shape=(10,)).asnumpy() >= 0).all()
    assert mx.random.poisson(3.0, shape=(4,)).shape == (4,)
    with pytest.raises(ParamError, match="low < high"):
        mx.random.randint(3, 3)
    with pytest.raises(ParamError, match="random.normal: parameter 'scale': -1.0 is invalid, expected >= 0"):
        mx.random.normal(0, -1)
    with pytest.raises(ParamError, match="seed_state must be an int"):
        mx.random.seed("x")
    with pytest.raises(MXNetError, match="random.uniform: parameter 'low'"):
        mx.random.uniform("a")


def test_float16_on_the_cpu_runs_the_float32_kernels_rounded_back() -> None:
    """float16 arrays have no kernels of their own: each call runs the float32 kernel on widened
    copies and rounds the float16 outputs back (MXNet's half arithmetic: float, rounded per op)."""
    rng = np.random.default_rng(7)
    a16 = rng.standard_normal((3, 4)).astype(np.float16)
    b16 = rng.standard_normal((3, 4)).astype(np.float16)
    a, b = mx.nd.array(a16, dtype="float16"), mx.nd.array(b16, dtype="float16")
    a32, b32 = a16.astype(np.float32), b16.astype(np.float32)
    checks = [
        (mx.nd.exp(a), np.exp(a32)),
        (mx.nd.relu(a), np.maximum(a32, 0)),
        (a * b + 1.5, a32 * b32 + np.float32(1.5)),
        (mx.nd.dot(a, b, transpose_b=True), a32 @ b32.T),
        (mx.nd.softmax(a, axis=1), np.exp(a32) / np.exp(a32).sum(axis=1, keepdims=True)),
        (mx.nd.transpose(a), a32.T),
        (mx.nd.concat(a, b, dim=0), np.concatenate([a32, b32])),
        (mx.nd.where(a > 0, a, b), np.where(a32 > 0, a32, b32)),
    ]
    for got, want in checks:
        assert got.dtype is np.float16
        rounded = want.astype(np.float16).astype(np.float32)
        np.testing.assert_allclose(got.asnumpy().astype(np.float32), rounded, rtol=1e-3, atol=1e-3)
    assert mx.nd.argmax(a, axis=1).asnumpy().tolist() == np.argmax(a16, axis=1).tolist()
    # exact where one float32 op rounds once: elementwise results are bit-equal to numpy's rounding
    np.testing.assert_array_equal(mx.nd.broadcast_add(a, b).asnumpy(), (a32 + b32).astype(np.float16))
    # out=, in place, and a float16 dtype param with float32 inputs
    o = mx.nd.zeros((3, 4), dtype="float16")
    assert mx.nd.relu(a, out=o) is o
    np.testing.assert_array_equal(o.asnumpy(), np.maximum(a16, 0))
    c = a.copy()
    c += b
    np.testing.assert_array_equal(c.asnumpy(), (a32 + b32).astype(np.float16))
    assert mx.nd.cast(mx.nd.array(a32), dtype="float16").dtype is np.float16
    assert mx.nd.one_hot(mx.nd.array([2, 0]), 3, dtype="float16").dtype is np.float16
    assert mx.nd.cast(a, dtype="float64").dtype is np.float64
    with pytest.raises(ShapeError, match=r"out has shape \(2,\) float16, the result \(3,4\) float16"):
        mx.nd.relu(a, out=mx.nd.zeros((2,), dtype="float16"))
