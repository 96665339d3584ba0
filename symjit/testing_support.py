"""More of ``mx.test_utils``: the default tolerances and context and the comparisons
(``assert_almost_equal``, ``almost_equal``, ``same``) the rest builds on, reference reductions,
random data, optimizer comparisons, platform checks and stream helpers that MXNet 1.x test programs
import (re-exported by :mod:`symjit.test_utils`).

>>> import numpy as np
>>> x = np.arange(24.0).reshape(2, 3, 4)
>>> np_reduce(x, axis=(0, 2), keepdims=True, numpy_reduce_func=np.sum).ravel().tolist()
[60.0, 92.0, 124.0]
"""
from __future__ import annotations

import contextlib
import copy
import functools
import os
import platform
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from . import ndarray as nd
from .base import MXNetError, ParamError, shape_str  # noqa: F401 (MXNetError: the doctests')
from .context import Context, current_context
from .io import DataIter

__all__ = [
    "default_context", "set_default_context", "get_rtol", "get_atol", "same", "almost_equal",
    "assert_almost_equal", "default_rtols", "default_atols", "default_numeric_eps", "effective_dtype",
    "np_reduce", "assert_allclose",
    "random_uniform_arrays", "random_sample", "assign_each", "assign_each2", "retry", "same_array",
    "assert_almost_equal_ignore_nan", "discard_stderr", "DummyIter", "compare_ndarray_tuple",
    "compare_optimizer", "is_cd_run", "is_aarch64_run", "has_tvm_ops", "is_op_runnable", "use_np",
]


# -- tolerances, contexts and comparisons (mx.test_utils' basics) ------------------------------
_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}
_default_ctx: list[Context] = []


def default_context() -> Context:
    """The context tests run on: the one given to :func:`set_default_context`, else the current
    context (``cpu(0)`` unless inside ``with ctx:``)."""
    return _default_ctx[-1] if _default_ctx else current_context()


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` what :func:`default_context` returns."""
    if not isinstance(ctx, Context):
        raise ParamError(f"set_default_context: expected a Context, got {type(ctx).__name__}")
    _default_ctx[:] = [ctx]


def _np(x: Any, where: str, arg: str) -> np.ndarray:
    if isinstance(x, nd.NDArray):
        return x.asnumpy()
    if isinstance(x, (np.ndarray, np.generic, int, float, list, tuple)):
        return np.asarray(x)
    raise ParamError(f"{where}: {arg} must be an NDArray or a numpy array, got {type(x).__name__}")


def _tol(table: dict, a: np.ndarray, b: np.ndarray, given: float | None) -> float:
    if given is not None:
        return float(given)
    found = [table[np.dtype(x.dtype)] for x in (a, b) if np.dtype(x.dtype) in table]
    return max(found) if found else 0.0


def get_rtol(rtol: float | None = None, dtype: Any = np.float32) -> float:
    """``rtol``, or the default relative tolerance of ``dtype``."""
    return float(rtol) if rtol is not None else _RTOL.get(np.dtype(dtype), 0.0)


def get_atol(atol: float | None = None, dtype: Any = np.float32) -> float:
    """``atol``, or the default absolute tolerance of ``dtype``."""
    return float(atol) if atol is not None else _ATOL.get(np.dtype(dtype), 0.0)


# -- comparisons -----------------------------------------------------------------------------------
def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` have the same shape and elements."""
    return bool(np.array_equal(_np(a, "same", "a"), _np(b, "same", "b")))


# arrays of at least this many elements, of these dtypes and one shape, are compared by a compiled
# one-pass kernel first (symjit.kernels.cpu.compare: numpy's rule in float64)
FAST_CLOSE_ELEMENTS = 1 << 16
_FAST_CLOSE_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _all_close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> bool:
    """numpy's ``allclose`` (shapes broadcast), decided first by the compiled one-pass kernel when
    ``a`` and ``b`` are big float arrays of one shape (float16 read as float32, exactly): a pair it
    finds not close goes through numpy."""
    if a.shape == b.shape and a.size >= FAST_CLOSE_ELEMENTS and a.dtype in _FAST_CLOSE_DTYPES \
            and b.dtype in _FAST_CLOSE_DTYPES:
        from .kernels.cpu.compare import all_close
        fa, fb = (x.astype(np.float32) if x.dtype == np.float16 else x for x in (a, b))
        if all_close(fa.reshape(-1), fb.reshape(-1), float(rtol), float(atol), bool(equal_nan)):
            return True
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def almost_equal(a: Any, b: Any, rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = False) -> bool:
    """Whether ``|a - b| <= atol + rtol * |b|`` everywhere (shapes broadcast)."""
    a, b = _np(a, "almost_equal", "a"), _np(b, "almost_equal", "b")
    return _all_close(a, b, _tol(_RTOL, a, b, rtol), _tol(_ATOL, a, b, atol), equal_nan)


def assert_almost_equal(a: Any, b: Any, rtol: float | None = None, atol: float | None = None,
                        names: tuple[str, str] = ("a", "b"), equal_nan: bool = False,
                        use_broadcast: bool = True, mismatches: tuple[int, int] = (10, 10)) -> None:
    """Raise ``AssertionError`` unless ``|a - b| <= atol + rtol * |b|`` everywhere; the message
    gives the largest violation, where it is and the values there, and up to ``mismatches[0]``
    other mismatching positions.

    >>> assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]))
    """
    a, b = _np(a, "assert_almost_equal", names[0]), _np(b, "assert_almost_equal", names[1])
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError(f"shapes differ: {names[0]} {shape_str(a.shape)}, "
                             f"{names[1]} {shape_str(b.shape)}")
    try:
        a_b, b_b = np.broadcast_arrays(a, b)
    except ValueError:
        raise AssertionError(f"shapes cannot be compared: {names[0]} {shape_str(a.shape)}, "
                             f"{names[1]} {shape_str(b.shape)}") from None
    rt, at = _tol(_RTOL, a, b, rtol), _tol(_ATOL, a, b, atol)
    if _all_close(a, b, rt, at, equal_nan):
        return
    x, y = a_b.astype(np.float64), b_b.astype(np.float64)
    with np.errstate(all="ignore"):
        excess = np.abs(x - y) / (at + rt * np.abs(y))
    excess = np.where(np.isnan(excess), np.inf, excess)
    if equal_nan:
        excess = np.where(np.isnan(x) & np.isnan(y), 0.0, excess)
    where = np.unravel_index(int(np.argmax(excess)), excess.shape) if excess.ndim else ()
    bad = np.argwhere(excess > 1)
    lines = [f"Items are not equal: error {float(excess[where]):.6g} exceeds tolerance rtol={rt:g}, "
             f"atol={at:g} ({len(bad)} of {excess.size} elements). Largest error at "
             f"{tuple(map(int, where))}: {names[0]}={float(x[where])!r}, {names[1]}={float(y[where])!r}"]
    for idx in bad[:mismatches[0]]:
        t = tuple(int(i) for i in idx)
        lines.append(f"  {t}: {names[0]}={float(x[t])!r} {names[1]}={float(y[t])!r}")
    raise AssertionError("\n".join(lines))


def assert_allclose(a: Any, b: Any, rtol: float = 1e-07, atol: float = 0, equal_nan: bool = True) -> None:  # noqa: FBT001, FBT002
    """:func:`assert_almost_equal` with numpy's ``assert_allclose`` defaults (NaNs equal).

    >>> assert_allclose(np.array([1.0, np.nan]), [1.0, np.nan])
    """
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


# -- tolerances ------------------------------------------------------------------------------------
def default_rtols() -> dict[np.dtype, float]:
    """The relative tolerance of comparisons per dtype (the lower precision of two arrays wins).

    >>> default_rtols()[np.dtype(np.float32)]
    0.0001
    """
    return {**_RTOL, **{np.dtype(t): 0 for t in (np.bool_, np.int8, np.uint8, np.int32, np.int64)}}


def default_atols() -> dict[np.dtype, float]:
    """The absolute tolerance of comparisons per dtype (integers compare exactly).

    >>> default_atols()[np.dtype(np.float64)]
    1e-20
    """
    return {**_ATOL, **{np.dtype(t): 0 for t in (np.bool_, np.int8, np.uint8, np.int32, np.int64)}}


def default_numeric_eps() -> dict[np.dtype, float]:
    """The finite-difference step of numeric gradients per dtype.

    >>> default_numeric_eps()[np.dtype(np.float64)]
    1e-05
    """
    return {np.dtype(np.float16): 1.0 / 2**6, np.dtype(np.float32): 1.0 / 2**9, np.dtype(np.float64): 1e-5}


def effective_dtype(dat: Any) -> np.dtype:
    """The dtype whose precision ``dat``'s values have: its own (symjit's kernels compute float32
    in float32 on every device, with no TensorFloat-32 GEMMs).

    >>> effective_dtype(np.zeros(2, np.float16))
    dtype('float16')
    """
    return np.dtype(dat.dtype)


# -- reference computations and random data -------------------------------------------------------
def np_reduce(dat: np.ndarray, axis: Any, keepdims: bool, numpy_reduce_func: Callable) -> np.ndarray:
    """Reduce ``dat`` over ``axis`` (an int, a sequence of ints or None: all) one axis at a time
    with ``numpy_reduce_func`` (``np.sum``, ``np.max``, ...), keeping the reduced axes as size 1
    when ``keepdims``: the reference MXNet's reduction tests compare against."""
    axes = [axis] if isinstance(axis, (int, np.integer)) else \
        list(range(dat.ndim)) if axis is None else list(axis)
    axes = [int(a) % dat.ndim if dat.ndim else int(a) for a in axes]
    out = dat
    for a in sorted(axes, reverse=True):
        out = numpy_reduce_func(out, axis=a)
    if keepdims:
        shape = [1 if i in axes else d for i, d in enumerate(dat.shape)]
        out = np.reshape(out, shape)
    return out


def random_uniform_arrays(*shapes: Any, low: float = 0.0, high: float = 1.0,
                          dtype: Any = np.float32) -> list[np.ndarray]:
    """numpy arrays of the given shapes, uniform in ``[low, high)`` (always a list).

    >>> [a.shape for a in random_uniform_arrays((2, 3), (4,), low=-1.0)]
    [(2, 3), (4,)]
    """
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population: Sequence, k: int) -> list:
    """``k`` distinct elements of ``population`` in random order (numpy's generator).

    >>> sorted(random_sample([1, 2, 3], 3))
    [1, 2, 3]
    """
    if not 0 <= k <= len(population):
        raise ParamError(f"random_sample: k={k} is not within [0, {len(population)}]")
    chosen = list(population)
    np.random.shuffle(chosen)
    return chosen[:k]


def assign_each(the_input: np.ndarray, function: Callable | None) -> np.ndarray:
    """``function`` applied to each element of ``the_input`` (a float64 array of its shape); a
    copy of ``the_input`` when ``function`` is None.

    >>> assign_each(np.array([1, 4, 9]), np.sqrt).tolist()
    [1.0, 2.0, 3.0]
    """
    if function is None:
        return np.array(the_input)
    src = np.asarray(the_input)
    return np.array([function(v) for v in src.ravel()], dtype=np.float64).reshape(src.shape)


def assign_each2(input1: np.ndarray, input2: np.ndarray, function: Callable | None) -> np.ndarray:
    """``function(a, b)`` for each pair of elements of two arrays of one shape (float64).

    >>> assign_each2(np.array([1, 2]), np.array([3, 4]), max).tolist()
    [3.0, 4.0]
    """
    if function is None:
        return np.array(input1)
    a, b = np.asarray(input1), np.asarray(input2)
    if a.shape != b.shape:
        raise ParamError(f"assign_each2: shapes differ: {a.shape} and {b.shape}")
    return np.array([function(x, y) for x, y in zip(a.ravel(), b.ravel())], dtype=np.float64).reshape(a.shape)


# -- test decorators and comparisons ---------------------------------------------------------------
def retry(n: int) -> Callable[[Callable], Callable]:
    """Decorate a stochastic test: it is run up to ``n`` times until one run raises no
    ``AssertionError``; the last run's error is raised.

    >>> calls = []
    >>> @retry(3)
    ... def flaky():
    ...     calls.append(1)
    ...     assert len(calls) == 2
    >>> flaky(); len(calls)
    2
    """
    if n <= 0:
        raise ParamError(f"retry: n must be positive, got {n}")

    def decorate(f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> None:
            for attempt in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if attempt == n - 1:
                        raise
                    nd.waitall()
        return wrapper
    return decorate


def same_array(array1: nd.NDArray, array2: nd.NDArray) -> bool:
    """Whether two NDArrays share memory: a write to ``array1`` shows in ``array2`` (``array1``
    is left as it was).

    >>> import symjit as mx
    >>> a = mx.nd.zeros((2, 2))
    >>> same_array(a, a[:]), same_array(a, a.copy())
    (True, False)
    """
    array1[:] += 1
    seen = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return seen and same(array1.asnumpy(), array2.asnumpy())


def assert_almost_equal_ignore_nan(a: Any, b: Any, rtol: float | None = None, atol: float | None = None,
                                   names: tuple[str, str] = ("a", "b")) -> None:
    """:func:`~symjit.test_utils.assert_almost_equal` over the positions where neither array is NaN.

    >>> assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([1.0, 5.0]))
    """
    x = np.array(_np(a, "assert_almost_equal_ignore_nan", names[0]), dtype=np.float64)
    y = np.array(_np(b, "assert_almost_equal_ignore_nan", names[1]), dtype=np.float64)
    x, y = np.broadcast_arrays(x, y)
    x, y = x.copy(), y.copy()
    nan = np.isnan(x) | np.isnan(y)
    x[nan] = 0
    y[nan] = 0
    assert_almost_equal(x, y, rtol, atol, names)


@contextlib.contextmanager
def discard_stderr() -> Iterator[None]:
    """Send what is written to the process's standard error (file descriptor 2, so also from
    compiled code) to the null device inside a ``with`` block.

    >>> with discard_stderr():
    ...     print("not shown", file=sys.stderr)
    """
    sys.stderr.flush()
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):   # a stream without a descriptor (captured)
        yield
        return
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as sink:
            os.dup2(sink.fileno(), fd)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, fd)
    finally:
        os.close(saved)


class DummyIter(DataIter):
    """An iterator that returns the first batch of ``real_iter`` forever (for speed tests).

    >>> import symjit as mx
    >>> it = DummyIter(mx.io.NDArrayIter(np.arange(8.0).reshape(4, 2), batch_size=2))
    >>> next(it) is next(it)
    True
    """

    def __init__(self, real_iter: DataIter) -> None:
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def __iter__(self) -> DummyIter:
        return self

    def next(self) -> Any:
        return self.the_batch


def compare_ndarray_tuple(t1: Any, t2: Any, rtol: float | None = None, atol: float | None = None) -> None:
    """Compare two optimizer states (None, an array or nested tuples of arrays) element by element."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        if not isinstance(t2, tuple) or len(t1) != len(t2):
            raise AssertionError(f"states differ in structure: {type(t1).__name__} of {len(t1)} and "
                                 f"{type(t2).__name__} of {len(t2) if isinstance(t2, tuple) else 1}")
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
        return
    assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def _stored(shape: Any, dtype: Any, stype: str, ctx: Context, whole: bool) -> nd.NDArray:
    """Uniform values in ``[0, 1)`` of ``shape`` stored as ``stype``; a sparse one stores every row
    (``whole``) or rows (csr: elements) drawn at random, each kept with one probability drawn at random."""
    from .random import uniform
    dense = uniform(shape=shape, ctx=ctx, dtype=dtype)
    if stype == "default":
        return dense
    if not whole:
        values = dense.asnumpy()
        keep = np.random.uniform()
        mask = np.random.uniform(size=values.shape[:1] if stype == "row_sparse" else values.shape) < keep
        values[~mask] = 0
        dense = nd.array(values, ctx=ctx, dtype=values.dtype)
    return dense.tostype(stype)


def compare_optimizer(opt1: Any, opt2: Any, shape: Any, dtype: Any, w_stype: str = "default",
                      g_stype: str = "default", rtol: float = 1e-4, atol: float = 1e-5,
                      compare_states: bool = True, ntensors: int = 1) -> None:
    """Run one update of ``opt1`` and ``opt2`` from the same random weight and gradient and
    compare the weights (and states, with ``compare_states``). A list of shapes updates
    ``ntensors`` weights: ``opt1`` one at a time, ``opt2`` in one ``update_multi_precision`` call
    over lists (dense storage). With one shape, ``w_stype``/``g_stype`` (``'row_sparse'``,
    ``'csr'``) give ``opt2`` sparse arrays and ``opt1`` their dense copies: the weight stores every
    row, the gradient some of them at random (a random share of its elements for csr).

    >>> import symjit as mx
    >>> compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1),
    ...                   (3, 4), np.float32)
    >>> compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1),
    ...                   (3, 4), np.float32, 'row_sparse', 'row_sparse')
    """
    for what, stype in (("w_stype", w_stype), ("g_stype", g_stype)):
        if stype not in ("default", "row_sparse", "csr"):
            raise ParamError(f"compare_optimizer: {what}={stype!r}; expected 'default', 'row_sparse' "
                             "or 'csr'")
        if stype != "default" and isinstance(shape, list):
            raise ParamError(f"compare_optimizer: {what}={stype!r} takes one shape, not a list")
    ctx = default_context()
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ParamError(f"compare_optimizer: ntensors={ntensors} needs a list of shapes")
        w2, g2 = _stored(shape, dtype, w_stype, ctx, True), _stored(shape, dtype, g_stype, ctx, False)
        w1, g1 = w2.tostype("default").copy(), g2.tostype("default").copy()
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    from .random import uniform
    w1 = tuple(uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2, g2 = copy.deepcopy(w1), copy.deepcopy(g1)
    states2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, states2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, states2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


# -- where the tests run ---------------------------------------------------------------------------
def is_cd_run() -> bool:
    """Whether the process runs as a release (continuous delivery) job: ``CD_JOB=1``."""
    return os.environ.get("CD_JOB") == "1"


def is_aarch64_run() -> bool:
    """Whether the machine is a 64-bit ARM one.

    >>> is_aarch64_run() == (platform.machine() == 'aarch64')
    True
    """
    return platform.machine() == "aarch64"


def has_tvm_ops() -> bool:
    """Whether operators compiled by TVM are available: never in symjit (its kernels are Numba's)."""
    return False


def is_op_runnable() -> bool:
    """Whether the TVM-generated operators MXNet's tests guard can run: symjit runs its own
    kernels for every registered operator, so they are always runnable."""
    return True


def use_np(func: Callable) -> Callable:
    """Mark a function or class as written for MXNet's NumPy-compatible arrays (``mx.np``). symjit
    does not have ``mx.np`` yet: calling the decorated function (or creating the class) raises
    the clear error ``mx.np`` gives.

    >>> @use_np
    ... def f():
    ...     return 1
    >>> try:
    ...     f()
    ... except MXNetError as exc:
    ...     print(str(exc).split(':')[0])
    mx.np is not supported by symjit yet
    """
    from .unsupported import planned

    if isinstance(func, type):
        def refuse_new(cls: type, *args: Any, **kwargs: Any) -> Any:
            raise planned("np")
        func.__new__ = refuse_new   # type: ignore[method-assign, assignment]
        return func

    @functools.wraps(func)
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise planned("np")
    return refuse
