"""Tests of mx.io's data iterators: expected batches are hand-computed or built with numpy here."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symjit as mx
from symjit.base import DTypeError, FormatError, MXNetError, ParamError, ShapeError
from symjit.io import DataBatch, DataDesc, MNISTIter, NDArrayIter, PrefetchingIter, ResizeIter

MNIST_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"


def samples(n: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Sample i has data [i, 100 + i] and label i."""
    data = np.stack([np.arange(n), 100 + np.arange(n)], axis=1).astype(np.float32)
    return data, np.arange(n, dtype=np.float32)


def epoch(it) -> list[tuple[list[float], list[float], int]]:
    """(sample ids of the data, labels, pad) of every batch of one epoch."""
    return [(b.data[0].asnumpy()[:, 0].tolist(), b.label[0].asnumpy().tolist(), b.pad) for b in it]


# -- last_batch_handle ------------------------------------------------------------------------

def test_pad_wraps_to_start():
    it = NDArrayIter(*samples(), batch_size=4)
    assert epoch(it) == [([0, 1, 2, 3], [0, 1, 2, 3], 0), ([4, 5, 6, 7], [4, 5, 6, 7], 0),
                         ([8, 9, 0, 1], [8, 9, 0, 1], 2)]
    it.reset()
    assert epoch(it)[2] == ([8, 9, 0, 1], [8, 9, 0, 1], 2)


def test_pad_keeps_second_column():
    data, label = samples()
    it = NDArrayIter(data, label, batch_size=4)
    last = list(it)[-1]
    np.testing.assert_array_equal(last.data[0].asnumpy(), [[8, 108], [9, 109], [0, 100], [1, 101]])


def test_discard_drops_incomplete_batch():
    it = NDArrayIter(*samples(), batch_size=4, last_batch_handle="discard")
    assert epoch(it) == [([0, 1, 2, 3], [0, 1, 2, 3], 0), ([4, 5, 6, 7], [4, 5, 6, 7], 0)]
    it.reset()
    assert [b[0] for b in epoch(it)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_roll_over_carries_remainder():
    it = NDArrayIter(*samples(), batch_size=4, last_batch_handle="roll_over")
    assert [b[0] for b in epoch(it)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.reset()
    second = epoch(it)
    # 8, 9 come first; pad reports the rolled-over count as MXNet 1.x does
    assert second == [([8, 9, 0, 1], [8, 9, 0, 1], 2), ([2, 3, 4, 5], [2, 3, 4, 5], 0),
                      ([6, 7, 8, 9], [6, 7, 8, 9], 0)]
    it.reset()  # 10 of 10 used exactly: nothing to carry
    assert [b[0] for b in epoch(it)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_roll_over_hard_reset_and_mid_epoch_reset_drop_carry():
    it = NDArrayIter(*samples(), batch_size=4, last_batch_handle="roll_over")
    list(it)
    it.hard_reset()
    assert it.next().data[0].asnumpy()[:, 0].tolist() == [0, 1, 2, 3]
    it.reset()  # mid-epoch: nothing was carried
    assert it.next().data[0].asnumpy()[:, 0].tolist() == [0, 1, 2, 3]


def test_exact_multiple_has_no_pad():
    for mode in ("pad", "discard", "roll_over"):
        it = NDArrayIter(*samples(8), batch_size=4, last_batch_handle=mode)
        assert [(b[0], b[2]) for b in epoch(it)] == [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0)]


def test_batch_larger_than_data_pads_by_wrapping():
    it = NDArrayIter(*samples(3), batch_size=7)
    assert epoch(it) == [([0, 1, 2, 0, 1, 2, 0], [0, 1, 2, 0, 1, 2, 0], 4)]


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), bs=st.integers(1, 12))
def test_pad_and_discard_counts(n, bs):
    data = np.arange(n, dtype=np.float32)
    padded = list(NDArrayIter(data, batch_size=bs))
    assert len(padded) == -(-n // bs)
    assert padded[-1].pad == (-n) % bs
    flat = np.concatenate([b.data[0].asnumpy() for b in padded])
    np.testing.assert_array_equal(flat, np.arange(len(padded) * bs) % n)
    assert len(list(NDArrayIter(data, batch_size=bs, last_batch_handle="discard"))) == n // bs


# -- inputs, names, dtypes --------------------------------------------------------------------

def test_provide_data_and_label():
    data, label = samples()
    it = NDArrayIter(data.reshape(10, 2, 1), label, batch_size=4)
    assert it.provide_data == [("data", (4, 2, 1))]
    assert it.provide_label == [("softmax_label", (4,))]
    assert it.provide_data[0].dtype == np.float32 and it.provide_data[0].layout == "NCHW"
    assert repr(it.provide_label[0]) == "DataDesc[softmax_label,(4,),float32,NCHW]"


def test_list_inputs_named_by_position():
    a, b = np.zeros((6, 2), np.float32), np.ones((6, 3), np.float32)
    it = NDArrayIter([a, b], [np.arange(6.0)], batch_size=3)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    assert [d.name for d in it.provide_label] == ["softmax_label"]
    batch = it.next()
    assert [x.shape for x in batch.data] == [(3, 2), (3, 3)]


def test_dict_inputs_sorted_by_name():
    d = {"b": np.full((4, 1), 2.0, np.float32), "a": np.full((4, 5), 1.0, np.float32)}
    it = NDArrayIter(d, {"lbl": np.arange(4.0)}, batch_size=2)
    assert [x.name for x in it.provide_data] == ["a", "b"]
    assert [x.shape for x in it.provide_data] == [(2, 5), (2, 1)]
    batch = it.next()
    assert batch.data[0].asnumpy().tolist() == [[1.0] * 5] * 2
    assert batch.label[0].asnumpy().tolist() == [0.0, 1.0]


def test_inputs_with_more_samples_than_the_first_data_read_their_first_ones():
    data, label = samples(10)
    it = NDArrayIter(data[6:], {"lbl": label, "w": label * 2}, batch_size=2, shuffle=True)
    assert it.num_data == 4
    seen = []
    for batch in it:
        first = batch.data[0].asnumpy()[:, 0] - 6          # sample j of data[6:] is sample 6 + j
        np.testing.assert_array_equal(batch.label[0].asnumpy(), first)
        np.testing.assert_array_equal(batch.label[1].asnumpy(), 2 * first)
        seen += first.tolist()
    assert sorted(seen) == [0.0, 1.0, 2.0, 3.0]


def test_ndarray_dtypes_kept_numpy_and_lists_float32():
    """As MXNet's NDArrayIter, which converts every source that is not an NDArray with mx.nd.array."""
    it = NDArrayIter(np.arange(4, dtype=np.int32), np.arange(4.0), batch_size=2)
    batch = it.next()
    assert batch.data[0].dtype == np.float32 and batch.label[0].dtype == np.float32
    assert it.provide_data[0].dtype == np.float32 and it.provide_label[0].dtype == np.float32
    assert batch.data[0].asnumpy().tolist() == [0.0, 1.0]
    it2 = NDArrayIter({"data": [[1, 2], [3, 4]]}, batch_size=1)
    assert it2.next().data[0].dtype == np.float32 and it2.provide_data == [("data", (1, 2))]
    it3 = NDArrayIter(mx.nd.array(np.ones((2, 2)), dtype="float64"), batch_size=1)
    assert it3.next().data[0].dtype == np.float64


def test_ndarray_source_and_batch_is_a_copy():
    src = mx.nd.array(np.arange(6, dtype=np.float32).reshape(3, 2))
    it = NDArrayIter(src, batch_size=2)
    batch = it.next()
    batch.data[0][:] = -1
    it.reset()
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), [[0, 1], [2, 3]])
    np.testing.assert_array_equal(src.asnumpy(), np.arange(6).reshape(3, 2))


def test_label_less_iteration():
    it = NDArrayIter(np.arange(5.0), batch_size=2)
    assert it.provide_label == []
    batches = list(it)
    assert [b.label for b in batches] == [[], [], []]
    assert batches[-1].data[0].asnumpy().tolist() == [4.0, 0.0]


def test_manual_protocol_and_index():
    it = NDArrayIter(*samples(5), batch_size=2, last_batch_handle="discard")
    assert it.iter_next() and it.getpad() == 0
    assert it.getindex().tolist() == [0, 1]
    assert it.getdata()[0].asnumpy()[:, 0].tolist() == [0, 1]
    assert it.iter_next() and it.getlabel()[0].asnumpy().tolist() == [2, 3]
    assert not it.iter_next()
    with pytest.raises(MXNetError, match="NDArrayIter: no current batch"):
        it.getdata()


# -- shuffle ----------------------------------------------------------------------------------

def test_shuffle_is_a_permutation_with_matching_labels():
    data, label = samples(12)
    mx.random.seed(3)
    it = NDArrayIter(data, label, batch_size=4, shuffle=True)
    batches = list(it)
    ids = np.concatenate([b.data[0].asnumpy()[:, 0] for b in batches])
    assert sorted(ids.tolist()) == list(range(12))
    assert ids.tolist() != list(range(12))  # 1 in 12! chance of identity for a fixed seed
    for b in batches:
        x = b.data[0].asnumpy()
        np.testing.assert_array_equal(x[:, 1], x[:, 0] + 100)
        np.testing.assert_array_equal(b.label[0].asnumpy(), x[:, 0])
        np.testing.assert_array_equal(b.index, x[:, 0].astype(int))


def test_shuffle_reproducible_under_seed_and_new_each_epoch():
    data = np.arange(20, dtype=np.float32)

    def two_epochs():
        it = NDArrayIter(data, batch_size=5, shuffle=True)
        first = [b.data[0].asnumpy().tolist() for b in it]
        it.reset()
        return first, [b.data[0].asnumpy().tolist() for b in it]

    mx.random.seed(11)
    a = two_epochs()
    mx.random.seed(11)
    b = two_epochs()
    assert a == b
    assert a[0] != a[1]


def test_shuffle_roll_over_carries_previous_order():
    mx.random.seed(5)
    it = NDArrayIter(np.arange(10.0), batch_size=4, shuffle=True, last_batch_handle="roll_over")
    first = np.concatenate([b.data[0].asnumpy() for b in it])
    left = sorted(set(range(10)) - set(first.astype(int).tolist()))
    it.reset()
    head = it.next()
    assert sorted(head.data[0].asnumpy()[:2].astype(int).tolist()) == left
    assert head.pad == 2


# -- errors -----------------------------------------------------------------------------------

def test_errors():
    with pytest.raises(ShapeError, match=r"NDArrayIter.*'data' has shape \(10,2\).*'softmax_label' "
                                         r"has shape \(9,\)"):
        NDArrayIter(np.zeros((10, 2)), np.zeros(9), batch_size=2)
    with pytest.raises(ParamError, match="NDArrayIter: batch_size must be a positive int, got 0"):
        NDArrayIter(np.zeros(4), batch_size=0)
    with pytest.raises(ParamError, match="batch_size"):
        NDArrayIter(np.zeros(4), batch_size=2.5)
    with pytest.raises(ParamError, match="last_batch_handle.*'keep'"):
        NDArrayIter(np.zeros(4), batch_size=2, last_batch_handle="keep")
    with pytest.raises(DTypeError, match="NDArrayIter: data must be"):
        NDArrayIter(5, batch_size=2)
    with pytest.raises(DTypeError, match="NDArrayIter: input 'data'"):
        NDArrayIter({"data": ["a", "b"]}, batch_size=2)
    with pytest.raises(DTypeError, match="NDArrayIter: input 'data': source must hold numbers, got "
                                         "ndarray of dtype complex128"):
        NDArrayIter(np.zeros(4, complex), batch_size=2)
    with pytest.raises(ShapeError, match="NDArrayIter: input 'data' must have at least one dimension"):
        NDArrayIter(np.array(1.0), batch_size=1)
    with pytest.raises(ParamError, match="NDArrayIter: data must hold at least one array"):
        NDArrayIter({}, batch_size=1)
    with pytest.raises(ParamError, match="'x' is used by both"):
        NDArrayIter({"x": np.zeros(2)}, {"x": np.zeros(2)}, batch_size=1)


# -- DataDesc / DataBatch ---------------------------------------------------------------------

def test_datadesc_and_databatch():
    d = DataDesc("data", (8, 3, 4, 5), np.float16, "NHWC")
    name, shape = d
    assert (name, shape, d.dtype, d.layout) == ("data", (8, 3, 4, 5), np.float16, "NHWC")
    assert DataDesc.get_batch_axis("TNC") == 1 and DataDesc.get_batch_axis(None) == 0
    assert DataDesc.get_list([("a", (1,)), ("b", (2,))], [("a", np.int32), ("b", np.float64)])[1].dtype \
        == np.float64
    batch = DataBatch([mx.nd.ones((2, 3))], pad=1)
    assert batch.label is None and batch.pad == 1 and batch.bucket_key is None
    assert str(batch) == "DataBatch: data shapes: [(2, 3)] label shapes: None"
    with pytest.raises(DTypeError, match="DataBatch: data must be a list"):
        DataBatch(mx.nd.ones((2, 3)))


# -- ResizeIter / PrefetchingIter -------------------------------------------------------------

def test_resize_iter():
    inner = NDArrayIter(np.arange(6.0), batch_size=2)
    it = ResizeIter(inner, 5)
    assert it.provide_data == inner.provide_data
    assert [b.data[0].asnumpy().tolist() for b in it] == [[0, 1], [2, 3], [4, 5], [0, 1], [2, 3]]
    it.reset()
    assert len(list(it)) == 5
    # the inner iterator stopped after [2, 3]; without reset_internal it goes on from there
    assert [b.data[0].asnumpy().tolist() for b in ResizeIter(inner, 2, reset_internal=False)] == \
        [[4, 5], [0, 1]]
    with pytest.raises(ParamError, match="ResizeIter: size"):
        ResizeIter(inner, -1)


def test_prefetching_iter_combines_and_renames():
    a = NDArrayIter(np.arange(4.0), np.arange(4.0) * 10, batch_size=2)
    b = NDArrayIter(np.arange(4.0) + 50, batch_size=2, data_name="x")
    it = PrefetchingIter([a, b], rename_data=[{"data": "d0"}, {"x": "d1"}])
    assert [d.name for d in it.provide_data] == ["d0", "d1"]
    assert [d.name for d in it.provide_label] == ["softmax_label"]
    got = [([x.asnumpy().tolist() for x in bt.data], bt.label[0].asnumpy().tolist()) for bt in it]
    assert got == [([[0, 1], [50, 51]], [0, 10]), ([[2, 3], [52, 53]], [20, 30])]
    it.reset()
    assert len(list(it)) == 2
    uneven = PrefetchingIter([NDArrayIter(np.zeros(4), batch_size=2), NDArrayIter(np.zeros(2), batch_size=2)])
    uneven.next()
    with pytest.raises(MXNetError, match="different numbers of batches"):
        uneven.next()


# -- MNISTIter --------------------------------------------------------------------------------

def _read_idx_numpy(path: Path) -> np.ndarray:
    raw = gzip.decompress(path.read_bytes())
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


@pytest.fixture(scope="module")
def t10k() -> tuple[np.ndarray, np.ndarray]:
    return (_read_idx_numpy(MNIST_DIR / "t10k-images-idx3-ubyte.gz"),
            _read_idx_numpy(MNIST_DIR / "t10k-labels-idx1-ubyte.gz"))


def test_mnist_iter_unshuffled(t10k):
    images, labels = t10k
    it = MNISTIter(image=str(MNIST_DIR / "t10k-images-idx3-ubyte.gz"),
                   label=str(MNIST_DIR / "t10k-labels-idx1-ubyte.gz"),
                   batch_size=128, shuffle=False, silent=True)
    assert it.provide_data == [("data", (128, 1, 28, 28))]
    assert it.provide_label == [("softmax_label", (128,))]
    batches = list(it)
    assert len(batches) == 10000 // 128  # the incomplete last batch is dropped
    first = batches[0]
    assert first.data[0].dtype == np.float32 and first.label[0].dtype == np.float32
    np.testing.assert_allclose(first.data[0].asnumpy(), images[:128, None] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(first.label[0].asnumpy(), labels[:128])
    assert batches[-1].index.tolist() == list(range(77 * 128, 78 * 128))
    x = np.concatenate([b.data[0].asnumpy() for b in batches])
    assert x.min() == 0.0 and x.max() == 1.0


def test_mnist_iter_flat_shuffled_parts(t10k, tmp_path):
    images, labels = t10k
    # uncompressed path given, only the .gz exists: accepted; and the reverse
    img = tmp_path / "t10k-images-idx3-ubyte"
    shutil.copy(MNIST_DIR / "t10k-images-idx3-ubyte.gz", tmp_path / "t10k-images-idx3-ubyte.gz")
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(
        gzip.decompress((MNIST_DIR / "t10k-labels-idx1-ubyte.gz").read_bytes()))
    it = MNISTIter(image=str(img), label=str(tmp_path / "t10k-labels-idx1-ubyte.gz"), batch_size=100,
                   flat=True, shuffle=True, seed=7, num_parts=4, part_index=1, silent=True)
    assert it.provide_data == [("data", (100, 784))]
    batches = list(it)
    assert len(batches) == 25
    idx = np.concatenate([b.index for b in batches])
    assert sorted(idx.tolist()) == list(range(2500, 5000)) and idx.tolist() != sorted(idx.tolist())
    for b in batches[:3]:
        np.testing.assert_allclose(b.data[0].asnumpy(), images[b.index].reshape(100, 784) / 255.0, rtol=1e-6)
        np.testing.assert_array_equal(b.label[0].asnumpy(), labels[b.index])
    it.reset()  # same order every epoch, as MXNet's MNISTIter
    assert it.next().index.tolist() == batches[0].index.tolist()
    again = MNISTIter(image=str(img), label=str(tmp_path / "t10k-labels-idx1-ubyte"), batch_size=100,
                      flat=True, seed=7, num_parts=4, part_index=1, silent=True)
    assert again.next().index.tolist() == batches[0].index.tolist()


def test_mnist_iter_errors(tmp_path):
    lbl = str(MNIST_DIR / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(FileNotFoundError, match="MNISTIter: image file .*nope"):
        MNISTIter(image=str(tmp_path / "nope"), label=lbl, silent=True)
    with pytest.raises(ParamError, match="MNISTIter: need num_parts >= 1 and 0 <= part_index"):
        MNISTIter(image=lbl, label=lbl, num_parts=2, part_index=2, silent=True)
    with pytest.raises(ParamError, match="MNISTIter: batch_size"):
        MNISTIter(image=lbl, label=lbl, batch_size=-3, silent=True)
    with pytest.raises(FormatError, match="MNISTIter: image file .* must hold uint8 images"):
        MNISTIter(image=lbl, label=lbl, silent=True)
    bad = tmp_path / "bad-images"
    bad.write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(FormatError, match="bad IDX magic"):
        MNISTIter(image=str(bad), label=lbl, silent=True)
    two = tmp_path / "two-images"
    two.write_bytes(bytes([0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 28, 0, 0, 0, 28]) + bytes(2 * 784))
    with pytest.raises(FormatError, match="MNISTIter: 10000 labels .* for 2 images"):
        MNISTIter(image=str(two), label=lbl, silent=True)
