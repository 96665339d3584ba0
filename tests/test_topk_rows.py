"""topk's few entries of a long row, kept by insertion in one pass (symjit.ops.sort.topk_row): the
same indices as the whole stable sort, ties in input order, both orders; rows with a NaN go to the
whole sort."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.ops.sort import topk_row


def _stable(row: np.ndarray, ascend: bool) -> np.ndarray:
    return np.argsort(row if ascend else -row, kind="stable")


@pytest.mark.parametrize("ascend", [True, False])
def test_the_kept_indices_are_the_stable_sorts_first(ascend):
    rng = np.random.default_rng(5)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        keep = int(rng.integers(1, n + 1))
        high = 4 if trial % 3 == 0 else 1000          # many ties, or few
        row = rng.integers(0, high, size=n).astype(np.float32)
        if trial % 7 == 0:
            row = np.sort(row)[::-1 if trial % 2 else 1].copy()   # the worst and the best order
        x = row.reshape(1, n, 1)
        ind = np.full((1, n, 1), -1, np.int64)
        assert topk_row(x, 0, 0, n, keep, ind, ascend)
        np.testing.assert_array_equal(ind[0, :keep, 0], _stable(row, ascend)[:keep])


def test_a_row_with_a_nan_is_left_to_the_whole_sort():
    x = np.array([3.0, np.nan, 1.0, 2.0], np.float32).reshape(1, 4, 1)
    assert not topk_row(x, 0, 0, 4, 2, np.zeros((1, 4, 1), np.int64), True)
    rows = np.random.default_rng(1).random((3, 64)).astype(np.float32)
    rows[1, [5, 40]] = np.nan
    data = mx.nd.array(rows)
    for ascend in (True, False):
        got = mx.nd.topk(data, k=4, is_ascend=ascend).asnumpy()
        whole = mx.nd.argsort(data, is_ascend=ascend).asnumpy()[:, :4]
        np.testing.assert_array_equal(got, whole)
        np.testing.assert_array_equal(got[[0, 2]], np.stack([_stable(r, ascend)[:4] for r in rows[[0, 2]]]))


def test_a_long_row_runs_in_one_pass_through_the_compiled_kernel():
    rows = np.random.default_rng(2).random((4, 50_000)).astype(np.float32)
    rows[2, 100:200] = rows[2, 0]                     # ties at the top of one row
    got = mx.nd.topk(mx.nd.array(rows), k=7, ret_typ="both")
    order = np.stack([_stable(r, False)[:7] for r in rows])
    np.testing.assert_array_equal(got[1].asnumpy(), order)
    np.testing.assert_array_equal(got[0].asnumpy(), np.take_along_axis(rows, order, 1))
