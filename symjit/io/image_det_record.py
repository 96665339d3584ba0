"""``mx.io.ImageDetRecordIter``: detection images and their boxes from a RecordIO file.

Each record's ``IRHeader`` label is MXNet's detection label: ``[header_width, object_width,
(extra header values), object, object, ...]``, each object ``object_width`` numbers starting
``(class, xmin, ymin, xmax, ymax)`` in image fractions (what ``im2rec`` writes with
``--pack-label``). A batch's label is ``(batch, 4 + label_pad_width)``, as MXNet 1.9.1 gives it:
per image ``(C, H, W)`` of the data shape, the raw label's length, the raw label, then
``label_pad_value``. ``label_pad_width`` <= 0 means the longest raw label of the file (scanned
when the iterator is made). Images are resized to ``data_shape`` whole (boxes are fractions, so
they stay valid), mirrored with probability ``rand_mirror_prob`` (boxes flipped with them), then
``(x - mean) / std * scale`` per channel. The random crop, pad and colour augmenters of MXNet's
detection pipeline are a clear error when enabled, never ignored.

>>> import os, tempfile, numpy as np, symjit as mx
>>> path = os.path.join(tempfile.mkdtemp(), 'det.rec')
>>> w = mx.recordio.MXRecordIO(path, 'w')
>>> for i in range(2):
...     label = [2, 5] + [0, 0.1, 0.2, 0.5, 0.6] * (i + 1)       # i + 1 boxes of class 0
...     img = np.full((8, 12, 3), 40 * i, np.uint8)
...     w.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, label, i, 0), img, img_fmt='.png'))
>>> w.close()
>>> it = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=2)
>>> b = next(it)
>>> b.label[0].shape, b.label[0].asnumpy()[0, :11].astype('float64').round(2).tolist()
((2, 16), [3.0, 4.0, 4.0, 7.0, 2.0, 5.0, 0.0, 0.1, 0.2, 0.5, 0.6])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import FormatError, ParamError
from .image_record import PipelineIter
from .iterators import DataDesc, _check_batch_size, _check_part

__all__ = ["ImageDetRecordIter"]

_IGNORED = {"path_imglist", "ctx", "verbose", "shuffle_chunk_size", "shuffle_chunk_seed", "aug_seq",
            "label_width", "num_crop_sampler", "crop_emit_mode", "emit_overlap_thresh", "max_crop_trials",
            "min_crop_scales", "max_crop_scales", "min_crop_aspect_ratios", "max_crop_aspect_ratios",
            "min_crop_overlaps", "max_crop_overlaps", "min_crop_sample_coverages",
            "max_crop_sample_coverages",
            "min_crop_object_coverages", "max_crop_object_coverages", "max_pad_scale", "fill_value",
            "max_random_hue", "max_random_saturation", "max_random_illumination", "max_random_contrast"}
# augmenters symjit does not implement: an error when their probability is > 0
_UNSUPPORTED_PROBS = ("rand_crop_prob", "rand_pad_prob", "random_hue_prob", "random_saturation_prob",
                      "random_illumination_prob", "random_contrast_prob")


def check_det_label(raw: np.ndarray, where: str) -> tuple[int, int]:
    """(header width, object width) of a raw detection label; FormatError when malformed."""
    if raw.size < 2:
        raise FormatError(f"{where}: a detection label needs [header_width, object_width, ...], "
                          f"got {raw.size} value(s)")
    head, width = int(raw[0]), int(raw[1])
    if head < 2 or width < 5 or (raw.size - head) % width:
        raise FormatError(f"{where}: detection label of {raw.size} values with header_width {head} and "
                          f"object_width {width} (>= 2, >= 5, objects filling the rest) is malformed")
    return head, width


class _DetSource:
    """The records of a ``.rec`` file with their raw detection labels, each as an output row."""

    def __init__(self, path_imgrec: str, path_imgidx: str | None, data_shape: tuple, pad_width: int,
                 pad_value: float, where: str):
        from ..image.pipeline import RecordSource
        self.records = RecordSource(path_imgrec, path_imgidx, 0, where)
        self.where, self.data_shape, self.pad_value = where, data_shape, np.float32(pad_value)
        longest = max(self._raw(i)[0].size for i in range(len(self.records)))
        if pad_width > 0 and pad_width < longest:
            raise ParamError(f"{where}: label_pad_width {pad_width} is shorter than the longest label of "
                             f"{path_imgrec!r} ({longest} values)")
        self.pad_width = pad_width if pad_width > 0 else longest

    def _raw(self, i: int) -> tuple[np.ndarray, bytes]:
        header, payload = self.records.read_record(i)
        raw = np.atleast_1d(np.asarray(header.label, dtype=np.float32)).reshape(-1)
        check_det_label(raw, f"{self.where}: record {i} of {self.records.path!r}")
        return raw, payload

    def __len__(self) -> int:
        return len(self.records)

    def read(self, i: int) -> tuple[np.ndarray, bytes]:
        raw, payload = self._raw(i)
        row = np.full(4 + self.pad_width, self.pad_value, dtype=np.float32)
        row[:3] = self.data_shape
        row[3] = raw.size
        row[4:4 + raw.size] = raw
        return row, payload


def _mirror_boxes(row: np.ndarray) -> None:
    """Flip the boxes of an output label row left-right in place."""
    length = int(row[3])
    raw = row[4:4 + length]
    head, width = int(raw[0]), int(raw[1])
    boxes = raw[head:].reshape(-1, width)
    xmin = boxes[:, 1].copy()
    boxes[:, 1] = 1.0 - boxes[:, 3]
    boxes[:, 3] = 1.0 - xmin


class ImageDetRecordIter(PipelineIter):
    """Batches of float32 ``(batch, C, H, W)`` images and their padded detection labels."""

    def __init__(self, path_imgrec: str, data_shape: Any, batch_size: int, path_imgidx: str = "",
                 label_pad_width: int = 0, label_pad_value: float = -1.0, shuffle: bool = False,
                 seed: int = 0,
                 num_parts: int | None = None, part_index: int | None = None, preprocess_threads: int = 4,
                 prefetch_buffer: int = 4, round_batch: bool = True, resize: int = -1,
                 rand_mirror_prob: float = 0.0, mean_r: float = 0.0, mean_g: float = 0.0, mean_b: float = 0.0,
                 std_r: float = 1.0, std_g: float = 1.0, std_b: float = 1.0, scale: float = 1.0,
                 inter_method: int = 1, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str | None = None, **kwargs: Any):
        where = type(self).__name__
        super().__init__(_check_batch_size(batch_size, where))
        on = sorted(k for k in _UNSUPPORTED_PROBS if float(kwargs.pop(k, 0.0)) > 0)
        if on:
            raise ParamError(f"{where}: the augmenters {on} are not supported by symjit (resize, mirror, "
                             "mean/std are); set their probability to 0")
        unknown = sorted(set(kwargs) - _IGNORED)
        if unknown:
            raise ParamError(f"{where}: unknown arguments {unknown}")
        from ..image.ops import decode_np, resize_np, rng
        from ..image.pipeline import BatchPipeline, check_data_shape
        self.data_shape = check_data_shape(data_shape, where)
        c, h, w = self.data_shape
        mean = np.array([mean_r, mean_g, mean_b][:c], dtype=np.float32)
        std = np.array([std_r, std_g, std_b][:c], dtype=np.float32)
        if (std == 0).any():
            raise ParamError(f"{where}: std_r/std_g/std_b must not be 0, got {std.tolist()}")
        if not 0.0 <= float(rand_mirror_prob) <= 1.0:
            raise ParamError(f"{where}: rand_mirror_prob must be in [0, 1], got {rand_mirror_prob}")
        factor = np.float32(scale) / std
        flag, interp, mirror = (0 if c == 1 else 1), int(inter_method), float(rand_mirror_prob)
        del resize      # the whole image is resized to data_shape whatever the shorter edge

        def transform(raw: bytes, label: np.ndarray) -> np.ndarray:
            img = resize_np(decode_np(raw, flag), w, h, interp)
            if mirror > 0 and rng().random() < mirror:
                img = img[:, ::-1]
                _mirror_boxes(label)
            return (img.astype(np.float32) - mean) * factor

        self.dtype = np.dtype(dtype or "float32")
        self.data_name, self.label_name = data_name, label_name
        source = _DetSource(path_imgrec, path_imgidx or None, self.data_shape, int(label_pad_width),
                            float(label_pad_value), where)
        self.label_width = 4 + source.pad_width
        self._pipe = BatchPipeline(source, self.batch_size, self.data_shape, self.label_width, transform,
                                   self.dtype, preprocess_threads, prefetch_buffer, bool(shuffle), int(seed),
                                   "pad" if round_batch else "discard",
                                   _check_part(num_parts, part_index, where), where, label_transform=True)
        self.num_image = int(self._pipe.ids.size)

    @property
    def provide_label(self) -> list[DataDesc]:
        """``[DataDesc(label_name, (batch, 4 + label_pad_width))]``."""
        return [DataDesc(self.label_name, (self.batch_size, self.label_width), np.float32)]
