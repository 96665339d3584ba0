"""Image transforms: Gluon blocks over one image (H x W x C, or C x H x W after :class:`ToTensor`)
or a batch of them.

The per-pixel transforms are HybridBlocks over ``mx.nd.image``'s operators (``to_tensor``,
``normalize``, ``resize``, ``crop``, the flips and color jitters); the ones with a data-dependent
window (:class:`CenterCrop`, :class:`RandomResizedCrop`) are Blocks over ``mx.image``'s functions,
as in MXNet. Random choices come from ``mx.random`` (the operators' seeds) and ``mx.image``'s
generator, so ``mx.random.seed`` repeats them. :class:`Compose` runs its transforms one after the
other without hybridizing them (symjit's imperative image operators serve every image size with
one kernel, while a hybridized chain would compile a program per size).

>>> import numpy as np, symjit as mx
>>> t = Compose([Resize(4), ToTensor(), Normalize(0.5, 0.25)])
>>> t(mx.nd.array(np.full((8, 6, 3), 255), dtype='uint8')).asnumpy()[:, 0, 0].tolist()
[2.0, 2.0, 2.0]
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from ....base import DTypeError, ParamError, ShapeError
from ....image.rotate import rotate_np
from ....ndarray.ndarray import NDArray, wrap
from ...block import Block, HybridBlock

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Rotate", "RandomRotation", "RandomResizedCrop",
           "CropResize", "CenterCrop", "Resize", "RandomFlipLeftRight", "RandomFlipTopBottom",
           "RandomBrightness", "RandomContrast", "RandomSaturation", "RandomHue", "RandomColorJitter",
           "RandomLighting", "RandomGray", "RandomApply"]


def _pair(size: Any) -> tuple[int, int]:
    return (size, size) if isinstance(size, (int, np.integer)) else tuple(size)


class Compose(Block):
    """The transforms applied in order (``Compose([Resize(32), ToTensor()])``).

    >>> len(Compose([ToTensor(), Cast()]))
    2
    """

    def __init__(self, transforms: Sequence[Any]):
        super().__init__()
        self._steps: list[Any] = []
        for t in transforms:
            if t is not None:
                self.add(t)

    def add(self, *transforms: Any) -> None:
        """Append transforms (Blocks or plain callables)."""
        for t in transforms:
            if not callable(t):
                raise ParamError(f"Compose: a transform must be callable, got {type(t).__name__}")
            if isinstance(t, Block):
                self.register_child(t)
            self._steps.append(t)

    def __getitem__(self, i: int) -> Any:
        return self._steps[i]

    def __len__(self) -> int:
        return len(self._steps)

    def forward(self, x: Any) -> Any:
        for t in self._steps:
            x = t(x)
        return x


class Cast(HybridBlock):
    """The input converted to ``dtype`` (default float32).

    >>> import symjit as mx
    >>> Cast('float16')(mx.nd.ones((2,))).dtype.__name__
    'float16'
    """

    def __init__(self, dtype: Any = "float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """An image H x W x C (or a batch N x H x W x C) of values in [0, 255] as float32 C x H x W
    (N x C x H x W) divided by 255.

    >>> import symjit as mx
    >>> ToTensor()(mx.nd.full((2, 3, 1), 51, dtype='uint8')).shape
    (1, 2, 3)
    """

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x - mean) / std`` per channel of a C x H x W tensor (or N x C x H x W batch); a number
    for ``mean`` or ``std`` serves every channel.

    >>> import symjit as mx
    >>> Normalize(1, 2)(mx.nd.ones((1, 2, 2)) * 5).asnumpy()[0, 0].tolist()
    [2.0, 2.0]
    """

    def __init__(self, mean: Any = 0.0, std: Any = 1.0):
        super().__init__()
        self._mean, self._std = mean, std

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.image.normalize(x, self._mean, self._std)


def _float32(x: Any, name: str) -> np.ndarray:
    if not isinstance(x, NDArray):
        raise DTypeError(f"{name}: the input must be an NDArray, got {type(x).__name__}")
    if x.dtype != np.float32:
        raise TypeError(f"{name}: only float32 input is rotated, got {np.dtype(x.dtype).name} "
                        "(call it after ToTensor)")
    if x.ndim not in (3, 4):
        raise ShapeError(f"{name}: the input must be C x H x W or N x C x H x W, got {x.shape}")
    return x.asnumpy()


class Rotate(Block):
    """The image (C x H x W float32, or a batch) turned counter-clockwise by
    ``rotation_degrees``; ``zoom_in``: scaled so that no empty corner shows, ``zoom_out``: so
    that the whole image stays in the frame.

    >>> import symjit as mx
    >>> x = mx.nd.array([[[0, 0, 0], [0, 0, 1], [0, 0, 0]]])
    >>> Rotate(90)(x).asnumpy()[0].round(3).tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """

    def __init__(self, rotation_degrees: float, zoom_in: bool = False, zoom_out: bool = False):
        super().__init__()
        self._args = (float(rotation_degrees), bool(zoom_in), bool(zoom_out))

    def forward(self, x: Any) -> NDArray:
        img = _float32(x, "Rotate")
        out = (np.stack([rotate_np(i, *self._args) for i in img]) if img.ndim == 4
               else rotate_np(img, *self._args))
        return wrap(out, x.context)


class RandomRotation(Block):
    """With probability ``rotate_with_proba``, :class:`Rotate` by an angle drawn uniformly from
    ``angle_limits`` ``(lower, upper)`` (one per image of a batch).

    >>> RandomRotation((-10, 10))._limits
    (-10.0, 10.0)
    """

    def __init__(self, angle_limits: Sequence[float], zoom_in: bool = False, zoom_out: bool = False,
                 rotate_with_proba: float = 1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError(f"RandomRotation: angle_limits must be (lower, upper) with lower < upper, "
                             f"got {tuple(angle_limits)}")
        if not 0 <= rotate_with_proba <= 1:
            raise ValueError(f"RandomRotation: rotate_with_proba must be in [0, 1], got {rotate_with_proba}")
        self._limits = (float(lower), float(upper))
        self._zoom = (bool(zoom_in), bool(zoom_out))
        self._p = float(rotate_with_proba)

    def forward(self, x: Any) -> Any:
        if np.random.random() >= self._p:
            return x
        img = _float32(x, "RandomRotation")
        many = img if img.ndim == 4 else img[None]
        out = np.stack([rotate_np(i, np.random.uniform(*self._limits), *self._zoom) for i in many])
        return wrap(out if img.ndim == 4 else out[0], x.context)


class RandomResizedCrop(Block):
    """A window of random area (a fraction in ``scale``) and aspect ratio (in ``ratio``) of an
    H x W x C image, resized to ``size`` (an int or ``(w, h)``).

    >>> import symjit as mx
    >>> RandomResizedCrop(4)(mx.nd.ones((10, 12, 3), dtype='uint8')).shape
    (4, 4, 3)
    """

    def __init__(self, size: Any, scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0), interpolation: int = 1):
        super().__init__()
        self._args = (_pair(size), scale, ratio, interpolation)

    def forward(self, x: Any) -> NDArray:
        from ....image import random_size_crop
        return random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """The window ``(x, y, width, height)`` of an H x W x C image (or a batch), resized to
    ``size`` (``(w, h)``) when given.

    >>> import symjit as mx
    >>> CropResize(1, 0, 2, 3)(mx.nd.ones((4, 4, 3))).shape
    (3, 2, 3)
    """

    def __init__(self, x: int, y: int, width: int, height: int, size: Any = None,
                 interpolation: int | None = None):
        super().__init__()
        self._box = (x, y, width, height)
        self._size = size
        self._interpolation = 1 if interpolation is None else interpolation

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        out = F.image.crop(x, *self._box)
        if self._size:
            out = F.image.resize(out, self._size, False, self._interpolation)
        return out


class CenterCrop(Block):
    """The centred window of ``size`` (an int or ``(w, h)``) of an H x W x C image, shrunk to fit
    and resized back to ``size`` when the image is smaller.

    >>> import symjit as mx
    >>> CenterCrop((4, 2))(mx.nd.ones((6, 6, 3))).shape
    (2, 4, 3)
    """

    def __init__(self, size: Any, interpolation: int = 1):
        super().__init__()
        self._args = (_pair(size), interpolation)

    def forward(self, x: Any) -> NDArray:
        from ....image import center_crop
        return center_crop(x, *self._args)[0]


class Resize(HybridBlock):
    """An H x W x C image (or a batch) resized to ``size``: ``(w, h)``, or an int for both sides,
    or, with ``keep_ratio``, for the shorter side (the aspect ratio kept). Float images go through
    ``mx.nd.image.resize``; integer images and interpolations other than bilinear (1) through
    OpenCV, giving ``mx.image.imresize``'s values.

    >>> import symjit as mx
    >>> Resize(3, keep_ratio=True)(mx.nd.ones((6, 12, 3))).shape
    (3, 6, 3)
    """

    def __init__(self, size: Any, keep_ratio: bool = False, interpolation: int = 1):
        super().__init__()
        self._size, self._keep, self._interpolation = size, bool(keep_ratio), interpolation

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        if isinstance(x, NDArray) and (self._interpolation != 1 or not np.issubdtype(x.dtype, np.floating)):
            return _resize_host(x, self._size, self._keep, self._interpolation)
        return F.image.resize(x, self._size, self._keep, self._interpolation)


def _resize_host(x: NDArray, size: Any, keep: bool, interp: int) -> NDArray:
    """Resize by OpenCV (``mx.image.imresize``), as MXNet's CPU operator does: the interpolations
    other than bilinear, which ``mx.nd.image.resize`` does not have, and integer images (OpenCV's
    fixed-point rounding); sizes as that operator reads them."""
    from ....image.ops import resize_np
    sizes = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    if len(sizes) not in (1, 2) or any(int(s) <= 0 for s in sizes):
        raise ParamError(f"Resize: size must be a positive int or (width, height), got {size!r}")
    if x.ndim not in (3, 4):
        raise ShapeError(f"Resize: the input must be H x W x C or N x H x W x C, got {x.shape}")
    img = x.asnumpy()
    h, w = img.shape[-3:-1]
    s = int(sizes[0])
    if len(sizes) == 2:
        new_w, new_h = int(sizes[0]), int(sizes[1])
    elif not keep:
        new_w = new_h = s
    elif h <= w:
        new_w, new_h = int(w * s / h), s
    else:
        new_w, new_h = s, int(h * s / w)
    many = img if img.ndim == 4 else img[None]
    out = np.stack([resize_np(i, new_w, new_h, interp) for i in many])
    return wrap(out if img.ndim == 4 else out[0], x.context)


class _ImageOp(HybridBlock):
    """``F.image.<_op>(x, *_args)``. With ``_on_floats`` (the color operators take float images
    only) an integer image is computed in float32 and rounded back to its dtype, saturating, as
    MXNet's kernels do."""

    _op = ""
    _args: tuple = ()
    _on_floats = False

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        op = getattr(F.image, self._op)
        if self._on_floats and isinstance(x, NDArray) and not np.issubdtype(x.dtype, np.floating):
            info = np.iinfo(x.dtype)
            out = op(x.astype("float32"), *self._args).asnumpy()
            return wrap(np.clip(np.rint(out), info.min, info.max).astype(x.dtype), x.context)
        return op(x, *self._args)


class RandomFlipLeftRight(_ImageOp):
    """The image mirrored left to right with probability 0.5.

    >>> import symjit as mx
    >>> RandomFlipLeftRight()(mx.nd.ones((2, 2, 3))).shape
    (2, 2, 3)
    """

    _op = "random_flip_left_right"


class RandomFlipTopBottom(_ImageOp):
    """The image flipped top to bottom with probability 0.5.

    >>> import symjit as mx
    >>> RandomFlipTopBottom()(mx.nd.ones((2, 2, 3))).shape
    (2, 2, 3)
    """

    _op = "random_flip_top_bottom"


class _Jitter(_ImageOp):
    _on_floats = True

    def __init__(self, amount: float):
        super().__init__()
        self._args = (max(0.0, 1.0 - amount), 1.0 + amount)


class RandomBrightness(_Jitter):
    """Brightness scaled by a factor drawn from ``[max(0, 1 - brightness), 1 + brightness]``.

    >>> RandomBrightness(0.5)._args
    (0.5, 1.5)
    """

    _op = "random_brightness"


class RandomContrast(_Jitter):
    """Contrast scaled by a factor drawn from ``[max(0, 1 - contrast), 1 + contrast]``.

    >>> RandomContrast(2)._args
    (0.0, 3.0)
    """

    _op = "random_contrast"


class RandomSaturation(_Jitter):
    """Saturation scaled by a factor drawn from ``[max(0, 1 - saturation), 1 + saturation]``.

    >>> RandomSaturation(0.1)._op
    'random_saturation'
    """

    _op = "random_saturation"


class RandomHue(_Jitter):
    """Hue shifted by a factor drawn from ``[max(0, 1 - hue), 1 + hue]``.

    >>> RandomHue(0.1)._op
    'random_hue'
    """

    _op = "random_hue"


class RandomColorJitter(_ImageOp):
    """Brightness, contrast, saturation and hue jittered by the given amounts (each as in the
    single transforms), in a random order.

    >>> import symjit as mx
    >>> RandomColorJitter(0.1, 0.1, 0.1, 0.1)(mx.nd.ones((2, 2, 3))).shape
    (2, 2, 3)
    """

    _op = "random_color_jitter"
    _on_floats = True

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)


class RandomLighting(_ImageOp):
    """AlexNet's PCA lighting noise of intensity ``alpha`` (the standard deviation of the
    eigenvalue weights).

    >>> import symjit as mx
    >>> float(RandomLighting(0)(mx.nd.ones((2, 2, 3))).asnumpy().max())
    1.0
    """

    _op = "random_lighting"
    _on_floats = True

    def __init__(self, alpha: float):
        super().__init__()
        self._args = (alpha,)


class RandomGray(Block):
    """With probability ``p`` (default 0.5), an H x W x 3 image replaced by its gray level
    (0.21 R + 0.72 G + 0.07 B, as ``mx.image.RandomGrayAug``) in all three channels, in the
    input's dtype. (MXNet 2.0's transform; 1.9.1 has none.)

    >>> import symjit as mx
    >>> RandomGray(1.0)(mx.nd.array([[[10, 20, 30]]], dtype='uint8')).asnumpy().tolist()
    [[[19, 19, 19]]]
    """

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ParamError(f"RandomGray: p must be in [0, 1], got {p}")
        self._p = float(p)

    def forward(self, x: Any) -> Any:
        from ....image.ops import rng
        if rng().random() >= self._p:
            return x
        img = x.asnumpy()
        if img.ndim != 3 or img.shape[2] != 3:
            raise ShapeError(f"RandomGray: the image must be H x W x 3, got {img.shape}")
        gray = img.astype(np.float32) @ np.array([0.21, 0.72, 0.07], np.float32)
        if np.issubdtype(img.dtype, np.integer):
            gray = np.clip(np.rint(gray), np.iinfo(img.dtype).min, np.iinfo(img.dtype).max)
        return wrap(np.repeat(gray[..., None], 3, axis=2).astype(img.dtype), x.context)


class RandomApply(Block):
    """``transforms`` (a transform or a :class:`Compose`) applied with probability ``p``, drawn
    from Python's ``random``.

    >>> import symjit as mx
    >>> RandomApply(Cast('float16'), p=0.0)(mx.nd.ones((1,))).dtype.__name__
    'float32'
    """

    def __init__(self, transforms: Any, p: float = 0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x: Any) -> Any:
        if self.p < random.random():
            return x
        return self.transforms(x)

