"""Image datasets: MNIST, Fashion-MNIST, CIFAR-10/100 from their published files, and images from
a RecordIO file, a folder tree or a list.

symjit downloads nothing: the published files must already be in ``root`` (default
``$MXNET_HOME/datasets/<name>``, ``~/.mxnet/datasets/<name>`` without ``MXNET_HOME``). A missing file
is an error naming the files, the folder to put them in and where they are published. MNIST's
files may be gzipped (as published) or not; CIFAR's ``.bin`` files may sit in ``root`` or in the
folder their archive unpacks to (``cifar-10-batches-bin``, ``cifar-100-binary``), or be read from
the archive itself (``cifar-10-binary.tar.gz``, ``cifar-100-binary.tar.gz``) placed in ``root``.

>>> import gzip, os, struct, tempfile
>>> import numpy as np
>>> root = tempfile.mkdtemp()
>>> with gzip.open(os.path.join(root, 't10k-images-idx3-ubyte.gz'), 'wb') as f:
...     _ = f.write(struct.pack('>IIII', 2051, 2, 28, 28) + bytes(2 * 784))
>>> with gzip.open(os.path.join(root, 't10k-labels-idx1-ubyte.gz'), 'wb') as f:
...     _ = f.write(struct.pack('>II', 2049, 2) + bytes([3, 7]))
>>> ds = MNIST(root, train=False)
>>> len(ds), ds[1][0].shape, int(ds[1][1])
(2, (28, 28, 1), 7)
"""
from __future__ import annotations

import gzip
import os
import struct
import tarfile
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ....base import FormatError, MXNetError, ParamError, data_dir
from ....context import cpu
from ....ndarray.ndarray import NDArray, wrap
from ..dataset import Dataset, RecordFileDataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset",
           "ImageListDataset"]


def _default_root(name: str) -> str:
    return os.path.join(data_dir(), "datasets", name)


def _missing(dataset: str, root: str, names: list[str], url: str) -> MXNetError:
    return MXNetError(f"{dataset}: missing {', '.join(names)} in {root!r}. symjit downloads nothing: get the "
                      f"files from {url} and put them in that folder (or pass root= the folder that "
                      "holds them)")


class _LocalDataset(Dataset):
    """Images (an NDArray, N x H x W x C, uint8) and labels read from files in ``root``."""

    def __init__(self, root: str, transform: Callable[..., Any] | None):
        self._root = os.path.expanduser(os.fspath(root))
        self._transform = transform
        self._data, self._label = self._load()

    def _load(self) -> tuple[NDArray, np.ndarray]:
        raise NotImplementedError

    def __getitem__(self, idx: int) -> Any:
        data, label = self._data[idx], self._label[idx]
        return self._transform(data, label) if self._transform is not None else (data, label)

    def __len__(self) -> int:
        return len(self._label)


def _read_idx(path: str, magic: int, dims: int, where: str) -> np.ndarray:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as exc:
        raise FormatError(f"{where}: cannot read {path!r}: {exc}") from exc
    head = 4 + 4 * dims
    if len(raw) < head or struct.unpack(">I", raw[:4])[0] != magic:
        raise FormatError(f"{where}: {path!r} is not an IDX file of magic number {magic} "
                          f"({'images' if dims == 3 else 'labels'} as MNIST publishes them)")
    shape = struct.unpack(">" + "I" * dims, raw[4:head])
    count = int(np.prod(shape))
    if len(raw) - head != count:
        raise FormatError(f"{where}: {path!r} holds {len(raw) - head} bytes of data, its header "
                          f"{shape} says {count}")
    return np.frombuffer(raw, dtype=np.uint8, offset=head).reshape(shape)


class MNIST(_LocalDataset):
    """MNIST handwritten digits (http://yann.lecun.com/exdb/mnist): samples ``(image, label)``, an
    NDArray of shape (28, 28, 1) and dtype uint8, and an int32 label. ``transform(data, label)``,
    when given, is applied to each sample. Reads ``train-images-idx3-ubyte.gz`` and
    ``train-labels-idx1-ubyte.gz`` (``t10k-...`` with ``train=False``) from ``root``.

    >>> try:
    ...     MNIST('/nonexistent')
    ... except Exception as exc:
    ...     print(str(exc).split(':')[0])
    MNIST
    """

    _name = "MNIST"
    _url = "http://yann.lecun.com/exdb/mnist/"

    def __init__(self, root: str = _default_root("mnist"), train: bool = True,
                 transform: Callable[..., Any] | None = None):
        self._train = bool(train)
        super().__init__(root, transform)

    def _find(self, stem: str) -> str | None:
        for name in (stem + ".gz", stem):
            path = os.path.join(self._root, name)
            if os.path.isfile(path):
                return path
        return None

    def _load(self) -> tuple[NDArray, np.ndarray]:
        part = "train" if self._train else "t10k"
        stems = [f"{part}-images-idx3-ubyte", f"{part}-labels-idx1-ubyte"]
        paths = [self._find(s) for s in stems]
        if None in paths:
            raise _missing(self._name, self._root, [s + ".gz" for s, p in zip(stems, paths) if p is None],
                           self._url)
        images = _read_idx(paths[0], 2051, 3, self._name)
        labels = _read_idx(paths[1], 2049, 1, self._name).astype(np.int32)
        if len(images) != len(labels):
            raise FormatError(f"{self._name}: {paths[0]!r} has {len(images)} images, {paths[1]!r} has "
                              f"{len(labels)} labels")
        return wrap(np.ascontiguousarray(images[..., None]), cpu()), labels


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST (https://github.com/zalandoresearch/fashion-mnist), a drop-in
    replacement of :class:`MNIST` with its file names and format; default root
    ``$MXNET_HOME/datasets/fashion-mnist``.

    >>> FashionMNIST.__mro__[1].__name__
    'MNIST'
    """

    _name = "FashionMNIST"
    _url = "https://github.com/zalandoresearch/fashion-mnist"

    def __init__(self, root: str = _default_root("fashion-mnist"), train: bool = True,
                 transform: Callable[..., Any] | None = None):
        super().__init__(root, train, transform)


class CIFAR10(_LocalDataset):
    """CIFAR-10 (https://www.cs.toronto.edu/~kriz/cifar.html), its binary version: samples
    ``(image, label)``, an NDArray of shape (32, 32, 3) uint8 and an int32 label. Reads
    ``data_batch_1.bin`` ... ``data_batch_5.bin`` (``test_batch.bin`` with ``train=False``).

    >>> CIFAR10._archive
    'cifar-10-binary.tar.gz'
    """

    _name = "CIFAR10"
    _archive = "cifar-10-binary.tar.gz"
    _folder = "cifar-10-batches-bin"
    _labels = 1     # label bytes before each image
    _url = "https://www.cs.toronto.edu/~kriz/cifar.html (the binary version)"

    def __init__(self, root: str = _default_root("cifar10"), train: bool = True,
                 transform: Callable[..., Any] | None = None):
        self._train = bool(train)
        super().__init__(root, transform)

    def _files(self) -> list[str]:
        return [f"data_batch_{i}.bin" for i in range(1, 6)] if self._train else ["test_batch.bin"]

    def _label_column(self) -> int:
        return 0

    def _read(self, name: str) -> bytes | None:
        for folder in (self._root, os.path.join(self._root, self._folder)):
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    return f.read()
        archive = os.path.join(self._root, self._archive)
        if os.path.isfile(archive):
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    if member.isfile() and os.path.basename(member.name) == name:
                        return tar.extractfile(member).read()
        return None

    def _load(self) -> tuple[NDArray, np.ndarray]:
        raws = {name: self._read(name) for name in self._files()}
        missing = [n for n, r in raws.items() if r is None]
        if missing:
            raise _missing(self._name, self._root, missing + [f"(or the archive {self._archive})"], self._url)
        width = self._labels + 3072
        images, labels = [], []
        for name, raw in raws.items():
            if not raw or len(raw) % width:
                raise FormatError(f"{self._name}: {name} holds {len(raw)} bytes, not a whole number of "
                                  f"{width}-byte records")
            rows = np.frombuffer(raw, dtype=np.uint8).reshape(-1, width)
            images.append(rows[:, self._labels:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(rows[:, self._label_column()].astype(np.int32))
        return wrap(np.ascontiguousarray(np.concatenate(images)), cpu()), np.concatenate(labels)


class CIFAR100(CIFAR10):
    """CIFAR-100, binary version: ``train.bin`` / ``test.bin``; the label is the coarse one (20
    super-classes) or, with ``fine_label``, the fine one (100 classes).

    >>> CIFAR100._folder
    'cifar-100-binary'
    """

    _name = "CIFAR100"
    _archive = "cifar-100-binary.tar.gz"
    _folder = "cifar-100-binary"
    _labels = 2

    def __init__(self, root: str = _default_root("cifar100"), fine_label: bool = False,
                 train: bool = True, transform: Callable[..., Any] | None = None):
        self._fine_label = bool(fine_label)
        super().__init__(root, train, transform)

    def _files(self) -> list[str]:
        return ["train.bin"] if self._train else ["test.bin"]

    def _label_column(self) -> int:
        return int(self._fine_label)


def _imread(path: str, flag: int) -> NDArray:
    from ....image import imread
    return imread(path, flag)


class ImageRecordDataset(RecordFileDataset):
    """Images and labels of a RecordIO file of image records (``mx.recordio.pack_img``, im2rec):
    samples ``(image, label)``, the image decoded to an HxWxC NDArray (``flag`` 1: 3 channels,
    0: grey), the label the record header's (a float, or an array for several).

    >>> ImageRecordDataset.__mro__[1].__name__
    'RecordFileDataset'
    """

    def __init__(self, filename: str, flag: int = 1, transform: Callable[..., Any] | None = None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx: int) -> Any:
        from .... import recordio
        from ....image import imdecode
        header, img = recordio.unpack(super().__getitem__(idx))
        data = imdecode(img, self._flag)
        return self._transform(data, header.label) if self._transform is not None else (data, header.label)


_IMAGE_EXTS = (".jpg", ".jpeg", ".png")


class ImageFolderDataset(Dataset):
    """Image files in one sub-folder per class (``root/car/0001.jpg``, ``root/bus/123.jpg``):
    ``synsets`` lists the class names (sorted, label ``i`` is ``synsets[i]``), ``items`` the
    ``(filename, label)`` pairs. Other files are skipped with a warning.

    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> for d in ('cat', 'ant'):
    ...     os.makedirs(os.path.join(root, d))
    >>> ImageFolderDataset(root).synsets
    ['ant', 'cat']
    """

    def __init__(self, root: str, flag: int = 1, transform: Callable[..., Any] | None = None):
        self._root = os.path.expanduser(os.fspath(root))
        self._flag = flag
        self._transform = transform
        if not os.path.isdir(self._root):
            raise MXNetError(f"ImageFolderDataset: {self._root!r} is not a folder")
        self.synsets: list[str] = []
        self.items: list[tuple[str, int]] = []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"ImageFolderDataset: ignoring {path}, which is not a folder", stacklevel=2)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for name in sorted(os.listdir(path)):
                file = os.path.join(path, name)
                if os.path.splitext(name)[1].lower() not in _IMAGE_EXTS:
                    warnings.warn(f"ImageFolderDataset: ignoring {file}: only {', '.join(_IMAGE_EXTS)} "
                                  "files are read", stacklevel=2)
                    continue
                self.items.append((file, label))

    def __getitem__(self, idx: int) -> Any:
        path, label = self.items[idx]
        img = _imread(path, self._flag)
        return self._transform(img, label) if self._transform is not None else (img, label)

    def __len__(self) -> int:
        return len(self.items)


class ImageListDataset(Dataset):
    """Images named by a list: ``imglist`` is a ``.lst`` file under ``root`` (lines
    ``index<TAB>label[<TAB>label...]<TAB>path``) or a list of ``[label, path]`` entries (label a
    number or a list of numbers; ``[l0, l1, ..., path]`` too). Paths are relative to ``root``.
    Samples are ``(image, label)`` with the label as a float32 NDArray. (MXNet 2.0's class;
    1.9.1 has none.)

    >>> ds = ImageListDataset('/data', [[0, 'a.jpg'], [[1, 2], 'b.jpg']])
    >>> len(ds), ds.items[1][0]
    (2, '/data/b.jpg')
    """

    def __init__(self, root: str = ".", imglist: Any = None, flag: int = 1):
        self._root = os.path.expanduser(os.fspath(root))
        self._flag = flag
        self.items: list[tuple[str, np.ndarray]] = []
        if isinstance(imglist, (str, os.PathLike)):
            path = os.path.join(self._root, os.fspath(imglist))
            try:
                with open(path) as f:
                    lines = f.read().splitlines()
            except OSError as exc:
                raise MXNetError(f"ImageListDataset: cannot read the list {path!r}: {exc}") from exc
            for n, line in enumerate(lines, 1):
                fields = line.strip().split("\t")
                if not line.strip():
                    continue
                if len(fields) < 3:
                    raise FormatError(f"ImageListDataset: {path!r} line {n} is not "
                                      f"'index<TAB>label...<TAB>path': {line[:80]!r}")
                self.items.append((os.path.join(self._root, fields[-1]), self._label(fields[1:-1], path)))
        elif isinstance(imglist, (list, tuple)):
            for n, entry in enumerate(imglist):
                if not isinstance(entry, (list, tuple)) or len(entry) < 2 or not isinstance(entry[-1], str):
                    raise ParamError(f"ImageListDataset: entry {n} must be [label, path], got {entry!r}")
                label = entry[:-1] if len(entry) > 2 else entry[0]
                self.items.append((os.path.join(self._root, entry[-1]), self._label(label, "imglist")))
        else:
            raise ParamError(f"ImageListDataset: imglist must be a file name or a list of [label, path] "
                             f"entries, got {type(imglist).__name__}")

    @staticmethod
    def _label(label: Any, where: str) -> np.ndarray:
        try:
            return np.atleast_1d(np.asarray(label, dtype=np.float32))
        except (TypeError, ValueError):
            raise FormatError(f"ImageListDataset: label {label!r} in {where} is not numeric") from None

    def __getitem__(self, idx: int) -> Any:
        path, label = self.items[idx]
        return _imread(path, self._flag), wrap(label.copy(), cpu())

    def __len__(self) -> int:
        return len(self.items)
