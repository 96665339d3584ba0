"""``mx.contrib``: MXNet 1.9.1's experimental packages, as far as symjit has them.

``mx.contrib.symbol``/``sym`` and ``mx.contrib.ndarray``/``nd`` are the contrib operators of
``mx.sym.contrib`` and ``mx.nd.contrib``; ``mx.contrib.onnx`` is :mod:`symjit.onnx`. The
submodules ``text`` (vocabularies and token embeddings), ``svrg_optimization`` (SVRGModule) and
``io`` are imported at first use. ``amp`` (float16 mixed precision) and ``quantization`` (int8
graphs) exist so that programs importing them run, and raise a clear error when used;
``autograd`` is MXNet's first, experimental autograd interface (``train_section``,
``grad_and_loss``) over :mod:`symjit.autograd`.

>>> import symjit as mx
>>> mx.contrib.sym.box_iou is mx.sym.contrib.box_iou
True
"""
from __future__ import annotations

import importlib
from typing import Any

from .. import onnx
from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol

sym = symbol
nd = ndarray

_LAZY = ("text", "svrg_optimization", "io", "amp", "quantization", "autograd")

__all__ = ["symbol", "sym", "ndarray", "nd", "onnx", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "quant":
        return importlib.import_module(f"{__name__}.quantization")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
