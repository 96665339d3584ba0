"""Cells made of cells: stacks (:class:`SequentialRNNCell`, :class:`HybridSequentialRNNCell`),
:class:`BidirectionalCell`, :class:`DropoutCell` and the modifiers (:class:`ModifierCell`,
:class:`ZoneoutCell`, :class:`ResidualCell`).

A modifier wraps a base cell, shares its parameters and steps it; the base cell is then
"modified" and may be stepped through the modifier only. A stack's ``unroll`` unrolls each
layer over the whole sequence in turn. A :class:`BidirectionalCell` can only be unrolled: its
second cell runs over the reversed sequence (each sequence reversed within its own length when
``valid_length`` is given).

A modifier that remembers something from one step to the next (:class:`ZoneoutCell`: the
previous output; ``contrib.rnn.VariationalDropoutCell``: the masks) computes its own part of a
step imperatively also when hybridized; the cell it wraps still runs as its compiled graph.

>>> import symjit as mx
>>> from symjit.gluon import rnn
>>> stack = rnn.SequentialRNNCell()
>>> stack.add(rnn.LSTMCell(4, input_size=3))
>>> stack.add(rnn.ResidualCell(rnn.GRUCell(4, input_size=4)))
>>> stack.initialize()
>>> outs, states = stack.unroll(5, mx.nd.ones((2, 5, 3)), merge_outputs=True)
>>> outs.shape, len(states)
((2, 5, 4), 3)
"""

from __future__ import annotations

from typing import Any

from ... import ndarray, symbol
from ...ndarray import NDArray
from ..block import _indent
from .cell_base import (
    TENSORS,
    HybridRecurrentCell,
    RecurrentCell,
    default_begin_state,
    format_sequence,
    mask_sequence,
    reverse_sequence,
)

__all__ = ["SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell",
           "ResidualCell", "BidirectionalCell"]


class _Stack:
    """What both stacks share: ``add``, the states of every layer, one step, ``unroll``."""

    def __repr__(self) -> str:
        rows = "\n".join(f"({i}): {_indent(repr(m), 2)}" for i, m in self._children.items())
        return f"{type(self).__name__}(\n{rows}\n)"

    def add(self, cell: RecurrentCell) -> None:
        """Append ``cell`` as the next layer."""
        self.register_child(cell)

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return [info for c in self._children.values() for info in c.state_info(batch_size)]

    def begin_state(self, **kwargs: Any) -> list:
        self._check_unmodified()
        return [s for c in self._children.values() for s in c.begin_state(**kwargs)]

    def _layers(self) -> list:
        cells = list(self._children.values())
        if any(isinstance(c, BidirectionalCell) for c in cells):
            raise NotImplementedError(
                f"{type(self).__name__}: a stack holding a BidirectionalCell cannot be stepped; use unroll"
            )
        return cells

    def forward(self, inputs: Any, states: list) -> tuple[Any, list]:
        """One step of every layer in turn."""
        self._counter += 1
        new_states, p = [], 0
        for cell in self._layers():
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p : p + n])
            p += n
            new_states.extend(state)
        return inputs, new_states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: bool | None = None, valid_length: Any = None) -> tuple[Any, list]:
        """Unroll each layer over the sequence in turn (see :meth:`RecurrentCell.unroll`)."""
        self.reset()
        _, _, F, batch = format_sequence(length, inputs, layout, None)
        begin_state = default_begin_state(self, F, begin_state, inputs, batch)
        cells, p, states = list(self._children.values()), 0, []
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, state = cell.unroll(length, inputs, begin_state[p : p + n], layout,
                                        merge_outputs if i == len(cells) - 1 else None, valid_length)
            p += n
            states.extend(state)
        return inputs, states

    def __getitem__(self, i: int) -> RecurrentCell:
        return self._children[str(i)]

    def __len__(self) -> int:
        return len(self._children)


class SequentialRNNCell(_Stack, RecurrentCell):
    """Cells stacked: each layer's output is the next layer's input (a plain Block: its cells run
    one by one, each hybridized or not).

    >>> import symjit as mx
    >>> net = mx.gluon.rnn.SequentialRNNCell()
    >>> net.add(mx.gluon.rnn.RNNCell(3)); net.add(mx.gluon.rnn.RNNCell(2))
    >>> [s['shape'] for s in net.state_info(4)]
    [(4, 3), (4, 2)]
    """

    def __init__(self, prefix: str | None = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)


class HybridSequentialRNNCell(_Stack, HybridRecurrentCell):
    """:class:`SequentialRNNCell` of hybrid cells, which may itself be a child of a HybridBlock
    (``hybridize()`` hybridizes its cells).

    >>> import symjit as mx
    >>> net = mx.gluon.rnn.HybridSequentialRNNCell()
    >>> net.add(mx.gluon.rnn.LSTMCell(3)); len(net)
    1
    """

    def __init__(self, prefix: str | None = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:  # noqa: N803
        raise NotImplementedError(f"{type(self).__name__} steps its cells one by one")


class DropoutCell(HybridRecurrentCell):
    """Dropout of rate ``rate`` (over ``axes`` shared) on each step's input; no states.

    >>> import symjit as mx
    >>> cell = mx.gluon.rnn.DropoutCell(0.5)
    >>> out, states = cell.unroll(2, mx.nd.ones((1, 2, 3)), merge_outputs=True)
    >>> out.asnumpy().tolist(), states
    ([[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]], [])
    """

    def __init__(self, rate: float, axes: tuple = (), prefix: str | None = None, params: Any = None):
        super().__init__(prefix, params)
        if not isinstance(rate, (int, float)):
            raise TypeError(f"DropoutCell: rate must be a number, got {type(rate).__name__}")
        self._rate, self._axes = float(rate), tuple(axes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return []

    def _alias(self) -> str:
        return "dropout"

    def hybrid_forward(self, F: Any, inputs: Any, states: list) -> tuple[Any, list]:  # noqa: N803
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes, name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: bool | None = None, valid_length: Any = None) -> tuple[Any, list]:
        self.reset()
        if isinstance(inputs, TENSORS) and merge_outputs is not False and valid_length is None:
            return self(inputs, list(begin_state or []))  # the whole sequence at once
        return super().unroll(length, inputs, begin_state, layout, merge_outputs, valid_length)


class ModifierCell(HybridRecurrentCell):
    """The base of cells that change another cell's step (``base_cell``), sharing its
    parameters and states."""

    def __init__(self, base_cell: RecurrentCell):
        if base_cell._modified:
            raise AssertionError(
                f"Cell {base_cell.name} is already modified. One cell cannot be modified twice"
            )
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self) -> Any:
        return self.base_cell.params

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func: Any = ndarray.zeros, **kwargs: Any) -> list:
        self._check_unmodified()
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_cell!r})"

    def hybrid_forward(self, F: Any, inputs: Any, states: Any) -> Any:  # noqa: N803
        raise NotImplementedError(f"{type(self).__name__}.hybrid_forward is not defined")


class _StepMemory:
    """For modifiers that keep something from one step to the next: the modifier's own part of
    a step runs imperatively on NDArrays even when hybridized (its base cell stays compiled)."""

    def forward(self, inputs: Any, states: Any) -> Any:
        if isinstance(inputs, NDArray):
            self._counter += 1
            with inputs.context:
                return self.hybrid_forward(ndarray, inputs, states)
        return super().forward(inputs, states)


class ZoneoutCell(_StepMemory, ModifierCell):
    """Zoneout: with probability ``zoneout_outputs`` (``zoneout_states``) an output (state)
    element keeps its previous value during training; at prediction the new values are used.

    >>> import symjit as mx
    >>> cell = mx.gluon.rnn.ZoneoutCell(mx.gluon.rnn.RNNCell(2, input_size=3), 0.5, 0.5)
    >>> cell.initialize()
    >>> cell.unroll(3, mx.nd.ones((1, 3, 3)), merge_outputs=True)[0].shape
    (1, 3, 2)
    """

    def __init__(self, base_cell: RecurrentCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0):
        if isinstance(base_cell, BidirectionalCell):
            raise AssertionError(
                "BidirectionalCell doesn't support zoneout since it doesn't support "
                "step. Please add ZoneoutCell to the cells underneath instead."
            )
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = float(zoneout_outputs), float(zoneout_states)
        self._prev_output = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
            f"{self.base_cell!r})"
        )

    def _alias(self) -> str:
        return "zoneout"

    def reset(self) -> None:
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F: Any, inputs: Any, states: list) -> tuple[Any, list]:  # noqa: N803
        out, new_states = self.base_cell(inputs, states)

        def keep_new(p: float, like: Any) -> Any:  # nonzero where the new value is kept
            return F.Dropout(F.ones_like(like), p=p)

        prev = self._prev_output if self._prev_output is not None else F.zeros_like(out)
        if self.zoneout_outputs:
            out = F.where(keep_new(self.zoneout_outputs, out), out, prev)
        if self.zoneout_states:
            new_states = [
                F.where(keep_new(self.zoneout_states, new), new, old) for new, old in zip(new_states, states)
            ]
        self._prev_output = out
        return out, new_states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (their sizes must agree).

    >>> import symjit as mx
    >>> cell = mx.gluon.rnn.ResidualCell(mx.gluon.rnn.GRUCell(3, input_size=3))
    >>> cell.initialize(mx.init.Zero())
    >>> out, _ = cell(mx.nd.ones((1, 3)), [mx.nd.zeros((1, 3))])
    >>> out.asnumpy().tolist()
    [[1.0, 1.0, 1.0]]
    """

    def _alias(self) -> str:
        return "residual"

    def hybrid_forward(self, F: Any, inputs: Any, states: list) -> tuple[Any, list]:  # noqa: N803
        out, states = self.base_cell(inputs, states)
        return F.elemwise_add(out, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: bool | None = None, valid_length: Any = None) -> tuple[Any, list]:
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length, inputs, begin_state, layout, merge_outputs, valid_length
            )
        finally:
            self.base_cell._modified = True
        merge = isinstance(outputs, TENSORS) if merge_outputs is None else merge_outputs
        inputs, axis, F, _ = format_sequence(length, inputs, layout, merge)
        if valid_length is not None:
            inputs = mask_sequence(F, inputs, length, valid_length, axis, merge)
        if merge:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """Two cells over one sequence, ``l_cell`` forward and ``r_cell`` backward in time, their
    outputs joined on the feature axis (named ``<output_prefix>t<i>``, or
    ``<output_prefix>out`` merged). It can only be unrolled.

    >>> import symjit as mx
    >>> bi = mx.gluon.rnn.BidirectionalCell(mx.gluon.rnn.GRUCell(2), mx.gluon.rnn.GRUCell(3))
    >>> bi.initialize()
    >>> bi.unroll(4, mx.nd.ones((1, 4, 5)), merge_outputs=True)[0].shape
    (1, 4, 5)
    """

    def __init__(
        self, l_cell: RecurrentCell, r_cell: RecurrentCell, params: Any = None, output_prefix: str = "bi_"
    ):
        super().__init__(prefix="", params=params)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __repr__(self) -> str:
        l_cell, r_cell = self._children.values()
        return f"{type(self).__name__}(forward={l_cell!r}, backward={r_cell!r})"

    def __call__(self, inputs: Any, states: Any) -> Any:
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return [info for c in self._children.values() for info in c.state_info(batch_size)]

    def begin_state(self, **kwargs: Any) -> list:
        self._check_unmodified()
        return [s for c in self._children.values() for s in c.begin_state(**kwargs)]

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: bool | None = None, valid_length: Any = None) -> tuple[Any, list]:
        self.reset()
        inputs, axis, F, batch = format_sequence(length, inputs, layout, False)
        reversed_inputs = reverse_sequence(inputs, length, valid_length)
        states = default_begin_state(self, F, begin_state, inputs, batch)
        l_cell, r_cell = self._children.values()
        n = len(l_cell.state_info(batch))
        l_out, l_states = l_cell.unroll(length, inputs, states[:n], layout, merge_outputs, valid_length)
        r_out, r_states = r_cell.unroll(length, reversed_inputs, states[n:], layout, False, valid_length)
        r_out = reverse_sequence(r_out, length, valid_length)
        merge = isinstance(l_out, TENSORS) if merge_outputs is None else merge_outputs
        l_out = format_sequence(None, l_out, layout, merge)[0]
        r_out = format_sequence(None, r_out, layout, merge)[0]

        def name(what: str) -> dict:  # symbols only: mx.nd.concat takes no name
            return {"name": self._output_prefix + what} if F is symbol else {}

        if merge:
            outputs = F.concat(l_out, r_out, dim=2, **name("out"))
        else:
            outputs = [F.concat(a, b, dim=1, **name(f"t{i}")) for i, (a, b) in enumerate(zip(l_out, r_out))]
        return outputs, l_states + r_states
