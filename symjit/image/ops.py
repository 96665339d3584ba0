"""Image functions: decode, read, resize, crop, normalize (HxWxC arrays; NDArrays out).

Each function takes an NDArray or a numpy array and returns an NDArray on the CPU; the ``_np``
variants the iterators use work on numpy arrays and skip the wrapping. Random choices come from
:func:`rng`: ``mx.random``'s generator, or the per-sample generator a worker thread of an image
iterator installs (so a seeded run is reproducible whatever the thread count).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..base import MXNetError, ParamError, shape_str
from ..context import cpu
from ..ndarray.ndarray import NDArray, wrap
from ..recordio import _cv2, decode_image

__all__ = ["imread", "imdecode", "imresize", "resize_short", "fixed_crop", "center_crop", "random_crop",
           "random_size_crop", "color_normalize", "scale_down", "rng", "sample_rng"]

_local = threading.local()


def rng() -> np.random.Generator:
    """The generator for random augmentations in this thread."""
    seed = getattr(_local, "seed", None)
    if seed is not None:                 # a sample's own generator, made on first use
        _local.rng, _local.seed = np.random.default_rng(seed), None
    local = getattr(_local, "rng", None)
    if local is not None:
        return local
    from .. import random as _random  # not at top level: symjit imports image before random's users
    return _random._rng


class sample_rng:
    """``with sample_rng(seed):`` makes :func:`rng` a generator of its own in this thread (created
    only if the sample draws a random number)."""

    def __init__(self, seed: int):
        self.seed = seed

    def __enter__(self) -> None:
        self.saved = (getattr(_local, "rng", None), getattr(_local, "seed", None))
        _local.rng, _local.seed = None, self.seed

    def __exit__(self, *exc: object) -> None:
        _local.rng, _local.seed = self.saved


def as_np(src: Any, where: str) -> np.ndarray:
    """An image argument as a numpy HxW or HxWxC array (no copy for CPU NDArrays' storage)."""
    if isinstance(src, NDArray):
        arr = src.asnumpy()
    elif isinstance(src, np.ndarray):
        arr = src
    else:
        raise ParamError(f"{where}: the image must be an NDArray or a numpy array, got {type(src).__name__}")
    if arr.ndim not in (2, 3):
        raise ParamError(f"{where}: the image must be HxW or HxWxC, got shape {shape_str(arr.shape)}")
    return arr


def _out(arr: np.ndarray) -> NDArray:
    return wrap(np.ascontiguousarray(arr), cpu())


def decode_np(buf: bytes, flag: int = 1, to_rgb: bool = True) -> np.ndarray:
    """Decode JPEG/PNG bytes: HxWx3 (``flag=1``; RGB with ``to_rgb``, else BGR) or HxWx1 (``0``)."""
    if flag == 0:
        return decode_image(buf, 0)[:, :, None]
    img = decode_image(buf, 1)                      # BGR, as OpenCV decodes
    return np.ascontiguousarray(img[:, :, ::-1]) if to_rgb else img


def imdecode(buf: Any, flag: int = 1, to_rgb: bool = True, out: Any = None) -> NDArray:
    """Decode an image from bytes (or a uint8 NDArray/array of them) into an HxWxC uint8 NDArray.

    >>> import numpy as np
    >>> from symjit.recordio import encode_image
    >>> imdecode(encode_image(np.full((4, 5, 3), 200, np.uint8), img_fmt='.png')).shape
    (4, 5, 3)
    """
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().tobytes()
    elif isinstance(buf, np.ndarray):
        buf = buf.tobytes()
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise ParamError(f"imdecode: buf must be bytes or a uint8 array, got {type(buf).__name__}")
    img = _out(decode_np(bytes(buf), flag, to_rgb))
    if out is not None:
        img.copyto(out)
        return out
    return img


def imread(filename: str, flag: int = 1, to_rgb: bool = True, out: Any = None) -> NDArray:
    """Read and decode an image file (see :func:`imdecode`)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise MXNetError(f"imread: cannot read {filename!r}: {exc}") from exc
    return imdecode(data, flag, to_rgb, out)


def _interp(interp: int) -> int:
    if interp == 10:
        interp = int(rng().integers(0, 5))
    if interp == 9:
        interp = 2
    if interp not in (0, 1, 2, 3, 4):
        raise ParamError(f"imresize: interp must be one of 0-4, 9, 10 (OpenCV's codes), got {interp!r}")
    return int(interp)


def resize_np(img: np.ndarray, w: int, h: int, interp: int = 1) -> np.ndarray:
    """``img`` resized to ``w`` x ``h`` by OpenCV (channels kept, a 1-channel image stays HxWx1)."""
    if w <= 0 or h <= 0:
        raise ParamError(f"imresize: the size must be positive, got w={w}, h={h}")
    if (img.shape[1], img.shape[0]) == (w, h):
        return img
    out = _cv2().resize(np.ascontiguousarray(img), (int(w), int(h)), interpolation=_interp(interp))
    return out[:, :, None] if img.ndim == 3 and out.ndim == 2 else out


def imresize(src: Any, w: int, h: int, interp: int = 1) -> NDArray:
    """``src`` resized to width ``w`` and height ``h``."""
    return _out(resize_np(as_np(src, "imresize"), int(w), int(h), interp))


def short_size(h: int, w: int, size: int) -> tuple[int, int]:
    """``(new_w, new_h)`` with the shorter edge ``size`` and the aspect ratio kept."""
    if h > w:
        return size, int(round(size * h / w))
    return int(round(size * w / h)), size


def resize_short(src: Any, size: int, interp: int = 2) -> NDArray:
    """``src`` resized so that its shorter edge is ``size``."""
    img = as_np(src, "resize_short")
    w, h = short_size(img.shape[0], img.shape[1], int(size))
    return _out(resize_np(img, w, h, interp))


def crop_np(img: np.ndarray, x0: int, y0: int, w: int, h: int) -> np.ndarray:
    """The ``w`` x ``h`` window at ``(x0, y0)``, checked against the image."""
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > img.shape[1] or y0 + h > img.shape[0]:
        raise ParamError(f"fixed_crop: window x0={x0}, y0={y0}, w={w}, h={h} does not fit an image of "
                         f"{img.shape[1]}x{img.shape[0]} (w x h)")
    return img[y0:y0 + h, x0:x0 + w]


def fixed_crop_np(img: np.ndarray, x0: int, y0: int, w: int, h: int, size: Any = None,
                  interp: int = 2) -> np.ndarray:
    """:func:`fixed_crop` on numpy."""
    out = crop_np(img, int(x0), int(y0), int(w), int(h))
    if size is not None and (w, h) != tuple(size):
        out = resize_np(out, int(size[0]), int(size[1]), interp)
    return out


def fixed_crop(src: Any, x0: int, y0: int, w: int, h: int, size: Any = None, interp: int = 2) -> NDArray:
    """The window ``(x0, y0, w, h)`` of ``src``, resized to ``size`` ``(w, h)`` when given."""
    return _out(fixed_crop_np(as_np(src, "fixed_crop"), x0, y0, w, h, size, interp))


def center_crop_np(img: np.ndarray, size: Any, interp: int = 2) -> tuple[np.ndarray, tuple]:
    """:func:`center_crop` on numpy."""
    h, w = img.shape[:2]
    new_w, new_h = scale_down((w, h), tuple(size))
    x0, y0 = (w - new_w) // 2, (h - new_h) // 2
    return fixed_crop_np(img, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src: Any, size: Any, interp: int = 2) -> tuple[NDArray, tuple[int, int, int, int]]:
    """The centered window of ``size`` ``(w, h)`` (shrunk to fit, then resized to ``size``) and
    its ``(x0, y0, w, h)``."""
    out, box = center_crop_np(as_np(src, "center_crop"), size, interp)
    return _out(out), box


def random_crop_np(img: np.ndarray, size: Any, interp: int = 2) -> tuple[np.ndarray, tuple]:
    """:func:`random_crop` on numpy."""
    h, w = img.shape[:2]
    new_w, new_h = scale_down((w, h), tuple(size))
    x0 = int(rng().integers(0, w - new_w + 1))
    y0 = int(rng().integers(0, h - new_h + 1))
    return fixed_crop_np(img, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_crop(src: Any, size: Any, interp: int = 2) -> tuple[NDArray, tuple[int, int, int, int]]:
    """A random window of ``size`` ``(w, h)`` (shrunk to fit, then resized) and its box."""
    out, box = random_crop_np(as_np(src, "random_crop"), size, interp)
    return _out(out), box


def random_size_crop_np(img: np.ndarray, size: Any, area: Any, ratio: Any, interp: int = 2) -> tuple:
    """:func:`random_size_crop` on numpy."""
    h, w = img.shape[:2]
    lo, hi = (area, 1.0) if np.isscalar(area) else area
    for _ in range(10):
        target = rng().uniform(lo, hi) * w * h
        aspect = float(np.exp(rng().uniform(np.log(ratio[0]), np.log(ratio[1]))))
        new_w, new_h = int(round(np.sqrt(target * aspect))), int(round(np.sqrt(target / aspect)))
        if 0 < new_w <= w and 0 < new_h <= h:
            x0 = int(rng().integers(0, w - new_w + 1))
            y0 = int(rng().integers(0, h - new_h + 1))
            return fixed_crop_np(img, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop_np(img, size, interp)


def random_size_crop(src: Any, size: Any, area: Any, ratio: Any, interp: int = 2,
                     **kwargs: Any) -> tuple[NDArray, tuple[int, int, int, int]]:
    """A window of random area (fraction ``area``, a number or ``(min, max)``) and aspect ratio
    (``ratio`` ``(min, max)``), resized to ``size``; falls back to :func:`center_crop` after 10 tries."""
    out, box = random_size_crop_np(as_np(src, "random_size_crop"), size, area, ratio, interp)
    return _out(out), box


def scale_down(src_size: tuple[int, int], size: tuple[int, int]) -> tuple[int, int]:
    """``size`` ``(w, h)`` scaled down, aspect kept, to fit in ``src_size`` ``(w, h)``."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def color_normalize(src: Any, mean: Any, std: Any = None) -> NDArray:
    """``(src - mean) / std`` (float32), channel-wise for per-channel ``mean``/``std``."""
    img = as_np(src, "color_normalize").astype(np.float32)
    img = img - np.asarray(mean.asnumpy() if isinstance(mean, NDArray) else mean, dtype=np.float32)
    if std is not None:
        img = img / np.asarray(std.asnumpy() if isinstance(std, NDArray) else std, dtype=np.float32)
    return _out(img)
