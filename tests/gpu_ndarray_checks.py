"""NDArray operations on ``mx.gpu(0)`` against the same operations on the CPU, on numba's CUDA
simulator (run as a script with ``NUMBA_ENABLE_CUDASIM=1``; ``tests/test_gpu_ndarray.py`` does
that). On the CPU the ``mx.nd`` functions compute with numpy; on a GPU they run the registered
operators' compiled kernels on the device: each check compares the two, so either one going wrong
shows. Each check raises on a mismatch; the script prints ``ok <name>`` per check that passed."""
from __future__ import annotations

import contextlib
import sys

import numpy as np

import symjit as mx
from symjit import imperative
from symjit.base import MXNetError
from symjit.ndarray import storage

R = np.random.default_rng(0)
G = mx.gpu(0)


def _pair(values: np.ndarray) -> tuple[mx.nd.NDArray, mx.nd.NDArray]:
    return mx.nd.array(values, dtype=values.dtype), mx.nd.array(values, ctx=G, dtype=values.dtype)


def _same(cpu: mx.nd.NDArray, gpu: mx.nd.NDArray, what: str, rtol: float = 1e-5) -> None:
    assert gpu.context == G and not isinstance(gpu._data, np.ndarray), (what, gpu.context)
    assert gpu.shape == cpu.shape and gpu.dtype == cpu.dtype, (what, gpu.shape, cpu.shape,
                                                                gpu.dtype, cpu.dtype)
    np.testing.assert_allclose(gpu.asnumpy(), cpu.asnumpy(), rtol=rtol, atol=1e-6, err_msg=what)


@contextlib.contextmanager
def _no_host_copies():
    """Fail on any device-to-host copy inside the block (the simulator's device arrays)."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    original = FakeCUDAArray.copy_to_host

    def refuse(self, *args, **kwargs):
        raise AssertionError("a device array was copied to the host")
    FakeCUDAArray.copy_to_host = refuse
    try:
        yield
    finally:
        FakeCUDAArray.copy_to_host = original


def check_arithmetic_matches_cpu() -> None:
    """Every binary operator with an array (same shape and broadcast), a scalar on either side and
    in place, for float32 and int32, and the unary functions."""
    x = R.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    y = R.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    y[0, :2] = x[0, :2]                                     # ties for the comparisons
    row = R.uniform(0.5, 3.0, (1, 4)).astype(np.float32)
    for dtype in (np.float32, np.int32):
        (xc, xg), (yc, yg), (rc, rg) = (_pair(v.astype(dtype) if dtype == np.int32 else v)
                                        for v in ((x * 3).round() if dtype == np.int32 else x,
                                                  (y * 3).round() if dtype == np.int32 else y, row + 1))
        binops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
                  "/": lambda a, b: a / b, "%": lambda a, b: a % b, "**": lambda a, b: a ** b,
                  "==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">": lambda a, b: a > b,
                  ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
                  "maximum": mx.nd.maximum, "minimum": mx.nd.minimum}
        if dtype == np.float32:
            binops["hypot"] = mx.nd.hypot
        for name, fn in binops.items():
            tol = 1e-4 if name == "**" else 1e-5
            _same(fn(xc, yc), fn(xg, yg), f"{dtype.__name__} array {name} array", tol)
            _same(fn(xc, rc), fn(xg, rg), f"{dtype.__name__} array {name} row", tol)
            if name not in ("maximum", "minimum", "hypot"):
                _same(fn(xc, 2), fn(xg, 2), f"{dtype.__name__} array {name} 2", tol)
                _same(fn(3, xc), fn(3, xg), f"{dtype.__name__} 3 {name} array", tol)
        for op in ("__iadd__", "__isub__", "__imul__", "__itruediv__"):
            a, b = xc.copy(), xg.copy()
            getattr(a, op)(yc)
            getattr(b, op)(yg)
            getattr(a, op)(2)
            getattr(b, op)(2)
            _same(a, b, f"{dtype.__name__} {op}")
        _same(-xc, -xg, f"{dtype.__name__} negation")
        _same(abs(-xc), abs(-xg), f"{dtype.__name__} abs")
    xc, xg = _pair(x)
    for name in ("exp", "log", "sqrt", "square", "abs", "sign", "negative", "reciprocal", "floor",
                 "ceil", "trunc", "sin", "cos", "tanh", "sigmoid", "relu", "rsqrt", "log2", "log10",
                 "log1p", "expm1"):
        _same(getattr(mx.nd, name)(xc), getattr(mx.nd, name)(xg), name)
        # (the simulator runs Python math, which raises where a GPU gives NaN: no mixed signs there)
        if hasattr(xc, name) and name not in ("log", "sqrt", "rsqrt", "log2", "log10", "log1p"):
            _same(getattr(xc - 1.75, name)(), getattr(xg - 1.75, name)(), f"{name} (fluent, mixed signs)")
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6], np.float32)
    _same(mx.nd.round(_pair(halves)[0]), mx.nd.round(_pair(halves)[1]), "round (halves away from 0)")
    assert mx.nd.round(_pair(halves)[0]).asnumpy().tolist() == [-3, -2, -1, 1, 2, 3, 0, -1]


def check_reductions_dot_clip_and_shape_functions_match_cpu() -> None:
    """Reductions over every axis form, argmax/argmin, norm, dot with transposes, clip, and the
    functions that rearrange elements."""
    x = R.uniform(-2, 2, (2, 3, 4)).astype(np.float32)
    xc, xg = _pair(x)
    for fn in ("sum", "mean", "max", "min", "prod"):
        for kw in ({}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"axis": 1, "exclude": True},
                   {"axis": -1}):
            _same(getattr(mx.nd, fn)(xc, **kw), getattr(mx.nd, fn)(xg, **kw), f"{fn} {kw}", 1e-4)
    for fn in ("argmax", "argmin"):
        for kw in ({}, {"axis": 2}, {"axis": 0, "keepdims": True}):
            _same(getattr(mx.nd, fn)(xc, **kw), getattr(mx.nd, fn)(xg, **kw), f"{fn} {kw}")
    for kw in ({}, {"ord": 1}, {"axis": 1}, {"ord": 1, "axis": 2, "keepdims": True}):
        _same(mx.nd.norm(xc, **kw), mx.nd.norm(xg, **kw), f"norm {kw}", 1e-4)
    a, b = R.uniform(-1, 1, (3, 5)).astype(np.float32), R.uniform(-1, 1, (5, 4)).astype(np.float32)
    (ac, ag), (bc, bg) = _pair(a), _pair(b)
    _same(mx.nd.dot(ac, bc), mx.nd.dot(ag, bg), "dot")
    _same(mx.nd.dot(bc, ac, transpose_a=True, transpose_b=True),
          mx.nd.dot(bg, ag, transpose_a=True, transpose_b=True), "dot transposed")
    _same(mx.nd.clip(xc, -0.5, 1.0), mx.nd.clip(xg, -0.5, 1.0), "clip")
    _same(xc.T, xg.T, "T")
    _same(mx.nd.transpose(xc, axes=(1, 0, 2)), mx.nd.transpose(xg, axes=(1, 0, 2)), "transpose")
    _same(mx.nd.swapaxes(xc, 0, 2), mx.nd.swapaxes(xg, 0, 2), "swapaxes")
    _same(mx.nd.concat(xc, xc * 2, dim=1), mx.nd.concat(xg, xg * 2, dim=1), "concat")
    _same(mx.nd.stack(xc, xc, axis=3), mx.nd.stack(xg, xg, axis=3), "stack")
    for pc, pg in zip(mx.nd.split(xc, 3, axis=1, squeeze_axis=True),
                      mx.nd.split(xg, 3, axis=1, squeeze_axis=True)):
        _same(pc, pg, "split")
    _same(mx.nd.expand_dims(xc, 1), mx.nd.expand_dims(xg, 1), "expand_dims")
    _same(mx.nd.flatten(xc), mx.nd.flatten(xg), "flatten")
    _same(mx.nd.reshape(xc, (0, -1)), mx.nd.reshape(xg, (0, -1)), "reshape")
    _same(mx.nd.broadcast_to(xc[:, :1], (0, 3, 0)), mx.nd.broadcast_to(xg[:, :1], (0, 3, 0)),
          "broadcast_to")
    ic, ig = _pair(np.array([2, 0, 5, 1], np.float32))
    _same(mx.nd.one_hot(ic, 4, on_value=3, off_value=-1), mx.nd.one_hot(ig, 4, on_value=3, off_value=-1),
          "one_hot (5 out of range)")
    cc, cg = _pair(np.array([1, 0], np.float32))
    _same(mx.nd.where(cc, xc, -xc), mx.nd.where(cg, xg, -xg), "where (one value per row)")
    _same(mx.nd.add(xc, 1, out=mx.nd.zeros(xc.shape)), mx.nd.add(xg, 1, out=mx.nd.zeros(xg.shape, ctx=G)),
          "add with out=")
    # the registry's layers as mx.nd functions (symjit.imperative.nd_function)
    img, wc = _pair(R.uniform(-1, 1, (2, 2, 5, 5)).astype(np.float32)), \
        _pair(R.uniform(-1, 1, (3, 2, 3, 3)).astype(np.float32))
    _same(mx.nd.Convolution(img[0], wc[0], kernel=(3, 3), num_filter=3, no_bias=True),
          mx.nd.Convolution(img[1], wc[1], kernel=(3, 3), num_filter=3, no_bias=True), "nd.Convolution")
    _same(mx.nd.Pooling(img[0], kernel=(2, 2), pool_type="avg"),
          mx.nd.Pooling(img[1], kernel=(2, 2), pool_type="avg"), "nd.Pooling")
    _same(mx.nd.FullyConnected(ac, bc.T, num_hidden=4, no_bias=True),
          mx.nd.FullyConnected(ag, bg.T, num_hidden=4, no_bias=True), "nd.FullyConnected")
    _same(mx.nd.log_softmax(ac, axis=0), mx.nd.log_softmax(ag, axis=0), "nd.log_softmax")


def check_no_host_copies() -> None:
    """Once its kernels are compiled, a training-style sequence of NDArray operations on a GPU
    never copies a device array to the host."""
    w, g = mx.nd.ones((4, 3), ctx=G), mx.nd.ones((4, 3), ctx=G) * 0.5
    bias = mx.nd.zeros((3,), ctx=G)

    def step():
        w[:] = w - 0.1 * g
        w.__imul__(0.99)
        out = mx.nd.relu(mx.nd.dot(w, w, transpose_a=True) + bias)
        bias[:] = mx.nd.sum(out, axis=0) / 4
        w.copyto(g)
        g[:] = 0.5
        return out

    step()            # compiles the kernels (reading nothing back either)
    with _no_host_copies():
        for _ in range(3):
            step()
    assert np.isfinite(bias.asnumpy()).all()


def check_copies_and_assignment() -> None:
    """copyto/as_in_context/astype within and across devices, and ``__setitem__`` with scalars,
    host arrays, device arrays (overlapping ones too) and integer-array keys."""
    x = R.uniform(-1, 1, (4, 3)).astype(np.float32)
    xc, xg = _pair(x)
    back = xg.as_in_context(mx.cpu())
    assert back.context == mx.cpu()
    np.testing.assert_array_equal(back.asnumpy(), x)
    _same(xc.astype("float64"), xg.astype("float64"), "astype float64")
    _same(xc.astype("int32"), xg.astype("int32"), "astype int32")
    dst = mx.nd.zeros((4, 3), ctx=G, dtype="float64")
    xg.copyto(dst)
    np.testing.assert_allclose(dst.asnumpy(), x.astype(np.float64), rtol=1e-7)
    assert xg.copyto(G)._data is not xg._data
    for key, value in ((slice(None), 3.0), (1, np.arange(3)), ((slice(1, 3), 2), -1.0),
                       (Ellipsis, np.arange(12).reshape(4, 3)), (2, mx.nd.array([7, 8, 9]))):
        c, g = xc.copy(), xg.copy()
        c[key] = value
        g[key] = value.as_in_context(G) if isinstance(value, mx.nd.NDArray) else value
        _same(c, g, f"setitem {key!r}")
    c, g = xc.copy(), xg.copy()
    c[1:] = c[:3]
    g[1:] = g[:3]                      # overlapping device source: read before it is written
    _same(c, g, "overlapping setitem")
    c[[0, 2]] = 5.0
    g[[0, 2]] = 5.0
    _same(c, g, "setitem with an integer-array key")


def check_errors_name_the_operation() -> None:
    """Mixed contexts, dtypes and shapes are clear errors, as on the CPU."""
    a = mx.nd.ones((2, 3), ctx=G)
    cases = [(lambda: a + mx.nd.ones((2, 3)), ["NDArray +", "gpu(0)", "cpu(0)"]),
             (lambda: a * mx.nd.ones((2, 3), ctx=G, dtype="float64"), ["NDArray *", "float32", "float64"]),
             (lambda: a - mx.nd.ones((4,), ctx=G), ["NDArray -", "(2,3)", "(4,)"]),
             (lambda: a.__iadd__(mx.nd.ones((4, 2, 3), ctx=G)), ["NDArray +=", "(4,2,3)"]),
             (lambda: mx.nd.exp(a, out=mx.nd.zeros((3,), ctx=G)), ["exp", "(3,)", "(2,3)"]),
             (lambda: mx.nd.dot(a, a), ["dot", "(2,3)"])]
    for fn, words in cases:
        try:
            fn()
        except MXNetError as exc:
            assert all(w in str(exc) for w in words), (words, str(exc))
        else:
            raise AssertionError(f"no error for {words}")


def check_streams_and_the_call_table() -> None:
    """GPU arrays are bound to their device's stream; ``waitall``/``wait_to_read`` wait for it;
    an operator compiles once per (params, shapes, dtypes, device) and is then only called (an
    array-scalar operation is the broadcast operator with the scalar as a (1,) array)."""
    s = storage.stream(G)
    assert s is storage.stream(G) and s != 0
    a = mx.nd.ones((5,), ctx=G)
    assert a._data.stream is s and (a + 1)._data.stream is s
    imperative.clear_calls()
    for _ in range(3):
        b = (a * 2 + 1).exp()
    b.wait_to_read()
    mx.nd.waitall()
    assert imperative.cached_calls() == 3, imperative.cached_calls()   # *2, +1, exp
    a * 3                        # a scalar is an array of one element: a new value, no new kernel
    assert imperative.cached_calls() == 3
    mx.nd.ones((6,), ctx=G) * 2
    assert imperative.cached_calls() == 4
    np.testing.assert_allclose(b.asnumpy(), np.exp(3.0) * np.ones(5), rtol=1e-6)


def check_float16_matches_cpu() -> None:
    """float16 arrays (no float16 kernels) compute in float32 on either device, rounded back,
    update states included."""
    h = np.array([[1.5, -2.25, 3.0], [0.125, -1.0, 7.5]], np.float16)
    (c, g), (c2, g2) = _pair(h), _pair(h[::-1].copy())
    _same(mx.nd.relu(c) * c2 + 1, mx.nd.relu(g) * g2 + 1, "float16 relu(a) * b + 1")
    _same(mx.nd.sum(c, axis=1), mx.nd.sum(g, axis=1), "float16 sum")
    (wc, wg), (mc, mg) = _pair(h), _pair(np.zeros_like(h))
    for w, m, grad in ((wc, mc, c2), (wg, mg, g2)):
        mx.nd.sgd_mom_update(w, grad, m, lr=0.5, momentum=0.9, out=w)
    _same(wc, wg, "float16 sgd_mom_update weight")
    _same(mc, mg, "float16 sgd_mom_update state")


CHECKS = [check_arithmetic_matches_cpu, check_reductions_dot_clip_and_shape_functions_match_cpu,
          check_no_host_copies, check_copies_and_assignment, check_errors_name_the_operation,
          check_streams_and_the_call_table, check_float16_matches_cpu]


if __name__ == "__main__":
    sys.setswitchinterval(1e-3)   # the simulator's threads hand over the GIL faster (see gpu_executor_checks)
    names = sys.argv[1:]   # the checks to run, by name (all of them without names)
    for check in [c for c in CHECKS if not names or c.__name__ in names]:
        check()
        print("ok", check.__name__, flush=True)
