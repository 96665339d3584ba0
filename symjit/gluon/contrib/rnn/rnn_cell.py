"""Contributed recurrent cells: :class:`VariationalDropoutCell` (one dropout mask for every step),
:class:`LSTMPCell` (an LSTM with a projected recurrent state) and :func:`dynamic_unroll` (a cell
over a sequence through ``contrib.foreach``).

>>> import symjit as mx
>>> from symjit.gluon.contrib.rnn import LSTMPCell
>>> cell = LSTMPCell(6, 2, input_size=3)
>>> cell.initialize()
>>> out, (r, c) = cell(mx.nd.ones((4, 3)), cell.begin_state(batch_size=4))
>>> out.shape, c.shape
((4, 2), (4, 6))
"""

from __future__ import annotations

from typing import Any

from ...rnn.cell_base import (
    TENSORS,
    HybridRecurrentCell,
    RecurrentCell,
    _mapping,
    default_begin_state,
    format_sequence,
    lstm_update,
    mask_sequence,
)
from ...rnn.cell_wrappers import BidirectionalCell, ModifierCell, _StepMemory

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]


class VariationalDropoutCell(_StepMemory, ModifierCell):
    """Dropout on the base cell's inputs, first state (h) and outputs with one mask per sequence,
    drawn at the first step after :meth:`reset` (``unroll`` resets; reset yourself between
    sequences when stepping by hand). Without state dropout, ``unroll`` drops whole sequences at
    once (the mask shared over the time axis).

    >>> import symjit as mx
    >>> cell = VariationalDropoutCell(mx.gluon.rnn.RNNCell(3, input_size=2), drop_outputs=0.5)
    >>> cell.initialize()
    >>> cell.unroll(4, mx.nd.ones((1, 4, 2)), merge_outputs=True)[0].shape
    (1, 4, 3)
    """

    def __init__(self, base_cell: RecurrentCell, drop_inputs: float = 0.0, drop_states: float = 0.0,
                 drop_outputs: float = 0.0):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise AssertionError(
                "BidirectionalCell doesn't support variational state dropout. Please add "
                "VariationalDropoutCell to the cells underneath instead."
            )
        super().__init__(base_cell)
        self.drop_inputs, self.drop_states, self.drop_outputs = drop_inputs, drop_states, drop_outputs
        self.reset()

    def _alias(self) -> str:
        return "vardrop"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p_out = {self.drop_outputs}, p_state = {self.drop_states})"

    def reset(self) -> None:
        super().reset()
        self.drop_inputs_mask = self.drop_states_mask = self.drop_outputs_mask = None

    def hybrid_forward(self, F: Any, inputs: Any, states: list) -> tuple[Any, list]:  # noqa: N803
        if self.drop_states:
            if self.drop_states_mask is None:
                self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
            states = [states[0] * self.drop_states_mask, *states[1:]]
        if self.drop_inputs:
            if self.drop_inputs_mask is None:
                self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)
            inputs = inputs * self.drop_inputs_mask
        out, new_states = self.base_cell(inputs, states)
        if self.drop_outputs:
            if self.drop_outputs_mask is None:
                self.drop_outputs_mask = F.Dropout(F.ones_like(out), p=self.drop_outputs)
            out = out * self.drop_outputs_mask
        return out, new_states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: bool | None = None, valid_length: Any = None) -> tuple[Any, list]:
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs, valid_length)
        self.reset()
        inputs, axis, F, batch = format_sequence(length, inputs, layout, True)
        states = default_begin_state(self, F, begin_state, inputs, batch)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(
            length, inputs, states, layout, merge_outputs=True, valid_length=valid_length
        )
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        merge = isinstance(outputs, TENSORS) if merge_outputs is None else merge_outputs
        outputs = format_sequence(length, outputs, layout, merge)[0]
        if valid_length is not None:
            outputs = mask_sequence(F, outputs, length, valid_length, axis, merge)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM cell whose recurrent state is projected: the gates read ``r = W_hr h`` (size
    ``projection_size``), which is also the output. States (r, c): (N, projection_size) and
    (N, hidden_size). Parameters ``i2h_weight`` (4H, in), ``h2h_weight`` (4H, P), ``h2r_weight``
    (P, H), ``i2h_bias``, ``h2h_bias``: the pieces of the ``RNN`` operator's LSTM projection, so
    a ``gluon.rnn.LSTM(projection_size=...)`` layer can share them.

    >>> import symjit as mx
    >>> LSTMPCell(8, 3).state_info(2)
    [{'shape': (2, 3), '__layout__': 'NC'}, {'shape': (2, 8), '__layout__': 'NC'}]
    """

    def __init__(self, hidden_size: int, projection_size: int, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, h2r_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 input_size: int = 0, prefix: str | None = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._projection_size = int(hidden_size), int(projection_size)
        self._input_size = int(input_size)
        rows, get = 4 * self._hidden_size, self.params.get
        self.i2h_weight = get(
            "i2h_weight", shape=(rows, input_size), init=i2h_weight_initializer, allow_deferred_init=True
        )
        self.h2h_weight = get(
            "h2h_weight", shape=(rows, projection_size), init=h2h_weight_initializer, allow_deferred_init=True
        )
        self.h2r_weight = get("h2r_weight", shape=(projection_size, hidden_size), init=h2r_weight_initializer,
                              allow_deferred_init=True)
        self.i2h_bias = get("i2h_bias", shape=(rows,), init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(rows,), init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self) -> str:
        return "lstmp"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_mapping(self.i2h_weight)} -> {self.h2r_weight.shape[0]})"

    def hybrid_forward(self, F: Any, inputs: Any, states: list, i2h_weight: Any,  # noqa: N803
                       h2h_weight: Any, h2r_weight: Any, i2h_bias: Any, h2h_bias: Any) -> tuple[Any, list]:
        t, rows = f"t{self._counter}_", 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows, name=t + "i2h")
        h2h = F.FullyConnected(
            data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=rows, name=t + "h2h"
        )
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=t + "slice")
        hidden, c = lstm_update(self, F, gates, states[1], t, out="hidden")
        r = F.FullyConnected(
            data=hidden, weight=h2r_weight, num_hidden=self._projection_size, no_bias=True, name=t + "out"
        )
        return r, [r, c]


def dynamic_unroll(cell: RecurrentCell, inputs: Any, begin_state: list, drop_inputs: float = 0,
                   drop_outputs: float = 0, layout: str = "TNC",
                   valid_length: Any = None) -> tuple[Any, list]:
    """Run ``cell`` over the sequence ``inputs`` (a tensor in ``layout``) from ``begin_state``
    with ``contrib.foreach``; returns (outputs in ``layout``, final states). With
    ``valid_length`` (N,), the states stop at each sequence's last valid step and later outputs
    are 0. ``drop_inputs``/``drop_outputs``: dropout shared over the time axis.

    >>> import symjit as mx
    >>> cell = mx.gluon.rnn.RNNCell(2, input_size=3)
    >>> cell.initialize()
    >>> out, states = dynamic_unroll(cell, mx.nd.ones((4, 1, 3)), cell.begin_state(batch_size=1))
    >>> out.shape, states[0].shape
    ((4, 1, 2), (1, 2))
    """
    inputs, axis, F, _ = format_sequence(0, inputs, layout, True)
    axes = list(range(len(layout)))
    axes[0], axes[axis] = axes[axis], axes[0]
    if axis != 0:
        inputs = F.transpose(inputs, axes=axes)
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(0,))  # time first here
    states = list(begin_state)
    if valid_length is None:

        def body(x: Any, states: list) -> tuple[Any, list]:
            return cell(x, states)
    else:
        states.append(F.zeros((1,)))  # the step number

        def body(x: Any, states: list) -> tuple[Any, list]:
            *old, step = states
            out, new = cell(x, old)
            going = F.broadcast_greater(valid_length, step)
            new = [F.where(going, n, o) for n, o in zip(new, old)]
            return out, [*new, step + 1]

    outputs, states = F.contrib.foreach(body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(0,))
    if axis != 0:
        outputs = F.transpose(outputs, axes=axes)
    if valid_length is None:
        return outputs, states
    outputs = F.SequenceMask(outputs, sequence_length=valid_length, use_sequence_length=True, axis=axis)
    return outputs, states[:-1]
