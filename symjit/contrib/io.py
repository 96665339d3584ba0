"""``mx.contrib.io``: MXNet's ``DataLoaderIter``, a ``DataIter`` over a Gluon ``DataLoader``.

Gluon is not in symjit yet, so creating one raises the error ``mx.gluon`` gives.

>>> import symjit as mx
>>> try:
...     mx.contrib.io.DataLoaderIter(None)
... except mx.MXNetError as exc:
...     print(str(exc).split(':')[0])
mx.gluon is not supported by symjit yet
"""
from __future__ import annotations

from typing import Any

from ..io import DataIter
from ..unsupported import planned

__all__ = ["DataLoaderIter"]


class DataLoaderIter(DataIter):
    """Would iterate a Gluon ``DataLoader``; raises until Gluon is there."""

    def __init__(self, loader: Any, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32") -> None:
        raise planned("gluon")
