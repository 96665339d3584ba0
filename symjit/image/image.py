"""``mx.image.image``: the image functions and augmenters under MXNet's module path
(``mx.img.image.imread``); ``mx.image`` re-exports them all.

>>> import symjit as mx
>>> mx.img.image.imread is mx.image.imread
True
"""
from .augment import (
    Augmenter,
    BrightnessJitterAug,
    CastAug,
    CenterCropAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ContrastJitterAug,
    CreateAugmenter,
    ForceResizeAug,
    HorizontalFlipAug,
    HueJitterAug,
    LightingAug,
    RandomCropAug,
    RandomGrayAug,
    RandomOrderAug,
    RandomSizedCropAug,
    ResizeAug,
    SaturationJitterAug,
    SequentialAug,
)
from .imageiter import ImageIter
from .ops import (
    center_crop,
    color_normalize,
    fixed_crop,
    imdecode,
    imread,
    imresize,
    random_crop,
    random_size_crop,
    resize_short,
    scale_down,
)
from .rotate import imrotate, random_rotate

__all__ = [
    "imread", "imdecode", "imresize", "resize_short", "fixed_crop", "center_crop", "random_crop",
    "random_size_crop", "color_normalize", "scale_down", "imrotate", "random_rotate", "Augmenter",
    "SequentialAug", "RandomOrderAug", "ResizeAug", "ForceResizeAug", "RandomCropAug", "RandomSizedCropAug",
    "CenterCropAug", "HorizontalFlipAug", "CastAug", "ColorNormalizeAug", "BrightnessJitterAug",
    "ContrastJitterAug", "SaturationJitterAug", "HueJitterAug", "LightingAug", "ColorJitterAug",
    "RandomGrayAug", "CreateAugmenter", "ImageIter",
]
