"""The MNIST loader and its IDX parser. Nothing here downloads."""
from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError
from symjit.io import mnist

MNIST_DIR = Path(__file__).resolve().parents[1].parent / 'shared' / 'data' / 'mnist'


@pytest.fixture(autouse=True)
def no_download(monkeypatch, tmp_path):
    """Fail any download attempt, and keep the home directory's copies out of the lookup."""
    def refuse(url):
        raise AssertionError(f'test tried to download {url}')
    monkeypatch.setattr(mnist, '_fetch', refuse)
    monkeypatch.setattr(mnist, 'default_dir', lambda: tmp_path / 'home' / 'mnist')
    monkeypatch.delenv('SYMJIT_MNIST', raising=False)
    monkeypatch.delenv('MXNET_HOME', raising=False)


@pytest.fixture(scope='module')
def full():
    return mx.io.load_mnist(MNIST_DIR)


def idx(dtype_code: int, dims: tuple[int, ...], payload: bytes) -> bytes:
    return bytes([0, 0, dtype_code, len(dims)]) + b''.join(struct.pack('>I', d) for d in dims) + payload


def write_set(directory: Path, n_train=3, n_test=2, compress=True, labels=None) -> dict:
    """A tiny MNIST-shaped data set; returns the arrays written."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in (('train', n_train), ('t10k', n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        lbl = np.asarray(labels if labels is not None else rng.integers(0, 10, size=n), dtype=np.uint8)
        arrays[split] = (images, lbl)
        for kind, blob in (('images-idx3', idx(8, images.shape, images.tobytes())),
                           ('labels-idx1', idx(8, lbl.shape, lbl.tobytes()))):
            name = f'{split}-{kind}-ubyte'
            if compress:
                (directory / f'{name}.gz').write_bytes(gzip.compress(blob))
            else:
                (directory / name).write_bytes(blob)
    return arrays


# --- the real files ---------------------------------------------------------------------------

def test_shapes_dtypes_and_ranges(full):
    assert full['train_data'].shape == (60000, 1, 28, 28)
    assert full['train_label'].shape == (60000,)
    assert full['test_data'].shape == (10000, 1, 28, 28)
    assert full['test_label'].shape == (10000,)
    for key in full:
        assert full[key].dtype == np.float32
    assert full['train_data'].min() == 0.0 and full['train_data'].max() == 1.0
    for key in ('train_label', 'test_label'):
        labels = full[key]
        assert set(np.unique(labels).tolist()) == set(range(10))
        assert np.all(labels == np.round(labels))
    # the well-known first training labels
    assert full['train_label'][:5].tolist() == [5, 0, 4, 1, 9]
    assert full['test_label'][:3].tolist() == [7, 2, 1]


def test_raw_variant_matches_scaled(full):
    raw = mx.io.load_mnist(MNIST_DIR, raw=True)
    assert raw['train_data'].dtype == np.uint8 and raw['train_label'].dtype == np.uint8
    assert raw['test_data'].shape == (10000, 1, 28, 28)
    np.testing.assert_array_equal(raw['test_data'].astype(np.float32) / 255, full['test_data'])
    np.testing.assert_array_equal(raw['train_label'].astype(np.float32), full['train_label'])


def test_env_var_lookup(monkeypatch):
    monkeypatch.setenv('SYMJIT_MNIST', str(MNIST_DIR))
    d = mx.io.load_mnist(raw=True)
    assert d['train_data'].shape == (60000, 1, 28, 28)


# --- lookup order -----------------------------------------------------------------------------

def test_small_set_values(tmp_path):
    arrays = write_set(tmp_path / 'm')
    d = mx.io.load_mnist(tmp_path / 'm')
    images, labels = arrays['train']
    np.testing.assert_allclose(d['train_data'][:, 0], images / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(d['train_label'], labels.astype(np.float32))
    assert d['test_data'].shape == (2, 1, 28, 28)


def test_uncompressed_files(tmp_path):
    arrays = write_set(tmp_path / 'm', compress=False)
    d = mx.io.load_mnist(tmp_path / 'm', raw=True)
    np.testing.assert_array_equal(d['test_data'][:, 0], arrays['t10k'][0])


def test_path_argument_wins_over_env(tmp_path, monkeypatch):
    write_set(tmp_path / 'a', n_train=4)
    write_set(tmp_path / 'b', n_train=5)
    monkeypatch.setenv('SYMJIT_MNIST', str(tmp_path / 'b'))
    assert mx.io.load_mnist(tmp_path / 'a')['train_data'].shape[0] == 4
    assert mx.io.load_mnist()['train_data'].shape[0] == 5


def test_mxnet_home_then_default_dir(tmp_path, monkeypatch):
    write_set(mnist.default_dir(), n_train=6)
    assert mx.io.load_mnist()['train_data'].shape[0] == 6
    write_set(tmp_path / 'mxhome' / 'datasets' / 'mnist', n_train=7)
    monkeypatch.setenv('MXNET_HOME', str(tmp_path / 'mxhome'))
    assert mx.io.load_mnist()['train_data'].shape[0] == 7


def test_explicit_dir_missing_files(tmp_path):
    (tmp_path / 'empty').mkdir()
    with pytest.raises(mnist.DatasetNotFound, match=r"path=.*empty.*train-images-idx3-ubyte"):
        mx.io.load_mnist(tmp_path / 'empty')


def test_env_dir_missing_files(tmp_path, monkeypatch):
    monkeypatch.setenv('SYMJIT_MNIST', str(tmp_path / 'nowhere'))
    with pytest.raises(mnist.DatasetNotFound, match='SYMJIT_MNIST'):
        mx.io.load_mnist()


def test_no_copy_and_no_download():
    with pytest.raises(mnist.DatasetNotFound, match='download=False'):
        mx.io.load_mnist(download=False)


def test_download_is_attempted_only_without_a_local_copy():
    # the fixture's _fetch refuses; reaching it proves the lookup fell through to downloading
    with pytest.raises(AssertionError, match='tried to download .*train-images-idx3-ubyte.gz'):
        mx.io.load_mnist()


def test_download_writes_checked_files_atomically(monkeypatch, tmp_path):
    blobs = {}
    rng = np.random.default_rng(1)
    for stem in mnist.MNIST_FILES.values():
        n = 3
        if 'images' in stem:
            blobs[stem] = idx(8, (n, 28, 28), rng.integers(0, 256, n * 784, dtype=np.uint8).tobytes())
        else:
            blobs[stem] = idx(8, (n,), bytes([1, 2, 3]))
    calls = []

    def fake_fetch(url):
        calls.append(url)
        if url.startswith(mnist.MIRRORS[0]):
            raise OSError('mirror down')
        return gzip.compress(blobs[url.rsplit('/', 1)[1][:-3]])
    monkeypatch.setattr(mnist, '_fetch', fake_fetch)
    d = mx.io.load_mnist()
    assert d['train_label'].tolist() == [1, 2, 3]
    files = sorted(p.name for p in mnist.default_dir().iterdir())
    assert files == sorted(f'{s}.gz' for s in mnist.MNIST_FILES.values())  # no .part files left
    assert len(calls) == 8  # every file tried on the first mirror, then fetched from the second


def test_download_of_a_bad_file_keeps_nothing(monkeypatch):
    monkeypatch.setattr(mnist, '_fetch', lambda url: gzip.compress(b'\x00\x00\x08'))
    with pytest.raises(mnist.DatasetNotFound, match='could not download'):
        mx.io.load_mnist()
    assert not any(mnist.default_dir().iterdir())


# --- IDX parsing ------------------------------------------------------------------------------

def test_read_idx_types_and_big_endian():
    arr = mnist.read_idx(idx(0x0C, (2,), struct.pack('>ii', 1, -2)))
    assert arr.dtype == np.int32 and arr.tolist() == [1, -2]
    arr = mnist.read_idx(idx(0x0D, (1, 1), struct.pack('>f', 1.5)))
    assert arr.dtype == np.float32 and arr.tolist() == [[1.5]]


@pytest.mark.parametrize('blob, pattern', [
    (b'\x00\x00', 'too short'),
    (b'\x01\x00\x08\x01' + struct.pack('>I', 1) + b'\x00', 'bad IDX magic'),
    (b'\x00\x00\x07\x01' + struct.pack('>I', 1) + b'\x00', 'bad IDX magic'),
    (b'\x00\x00\x08\x03' + struct.pack('>I', 1), 'truncated header'),
    (idx(8, (2, 3), bytes(5)), r'need 6 bytes.*has 5'),
    (idx(8, (2, 3), bytes(7)), r'need 6 bytes.*has 7'),
])
def test_read_idx_rejects(blob, pattern):
    with pytest.raises(FormatError, match=pattern):
        mnist.read_idx(blob, 'x.idx')


def test_truncated_gzip(tmp_path):
    write_set(tmp_path / 'm')
    f = tmp_path / 'm' / 'train-images-idx3-ubyte.gz'
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(FormatError, match='train-images-idx3-ubyte.gz.*gzip'):
        mx.io.load_mnist(tmp_path / 'm')


def test_bad_magic_file(tmp_path):
    write_set(tmp_path / 'm')
    f = tmp_path / 'm' / 't10k-labels-idx1-ubyte.gz'
    f.write_bytes(gzip.compress(b'\x00\x00\x09\x09' + bytes(8)))
    with pytest.raises(FormatError, match='t10k-labels'):
        mx.io.load_mnist(tmp_path / 'm')


def test_wrong_image_size(tmp_path):
    write_set(tmp_path / 'm')
    (tmp_path / 'm' / 'train-images-idx3-ubyte.gz').write_bytes(
        gzip.compress(idx(8, (3, 27, 28), bytes(3 * 27 * 28))))
    with pytest.raises(FormatError, match=r'train-images.*\(N, 28, 28\)'):
        mx.io.load_mnist(tmp_path / 'm')


def test_label_count_mismatch(tmp_path):
    write_set(tmp_path / 'm')
    (tmp_path / 'm' / 'train-labels-idx1-ubyte.gz').write_bytes(gzip.compress(idx(8, (2,), bytes(2))))
    with pytest.raises(FormatError, match='2 labels for 3 images'):
        mx.io.load_mnist(tmp_path / 'm')


def test_label_out_of_range(tmp_path):
    write_set(tmp_path / 'm', labels=[1, 12, 3])
    with pytest.raises(FormatError, match='label 12'):
        mx.io.load_mnist(tmp_path / 'm')


def test_offline_get_mnist_says_where_it_looked_and_names_symjit_mnist(monkeypatch, tmp_path):
    def offline(url):
        raise OSError('Name or service not known')
    monkeypatch.setattr(mnist, '_fetch', offline)
    monkeypatch.setenv('MXNET_HOME', str(tmp_path / 'mxhome'))
    with pytest.raises(mnist.DatasetNotFound) as exc:
        mx.test_utils.get_mnist()
    text = str(exc.value)
    assert 'could not download' in text and 'Name or service not known' in text
    assert f"looked in {tmp_path / 'mxhome' / 'datasets' / 'mnist'}, {mnist.default_dir()};" in text
    assert 'SYMJIT_MNIST=/path/to/dir' in text
    assert all(stem in text for stem in mnist.MNIST_FILES.values())
    with pytest.raises(mnist.DatasetNotFound, match=r'download=False \(looked in .*SYMJIT_MNIST=/path/'):
        mx.io.load_mnist(download=False)
    # what the message says fixes it: the four files, not compressed, in the directory SYMJIT_MNIST names
    arrays = write_set(tmp_path / 'mine', n_train=4, compress=False)
    monkeypatch.setenv('SYMJIT_MNIST', str(tmp_path / 'mine'))
    got = mx.test_utils.get_mnist()
    assert got['train_data'].shape == (4, 1, 28, 28)
    np.testing.assert_array_equal(got['train_label'], arrays['train'][1])
