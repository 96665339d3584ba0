"""``mx.rnn.FusedRNNCell``: a whole stack of recurrent layers as one ``RNN`` operator with one
packed ``<prefix>parameters`` vector (MXNet's layout, :mod:`symjit.ops.rnn`), and the
``mx.init.FusedRNN`` initializer that fills that vector gate by gate.

``unpack_weights`` splits the vector into MXNet's per-gate names
(``<prefix><l|r><layer>_<i2h|h2h><gate>_<weight|bias>``, gates ``_i _f _c _o`` for LSTM,
``_r _z _o`` for GRU, none for vanilla RNNs) and ``pack_weights`` joins them back, so a fused
model's parameters convert to the cells of :meth:`FusedRNNCell.unfuse` (one cell per layer and
direction, named ``<prefix>l0_``, ``<prefix>r0_``, ...) with
``unfused.pack_weights(fused.unpack_weights(args))``, as in MXNet.

>>> import symjit as mx
>>> cell = mx.rnn.FusedRNNCell(4, num_layers=2, mode='lstm', prefix='lstm_')
>>> out, _ = cell.unroll(3, mx.sym.Variable('data'), layout='NTC', merge_outputs=True)
>>> out.list_arguments()
['data', 'lstm_parameters']
>>> out.infer_shape(data=(2, 3, 5))[1]
[(2, 3, 4)]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import ndarray as nd
from .. import symbol
from ..base import MXNetError, ParamError
from ..initializer import FusedRNN
from ..ops.rnn import GATE_SUFFIXES, GATES, gate_pieces, split_gates
from .rnn_cell import (
    BaseRNNCell,
    BidirectionalCell,
    DropoutCell,
    GRUCell,
    LSTMCell,
    RNNCell,
    RNNParams,
    SequentialRNNCell,
    ZeroState,
    _normalize_sequence,
)

__all__ = ["FusedRNNCell"]

class _StackZeroState(ZeroState):
    """Zeros shaped ``(layers * directions, batch, num_hidden)``, the batch from (T, N, C) data."""

    def __init__(self, name: str, num_states: int, num_hidden: int):
        super().__init__(name, num_hidden)
        self.num_states = int(num_states)

    def like(self, inputs: Any) -> Any:
        col = symbol.sum(symbol.zeros_like(inputs), axis=(0, 2), keepdims=True)
        return symbol.broadcast_axis(col, axis=(0, 2), size=(self.num_states, self.num_hidden),
                                     name=self.name)


class FusedRNNCell(BaseRNNCell):
    """Several recurrent layers (``mode`` ``'rnn_relu'``, ``'rnn_tanh'``, ``'lstm'`` or ``'gru'``),
    optionally bidirectional, with ``dropout`` between layers, computed by one ``RNN`` operator.
    ``get_next_state`` returns the final states from :meth:`unroll`; ``forget_bias`` goes to the
    LSTM forget gate's biases through :class:`symjit.initializer.FusedRNN`. The cell cannot be
    stepped, only unrolled."""

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = "lstm", bidirectional: bool = False,
                 dropout: float = 0.0, get_next_state: bool = False, forget_bias: float = 1.0,
                 prefix: str | None = None, params: RNNParams | None = None):
        if mode not in GATES:
            raise ParamError(f"FusedRNNCell: mode must be one of {sorted(GATES)}, got {mode!r}")
        if int(num_hidden) <= 0 or int(num_layers) <= 0:
            raise ParamError(f"FusedRNNCell: num_hidden ({num_hidden}) and num_layers ({num_layers}) "
                             "must be > 0")
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden, self._num_layers = int(num_hidden), int(num_layers)
        self._mode, self._bidirectional = mode, bool(bidirectional)
        self._dropout, self._get_next_state = float(dropout), bool(get_next_state)
        self._directions = ("l", "r") if self._bidirectional else ("l",)
        self._forget_bias = float(forget_bias)
        self._parameter = self.params.get("parameters", init=FusedRNN(
            None, self._num_hidden, self._num_layers, mode, self._bidirectional, self._forget_bias))

    @property
    def state_info(self) -> list[dict]:
        n = len(self._directions) * self._num_layers
        info = {"shape": (n, 0, self._num_hidden), "__layout__": "LNC"}
        return [dict(info), dict(info)] if self._mode == "lstm" else [dict(info)]

    @property
    def _gate_names(self) -> tuple:
        return GATE_SUFFIXES[self._mode]

    def begin_state(self, func: Any = None, **kwargs: Any) -> list:
        """Zeros sized by the data at :meth:`unroll` (default), or ``func(name=..., shape=(layers *
        directions, 0, num_hidden), __layout__='LNC', **kwargs)`` per state."""
        if func is not None:
            return super().begin_state(func, **kwargs)
        states = []
        for info in self.state_info:
            self._init_counter += 1
            states.append(_StackZeroState(f"{self._prefix}begin_state_{self._init_counter}",
                                          info["shape"][0], info["shape"][2]))
        return states

    # --- the packed vector ------------------------------------------------------------------
    def unpack_weights(self, args: dict) -> dict:
        """Replace ``<prefix>parameters`` by its per-gate weights and biases."""
        args = dict(args)
        name = f"{self._prefix}parameters"
        if name not in args:
            raise MXNetError(f"FusedRNNCell.unpack_weights: '{name}' is not among the arguments")
        arr = args.pop(name)
        host = arr.asnumpy()
        pieces = split_gates(host, self._mode, self._num_hidden, self._num_layers, self._bidirectional,
                             self._prefix, who=f"FusedRNNCell {self._prefix!r}")
        for key, value in pieces.items():
            args[key] = nd.array(value, ctx=arr.context, dtype=host.dtype)
        return args

    def pack_weights(self, args: dict) -> dict:
        """Join the per-gate weights and biases back into ``<prefix>parameters``."""
        args = dict(args)
        first = f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"
        if first not in args:
            raise MXNetError(f"FusedRNNCell.pack_weights: '{first}' is not among the arguments")
        ref = args[first]
        pieces = gate_pieces(self._mode, self._num_hidden, self._num_layers, self._bidirectional,
                             ref.shape[1], self._prefix)
        missing = [k for k, _ in pieces if k not in args]
        if missing:
            raise MXNetError(f"FusedRNNCell.pack_weights: missing {missing[:4]}")
        flat = []
        for key, shape in pieces:
            value = args.pop(key).asnumpy()
            if value.shape != shape:
                raise MXNetError(f"FusedRNNCell.pack_weights: '{key}' has shape {value.shape}, "
                                 f"expected {shape}")
            flat.append(value.reshape(-1))
        packed = np.concatenate(flat)
        args[f"{self._prefix}parameters"] = nd.array(packed, ctx=ref.context, dtype=packed.dtype)
        return args

    # --- graph ------------------------------------------------------------------------------
    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        raise MXNetError("FusedRNNCell cannot be stepped; use unroll")

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None, layout: str = "NTC",
               merge_outputs: bool | None = None) -> tuple[Any, list]:
        """One ``RNN`` operator over the whole sequence; outputs merged unless ``merge_outputs``
        is False, states returned only with ``get_next_state``."""
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        states = self.begin_state() if begin_state is None else list(begin_state)
        states = [s.like(inputs) if isinstance(s, ZeroState) else s for s in states]
        extra = {"state_cell": states[1]} if self._mode == "lstm" else {}
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state=states[0], **extra,
                         state_size=self._num_hidden, num_layers=self._num_layers,
                         bidirectional=self._bidirectional, p=self._dropout,
                         state_outputs=self._get_next_state, mode=self._mode, name=f"{self._prefix}rnn")
        if self._get_next_state:
            outputs, states = rnn[0], [rnn[i] for i in range(1, 3 if self._mode == "lstm" else 2)]
        else:
            outputs, states = rnn, []
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self) -> SequentialRNNCell:
        """The same network as separate cells (per layer: the cell, or a ``BidirectionalCell`` of two,
        then a ``DropoutCell`` between layers), named so that :meth:`unpack_weights` fits them."""
        h, p = self._num_hidden, self._prefix

        def cell(prefix: str) -> BaseRNNCell:
            if self._mode == "lstm":
                return LSTMCell(h, prefix=prefix, forget_bias=self._forget_bias)
            if self._mode == "gru":
                return GRUCell(h, prefix=prefix)
            return RNNCell(h, activation=self._mode[4:], prefix=prefix)

        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(cell(f"{p}l{i}_"), cell(f"{p}r{i}_"),
                                            output_prefix=f"{p}bi_l{i}_"))
            else:
                stack.add(cell(f"{p}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{p}_dropout{i}_"))
        return stack
