"""``mx.io``: data loading: the MNIST loader (:func:`load_mnist`) and MXNet's data iterators
(``NDArrayIter``, ``MNISTIter``, ``CSVIter``, ``LibSVMIter``, ``ImageRecordIter``, ``ResizeIter``,
``PrefetchingIter``, ``DataBatch``, ``DataDesc``)."""
from .image_record import ImageRecordIter, ImageRecordUInt8Iter
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
           "ImageRecordUInt8Iter"]
