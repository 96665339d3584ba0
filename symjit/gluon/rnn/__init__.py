"""``mx.gluon.rnn``: recurrent cells (one step at a time, ``unroll`` over a sequence) and the
fused layers ``RNN``, ``LSTM`` and ``GRU`` (a whole sequence through the ``RNN`` operator), with
MXNet 1.9.1's parameter names.

>>> import symjit as mx
>>> layer = mx.gluon.rnn.GRU(4, layout='NTC')
>>> layer.initialize()
>>> layer(mx.nd.ones((2, 3, 5))).shape
(2, 3, 4)
"""

from . import rnn_cell, rnn_layer
from .rnn_cell import (
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    HybridRecurrentCell,
    HybridSequentialRNNCell,
    LSTMCell,
    ModifierCell,
    RecurrentCell,
    ResidualCell,
    RNNCell,
    SequentialRNNCell,
    ZoneoutCell,
)
from .rnn_layer import GRU, LSTM, RNN

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell", "RNN", "LSTM", "GRU", "rnn_cell", "rnn_layer"]
