"""``mx.gluon.contrib.rnn``: convolutional recurrent cells (``Conv1D/2D/3D`` ``RNN``/``LSTM``/``GRU``
cells), ``VariationalDropoutCell``, ``LSTMPCell`` and ``rnn_cell.dynamic_unroll``.

>>> import symjit as mx
>>> from symjit.gluon.contrib import rnn
>>> cell = rnn.Conv1DGRUCell((2, 6), 3, i2h_kernel=3, h2h_kernel=3)
>>> cell.initialize()
>>> cell.unroll(4, mx.nd.ones((1, 4, 2, 6)), merge_outputs=True)[0].shape
(1, 4, 3, 4)
"""

from . import conv_rnn_cell, rnn_cell
from .conv_rnn_cell import (
    Conv1DGRUCell,
    Conv1DLSTMCell,
    Conv1DRNNCell,
    Conv2DGRUCell,
    Conv2DLSTMCell,
    Conv2DRNNCell,
    Conv3DGRUCell,
    Conv3DLSTMCell,
    Conv3DRNNCell,
)
from .rnn_cell import LSTMPCell, VariationalDropoutCell, dynamic_unroll

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell", "Conv1DLSTMCell", "Conv2DLSTMCell",
           "Conv3DLSTMCell", "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell", "VariationalDropoutCell",
           "LSTMPCell", "dynamic_unroll", "conv_rnn_cell", "rnn_cell"]
