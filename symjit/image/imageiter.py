"""``mx.image.ImageIter``: batches of augmented images from a ``.rec`` file or an image list."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import ParamError
from ..io.image_record import PipelineIter
from ..io.iterators import _check_batch_size, _check_part
from .augment import Augmenter, CreateAugmenter
from .ops import decode_np
from .pipeline import BatchPipeline, ListSource, RecordSource, check_data_shape

__all__ = ["ImageIter", "check_data_shape"]


class ImageIter(PipelineIter):
    """Batches ``(batch, C, H, W)`` of images from ``path_imgrec`` (a RecordIO file, with
    ``path_imgidx`` optional), ``path_imglist`` (an ``.lst`` file: ``index<TAB>label<TAB>path``) or
    ``imglist`` (``[[label, path], ...]``), paths relative to ``path_root``, each decoded and passed
    through ``aug_list`` (default: ``CreateAugmenter(data_shape, **kwargs)``), as MXNet's.

    ``last_batch_handle``: ``'pad'`` (fill from the start; ``batch.pad`` counts the filler) or
    ``'discard'``. ``shuffle`` reorders every epoch (from ``seed``); ``num_parts``/``part_index``
    read a part (by default the worker's under an MPI launcher). ``preprocess_threads`` workers
    decode and augment (1 by default, since user augmenters may not be thread-safe).
    """

    def __init__(self, batch_size: int, data_shape: Any, label_width: int = 1, path_imgrec: str | None = None,
                 path_imglist: str | None = None, path_root: str = "", path_imgidx: str | None = None,
                 shuffle: bool = False, part_index: int | None = None, num_parts: int | None = None,
                 aug_list: list[Augmenter] | None = None, imglist: list | None = None,
                 data_name: str = "data",
                 label_name: str = "softmax_label", dtype: str = "float32", last_batch_handle: str = "pad",
                 preprocess_threads: int = 1, prefetch_buffer: int = 2, seed: int | None = None,
                 **kwargs: Any):
        where = "ImageIter"
        super().__init__(_check_batch_size(batch_size, where))
        self.data_shape = check_data_shape(data_shape, where)
        if sum(x is not None for x in (path_imgrec, path_imglist, imglist)) != 1:
            raise ParamError(f"{where}: give exactly one of path_imgrec, path_imglist and imglist")
        if last_batch_handle not in ("pad", "discard"):
            raise ParamError(f"{where}: last_batch_handle must be 'pad' or 'discard', got "
                             f"{last_batch_handle!r}")
        if path_imgrec is not None:
            source: Any = RecordSource(path_imgrec, path_imgidx, int(label_width), where)
        elif path_imglist is not None:
            source = ListSource.from_file(path_imglist, path_root, int(label_width), where)
        else:
            source = ListSource(list(imglist), path_root, int(label_width), where)
        if aug_list is None:
            aug_list = CreateAugmenter(self.data_shape, **kwargs)
        elif kwargs:
            raise ParamError(f"{where}: unknown arguments {sorted(kwargs)} (augmenter arguments go to "
                             "CreateAugmenter only without aug_list)")
        self.auglist = list(aug_list)
        self.label_width, self.dtype = int(label_width), np.dtype(dtype)
        self.data_name, self.label_name = data_name, label_name
        flag = 0 if self.data_shape[0] == 1 else 1
        augs = self.auglist

        def transform(raw: bytes) -> np.ndarray:
            img = decode_np(raw, flag)
            for aug in augs:
                img = aug(img)
            return img

        from .. import random as _random
        self._pipe = BatchPipeline(source, self.batch_size, self.data_shape, self.label_width, transform,
                                   self.dtype, preprocess_threads, prefetch_buffer, bool(shuffle),
                                   int(_random._rng.integers(0, 2 ** 62)) if seed is None else int(seed),
                                   last_batch_handle, _check_part(num_parts, part_index, where), where)
        self.num_image = int(self._pipe.ids.size)
