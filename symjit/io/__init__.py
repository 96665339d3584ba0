"""``mx.io``: data loading: the MNIST loader (:func:`load_mnist`) and MXNet's data iterators
(``NDArrayIter``, ``MNISTIter``, ``CSVIter``, ``LibSVMIter``, ``ImageRecordIter``,
``ImageDetRecordIter``, ``ResizeIter``, ``PrefetchingIter``, ``DataBatch``, ``DataDesc``). The
image iterators load the image pipeline (and OpenCV) at first use."""
from .iterators import (
    DataBatch,
    DataDesc,
    DataIter,
    MNISTIter,
    NDArrayIter,
    PrefetchingIter,
    ResizeIter,
)
from .mnist import load_mnist, read_idx
from .text import CSVIter, LibSVMIter

__all__ = ["load_mnist", "read_idx", "DataBatch", "DataDesc", "DataIter", "MNISTIter", "NDArrayIter",
           "PrefetchingIter", "ResizeIter", "CSVIter", "LibSVMIter", "ImageRecordIter",
           "ImageRecordUInt8Iter", "ImageDetRecordIter"]


def __getattr__(name: str):
    if name in ("ImageRecordIter", "ImageRecordUInt8Iter"):   # lazy: the image pipeline's imports
        from . import image_record
        return getattr(image_record, name)
    if name == "ImageDetRecordIter":
        from .image_det_record import ImageDetRecordIter
        return ImageDetRecordIter
    raise AttributeError(f"module 'symjit.io' has no attribute {name!r}")
