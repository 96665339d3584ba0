"""Image augmenters, as ``mx.image``'s: callables on an HxWxC image.

An augmenter given an NDArray returns an NDArray; given a numpy array (as the iterators pass)
it returns a numpy array. Random choices come from :func:`symjit.image.ops.rng`.

>>> import numpy as np
>>> augs = CreateAugmenter((3, 8, 8), resize=10, rand_mirror=True, mean=True, std=True)
>>> [type(a).__name__ for a in augs]
['ResizeAug', 'CenterCropAug', 'HorizontalFlipAug', 'CastAug', 'ColorNormalizeAug']
>>> img = np.full((12, 16, 3), 128, np.uint8)
>>> for a in augs:
...     img = a(img)
>>> img.shape, img.dtype
((8, 8, 3), dtype('float32'))
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..base import ParamError
from ..ndarray.ndarray import NDArray
from .ops import (
    _out,
    as_np,
    center_crop_np,
    random_crop_np,
    random_size_crop_np,
    resize_np,
    rng,
    short_size,
)

__all__ = ["Augmenter", "SequentialAug", "RandomOrderAug", "ResizeAug", "ForceResizeAug", "RandomCropAug",
           "RandomSizedCropAug", "CenterCropAug", "HorizontalFlipAug", "CastAug", "ColorNormalizeAug",
           "BrightnessJitterAug", "ContrastJitterAug", "SaturationJitterAug", "HueJitterAug",
           "ColorJitterAug", "LightingAug", "RandomGrayAug", "CreateAugmenter"]

_GRAY = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _vector(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    return np.asarray(value.asnumpy() if isinstance(value, NDArray) else value, dtype=np.float32)


class Augmenter:
    """Base class: ``aug(src)`` applies :meth:`apply` to the image's numpy array."""

    def __init__(self, **kwargs: Any):
        self._kwargs = {k: (v.asnumpy().tolist() if isinstance(v, NDArray) else
                            v.tolist() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}

    def dumps(self) -> str:
        """``[name, kwargs]`` as JSON."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def apply(self, img: np.ndarray) -> np.ndarray:
        """The augmented image."""
        raise NotImplementedError(f"{type(self).__name__}.apply")

    def __call__(self, src: Any) -> Any:
        out = self.apply(as_np(src, type(self).__name__))
        return _out(out) if isinstance(src, NDArray) else out


class SequentialAug(Augmenter):
    """The augmenters ``ts`` one after the other."""

    def __init__(self, ts: list[Augmenter]):
        super().__init__()
        self.ts = list(ts)

    def apply(self, img: np.ndarray) -> np.ndarray:
        for t in self.ts:
            img = t.apply(img)
        return img


class RandomOrderAug(SequentialAug):
    """The augmenters ``ts`` in a random order."""

    def apply(self, img: np.ndarray) -> np.ndarray:
        for k in rng().permutation(len(self.ts)):
            img = self.ts[int(k)].apply(img)
        return img


class ResizeAug(Augmenter):
    """Resize so that the shorter edge is ``size``."""

    def __init__(self, size: int, interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = int(size), interp

    def apply(self, img: np.ndarray) -> np.ndarray:
        w, h = short_size(img.shape[0], img.shape[1], self.size)
        return resize_np(img, w, h, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` ``(w, h)`` whatever the aspect ratio."""

    def __init__(self, size: Any, interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = tuple(size), interp

    def apply(self, img: np.ndarray) -> np.ndarray:
        return resize_np(img, int(self.size[0]), int(self.size[1]), self.interp)


class RandomCropAug(Augmenter):
    """A random ``size`` ``(w, h)`` window."""

    def __init__(self, size: Any, interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = tuple(size), interp

    def apply(self, img: np.ndarray) -> np.ndarray:
        return random_crop_np(img, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A window of random area fraction and aspect ratio, resized to ``size``."""

    def __init__(self, size: Any, area: Any, ratio: Any, interp: int = 2, **kwargs: Any):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.area, self.ratio, self.interp = tuple(size), area, tuple(ratio), interp

    def apply(self, img: np.ndarray) -> np.ndarray:
        return random_size_crop_np(img, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """The centered ``size`` ``(w, h)`` window."""

    def __init__(self, size: Any, interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = tuple(size), interp

    def apply(self, img: np.ndarray) -> np.ndarray:
        return center_crop_np(img, self.size, self.interp)[0]


class HorizontalFlipAug(Augmenter):
    """Mirror left-right with probability ``p``."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = float(p)

    def apply(self, img: np.ndarray) -> np.ndarray:
        return img[:, ::-1] if rng().random() < self.p else img


class CastAug(Augmenter):
    """Convert to ``typ`` (float32)."""

    def __init__(self, typ: str = "float32"):
        super().__init__(type=typ)
        self.typ = np.dtype(typ)

    def apply(self, img: np.ndarray) -> np.ndarray:
        return img.astype(self.typ)


class ColorNormalizeAug(Augmenter):
    """``(img - mean) / std`` per channel."""

    def __init__(self, mean: Any, std: Any):
        super().__init__(mean=mean, std=std)
        self.mean, self.std = _vector(mean), _vector(std)

    def apply(self, img: np.ndarray) -> np.ndarray:
        img = img.astype(np.float32)
        if self.mean is not None:
            img = img - self.mean
        if self.std is not None:
            img = img / self.std
        return img


class BrightnessJitterAug(Augmenter):
    """Scale by ``1 + U(-brightness, brightness)``."""

    def __init__(self, brightness: float):
        super().__init__(brightness=brightness)
        self.brightness = float(brightness)

    def apply(self, img: np.ndarray) -> np.ndarray:
        return img.astype(np.float32) * np.float32(1.0 + rng().uniform(-self.brightness, self.brightness))


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean gray level by ``1 + U(-contrast, contrast)``."""

    def __init__(self, contrast: float):
        super().__init__(contrast=contrast)
        self.contrast = float(contrast)

    def apply(self, img: np.ndarray) -> np.ndarray:
        alpha = np.float32(1.0 + rng().uniform(-self.contrast, self.contrast))
        img = img.astype(np.float32)
        gray = float((img * _GRAY).sum(axis=2).mean())
        return img * alpha + np.float32((1.0 - alpha) * gray)


class SaturationJitterAug(Augmenter):
    """Blend with each pixel's gray level by ``1 + U(-saturation, saturation)``."""

    def __init__(self, saturation: float):
        super().__init__(saturation=saturation)
        self.saturation = float(saturation)

    def apply(self, img: np.ndarray) -> np.ndarray:
        alpha = np.float32(1.0 + rng().uniform(-self.saturation, self.saturation))
        img = img.astype(np.float32)
        gray = (img * _GRAY).sum(axis=2, keepdims=True)
        return img * alpha + gray * (np.float32(1.0) - alpha)


class HueJitterAug(Augmenter):
    """Rotate the hue (in YIQ space) by ``U(-hue, hue) * pi``."""

    _TYIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    _ITYIQ = np.linalg.inv(_TYIQ)

    def __init__(self, hue: float):
        super().__init__(hue=hue)
        self.hue = float(hue)

    def apply(self, img: np.ndarray) -> np.ndarray:
        alpha = rng().uniform(-self.hue, self.hue) * np.pi
        u, w = np.cos(alpha), np.sin(alpha)
        rot = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = (self._ITYIQ @ rot @ self._TYIQ).astype(np.float32)
        return img.astype(np.float32) @ t.T


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter in a random order."""

    def __init__(self, brightness: float, contrast: float, saturation: float):
        ts = ([BrightnessJitterAug(brightness)] if brightness > 0 else []) + \
             ([ContrastJitterAug(contrast)] if contrast > 0 else []) + \
             ([SaturationJitterAug(saturation)] if saturation > 0 else [])
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: add ``eigvec @ (alpha * eigval)``, ``alpha ~ N(0, alphastd)``."""

    def __init__(self, alphastd: float, eigval: Any, eigvec: Any):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = float(alphastd)
        self.eigval, self.eigvec = np.asarray(eigval, np.float32), np.asarray(eigvec, np.float32)

    def apply(self, img: np.ndarray) -> np.ndarray:
        alpha = rng().normal(0, self.alphastd, size=(3,)).astype(np.float32)
        return img.astype(np.float32) + self.eigvec @ (alpha * self.eigval)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace the color by its gray level (kept in 3 channels)."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = float(p)

    def apply(self, img: np.ndarray) -> np.ndarray:
        if rng().random() >= self.p:
            return img
        gray = (img.astype(np.float32) * np.array([0.21, 0.72, 0.07], np.float32)).sum(axis=2, keepdims=True)
        return np.repeat(gray, 3, axis=2)


_EIGVAL = [55.46, 4.794, 1.148]
_EIGVEC = [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]]


def CreateAugmenter(data_shape: Any, resize: int = 0, rand_crop: bool = False, rand_resize: bool = False,
                    rand_mirror: bool = False, mean: Any = None, std: Any = None, brightness: float = 0,
                    contrast: float = 0, saturation: float = 0, hue: float = 0, pca_noise: float = 0,
                    rand_gray: float = 0, inter_method: int = 2) -> list[Augmenter]:
    """MXNet's standard augmenter list for images of ``data_shape`` ``(C, H, W)``: resize the
    shorter edge, crop (random, random-sized or centered) to ``(W, H)``, mirror, cast to float32,
    color jitter, hue, PCA noise, random gray, normalize (``mean=True``/``std=True`` mean ImageNet's
    RGB statistics)."""
    if len(data_shape) != 3:
        raise ParamError(f"CreateAugmenter: data_shape must be (C, H, W), got {data_shape!r}")
    augs: list[Augmenter] = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop = (int(data_shape[2]), int(data_shape[1]))
    if rand_resize:
        if not rand_crop:
            raise ParamError("CreateAugmenter: rand_resize needs rand_crop=True")
        augs.append(RandomSizedCropAug(crop, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        augs.append(RandomCropAug(crop, inter_method))
    else:
        augs.append(CenterCropAug(crop, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, _EIGVAL, _EIGVEC))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = [123.68, 116.28, 103.53]
    if std is True:
        std = [58.395, 57.12, 57.375]
    for arg, value in (("mean", mean), ("std", std)):
        if value is not None and np.asarray(value.asnumpy() if isinstance(value, NDArray) else value).size \
                not in (1, int(data_shape[0])):
            raise ParamError(f"CreateAugmenter: {arg} needs 1 or {data_shape[0]} values, got {value!r}")
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs
