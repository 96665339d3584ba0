"""``mx.gluon.rnn.rnn_cell``: every recurrent cell, where MXNet 1.9.1 keeps them (the classes
live in :mod:`.cell_base` and :mod:`.cell_wrappers`).

>>> import symjit as mx
>>> from symjit.gluon.rnn import rnn_cell
>>> rnn_cell.LSTMCell(3).state_info(2)[1]['shape']
(2, 3)
"""

from .cell_base import GRUCell, HybridRecurrentCell, LSTMCell, RecurrentCell, RNNCell
from .cell_wrappers import (
    BidirectionalCell,
    DropoutCell,
    HybridSequentialRNNCell,
    ModifierCell,
    ResidualCell,
    SequentialRNNCell,
    ZoneoutCell,
)

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell"]
