"""``mx.gluon``: MXNet's imperative/hybrid model API (Parameter, Block, HybridBlock,
SymbolBlock, ``nn`` layers), its hybridized blocks compiled by symjit's compiler.

>>> import symjit as mx
>>> from symjit.gluon import nn
>>> net = nn.Dense(2, in_units=3)
>>> net.initialize(mx.init.One())
>>> net(mx.nd.ones((1, 3))).asnumpy().tolist()
[[3.0, 3.0]]
"""
import importlib
from typing import Any

from . import block, data, loss, nn, parameter, rnn, utils  # data and utils: datasets and helpers
from .block import Block, HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict
from .symbol_block import SymbolBlock
from .trainer import Trainer

__all__ = ["Block", "HybridBlock", "SymbolBlock", "Parameter", "Constant", "ParameterDict",
           "DeferredInitializationError", "Trainer", "block", "loss", "nn", "parameter", "data", "rnn",
           "utils"]

_LAZY = ("model_zoo", "contrib")    # imported at first use (gluon.model_zoo.vision, gluon.contrib.nn)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
