"""mx.gluon.utils: splitting batches over contexts, global-norm clipping, SHA-1 checks, the
offline download, replace_file, shape_is_known."""
from __future__ import annotations

import hashlib
import os
import warnings

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.gluon import utils


def test_split_data_even_and_uneven():
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    parts = utils.split_data(mx.nd.array(x), 3)
    assert [p.asnumpy().tolist() for p in parts] == [x[0:2].tolist(), x[2:4].tolist(), x[4:6].tolist()]
    cols = utils.split_data(mx.nd.array(x), 3, batch_axis=1, even_split=False)
    assert [p.shape for p in cols] == [(6, 2), (6, 1), (6, 1)]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in cols], axis=1), x)
    uneven = utils.split_data(mx.nd.array(np.arange(33.0)), 15, even_split=False)
    for got, want in zip(uneven, np.array_split(np.arange(33.0), 15)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    assert utils.split_data(mx.nd.array(x), 1)[0].shape == (6, 4)
    with pytest.raises(MXNetError, match="evenly"):
        utils.split_data(mx.nd.array(x), 4)
    with pytest.raises(MXNetError, match="only 6"):
        utils.split_data(mx.nd.array(x), 7, even_split=False)


def test_split_and_load_places_each_part():
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    parts = utils.split_and_load(np.arange(9).reshape(9, 1), ctxs)
    assert [p.context for p in parts] == ctxs and [p.asnumpy().ravel().tolist() for p in parts] == [
        [0, 1, 2], [3, 4, 5], [6, 7, 8]]
    one = utils.split_and_load(mx.nd.ones((2, 2)), [mx.cpu(1)])
    assert len(one) == 1 and one[0].context == mx.cpu(1)


def test_clip_global_norm():
    a, b = np.array([3.0, 0.0], np.float32), np.array([[4.0]], np.float32)
    x, y = mx.nd.array(a), mx.nd.array(b)
    norm = utils.clip_global_norm([x, y], 1.0)
    assert isinstance(norm, float) and norm == pytest.approx(5.0)
    np.testing.assert_allclose(x.asnumpy(), a / 5, rtol=1e-6)
    np.testing.assert_allclose(y.asnumpy(), b / 5, rtol=1e-6)
    x, y = mx.nd.array(a), mx.nd.array(b)
    kept = utils.clip_global_norm([x, y], 10.0, check_isfinite=False)
    assert isinstance(kept, mx.nd.NDArray) and kept.shape == (1,) and kept.asscalar() == pytest.approx(5.0)
    np.testing.assert_array_equal(x.asnumpy(), a)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        utils.clip_global_norm([mx.nd.array([np.inf, 1.0])], 1.0)
    assert any("nan or inf" in str(w.message) for w in caught)


def test_check_sha1_download_and_replace_file(tmp_path):
    f = tmp_path / "data.bin"
    f.write_bytes(b"symjit" * 100)
    digest = hashlib.sha1(f.read_bytes()).hexdigest()
    assert utils.check_sha1(str(f), digest) and not utils.check_sha1(str(f), "0" * 40)
    url = "https://example.org/files/data.bin"
    assert utils.download(url, path=str(tmp_path)) == str(f)
    assert utils.download(url, path=str(f), sha1_hash=digest) == str(f)
    with pytest.raises(MXNetError, match="SHA-1"):
        utils.download(url, path=str(f), sha1_hash="0" * 40)
    missing = tmp_path / "sub" / "other.bin"
    with pytest.raises(MXNetError) as exc:
        utils.download("https://example.org/other.bin", path=str(missing))
    assert "https://example.org/other.bin" in str(exc.value) and str(missing) in str(exc.value)
    with pytest.raises(MXNetError, match="overwrite"):
        utils.download(url, path=str(tmp_path), overwrite=True)
    g = tmp_path / "new.bin"
    g.write_bytes(b"new")
    utils.replace_file(str(g), str(f))
    assert f.read_bytes() == b"new" and not os.path.exists(g)


def test_shape_is_known():
    assert utils.shape_is_known((1, 2)) and not utils.shape_is_known((2, 0))
    assert not utils.shape_is_known(None) and not utils.shape_is_known(())
    with pytest.raises(MXNetError):
        utils.shape_is_known((2, -3))
    assert mx.gluon.utils.HookHandle.__name__ == "HookHandle"
