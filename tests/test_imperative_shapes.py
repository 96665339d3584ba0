"""Imperative calls run on fewer axes (symjit.imperative_shapes): the same results as numpy on
any shape, from compiled calls shared across shapes."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit import imperative
from symjit.imperative_shapes import canonical


def _c(op, params, shapes):
    c = canonical(op, params, shapes)
    return None if c is None else (c.op, c.params, c.picks, c.in_shapes, c.out_shapes)


def test_the_call_on_fewer_axes_of_each_family():
    assert _c("exp", {}, [(2, 3, 4)]) == ("exp", {}, [0], [(24,)], [(2, 3, 4)])
    assert _c("clip", {"a_min": 0, "a_max": 1}, [(5, 2)])[3] == [(10,)]
    # the axes where both inputs agree merge; size-1 axes of the result go; three or more
    # merged axes are seen with five (size-1 axes first), so every such rank shares one kernel,
    # whatever the call's size
    assert _c("broadcast_mul", {}, [(4, 1, 3, 5), (7, 1, 1)]) == \
        ("broadcast_mul", {}, [0, 1], [(1, 1, 4, 1, 15), (1, 1, 1, 7, 1)], [(4, 7, 3, 5)])
    assert _c("broadcast_add", {}, [(2, 1, 3, 1), (1, 5, 1, 6)])[3] == [(1, 2, 1, 3, 1), (1, 1, 5, 1, 6)]
    assert _c("broadcast_add", {}, [(64, 1, 128, 1, 1), (1, 32, 1, 8, 2)])[3] == \
        [(1, 64, 1, 128, 1), (1, 1, 32, 1, 16)]
    assert _c("broadcast_sub", {}, [(1, 1), (1,)]) == ("broadcast_sub", {}, [0, 1], [(1,), (1,)], [(1, 1)])
    # runs of reduced and of kept axes merge, whatever the way the axes were given
    assert _c("sum", {"axis": (1, 2)}, [(2, 3, 4, 5)]) == \
        ("sum", {"axis": (1,), "keepdims": True}, [0], [(2, 12, 5)], [(2, 5)])
    assert _c("max", {"axis": "(0, 2)", "exclude": "True"}, [(2, 3, 4, 1)])[1:4] == \
        ({"axis": (1,), "keepdims": True}, [0], [(2, 3, 4)])
    assert _c("mean", {"axis": (0,)}, [(1, 3)]) == \
        ("mean", {"axis": (1,), "keepdims": True}, [0], [(3, 1)], [(3,)])
    assert _c("argmin", {"axis": 1}, [(2, 3, 4, 5)]) == \
        ("argmin", {"axis": 1, "keepdims": True}, [0], [(2, 3, 20)], [(2, 4, 5)])
    assert _c("argmax", {"axis": -1}, [(2, 3, 4)])[3] == [(6, 4)]
    # broadcast_like without axes is broadcast_to the second input's shape
    assert _c("broadcast_like", {}, [(1, 3), (2, 3)]) == \
        ("broadcast_to", {"shape": (2, 3)}, [0], [(1, 3)], [(2, 3)])
    assert _c("broadcast_to", {"shape": (2, 3, 4)}, [(1, 3, 4)]) == \
        ("broadcast_to", {"shape": (2, 12)}, [0], [(1, 12)], [(2, 3, 4)])


def test_calls_that_stay_as_given():
    assert canonical("exp", {}, [(5,)]) is None                      # already one axis
    assert canonical("exp", {}, [(2, 0)]) is None                    # zero-size
    assert canonical("sum", {"axis": (0, 1), "exclude": True}, [(2, 3)]) is None   # nothing reduced
    assert canonical("broadcast_add", {}, [(2, 3), (4,)]) is None    # the rule rejects it
    assert canonical("broadcast_mul", {}, [(4, 1), (1, 6)]) is None  # two merged axes: as given
    assert canonical("broadcast_like", {"lhs_axes": (0,), "rhs_axes": (0,)}, [(1, 3), (2, 3)]) is None
    assert canonical("transpose", {}, [(2, 3)]) is None
    assert canonical("argmin", {"axis": 1, "keepdims": True}, [(2, 3, 4)]) is None   # the call itself


def _shapes(rng, n, lo=1, hi=5):
    for _ in range(n):
        out = rng.randint(lo, hi, size=rng.randint(1, 5))
        lhs, rhs = out.copy(), out[rng.randint(0, len(out)):].copy()
        for a in (lhs, rhs):
            a[rng.rand(len(a)) < 0.4] = 1
        yield tuple(out), tuple(lhs), tuple(rhs)


def test_broadcast_and_elementwise_calls_match_numpy_and_share_compiled_calls():
    rng = np.random.RandomState(3)
    for _, ls, rs in _shapes(rng, 12):
        lhs, rhs = rng.randn(*ls).astype(np.float32), rng.randn(*rs).astype(np.float32)
        a, b = mx.nd.array(lhs), mx.nd.array(rhs)
        np.testing.assert_allclose((a * b).asnumpy(), lhs * rhs, rtol=1e-6)
        np.testing.assert_array_equal((a > b).asnumpy(), (lhs > rhs).astype(np.float32))
        np.testing.assert_allclose(mx.nd.broadcast_hypot(a, b).asnumpy(), np.hypot(lhs, rhs), rtol=1e-6)
        np.testing.assert_allclose(mx.nd.exp(a).asnumpy(), np.exp(lhs), rtol=1e-6)
    imperative.clear_calls()
    for shape in [(2, 3), (6,), (3, 1, 2), (1, 6)]:
        x = mx.nd.array(np.arange(6.0).reshape(shape))
        np.testing.assert_allclose(mx.nd.sqrt(x).asnumpy(), np.sqrt(np.arange(6.0)).reshape(shape), rtol=1e-6)
    assert imperative.cached_calls() == 1     # one flat call for the four shapes


@pytest.mark.parametrize("dtype", ["float16", "float64"])   # float16 runs the float32 kernels
def test_reductions_on_random_axes_match_numpy(dtype):
    rng = np.random.RandomState(7)
    ops = [("sum", np.sum), ("mean", np.mean), ("prod", np.prod), ("max", np.max), ("min", np.min),
           ("nansum", np.nansum), ("nanprod", np.nanprod)]
    for _ in range(6):
        shape = tuple(rng.randint(1, 5, size=rng.randint(1, 5)))
        x = (rng.rand(*shape) + 0.5).astype(dtype)
        x.ravel()[rng.rand(x.size) < 0.1] = np.nan
        axes = tuple(int(k) for k in np.flatnonzero(rng.rand(len(shape)) < 0.5)) or None
        keep, exclude = bool(rng.randint(2)), bool(rng.randint(2)) and axes is not None
        for name, ref in ops:
            got = getattr(mx.nd, name)(mx.nd.array(x, dtype=dtype), axis=axes, keepdims=keep,
                                       exclude=exclude).asnumpy()
            red = None if axes is None else tuple(k for k in range(len(shape)) if (k in axes) != exclude)
            want = np.asarray(ref(x.astype(np.float64), axis=red, keepdims=keep))
            want = want.reshape(got.shape) if want.ndim == 0 else want
            assert got.shape == want.shape, (name, shape, axes, keep, exclude)
            tol = 1e-2 if dtype == "float16" else 1e-5
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol, equal_nan=True)
        axis = int(rng.randint(len(shape)))
        y = rng.rand(*shape).astype(dtype)
        np.testing.assert_array_equal(mx.nd.argmax(mx.nd.array(y, dtype=dtype), axis=axis).asnumpy(),
                                      np.argmax(y, axis=axis))
        np.testing.assert_array_equal(mx.nd.argmin(mx.nd.array(y, dtype=dtype)).asnumpy(), [np.argmin(y)])


def test_broadcast_to_like_and_axis_on_random_shapes():
    rng = np.random.RandomState(5)
    for out, ls, _ in _shapes(rng, 10):
        x = rng.rand(*ls)
        a = mx.nd.array(x)
        np.testing.assert_allclose(a.broadcast_to(out).asnumpy(), np.broadcast_to(x, out), rtol=1e-6)
        np.testing.assert_allclose(a.broadcast_like(mx.nd.ones(out)).asnumpy(), np.broadcast_to(x, out),
                                   rtol=1e-6)
    z = mx.nd.array(np.arange(3.0).reshape(1, 3, 1))
    np.testing.assert_array_equal(mx.nd.broadcast_axis(z, axis=(0, 2), size=(2, 4)).asnumpy(),
                                  np.broadcast_to(np.arange(3.0).reshape(1, 3, 1), (2, 3, 4)))


def test_out_arrays_in_place_updates_and_errors_keep_the_callers_shapes():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3))
    b = mx.nd.array([[10.0], [20.0]])
    for _ in range(2):          # the second call takes the repeated-call path
        o = mx.nd.zeros((2, 3))
        assert mx.nd.broadcast_add(a, b, out=o) is o
        np.testing.assert_array_equal(o.asnumpy(), np.arange(6.0).reshape(2, 3) + [[10.0], [20.0]])
    c = a.copy()
    c += c
    c *= 2
    np.testing.assert_array_equal(c.asnumpy(), np.arange(6.0).reshape(2, 3) * 4)
    s = mx.nd.zeros((2,))
    mx.nd.sum(a, axis=1, out=s)
    np.testing.assert_array_equal(s.asnumpy(), [3.0, 12.0])
    with pytest.raises(mx.base.MXNetError, match="broadcast_add.*int32"):
        mx.nd.broadcast_add(a, mx.nd.ones((2, 3), dtype="int32"))
    with pytest.raises(mx.base.MXNetError, match="out"):
        mx.nd.exp(a, out=mx.nd.zeros((6,)))


def test_numpy_functions_read_an_ndarray_and_numpy_operands_defer_to_it():
    a = mx.nd.array([50000001], dtype="int32")
    assert np.all(a == 50000001)
    assert isinstance(np.ones(2) + mx.nd.ones((2,)), mx.nd.NDArray)
    assert isinstance(np.float32(2) * mx.nd.ones((2,)), mx.nd.NDArray)


def test_elementwise_updates_run_on_the_flat_weight_and_states():
    rng = np.random.RandomState(11)
    imperative.clear_calls()
    for shape in [(2, 3, 4), (24,), (4, 6), (1, 2, 3, 4, 1)]:
        w, g, m, v = (rng.rand(24) for _ in range(4))
        flat = [mx.nd.array(x) for x in (w, g, m, v)]
        shaped = [mx.nd.array(x.reshape(shape)) for x in (w, g, m, v)]
        for arrays in (flat, shaped):
            mx.nd.adam_update(*arrays, out=arrays[0], lr=0.1, wd=0.01, rescale_grad=0.5)
        for f, s in zip(flat, shaped):
            assert s.shape == shape
            np.testing.assert_array_equal(s.asnumpy().ravel(), f.asnumpy())
        assert not np.array_equal(shaped[2].asnumpy().ravel(), m)     # the mean state moved
        mom = mx.nd.zeros(shape)
        out = mx.nd.sgd_mom_update(shaped[0], shaped[1], mom, lr=0.1, momentum=0.9)
        assert out.shape == shape and mom.shape == shape
        np.testing.assert_allclose(mom.asnumpy(), -0.1 * shaped[1].asnumpy(), rtol=1e-6)
    updates = [key for key in imperative._CALLS if key[0].startswith("_rt_")]
    assert len(updates) == 2, updates      # one flat call each for the four shapes


def test_sort_argsort_and_topk_run_along_the_middle_axis_of_a_3d_view():
    assert _c("topk", {"axis": 2, "k": 2}, [(2, 3, 4, 5)]) == \
        ("topk", {"axis": 1, "k": 2}, [0], [(6, 4, 5)], [(2, 3, 2, 5)])
    assert _c("sort", {"axis": None}, [(2, 3)])[1:4] == ({"axis": 1}, [0], [(1, 6, 1)])
    assert _c("argsort", {"axis": 1}, [(5, 7, 1)]) is None      # already that call
    rng = np.random.RandomState(11)
    x = rng.permutation(120).reshape(2, 3, 4, 5).astype(np.float64)   # distinct: one stable order
    a = mx.nd.array(x, dtype="float64")
    imperative.clear_calls()
    for axis in (0, 1, 2, 3, -1, None):
        flat = x.reshape(-1) if axis is None else x
        ax = 0 if axis is None else axis
        order = np.argsort(flat, axis=ax, kind="stable")
        np.testing.assert_array_equal(mx.nd.sort(a, axis=axis).asnumpy(), np.sort(flat, axis=ax))
        np.testing.assert_array_equal(mx.nd.argsort(a, axis=axis, is_ascend=False).asnumpy(),
                                      np.flip(order, axis=ax).astype(np.float32))
        top = mx.nd.topk(a, axis=axis, k=2, ret_typ="both")
        np.testing.assert_array_equal(top[1].asnumpy(),
                                      np.take(np.flip(order, axis=ax), [0, 1], axis=ax).astype(np.float32))
        np.testing.assert_array_equal(top[0].asnumpy(), np.take(np.flip(np.sort(flat, axis=ax), axis=ax),
                                                                [0, 1], axis=ax))
        mask = mx.nd.topk(a, axis=axis, k=2, ret_typ="mask", is_ascend=True).asnumpy()
        assert mask.shape == x.shape
        mask = mask.reshape(-1) if axis is None else mask
        np.testing.assert_array_equal(mask, np.isin(np.argsort(np.argsort(flat, axis=ax), axis=ax),
                                                    [0, 1]).astype(np.float32))   # the 2 smallest
    # one compiled program each for sort, argsort, topk both and topk mask, whatever the axis
    sources = {call.compiled.program.module_source for call in imperative._CALLS.values()}
    assert imperative.cached_calls() == 4 * 5 and len(sources) == 4    # axes 3 and -1: one view


def test_box_iou_on_any_ranks_runs_on_two_dimensional_views_of_one_kernel_form():
    assert _c("_contrib_box_iou", {"format": "center"}, [(2, 1, 3, 4), (1, 2, 4)]) == \
        ("_contrib_box_iou", {"format": "center"}, [0, 1], [(6, 4), (2, 4)], [(2, 1, 3, 1, 2)])
    assert _c("_contrib_box_iou", {}, [(5, 4), (3, 4)]) is None        # already that call
    rng = np.random.RandomState(5)
    imperative.clear_calls()
    for dims_a, dims_b in (((1,), (2,)), ((2, 1), (1, 1, 3)), ((1, 2, 2), (2,)), ((3,), (1,))):
        lo = rng.rand(*dims_a, 2) * 4
        a = np.concatenate([lo, lo + rng.rand(*dims_a, 2) * 3 + 0.5], axis=-1)
        lo = rng.rand(*dims_b, 2) * 4
        b = np.concatenate([lo, lo + rng.rand(*dims_b, 2) * 3 + 0.5], axis=-1)
        got = mx.nd.contrib.box_iou(mx.nd.array(a), mx.nd.array(b)).asnumpy()
        assert got.shape == dims_a + dims_b
        fa, fb = a.reshape(-1, 1, 4), b.reshape(1, -1, 4)
        iw = np.clip(np.minimum(fa[..., 2], fb[..., 2]) - np.maximum(fa[..., 0], fb[..., 0]), 0, None)
        ih = np.clip(np.minimum(fa[..., 3], fb[..., 3]) - np.maximum(fa[..., 1], fb[..., 1]), 0, None)
        area = lambda x: (x[..., 2] - x[..., 0]) * (x[..., 3] - x[..., 1])     # noqa: E731
        want = iw * ih / (area(fa) + area(fb) - iw * ih)
        np.testing.assert_allclose(got, want.reshape(got.shape), rtol=1e-5, atol=1e-6)
    sources = {call.compiled.program.module_source for call in imperative._CALLS.values()}
    assert imperative.cached_calls() == 4 and len(sources) == 1      # one program form for every rank


def test_broadcasts_of_three_to_five_merged_axes_share_one_compiled_call():
    """Seen with five axes (size-1 axes first), broadcasts of 3, 4 and 5 merged axes are one
    compiled call per operator and dtype; the results are numpy's to the bit."""
    rng = np.random.RandomState(11)
    pairs = [((2, 1, 3), (1, 4, 3)), ((1, 5, 1, 2), (3, 1, 4, 2)), ((2, 1, 3, 1, 4), (1, 3, 1, 2, 1)),
             ((4, 1, 6), (4, 5, 1))]
    imperative.clear_calls()
    for ls, rs in pairs:
        lhs, rhs = rng.randn(*ls).astype(np.float32), rng.randn(*rs).astype(np.float32)
        got = mx.nd.broadcast_sub(mx.nd.array(lhs), mx.nd.array(rhs)).asnumpy()
        np.testing.assert_array_equal(got, lhs - rhs)
    calls = list(imperative._CALLS.values())
    assert len(calls) == 4   # a call per shape, ...
    assert len({m for c in calls for m in c.compiled.program.kernel_modules}) == 1   # ... one kernel


def test_big_and_small_broadcasts_of_three_and_four_merged_axes_share_the_kernel():
    """A call big enough to run in parts is seen with five axes too: the size-1 axes in front
    leave the product of the axes its parts split as it is. Small and big calls of 3 and 4 merged
    axes are one kernel form; the results are numpy's to the bit."""
    from symjit.threads import PARTS_MIN
    rng = np.random.RandomState(5)
    pairs = [((2, 1, 3), (1, 4, 3)), ((64, 1, 128, 1), (1, 32, 1, 16)), ((160, 1, 80), (1, 90, 80)),
             ((1, 5, 1, 2), (3, 1, 4, 2))]
    assert max(np.prod(np.broadcast_shapes(a, b)) for a, b in pairs) >= PARTS_MIN
    imperative.clear_calls()
    for ls, rs in pairs:
        lhs, rhs = rng.randn(*ls).astype(np.float32), rng.randn(*rs).astype(np.float32)
        got = mx.nd.broadcast_mul(mx.nd.array(lhs), mx.nd.array(rhs)).asnumpy()
        np.testing.assert_array_equal(got, lhs * rhs)
    calls = list(imperative._CALLS.values())
    assert len(calls) == 4
    assert len({m for c in calls for m in c.compiled.program.kernel_modules}) == 1
