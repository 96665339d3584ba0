"""``mx.image``: decoding, resizing, cropping and augmenting images (HxWxC uint8 NDArrays, RGB
by default), and ``ImageIter`` over RecordIO files or image lists.

Decoding and resizing use OpenCV (the ``image`` extra; MXNet uses it too, so JPEGs decode to the
same pixels), which releases the GIL, so the iterators decode in worker threads. Interpolation
codes are OpenCV's, as MXNet's: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (9 and 10:
bicubic and a random choice).

>>> import numpy as np, symjit as mx
>>> img = mx.nd.array(np.zeros((40, 60, 3)), dtype='uint8')
>>> mx.image.resize_short(img, 20).shape
(20, 30, 3)
>>> mx.image.center_crop(img, (32, 32))[0].shape
(32, 32, 3)
"""
from . import image
from .image import *  # noqa: F403  (the names listed in image.__all__)
from .image import __all__ as _names

__all__ = [*_names, "image"]
