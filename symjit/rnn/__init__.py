"""``mx.rnn``: MXNet's symbolic RNN cells, sentence bucketing and RNN checkpoints.

>>> import symjit as mx
>>> stack = mx.rnn.SequentialRNNCell()
>>> for i in range(2):
...     stack.add(mx.rnn.LSTMCell(num_hidden=4, prefix=f'lstm_l{i}_'))
>>> len(stack.state_info)
4
"""
from .conv_cell import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .fused import FusedRNNCell
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, save_rnn_checkpoint
from .rnn_cell import (
    BaseRNNCell,
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    LSTMCell,
    ModifierCell,
    ResidualCell,
    RNNCell,
    RNNParams,
    SequentialRNNCell,
    ZeroState,
    ZoneoutCell,
)

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "BidirectionalCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell", "ZeroState",
           "FusedRNNCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell",
           "BucketSentenceIter", "encode_sentences", "save_rnn_checkpoint", "load_rnn_checkpoint",
           "do_rnn_checkpoint"]
