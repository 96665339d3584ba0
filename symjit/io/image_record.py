"""``mx.io.ImageRecordIter`` / ``ImageRecordUInt8Iter``: MXNet's RecordIO image iterators.

The pipeline per image (MXNet's default augmenter, in this order): decode (gray for C=1, else
RGB) -> ``resize`` the shorter edge (when > 0) -> crop to ``data_shape`` (random window with
``rand_crop``, else centered; a window larger than the image is shrunk to fit, aspect kept, and
the crop resized to ``data_shape``) -> mirror with probability 0.5 (``rand_mirror``) -> ``(x - mean)
/ std * scale`` per channel -> CHW. Labels come from each record's ``IRHeader`` (the first
``label_width`` of them). ``preprocess_threads`` threads decode while the model trains, and
``prefetch_buffer`` batches wait ready; the random choices are seeded by ``seed``, so a run is
reproducible whatever the thread count. Augmentation arguments symjit does not implement
(rotation, aspect-ratio jitter, HSL, ...) are a clear error, never ignored.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import ParamError
from .iterators import DataBatch, DataDesc, DataIter, _check_batch_size, _check_part

__all__ = ["ImageRecordIter", "ImageRecordUInt8Iter", "PipelineIter"]

_IGNORED = {"path_imglist", "ctx", "verbose", "silent", "shuffle_chunk_size", "shuffle_chunk_seed",
            "data_name_", "mean_a", "std_a"}
_UNSUPPORTED = {"max_rotate_angle", "max_aspect_ratio", "max_shear_ratio", "max_crop_size", "min_crop_size",
                "max_random_scale", "min_random_scale", "max_img_size", "min_img_size", "random_h",
                "random_s", "random_l", "rotate", "fill_value", "pad", "mean_img", "brightness",
                "contrast", "saturation", "pca_noise", "random_resized_crop", "max_random_area",
                "min_random_area", "max_random_aspect_ratio", "min_random_aspect_ratio"}


class PipelineIter(DataIter):
    """The iterators fed by a :class:`symjit.image.pipeline.BatchPipeline` (``self._pipe``):
    ``ImageRecordIter`` and ``mx.image.ImageIter``. Subclasses set ``data_name``, ``label_name``,
    ``data_shape``, ``dtype`` and ``label_width``."""

    @property
    def provide_data(self) -> list[DataDesc]:
        """``[DataDesc(data_name, (batch, C, H, W), dtype)]``."""
        return [DataDesc(self.data_name, (self.batch_size,) + self.data_shape, self.dtype.type)]

    @property
    def provide_label(self) -> list[DataDesc]:
        """``[DataDesc(label_name, (batch,) or (batch, label_width))]``."""
        shape = (self.batch_size,) if self.label_width == 1 else (self.batch_size, self.label_width)
        return [DataDesc(self.label_name, shape, np.float32)]

    def reset(self) -> None:
        """Start a new epoch (reshuffled with ``shuffle``)."""
        self._pipe.start()

    def next(self) -> DataBatch:
        """The next batch (decoded ahead by the worker threads)."""
        item = self._pipe.next()
        if item is None:
            raise StopIteration
        data, label, pad, ids = item
        return DataBatch(data=[data], label=[label], pad=pad, index=ids,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def iter_next(self) -> bool:
        raise NotImplementedError(f"{type(self).__name__}: use next() (batches are produced ahead by worker "
                                  "threads)")

    def close(self) -> None:
        """Stop the worker threads."""
        self._pipe.close()


class ImageRecordIter(PipelineIter):
    """Batches of float32 ``(batch, C, H, W)`` images and their labels from a ``.rec`` file.

    >>> import os, tempfile, numpy as np, symjit as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'tiny.rec')
    >>> w = mx.recordio.MXRecordIO(path, 'w')
    >>> for i in range(3):
    ...     img = np.full((6, 6, 3), 50 * i, np.uint8)
    ...     w.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, i, i, 0), img, img_fmt='.png'))
    >>> w.close()
    >>> it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=2)
    >>> b = next(it)
    >>> b.data[0].shape, b.label[0].asnumpy().tolist()
    ((2, 3, 4, 4), [0.0, 1.0])
    """

    _uint8 = False

    def __init__(self, path_imgrec: str, data_shape: Any, batch_size: int, label_width: int = 1,
                 path_imgidx: str = "", shuffle: bool = False, seed: int = 0, num_parts: int | None = None,
                 part_index: int | None = None, preprocess_threads: int = 4, prefetch_buffer: int = 4,
                 round_batch: bool = True, resize: int = -1, rand_crop: bool = False,
                 rand_mirror: bool = False,
                 mean_r: float = 0.0, mean_g: float = 0.0, mean_b: float = 0.0, std_r: float = 1.0,
                 std_g: float = 1.0, std_b: float = 1.0, scale: float = 1.0, inter_method: int = 1,
                 data_name: str = "data", label_name: str = "softmax_label", dtype: str | None = None,
                 **kwargs: Any):
        where = type(self).__name__
        super().__init__(_check_batch_size(batch_size, where))
        bad = sorted(set(kwargs) & _UNSUPPORTED)
        if bad:
            raise ParamError(f"{where}: augmentation arguments {bad} are not supported by symjit; use "
                             "mx.image.ImageIter with an augmenter list for other augmentations")
        unknown = sorted(set(kwargs) - _IGNORED)
        if unknown:
            raise ParamError(f"{where}: unknown arguments {unknown}")
        from ..image.ops import center_crop_np, decode_np, random_crop_np, resize_np, rng, short_size
        from ..image.pipeline import BatchPipeline, RecordSource, check_data_shape
        self.data_shape = check_data_shape(data_shape, where)
        c, h, w = self.data_shape
        mean = np.array([mean_r, mean_g, mean_b][:c], dtype=np.float32)
        std = np.array([std_r, std_g, std_b][:c], dtype=np.float32)
        if self._uint8 and (mean.any() or (std != 1).any() or scale != 1):
            raise ParamError(f"{where}: gives raw uint8 pixels; mean, std and scale are not applied")
        if (std == 0).any():
            raise ParamError(f"{where}: std_r/std_g/std_b must not be 0, got {std.tolist()}")
        factor = (np.float32(scale) / std)
        out_dtype = np.dtype(np.uint8 if self._uint8 else (dtype or "float32"))
        flag, resize, interp = (0 if c == 1 else 1), int(resize), int(inter_method)
        uint8, crop_rand, mirror = self._uint8, bool(rand_crop), bool(rand_mirror)

        def transform(raw: bytes) -> np.ndarray:
            img = decode_np(raw, flag)
            if resize > 0:
                nw, nh = short_size(img.shape[0], img.shape[1], resize)
                img = resize_np(img, nw, nh, interp)
            img = (random_crop_np if crop_rand else center_crop_np)(img, (w, h), interp)[0]
            if mirror and rng().random() < 0.5:
                img = img[:, ::-1]
            if uint8:
                return img
            return (img.astype(np.float32) - mean) * factor

        self.label_width = int(label_width)
        self.data_name, self.label_name, self.dtype = data_name, label_name, out_dtype
        source = RecordSource(path_imgrec, path_imgidx or None, self.label_width, where)
        self._pipe = BatchPipeline(source, self.batch_size, self.data_shape, self.label_width, transform,
                                   out_dtype, preprocess_threads, prefetch_buffer, bool(shuffle), int(seed),
                                   "pad" if round_batch else "discard",
                                   _check_part(num_parts, part_index, where), where)
        self.num_image = int(self._pipe.ids.size)


class ImageRecordUInt8Iter(ImageRecordIter):
    """:class:`ImageRecordIter` giving raw uint8 pixels (no mean, std or scale)."""

    _uint8 = True
