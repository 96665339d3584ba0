"""``mx.image.imrotate`` and ``random_rotate``: float32 CHW images (or NCHW batches) turned about
their centre, sampled bilinearly, with zeros where a sample falls outside the source."""
from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np

from ..ndarray.ndarray import NDArray, wrap
from .ops import rng

__all__ = ["imrotate", "random_rotate", "rotate_np"]


def _angles(n: int, rotation_degrees: Any) -> np.ndarray:
    """One angle (degrees) per image of a batch of ``n``."""
    if isinstance(rotation_degrees, Number):
        return np.full(n, float(rotation_degrees))
    if isinstance(rotation_degrees, NDArray):
        rotation_degrees = rotation_degrees.asnumpy()
    deg = np.asarray(rotation_degrees, dtype=np.float64).reshape(-1)
    if deg.size != n:
        raise ValueError(f"imrotate: {n} images need as many rotation angles, got {deg.size}")
    return deg


def rotate_np(img: np.ndarray, degrees: float, zoom_in: bool = False, zoom_out: bool = False) -> np.ndarray:
    """C x H x W ``img`` turned counter-clockwise by ``degrees`` about its centre, read bilinearly
    (neighbours outside the image read 0), scaled so that no padding shows (``zoom_in``) or the
    whole image does (``zoom_out``): the factor compares the rotated frame's bounding box with the
    frame. Used by :func:`imrotate` and Gluon's ``Rotate`` transforms.

    >>> rotate_np(np.eye(3, dtype=np.float32)[None], 90)[0].round(3).tolist()
    [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    _, h, w = img.shape
    a = np.deg2rad(degrees)
    c, s = np.cos(a), np.sin(a)
    scale = 1.0
    if zoom_in or zoom_out:
        box_w, box_h = w * abs(c) + h * abs(s), w * abs(s) + h * abs(c)
        scale = max(box_w / w, box_h / h) if zoom_out else min(w / box_w, h / box_h)
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    dy, dx = np.mgrid[0:h, 0:w].astype(np.float64)
    dy, dx = dy - cy, dx - cx
    sy, sx = cy + scale * (dx * s + dy * c), cx + scale * (dx * c - dy * s)
    y0, x0 = np.floor(sy).astype(np.int64), np.floor(sx).astype(np.int64)
    fy, fx = sy - y0, sx - x0
    out = np.zeros_like(img)
    for oy, wy in ((0, 1 - fy), (1, fy)):
        for ox, wx in ((0, 1 - fx), (1, fx)):
            yy, xx = y0 + oy, x0 + ox
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            vals = img[:, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
            out += (vals * (wy * wx * inside)).astype(img.dtype)
    return out


def imrotate(src: NDArray, rotation_degrees: Any, zoom_in: bool = False, zoom_out: bool = False) -> NDArray:
    """``src`` (float32, CHW, or an NCHW batch) rotated counter-clockwise by ``rotation_degrees``
    about the image centre: a number, or for a batch also one angle per image (an NDArray).
    ``zoom_in`` scales up so that no padding shows, ``zoom_out`` scales down so that the whole
    source shows (not both: ValueError). Samples are bilinear; outside the source they read 0.

    >>> import numpy as np, symjit as mx
    >>> img = mx.nd.array(np.arange(9, dtype='float32').reshape(1, 3, 3))
    >>> mx.image.imrotate(img, 90).asnumpy()[0].round()
    array([[2., 5., 8.],
           [1., 4., 7.],
           [0., 3., 6.]], dtype=float32)
    """
    if zoom_in and zoom_out:
        raise ValueError("imrotate: zoom_in and zoom_out cannot both be True")
    if not isinstance(src, NDArray) or src.dtype != np.float32:
        raise TypeError(f"imrotate: src must be a float32 NDArray, got "
                        f"{getattr(src, 'dtype', type(src).__name__)}")
    single = src.ndim == 3
    if single and not isinstance(rotation_degrees, Number):
        raise TypeError("imrotate: a single (CHW) image takes one number as its rotation angle, got "
                        f"{type(rotation_degrees).__name__}")
    if src.ndim not in (3, 4):
        raise ValueError(f"imrotate: src must be CHW or NCHW, got shape {src.shape}")
    imgs = src.asnumpy()[None] if single else src.asnumpy()
    out = np.stack([rotate_np(img, deg, zoom_in, zoom_out)
                    for img, deg in zip(imgs, _angles(imgs.shape[0], rotation_degrees))])
    return wrap(out[0] if single else out, src.context)


def random_rotate(src: NDArray, angle_limits: Any, zoom_in: bool = False, zoom_out: bool = False) -> NDArray:
    """:func:`imrotate` by angles drawn uniformly from ``angle_limits`` ``(low, high)`` degrees,
    one per image of a batch (from symjit's random stream: ``mx.random.seed`` repeats them).

    >>> import symjit as mx
    >>> img = mx.nd.ones((3, 8, 8))
    >>> mx.image.random_rotate(img, (-5, 5)).shape
    (3, 8, 8)
    """
    low, high = (float(v) for v in angle_limits)
    if src.ndim == 3:
        return imrotate(src, float(rng().uniform(low, high)), zoom_in, zoom_out)
    n = src.shape[0] if src.ndim == 4 else 0
    return imrotate(src, rng().uniform(low, high, size=n), zoom_in, zoom_out)
