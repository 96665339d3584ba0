"""``mx.gluon.utils``: splitting batches over devices, gradient clipping, file checks.

symjit downloads nothing: :func:`download` returns the file when it is already at its local path
(with the right SHA-1 when one is given) and otherwise raises an error naming the URL and the path
to put the file at.

>>> import symjit as mx
>>> [x.shape for x in split_data(mx.nd.ones((6, 2)), 3)]
[(2, 2), (2, 2), (2, 2)]
"""
from __future__ import annotations

import hashlib
import math
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MXNetError, ParamError, ShapeError
from ..context import Context
from ..ndarray.ndarray import NDArray, wrap

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download", "replace_file",
           "shape_is_known"]


def split_data(data: NDArray, num_slice: int, batch_axis: int = 0, even_split: bool = True) -> list[NDArray]:
    """``data`` cut into ``num_slice`` parts along ``batch_axis``. With ``even_split`` the axis
    must divide evenly; otherwise the first ``size % num_slice`` parts are one entry longer (as
    ``numpy.array_split`` cuts).

    >>> import symjit as mx
    >>> [x.shape[0] for x in split_data(mx.nd.ones((7, 1)), 3, even_split=False)]
    [3, 2, 2]
    """
    if not isinstance(data, NDArray):
        raise ParamError(f"split_data: data must be an NDArray, got {type(data).__name__}")
    if isinstance(num_slice, bool) or not isinstance(num_slice, (int, np.integer)) or num_slice < 1:
        raise ParamError(f"split_data: num_slice must be a positive int, got {num_slice!r}")
    if not -data.ndim <= batch_axis < data.ndim:
        raise ShapeError(f"split_data: batch_axis {batch_axis} is out of range for data of shape "
                         f"{data.shape}")
    axis = batch_axis % data.ndim
    size = data.shape[axis]
    if size < num_slice:
        raise ShapeError(f"split_data: cannot split data of shape {data.shape} into {num_slice} slices "
                         f"along axis {batch_axis}: it has only {size} entries there")
    if even_split and size % num_slice:
        raise ShapeError(f"split_data: data of shape {data.shape} does not split evenly into {num_slice} "
                         f"slices along axis {batch_axis}; use a batch size divisible by the slice count "
                         "or even_split=False")
    if num_slice == 1:
        return [data]
    step, extra = divmod(size, num_slice)      # the first ``extra`` slices take one more entry
    ends = np.cumsum([0] + [step + 1] * extra + [step] * (num_slice - extra)).tolist()
    bounds = list(zip(ends[:-1], ends[1:]))
    if axis == 0:
        return [data[a:b] for a, b in bounds]
    from .. import ndarray as nd
    return [nd.slice_axis(data, axis=axis, begin=a, end=b) for a, b in bounds]


def split_and_load(data: Any, ctx_list: Sequence[Context], batch_axis: int = 0,
                   even_split: bool = True) -> list[NDArray]:
    """``data`` (an NDArray, or anything ``mx.nd.array`` takes) split as :func:`split_data` does
    into one part per context of ``ctx_list``, each part copied to its context.

    >>> import symjit as mx
    >>> [x.context for x in split_and_load([[1], [2]], [mx.cpu(0), mx.cpu(1)])]
    [cpu(0), cpu(1)]
    """
    ctx_list = list(ctx_list)
    if not ctx_list:
        raise ParamError("split_and_load: ctx_list is empty")
    if not isinstance(data, NDArray):
        from .. import ndarray as nd
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    parts = split_data(data, len(ctx_list), batch_axis, even_split)
    return [part.as_in_context(ctx) for part, ctx in zip(parts, ctx_list)]


def clip_global_norm(arrays: Sequence[NDArray], max_norm: float, check_isfinite: bool = True) -> Any:
    """Scale ``arrays`` in place so that their global 2-norm (the norm of all their elements
    together) is at most ``max_norm``; return the norm before scaling: a float, or with
    ``check_isfinite=False`` a shape-(1,) NDArray. A norm that is NaN or infinite is warned about
    (when checked), and the scaling is then undefined.

    >>> import symjit as mx
    >>> a = mx.nd.array([3.0, 4.0])
    >>> clip_global_norm([a], 1.0), [round(v, 3) for v in a.asnumpy().tolist()]
    (5.0, [0.6, 0.8])
    """
    arrays = list(arrays)
    if not arrays:
        raise ParamError("clip_global_norm: arrays is empty")
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            raise ParamError(f"clip_global_norm: arrays[{i}] must be an NDArray, got {type(a).__name__}")
    total = math.sqrt(sum(float(np.square(a.asnumpy(), dtype=np.float64).sum()) for a in arrays))
    if check_isfinite and not math.isfinite(total):
        warnings.warn(UserWarning("clip_global_norm: the norm is nan or inf; the clipped values are "
                                  "undefined"), stacklevel=2)
    scale = max_norm / (total + 1e-8)
    if scale < 1.0 or not math.isfinite(total):
        for a in arrays:
            a *= scale
    if check_isfinite:
        return float(np.float32(total))
    return wrap(np.array([total], dtype=np.float32), arrays[0].context)


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the SHA-1 digest of the file ``filename`` is ``sha1_hash`` (hex; a shorter hash is
    compared with the digest's start).

    >>> import tempfile
    >>> f = tempfile.NamedTemporaryFile(delete=False); _ = f.write(b'abc'); f.close()
    >>> check_sha1(f.name, 'a9993e364706816aba3e25717850c26c9cd0d89d')
    True
    """
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    digest = sha1.hexdigest()
    want = str(sha1_hash).lower()
    return digest[:len(want)] == want if want else False


def download(url: str, path: str | None = None, overwrite: bool = False, sha1_hash: str | None = None,
             retries: int = 5, verify_ssl: bool = True) -> str:
    """The local file for ``url``: ``path`` (a file, or a folder to hold the URL's file name;
    default the URL's file name in the working folder). symjit downloads nothing: the file must
    already be there (with digest ``sha1_hash`` when given, and ``overwrite`` false), else this
    is an error naming the URL and the path to put the file at. ``retries`` and ``verify_ssl``
    are accepted and unused.

    >>> try:
    ...     download('https://example.com/data/x.bin', path='/tmp/nowhere/')
    ... except Exception as exc:
    ...     print(str(exc).split(' yourself')[0])
    download: symjit downloads nothing; fetch https://example.com/data/x.bin
    """
    name = url.split("/")[-1].split("?")[0] or "index.html"
    if path is None:
        fname = name
    else:
        path = os.path.expanduser(os.fspath(path))
        fname = os.path.join(path, name) if path.endswith(os.sep) or os.path.isdir(path) else path
    if os.path.isfile(fname) and not overwrite:
        if sha1_hash is None or check_sha1(fname, sha1_hash):
            return fname
        raise MXNetError(f"download: {fname!r} exists but its SHA-1 is not {sha1_hash}; symjit downloads "
                         f"nothing: replace it by the file from {url}")
    why = "overwrite=True asks for a fresh copy; " if os.path.isfile(fname) else ""
    raise MXNetError(f"download: symjit downloads nothing; fetch {url} yourself and save it as "
                     f"{os.path.abspath(fname)!r} ({why}the next call then finds it there)")


def replace_file(src: str, dst: str) -> None:
    """Move ``src`` over ``dst`` in one step (``os.replace``: an existing ``dst`` is replaced
    atomically where the system allows).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); a, b = os.path.join(d, 'a'), os.path.join(d, 'b')
    >>> open(a, 'w').close(); replace_file(a, b); os.path.exists(a), os.path.exists(b)
    (False, True)
    """
    os.replace(src, dst)


def shape_is_known(shape: Any) -> bool:
    """Whether every dimension of ``shape`` is known: with MXNet's classic shapes (symjit's only
    kind) 0 marks an unknown dimension, and an empty shape or None is unknown.

    >>> shape_is_known((2, 3)), shape_is_known((0, 3)), shape_is_known(())
    (True, False, False)
    """
    if shape is None or len(shape) == 0:
        return False
    for d in shape:
        if d == 0:
            return False
        if d < 0:
            raise ShapeError(f"shape_is_known: invalid dimension {d} in shape {tuple(shape)}")
    return True


def __getattr__(name: str) -> Any:
    if name == "HookHandle":   # where MXNet keeps it; symjit's lives with the blocks
        from .block import HookHandle
        return HookHandle
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
