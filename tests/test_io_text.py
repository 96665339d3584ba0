"""mx.io.CSVIter and LibSVMIter (dense) against the files written here."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError, MXNetError


def write(path, text):
    path.write_text(text)
    return str(path)


def test_csv_data_labels_padding(tmp_path):
    data = np.arange(5 * 6, dtype=np.float32).reshape(5, 6)
    labels = np.arange(5, dtype=np.float32) * 10
    dpath = write(tmp_path / "d.csv", "\n".join(",".join(str(v) for v in row) for row in data) + "\n")
    lpath = write(tmp_path / "l.csv", "\n".join(str(v) for v in labels))
    it = mx.io.CSVIter(data_csv=dpath, data_shape=(2, 3), label_csv=lpath, batch_size=2)
    assert it.provide_data[0].shape == (2, 2, 3) and it.provide_label[0].name == "softmax_label"
    batches = list(it)
    assert len(batches) == 3 and [b.pad for b in batches] == [0, 0, 1]
    got = np.concatenate([b.data[0].asnumpy() for b in batches])
    np.testing.assert_array_equal(got[:5], data.reshape(5, 2, 3))
    np.testing.assert_array_equal(got[5], data[0].reshape(2, 3))       # the pad wraps to the start
    np.testing.assert_array_equal(np.concatenate([b.label[0].asnumpy() for b in batches])[:5], labels)
    it.reset()
    assert len(list(it)) == 3
    no_round = mx.io.CSVIter(data_csv=dpath, data_shape=(6,), batch_size=2, round_batch=False, dtype="int32")
    b = list(no_round)                  # as in MXNet, the last partial batch is returned, padded
    assert len(b) == 3 and [x.pad for x in b] == [0, 0, 1] and b[0].data[0].dtype == np.int32
    np.testing.assert_array_equal(b[2].data[0].asnumpy()[0], data[4])
    assert not b[0].label[0].asnumpy().any()                           # no label_csv: zeros


def test_csv_getdata_is_one_ndarray(tmp_path):
    dpath = write(tmp_path / "d.csv", "1,2\n3,4\n5,6\n")
    it = mx.io.CSVIter(data_csv=dpath, data_shape=(2,), batch_size=2)
    batch = next(it)
    assert isinstance(it.getdata(), mx.nd.NDArray) and isinstance(it.getlabel(), mx.nd.NDArray)
    np.testing.assert_array_equal(it.getdata().asnumpy(), batch.data[0].asnumpy())
    assert it.getdata().asnumpy().tolist() == [[1, 2], [3, 4]] and len(batch.data) == 1


def test_csv_errors(tmp_path):
    bad = write(tmp_path / "bad.csv", "1,2,3\n4,5\n")
    with pytest.raises(FormatError, match=r"line 2 has 2 values, but shape \(3,\) needs 3"):
        mx.io.CSVIter(data_csv=bad, data_shape=(3,))
    word = write(tmp_path / "word.csv", "1,2,x\n")
    with pytest.raises(FormatError, match="not a number"):
        mx.io.CSVIter(data_csv=word, data_shape=(3,))
    with pytest.raises(MXNetError, match="cannot read data_csv"):
        mx.io.CSVIter(data_csv=str(tmp_path / "missing.csv"), data_shape=(3,))
    ok = write(tmp_path / "ok.csv", "1,2,3\n")
    short = write(tmp_path / "short.csv", "1\n2\n")
    with pytest.raises(FormatError, match="1 rows but the labels 2"):
        mx.io.CSVIter(data_csv=ok, data_shape=(3,), label_csv=short)
    with pytest.raises(MXNetError, match="data_shape must be a tuple of positive ints"):
        mx.io.CSVIter(data_csv=ok, data_shape=(0,))


def test_libsvm_dense(tmp_path):
    path = write(tmp_path / "d.libsvm", "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n")
    it = mx.io.LibSVMIter(data_libsvm=path, data_shape=(3,), batch_size=3)
    batches = list(it)
    np.testing.assert_allclose(batches[0].data[0].asnumpy(),
                               [[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2]])
    np.testing.assert_allclose(batches[1].data[0].asnumpy()[0], [0, 0, -1.2])
    np.testing.assert_array_equal(batches[0].label[0].asnumpy(), [1, -2, -3])
    assert batches[1].pad == 2
    labels = write(tmp_path / "l.libsvm", "0 0:1 1:2\n0 1:3\n0\n0 0:4\n")
    multi = mx.io.LibSVMIter(data_libsvm=path, data_shape=(3,), label_libsvm=labels, label_shape=(2,),
                             batch_size=4)
    np.testing.assert_array_equal(next(iter(multi)).label[0].asnumpy(), [[1, 2], [0, 3], [0, 0], [4, 0]])
    part = mx.io.LibSVMIter(data_libsvm=path, data_shape=(3,), batch_size=2, num_parts=2, part_index=1)
    np.testing.assert_array_equal(next(iter(part)).label[0].asnumpy(), [-3, 4])
    wide = write(tmp_path / "w.libsvm", "1 5:1\n")
    with pytest.raises(FormatError, match=r"feature index 5 is outside data_shape \(3,\)"):
        mx.io.LibSVMIter(data_libsvm=wide, data_shape=(3,))
    junk = write(tmp_path / "j.libsvm", "1 a:b\n")
    with pytest.raises(FormatError, match="line 1 is not LibSVM"):
        mx.io.LibSVMIter(data_libsvm=junk, data_shape=(3,))
