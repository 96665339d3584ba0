"""``mx.gluon.nn``: Gluon's neural-network layers, each a HybridBlock over registered operators
(the containers ``Sequential``/``HybridSequential`` and ``Lambda`` aside).

>>> import symjit as mx
>>> net = mx.gluon.nn.HybridSequential()
>>> net.add(mx.gluon.nn.Dense(2, activation='relu'), mx.gluon.nn.Dense(1))
>>> net.initialize(); net(mx.nd.ones((3, 4))).shape
(3, 1)
"""
from ..block import Block, HybridBlock
from ..symbol_block import SymbolBlock
from .activations import *  # noqa: F403
from .activations import __all__ as _act
from .basic_layers import *  # noqa: F403
from .basic_layers import __all__ as _basic
from .conv_layers import *  # noqa: F403
from .conv_layers import __all__ as _conv

__all__ = ["Block", "HybridBlock", "SymbolBlock", *_act, *_basic, *_conv]
