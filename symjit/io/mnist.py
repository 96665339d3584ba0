"""The MNIST data set from its four standard IDX files, as numpy arrays.

Where the files are looked for, in order (the first directory that holds all four wins):

1. the ``path`` argument of :func:`load_mnist` (a directory; nothing else is tried when given),
2. the ``SYMJIT_MNIST`` environment setting (a directory; nothing else is tried when set),
3. ``$MXNET_HOME/datasets/mnist`` when ``MXNET_HOME`` is set (where MXNet keeps its data sets),
4. ``~/.symjit/datasets/mnist``.

Each file may be gzip-compressed (``train-images-idx3-ubyte.gz``, as published) or not
(``train-images-idx3-ubyte``). Only when steps 3 and 4 find nothing (and ``download=True``) are the
files downloaded from a public mirror into ``~/.symjit/datasets/mnist``, each written to a temporary
file, checked, then renamed into place, so an interrupted download never leaves a partial file.
"""
from __future__ import annotations

import gzip
import os
import urllib.request
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..base import FormatError, MXNetError, write_atomic

__all__ = ["load_mnist", "read_idx", "find_mnist", "MNIST_FILES", "MIRRORS", "DatasetNotFound"]

MNIST_FILES = {
    "train_data": "train-images-idx3-ubyte",
    "train_label": "train-labels-idx1-ubyte",
    "test_data": "t10k-images-idx3-ubyte",
    "test_label": "t10k-labels-idx1-ubyte",
}
MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class DatasetNotFound(MXNetError, FileNotFoundError):
    """The data set files are not where they were looked for (and were not downloaded)."""


def read_idx(data: bytes, name: str = "IDX data") -> np.ndarray:
    """Parse an (uncompressed) IDX file: magic ``00 00 <dtype> <ndim>``, big-endian dims, data.

    >>> read_idx(bytes([0, 0, 8, 2, 0, 0, 0, 1, 0, 0, 0, 2, 7, 9]))
    array([[7, 9]], dtype=uint8)
    """
    if len(data) < 4:
        raise FormatError(f"{name}: {len(data)} bytes is too short for an IDX header")
    if data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise FormatError(f"{name}: bad IDX magic number 0x{data[:4].hex()}")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise FormatError(f"{name}: truncated header ({len(data)} bytes, {ndim} dimensions need {header})")
    dims = tuple(int(d) for d in np.frombuffer(data, ">u4", ndim, 4))
    dtype = np.dtype(_IDX_DTYPES[data[2]])
    size = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(data) - header != size:
        raise FormatError(f"{name}: dims {dims} need {size} bytes of {dtype.name} data, "
                          f"the file has {len(data) - header}")
    arr = np.frombuffer(data, dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="), copy=False)


def _read_file(path: Path) -> bytes:
    raw = path.read_bytes()
    if path.suffix != ".gz":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(f"{path}: not a complete gzip file ({exc})") from None


def _file_in(directory: Path, stem: str) -> Path | None:
    for candidate in (directory / f"{stem}.gz", directory / stem):
        if candidate.is_file():
            return candidate
    return None


def _complete(directory: Path) -> dict[str, Path] | None:
    found = {key: _file_in(directory, stem) for key, stem in MNIST_FILES.items()}
    return None if any(p is None for p in found.values()) else found  # type: ignore[return-value]


def default_dir() -> Path:
    """``~/.symjit/datasets/mnist``: where downloads go."""
    return Path(os.path.expanduser("~")) / ".symjit" / "datasets" / "mnist"


def _candidates(env: Mapping[str, str]) -> list[Path]:
    """The directories looked in when neither ``path`` nor ``SYMJIT_MNIST`` is given, in order."""
    candidates = [default_dir()]
    if env.get("MXNET_HOME"):
        candidates.insert(0, Path(env["MXNET_HOME"]).expanduser() / "datasets" / "mnist")
    return candidates


def _not_found_hint(env: Mapping[str, str]) -> str:
    """Where MNIST was looked for, and the setting that names its directory.

    >>> _not_found_hint({"MXNET_HOME": "/data/mx"})  # doctest: +ELLIPSIS
    'looked in /data/mx/datasets/mnist, ...; set SYMJIT_MNIST=/path/to/dir, a directory holding ...'
    """
    looked = ", ".join(str(d) for d in _candidates(env))
    return (f"looked in {looked}; set SYMJIT_MNIST=/path/to/dir, a directory holding the four MNIST "
            f"files {', '.join(MNIST_FILES.values())} (each gzip-compressed with .gz or not)")


def find_mnist(path: str | os.PathLike | None = None,
               env: Mapping[str, str] | None = None) -> dict[str, Path] | None:
    """The four files' paths, looked for in the documented order; None if no directory has them.

    An explicit ``path`` or ``SYMJIT_MNIST`` directory that lacks a file raises DatasetNotFound.
    """
    env = os.environ if env is None else env
    explicit = path if path is not None else env.get("SYMJIT_MNIST") or None
    if explicit is not None:
        directory = Path(explicit).expanduser()
        found = _complete(directory)
        if found is None:
            missing = [s for s in MNIST_FILES.values() if _file_in(directory, s) is None]
            source = "path" if path is not None else "SYMJIT_MNIST"
            raise DatasetNotFound(f"load_mnist: {source}={os.fspath(explicit)!r} lacks {missing} "
                                  "(with or without .gz)")
        return found
    for directory in _candidates(env):
        found = _complete(directory)
        if found is not None:
            return found
    return None


def _fetch(url: str) -> bytes:
    """Download one URL (replaced in tests, which must never download)."""
    with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 - fixed https mirrors
        return resp.read()


def _download(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    for stem in MNIST_FILES.values():
        target = directory / f"{stem}.gz"
        if target.is_file():
            continue
        errors = []
        for mirror in MIRRORS:
            try:
                data = _fetch(mirror + target.name)
                read_idx(gzip.decompress(data), mirror + target.name)  # check before keeping it
                break
            except (OSError, EOFError, zlib.error, FormatError) as exc:
                errors.append(f"{mirror}: {exc}")
        else:
            raise DatasetNotFound(f"load_mnist: could not download {target.name}: {'; '.join(errors)}")
        write_atomic(target, data)
    found = _complete(directory)
    assert found is not None
    return found


def _check(arrays: dict[str, np.ndarray], files: dict[str, Path]) -> None:
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_data"], arrays[f"{split}_label"]
        img_file, lbl_file = files[f"{split}_data"], files[f"{split}_label"]
        if images.ndim != 3 or images.shape[1:] != (28, 28) or images.dtype != np.uint8:
            raise FormatError(f"{img_file}: expected uint8 images of shape (N, 28, 28), "
                              f"got {images.dtype} {images.shape}")
        if labels.ndim != 1 or labels.dtype != np.uint8:
            raise FormatError(f"{lbl_file}: expected uint8 labels of shape (N,), "
                              f"got {labels.dtype} {labels.shape}")
        if labels.shape[0] != images.shape[0]:
            raise FormatError(f"{lbl_file}: {labels.shape[0]} labels for {images.shape[0]} images "
                              f"in {img_file}")
        if labels.size and labels.max() > 9:
            raise FormatError(f"{lbl_file}: label {int(labels.max())} is not a digit 0..9")


def load_mnist(path: str | os.PathLike | None = None, raw: bool = False, download: bool = True,
               env: Mapping[str, str] | None = None) -> dict[str, np.ndarray]:
    """MNIST as ``{'train_data', 'train_label', 'test_data', 'test_label'}`` numpy arrays.

    Images have shape ``(N, 1, 28, 28)``; ``N`` is 60000 for train and 10000 for test. By default
    images are float32 scaled to [0, 1] and labels float32 (as MXNet's ``MNISTIter`` gives them);
    ``raw=True`` returns both as the files' uint8 values. See the module docstring for where the
    files are looked for; ``download=False`` raises DatasetNotFound instead of downloading.
    ``env`` replaces ``os.environ`` for the lookup.

    >>> import os
    >>> d = load_mnist(os.environ.get('SYMJIT_MNIST', '../shared/data/mnist'))   # from the repo root
    >>> d['train_data'].shape, d['train_label'].dtype
    ((60000, 1, 28, 28), dtype('float32'))
    """
    files = find_mnist(path, env)
    if files is None:
        hint = _not_found_hint(os.environ if env is None else env)
        if not download:
            raise DatasetNotFound(f"load_mnist: no local copy of MNIST found and download=False ({hint})")
        try:
            files = _download(default_dir())
        except DatasetNotFound as exc:
            raise DatasetNotFound(f"{exc}; no local copy either: {hint}") from None
    arrays = {key: read_idx(_read_file(p), str(p)) for key, p in files.items()}
    _check(arrays, files)
    out = {}
    for key, arr in arrays.items():
        if key.endswith("_data"):
            arr = arr.reshape(arr.shape[0], 1, 28, 28)
            out[key] = arr.copy() if raw else np.divide(arr, np.float32(255.0), dtype=np.float32)
        else:
            out[key] = arr.copy() if raw else arr.astype(np.float32)
    return out
