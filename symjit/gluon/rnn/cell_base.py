"""Gluon's recurrent cells: the base classes (:class:`RecurrentCell`, :class:`HybridRecurrentCell`)
with ``begin_state``/``unroll``, and the Elman, LSTM and GRU cells.

A cell computes one time step, ``output, new_states = cell(x_t, states)``; ``unroll`` calls it
over a sequence (a (N, T, C)/(T, N, C) array or symbol, or a list of (N, C) steps). Parameters
are named ``<prefix>i2h_weight``, ``<prefix>h2h_weight``, ``<prefix>i2h_bias`` and
``<prefix>h2h_bias`` (gates stacked in the rows: LSTM ``i, f, c, o``, GRU ``r, z, n``), as MXNet
1.9.1 names them, so a fused layer's parameters can be shared with a stack of cells
(``gluon.rnn.LSTM._unfuse``). Step ``t``'s symbols are named ``<prefix>t<t>_<what>``
(``rnn_t0_out``).

>>> import symjit as mx
>>> cell = mx.gluon.rnn.GRUCell(4, input_size=3)
>>> cell.initialize(mx.init.One())
>>> outs, states = cell.unroll(2, mx.nd.ones((5, 2, 3)), merge_outputs=True)
>>> outs.shape, states[0].shape
((5, 2, 4), (5, 4))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import ndarray, symbol
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import Block, HybridBlock
from ..nn import LeakyReLU

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell"]

TENSORS = (NDArray, Symbol)


def as_list(x: Any) -> list:
    """``x`` as a list: a single array or symbol output becomes a list of one."""
    if isinstance(x, (list, tuple)):
        return list(x)
    if isinstance(x, Symbol):
        return list(x)
    return [x]


def format_sequence(
    length: int | None, inputs: Any, layout: str, merge: bool | None, in_layout: str | None = None
) -> tuple[Any, int, Any, int]:
    """A sequence in the form a caller asked for: ``merge`` False a list of steps, True one
    tensor in ``layout``, None as given. Returns (sequence, time axis, F, batch size), the
    batch size 0 for symbols (left to shape inference)."""
    if inputs is None:
        raise ValueError("unroll: inputs must be given (a tensor or a list of steps), not None")
    axis, batch_axis = layout.find("T"), layout.find("N")
    if axis < 0 or batch_axis < 0:
        raise ValueError(f"unroll: layout must name a time (T) and a batch (N) axis, got {layout!r}")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    batch = 0
    if isinstance(inputs, Symbol):
        F = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ValueError(
                    "unroll: a grouped symbol is not a sequence; pass list(inputs) or "
                    "a single symbol for unroll to split"
                )
            inputs = as_list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    elif isinstance(inputs, NDArray):
        F = ndarray
        batch = inputs.shape[batch_axis]
        if merge is False:
            if length is not None and length != inputs.shape[in_axis]:
                raise ValueError(
                    f"unroll: length={length} but the inputs have {inputs.shape[in_axis]} "
                    f"steps on axis {in_axis} (shape {inputs.shape}, layout {layout})"
                )
            inputs = as_list(
                ndarray.split(inputs, axis=in_axis, num_outputs=inputs.shape[in_axis], squeeze_axis=1)
            )
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ValueError(f"unroll: length={length} but {len(inputs)} input steps were given")
        F = symbol if isinstance(inputs[0], Symbol) else ndarray
        if F is ndarray:
            batch = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, TENSORS) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch


def default_begin_state(cell: Any, F: Any, begin_state: Any, inputs: Any, batch_size: int) -> list:
    """``begin_state`` or, when None, the cell's zero states (on the inputs' context)."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        ctx = inputs.context if isinstance(inputs, NDArray) else inputs[0].context
        with ctx:
            return cell.begin_state(func=ndarray.zeros, batch_size=batch_size)
    return cell.begin_state(func=symbol.zeros, batch_size=batch_size)


def mask_sequence(F: Any, data: Any, length: int, valid_length: Any, time_axis: int, merge: bool) -> Any:
    """Steps at or past each sequence's valid length set to 0."""
    if not isinstance(data, TENSORS):
        data = F.stack(*data, axis=time_axis)
    out = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True, axis=time_axis)
    if not merge:
        out = as_list(F.split(out, num_outputs=length, axis=time_axis, squeeze_axis=True))
    return out


def reverse_sequence(steps: list, length: int, valid_length: Any = None) -> list:
    """A list of steps in reverse order; with ``valid_length``, each sequence reversed within its
    own length (the padding stays at the end)."""
    if valid_length is None:
        return list(reversed(steps))
    F = symbol if isinstance(steps[0], Symbol) else ndarray
    rev = F.SequenceReverse(F.stack(*steps, axis=0), sequence_length=valid_length, use_sequence_length=True)
    return as_list(F.split(rev, axis=0, num_outputs=length, squeeze_axis=True))


def last_states(F: Any, all_states: list, valid_length: Any) -> list:
    """Each state at its sequence's last valid step, from the per-step states."""
    return [
        F.SequenceLast(
            F.stack(*per_step, axis=0), sequence_length=valid_length, use_sequence_length=True, axis=0
        )
        for per_step in zip(*all_states)
    ]


def lstm_update(cell: Any, F: Any, gates: Any, c_prev: Any, t: str, act: Any = "tanh",  # noqa: N803
                rec: Any = "sigmoid", out: str = "out") -> tuple[Any, Any]:
    """The LSTM state update from the four gate pre-activations (i, f, c, o): ``c' = f*c + i*g``,
    ``h' = o*act(c')``; symbols named ``<t>i``, ``<t>f``, ``<t>c``, ``<t>o``, ``<t>state``,
    ``<t><out>``. Returns (h', c')."""
    i = cell._get_activation(F, gates[0], rec, name=t + "i")
    f = cell._get_activation(F, gates[1], rec, name=t + "f")
    g = cell._get_activation(F, gates[2], act, name=t + "c")
    o = cell._get_activation(F, gates[3], rec, name=t + "o")
    c = F.elemwise_add(F.elemwise_mul(f, c_prev, name=t + "mul0"), F.elemwise_mul(i, g, name=t + "mul1"),
                       name=t + "state")
    return F.elemwise_mul(o, cell._get_activation(F, c, act, name=t + "activation0"), name=t + out), c


class RecurrentCell(Block):
    """The base of recurrent cells: ``state_info``, ``begin_state``, ``unroll``; a call computes
    one step, ``output, new_states = cell(inputs, states)``.

    >>> import symjit as mx
    >>> cell = mx.gluon.rnn.RNNCell(3)
    >>> [s.shape for s in cell.begin_state(batch_size=2)]
    [(2, 3)]
    """

    def __init__(self, prefix: str | None = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Reset the step counters (and the children's) before a new unroll."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            if hasattr(cell, "reset"):
                cell.reset()

    def state_info(self, batch_size: int = 0) -> list[dict]:
        """The shape (``(batch_size, ...)``) and layout of each state."""
        raise NotImplementedError(f"{type(self).__name__}.state_info is not defined")

    def _check_unmodified(self) -> None:
        if self._modified:
            raise AssertionError(
                "After applying modifier cells (e.g. ZoneoutCell) the base cell "
                "cannot be called directly. Call the modifier cell instead."
            )

    def begin_state(self, batch_size: int = 0, func: Callable = ndarray.zeros, **kwargs: Any) -> list:
        """The initial states: ``func(name=..., shape=..., **kwargs)`` per state (``mx.nd.zeros``
        by default; ``mx.sym.zeros``/``mx.sym.var`` for symbols, where a batch size of 0 is left
        to shape inference)."""
        self._check_unmodified()
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info or {}, **kwargs)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length: int, inputs: Any, begin_state: Any = None, layout: str = "NTC",
               merge_outputs: bool | None = None, valid_length: Any = None) -> tuple[Any, list]:
        """Run the cell over ``length`` steps of ``inputs`` (a tensor in ``layout``, or a list of
        (N, C) steps). Returns (outputs, final states): outputs one tensor in ``layout`` when
        ``merge_outputs`` is True, a list of steps when False, whichever is at hand when None.
        ``valid_length`` (N,): outputs past each sequence's length are 0 and the states are
        those of its last valid step."""
        self.reset()
        inputs, axis, F, batch = format_sequence(length, inputs, layout, False)
        states = default_begin_state(self, F, begin_state, inputs, batch)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = last_states(F, all_states, valid_length)
            outputs = mask_sequence(F, outputs, length, valid_length, axis, True)
        outputs = format_sequence(length, outputs, layout, merge_outputs)[0]
        return outputs, states

    def _get_activation(self, F: Any, inputs: Any, activation: Any, **kwargs: Any) -> Any:  # noqa: N803
        """``activation`` (a name, a LeakyReLU block or a callable) applied to ``inputs``."""
        if activation in ("tanh", "relu", "sigmoid", "softsign"):
            return getattr(F, activation)(inputs, **kwargs)
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs: Any, states: Any) -> Any:
        """One step: (output, new states)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell whose step is ``hybrid_forward(F, inputs, states, **params)``: run over
    ``mx.nd``, traced into one Symbol per step shape after ``hybridize()``."""

    def __init__(self, prefix: str | None = None, params: Any = None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N803
        raise NotImplementedError(f"{type(self).__name__}.hybrid_forward is not defined")


def _mapping(weight: Any, gates: int = 1) -> str:
    shape = weight.shape
    return f"{shape[1] if shape[1] else None} -> {shape[0] // gates}"


class _GatedCell(HybridRecurrentCell):
    """What the three cells share: the four parameters of ``gates`` stacked gates."""

    _gates = 1

    def __init__(self, hidden_size: int, i2h_weight_initializer: Any, h2h_weight_initializer: Any,
                 i2h_bias_initializer: Any, h2h_bias_initializer: Any, input_size: int, prefix: str | None,
                 params: Any):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size = int(hidden_size), int(input_size)
        rows = self._gates * self._hidden_size
        get = self.params.get
        self.i2h_weight = get(
            "i2h_weight", shape=(rows, input_size), init=i2h_weight_initializer, allow_deferred_init=True
        )
        self.h2h_weight = get(
            "h2h_weight", shape=(rows, hidden_size), init=h2h_weight_initializer, allow_deferred_init=True
        )
        self.i2h_bias = get("i2h_bias", shape=(rows,), init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(rows,), init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_mapping(self.i2h_weight)})"

    def _projections(self, F: Any, inputs: Any, h: Any, i2h_weight: Any, h2h_weight: Any,  # noqa: N803
                     i2h_bias: Any, h2h_bias: Any) -> tuple[str, Any, Any]:
        t = f"t{self._counter}_"
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows, name=t + "i2h")
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias, num_hidden=rows, name=t + "h2h")
        return t, i2h, h2h


class RNNCell(_GatedCell):
    """Elman cell: ``h' = act(W_ih x + b_ih + W_hh h + b_hh)`` (``activation`` 'tanh' by default,
    any Activation name, a LeakyReLU block or a callable). One state of shape (N, hidden_size).

    >>> import symjit as mx
    >>> cell = mx.gluon.rnn.RNNCell(2, activation='relu', input_size=3)
    >>> cell.initialize(mx.init.One())    # the biases: 'zeros', their own initializer
    >>> out, (h,) = cell(mx.nd.ones((1, 3)), [mx.nd.ones((1, 2))])
    >>> out.asnumpy().tolist()
    [[5.0, 5.0]]
    """

    def __init__(self, hidden_size: int, activation: Any = "tanh", i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0, prefix: str | None = None,
                 params: Any = None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def _alias(self) -> str:
        return "rnn"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_mapping(self.i2h_weight)}, {self._activation})"

    def hybrid_forward(self, F: Any, inputs: Any, states: list, i2h_weight: Any,  # noqa: N803
                       h2h_weight: Any, i2h_bias: Any, h2h_bias: Any) -> tuple[Any, list]:
        t, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        out = self._get_activation(
            F, F.elemwise_add(i2h, h2h, name=t + "plus0"), self._activation, name=t + "out"
        )
        return out, [out]


class LSTMCell(_GatedCell):
    """LSTM cell (gates input, forget, cell, output): ``c' = f*c + i*g``, ``h' = o*act(c')``, the
    gates through ``recurrent_activation`` ('sigmoid'), ``g`` and the output through
    ``activation`` ('tanh'). Two states (h, c), each (N, hidden_size).

    >>> import symjit as mx
    >>> cell = mx.gluon.rnn.LSTMCell(2, input_size=3)
    >>> cell.initialize(mx.init.Zero())
    >>> out, (h, c) = cell(mx.nd.ones((1, 3)), [mx.nd.ones((1, 2)), mx.nd.ones((1, 2))])
    >>> c.asnumpy().tolist()
    [[0.5, 0.5]]
    """

    _gates = 4

    def __init__(self, hidden_size: int, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0, prefix: str | None = None,
                 params: Any = None, activation: Any = "tanh", recurrent_activation: Any = "sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, input_size, prefix, params)
        self._activation, self._recurrent_activation = activation, recurrent_activation

    def _alias(self) -> str:
        return "lstm"

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return super().state_info(batch_size) * 2

    def hybrid_forward(self, F: Any, inputs: Any, states: list, i2h_weight: Any,  # noqa: N803
                       h2h_weight: Any, i2h_bias: Any, h2h_bias: Any) -> tuple[Any, list]:
        t, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=t + "plus0"), num_outputs=4, name=t + "slice")
        h, c = lstm_update(self, F, gates, states[1], t, self._activation, self._recurrent_activation)
        return h, [h, c]


class GRUCell(_GatedCell):
    """GRU cell as cuDNN computes it (the reset gate applied after the recurrent projection):
    ``n = tanh(x_n + r*(W_hn h + b_hn))``, ``h' = (1-z)*n + z*h``. One state (N, hidden_size).

    >>> import symjit as mx
    >>> cell = mx.gluon.rnn.GRUCell(2, input_size=3)
    >>> cell.initialize(mx.init.Zero())
    >>> out, _ = cell(mx.nd.ones((1, 3)), [mx.nd.ones((1, 2))])
    >>> out.asnumpy().tolist()
    [[0.5, 0.5]]
    """

    _gates = 3

    def __init__(self, hidden_size: int, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0, prefix: str | None = None,
                 params: Any = None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, input_size, prefix, params)

    def _alias(self) -> str:
        return "gru"

    def hybrid_forward(self, F: Any, inputs: Any, states: list, i2h_weight: Any,  # noqa: N803
                       h2h_weight: Any, i2h_bias: Any, h2h_bias: Any) -> tuple[Any, list]:
        h = states[0]
        t, i2h, h2h = self._projections(F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        xr, xz, xn = F.SliceChannel(i2h, num_outputs=3, name=t + "i2h_slice")
        hr, hz, hn = F.SliceChannel(h2h, num_outputs=3, name=t + "h2h_slice")
        r = F.Activation(F.elemwise_add(xr, hr, name=t + "plus0"), act_type="sigmoid", name=t + "r_act")
        z = F.Activation(F.elemwise_add(xz, hz, name=t + "plus1"), act_type="sigmoid", name=t + "z_act")
        n = F.Activation(F.elemwise_add(xn, F.elemwise_mul(r, hn, name=t + "mul0"), name=t + "plus2"),
                         act_type="tanh", name=t + "h_act")
        keep = F.elemwise_sub(F.ones_like(z, name=t + "ones_like0"), z, name=t + "minus0")
        out = F.elemwise_add(
            F.elemwise_mul(keep, n, name=t + "mul1"), F.elemwise_mul(z, h, name=t + "mul20"), name=t + "out"
        )
        return out, [out]
