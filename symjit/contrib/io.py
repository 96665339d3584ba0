"""``mx.contrib.io``: MXNet's ``DataLoaderIter``, a ``DataIter`` over a Gluon ``DataLoader``.

Gluon's data loading (``mx.gluon.data``) is not in symjit yet, so creating one raises a clear error.

>>> import symjit as mx
>>> try:
...     mx.contrib.io.DataLoaderIter(None)
... except mx.MXNetError as exc:
...     print(str(exc).split(':')[0])
mx.contrib.io.DataLoaderIter
"""
from __future__ import annotations

from typing import Any

from ..base import MXNetError
from ..io import DataIter

__all__ = ["DataLoaderIter"]


class DataLoaderIter(DataIter):
    """Would iterate a Gluon ``DataLoader``; raises until ``mx.gluon.data`` is there."""

    def __init__(self, loader: Any, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32") -> None:
        raise MXNetError("mx.contrib.io.DataLoaderIter: Gluon's DataLoader (mx.gluon.data) is not "
                         "supported by symjit yet")
