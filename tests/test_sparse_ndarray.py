"""Sparse NDArrays: creation, conversion, validation, operators' result storage types, file format."""
import numpy as np
import pytest
import scipy.sparse as sps

import symjit as mx
from symjit.base import FormatError, MXNetError

DENSE = np.array([[0, 0, 0], [1, 0, 2], [0, 0, 0], [0, 3, 0]], np.float32)


def test_row_sparse_array_from_parts_and_dense():
    a = mx.nd.sparse.row_sparse_array(([[1, 0, 2], [0, 3, 0]], [1, 3]), shape=(4, 3))
    assert isinstance(a, mx.nd.sparse.RowSparseNDArray) and a.stype == "row_sparse"
    assert a.shape == (4, 3) and a.dtype == np.float32
    np.testing.assert_array_equal(a.asnumpy(), DENSE)
    b = mx.nd.array(DENSE).tostype("row_sparse")
    assert b.indices.asnumpy().tolist() == [1, 3] and b.indices.dtype == np.int64
    np.testing.assert_array_equal(b.data.asnumpy(), DENSE[[1, 3]])


def test_row_sparse_shape_defaults_to_last_row():
    a = mx.nd.sparse.row_sparse_array(([[1.0, 2.0]], [4]))
    assert a.shape == (5, 2)


def test_csr_matrix_forms_agree():
    ref = sps.csr_matrix(DENSE)
    forms = [
        mx.nd.sparse.csr_matrix((ref.data, ref.indices, ref.indptr), shape=DENSE.shape),
        mx.nd.sparse.csr_matrix(ref),
        mx.nd.sparse.csr_matrix(DENSE),
        mx.nd.sparse.csr_matrix((ref.tocoo().data, (ref.tocoo().row, ref.tocoo().col)), shape=DENSE.shape),
        mx.nd.array(ref),
        mx.nd.array(DENSE).tostype("csr"),
        mx.nd.cast_storage(mx.nd.array(DENSE), "csr"),
    ]
    for m in forms:
        assert m.stype == "csr"
        np.testing.assert_array_equal(m.asnumpy(), DENSE)
        np.testing.assert_array_equal(m.indptr.asnumpy(), ref.indptr)
        np.testing.assert_array_equal(m.asscipy().toarray(), DENSE)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
def test_dense_numpy_sources_keep_their_dtype(dtype):
    src = DENSE.astype(dtype)
    made = [mx.nd.sparse.csr_matrix(src), mx.nd.sparse.row_sparse_array(src)]
    if dtype != np.float16:     # scipy has no float16 matrices
        made += [mx.nd.sparse.array(sps.csr_matrix(src)), mx.nd.array(sps.csr_matrix(src))]
    for m in made:
        assert m.dtype == dtype
        np.testing.assert_array_equal(m.asnumpy(), src)
    assert mx.nd.sparse.csr_matrix(DENSE.tolist()).dtype == np.float32
    assert mx.nd.sparse.csr_matrix(src, dtype="float32").dtype == np.float32


def test_dense_source_shape_must_match():
    for make in (mx.nd.sparse.csr_matrix, mx.nd.sparse.row_sparse_array):
        with pytest.raises(MXNetError, match=r"shape \(5, 3\) does not match"):
            make(DENSE, shape=(5, 3))


def test_zeros_of_every_storage_type():
    for stype in ("default", "row_sparse", "csr"):
        z = mx.nd.zeros((3, 2), stype=stype, dtype="float64")
        assert z.stype == stype and z.dtype == np.float64
        assert not z.asnumpy().any()
    assert mx.nd.sparse.zeros("row_sparse", (3, 2)).indices.shape == (0,)
    assert mx.nd.zeros_like(mx.nd.array(DENSE).tostype("csr")).stype == "csr"


@pytest.mark.parametrize("make, message", [
    (lambda: mx.nd.sparse.row_sparse_array(([[1.0]], [5]), shape=(3, 1)), r"\[0, 3\)"),
    (lambda: mx.nd.sparse.row_sparse_array(([[1.0], [2.0]], [2, 1]), shape=(3, 1)), "sorted and unique"),
    (lambda: mx.nd.sparse.row_sparse_array(([[1.0]], [0, 1]), shape=(3, 1)), "do not fit"),
    (lambda: mx.nd.sparse.csr_matrix(([1.0], [4], [0, 1]), shape=(1, 3)), r"\[0, 3\)"),
    (lambda: mx.nd.sparse.csr_matrix(([1.0, 2.0], [1, 0], [0, 2]), shape=(1, 3)), "sorted and unique"),
    (lambda: mx.nd.sparse.csr_matrix(([1.0], [0], [0, 1, 0]), shape=(2, 3)), "never decrease"),
    (lambda: mx.nd.sparse.csr_matrix(([1.0], [0], [0, 1]), shape=(2, 3)), "indptr has 2 entries"),
    (lambda: mx.nd.ones((2, 2, 2)).tostype("csr"), "2-D"),
    (lambda: mx.nd.ones((2,)).tostype("coo"), "unknown storage type"),
    (lambda: mx.nd.sparse.retain(mx.nd.ones((2, 2)), mx.nd.array([0])), "row_sparse"),
])
def test_bad_parts_raise(make, message):
    with pytest.raises(MXNetError, match=message):
        make()


def test_check_format_finds_corrupted_indices():
    a = mx.nd.array(DENSE).tostype("row_sparse")
    a.check_format()
    a._sp_aux = (np.array([3, 1], np.int64),)
    with pytest.raises(MXNetError, match="sorted"):
        a.check_format()


def test_copies_keep_storage_type():
    a = mx.nd.array(DENSE).tostype("csr")
    for b in (a.copy(), a.copyto(mx.cpu(1)), a.as_in_context(mx.cpu(1)), a.astype("float64"), a.detach()):
        assert b.stype == "csr"
        np.testing.assert_array_equal(b.asnumpy(), DENSE)
    assert a.astype("float64").dtype == np.float64 and a.copyto(mx.cpu(1)).context == mx.cpu(1)
    dense = mx.nd.zeros(DENSE.shape)
    a.copyto(dense)
    np.testing.assert_array_equal(dense.asnumpy(), DENSE)


def test_assignment_replaces_the_values():
    a = mx.nd.sparse.zeros("row_sparse", (4, 3))
    a[:] = mx.nd.array(DENSE)
    assert a.stype == "row_sparse" and a.indices.asnumpy().tolist() == [1, 3]
    a[:] = 0
    assert a.indices.shape == (0,)
    with pytest.raises(MXNetError, match="only x"):
        a[1] = 2


def test_csr_row_slices():
    m = mx.nd.array(DENSE).tostype("csr")
    np.testing.assert_array_equal(m[1:4].asnumpy(), DENSE[1:4])
    np.testing.assert_array_equal(m[3].asnumpy(), DENSE[3:4])
    assert m[1:3].stype == "csr"
    with pytest.raises(MXNetError, match="slice"):
        m[::2]


def test_retain_keeps_the_asked_rows_it_stores():
    a = mx.nd.array(DENSE).tostype("row_sparse")
    r = mx.nd.sparse.retain(a, mx.nd.array([3, 0, 2]))
    assert r.indices.asnumpy().tolist() == [3]
    np.testing.assert_array_equal(r.asnumpy(), np.where(np.arange(4)[:, None] == 3, DENSE, 0))


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_result_storage_types_follow_mxnet(stype):
    x = mx.nd.array(DENSE - 0.5 * (DENSE != 0))
    s, d = x.tostype(stype), x
    keep = {"x*2": s * 2, "2*x": 2 * s, "x/2": s / 2, "-x": -s, "sqrt": mx.nd.sqrt(mx.nd.abs(s)),
            "square": mx.nd.square(s), "relu": mx.nd.relu(s), "x+x": s + s, "x-x": s - s, "x*x": s * s,
            "x*d": s * d, "zeros_like": mx.nd.zeros_like(s), "clip": mx.nd.clip(s, -1, 1), "x+0": s + 0,
            "x/0": s / 0, "x==2": s == 2, "x<=-1": s <= -1}
    dense = {"exp": mx.nd.exp(s), "x+1": s + 1, "x**2": s ** 2, "d*x": d * s, "x+d": s + d,
             "sum": mx.nd.sum(s), "ones_like": mx.nd.ones_like(s), "0-x": 0 - s,
             "clip1": mx.nd.clip(s, 0.5, 1)}
    for name, r in keep.items():
        assert r.stype == stype, name
    for name, r in dense.items():
        assert r.stype == "default", name
    host = x.asnumpy()
    np.testing.assert_allclose(keep["x*2"].asnumpy(), host * 2)
    np.testing.assert_allclose(keep["x*d"].asnumpy(), host * host)
    np.testing.assert_allclose(dense["exp"].asnumpy(), np.exp(host), rtol=1e-6)
    np.testing.assert_allclose(dense["x+1"].asnumpy(), host + 1)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_products_compute_only_the_stored_values(stype):
    s = mx.nd.array(DENSE).tostype(stype)
    rows = np.broadcast_to((DENSE != 0).any(axis=1, keepdims=True), DENSE.shape)
    stored = DENSE != 0 if stype == "csr" else rows
    other = np.full(DENSE.shape, np.inf, np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        for r, ref in ((s * np.inf, DENSE * np.inf), (s / 0, DENSE / 0),
                       (s * mx.nd.array(other), DENSE * other),
                       (mx.nd.elemwise_mul(mx.nd.array(other), s), other * DENSE)):
            assert r.stype == stype
            np.testing.assert_array_equal(r.asnumpy(), np.where(stored, ref, 0))
            np.testing.assert_array_equal(r.indices.asnumpy(), s.indices.asnumpy())
    col = mx.nd.array([[np.inf], [2], [np.inf], [3]])
    c = mx.nd.array(DENSE).tostype("csr")
    r = c * col
    assert r.stype == "csr"
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(r.asnumpy(), np.where(DENSE != 0, DENSE * col.asnumpy(), 0))


def test_mixed_sparse_operands_give_dense():
    r, c = mx.nd.array(DENSE).tostype("row_sparse"), mx.nd.array(DENSE).tostype("csr")
    assert (r + c).stype == "default" and (r * c).stype == "default"
    np.testing.assert_array_equal((r + c).asnumpy(), 2 * DENSE)


def test_sparse_dot_exact_and_typed():
    rng = np.random.RandomState(0)
    lhs = sps.random(5, 7, density=0.3, random_state=rng, dtype=np.float32).tocsr()
    w = rng.rand(7, 3).astype(np.float32)
    g = rng.rand(5, 2).astype(np.float32)
    c = mx.nd.sparse.csr_matrix(lhs)
    y = mx.nd.sparse.dot(c, mx.nd.array(w))
    assert y.stype == "default"
    np.testing.assert_allclose(y.asnumpy(), lhs.toarray() @ w, rtol=1e-5)
    yt = mx.nd.dot(c, mx.nd.array(g), transpose_a=True)
    assert yt.stype == "row_sparse"
    np.testing.assert_allclose(yt.asnumpy(), lhs.toarray().T @ g, rtol=1e-5)
    assert mx.nd.dot(c, mx.nd.array(w), forward_stype="csr").stype == "csr"
    assert mx.nd.dot(c, mx.nd.array(g.T), transpose_a=True, transpose_b=True).stype == "default"
    h, h7 = rng.rand(4, 5).astype(np.float32), rng.rand(4, 7).astype(np.float32)
    for z, ref in ((mx.nd.dot(mx.nd.array(h), c), h @ lhs.toarray()),
                   (mx.nd.dot(mx.nd.array(h7), c, transpose_b=True), h7 @ lhs.toarray().T)):
        assert z.stype == "csr"
        np.testing.assert_allclose(z.asnumpy(), ref, rtol=1e-5)
    assert mx.nd.dot(mx.nd.array(h), c, forward_stype="default").stype == "default"


def test_elementwise_helpers():
    c = mx.nd.array(DENSE).tostype("csr")
    assert mx.nd.sparse.add(c, c).stype == "csr"
    assert mx.nd.sparse.elemwise_mul(mx.nd.array(DENSE), c).stype == "csr"
    with pytest.raises(MXNetError, match="do not broadcast"):
        mx.nd.sparse.elemwise_add(c, mx.nd.ones((1, 3)))
    np.testing.assert_array_equal(mx.nd.sparse.subtract(c, c).asnumpy(), 0 * DENSE)


def test_fallback_results_and_out():
    r = mx.nd.array(DENSE).tostype("row_sparse")
    out = mx.nd.sparse.zeros("row_sparse", DENSE.shape)
    mx.nd.square(r, out=out)
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.asnumpy(), DENSE ** 2)
    r += mx.nd.ones(DENSE.shape)
    assert r.stype == "row_sparse" and r.indices.shape == (4,)
    np.testing.assert_array_equal(r.asnumpy(), DENSE + 1)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_save_load_round_trip(tmp_path, stype):
    a = mx.nd.array(DENSE, dtype="float64").tostype(stype)
    path = str(tmp_path / "s.nd")
    mx.nd.save(path, {"a": a, "d": mx.nd.ones((2,))})
    back = mx.nd.load(path)
    assert back["a"].stype == stype and back["a"].dtype == np.float64
    np.testing.assert_array_equal(back["a"].asnumpy(), DENSE)
    assert back["d"].stype == "default"


def _rsp_record(indices: list, rows: int = 4) -> bytes:
    import struct
    n = len(indices)
    return (struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<Ii", 0xF993FAC9, 1)
            + struct.pack("<Iqq", 2, n, 1) + struct.pack("<Iqq", 2, rows, 1) + struct.pack("<iii", 1, 0, 0)
            + struct.pack("<iIq", 6, 1, n) + np.ones(n, np.float32).tobytes()
            + np.array(indices, np.int64).tobytes() + struct.pack("<Q", 0))


def test_load_checks_the_sparse_layout():
    assert mx.nd.load_frombuffer(_rsp_record([0, 2]))[0].indices.asnumpy().tolist() == [0, 2]
    with pytest.raises(FormatError, match="lie in"):
        mx.nd.load_frombuffer(_rsp_record([0, 9]))
    with pytest.raises(FormatError, match="sorted"):
        mx.nd.load_frombuffer(_rsp_record([2, 0]))
    with pytest.raises(FormatError, match="truncated"):
        mx.nd.load_frombuffer(_rsp_record([0, 2])[:-20])

