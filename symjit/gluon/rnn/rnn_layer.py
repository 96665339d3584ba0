"""Gluon's fused recurrent layers :class:`RNN`, :class:`LSTM` and :class:`GRU`: several layers,
one or two directions, over a whole sequence through the ``RNN`` operator
(:mod:`symjit.ops.rnn`).

Parameters are MXNet 1.9.1's: per layer ``i`` and direction ``d`` (``l`` forward, ``r``
backward) ``<prefix><d><i>_i2h_weight`` (G*H, in), ``_h2h_weight`` (G*H, H, or P with an LSTM
projection), ``_i2h_bias``, ``_h2h_bias`` and, with ``projection_size`` P, ``_h2r_weight``
(P, H); G is 1, 4 (LSTM: i, f, c, o) or 3 (GRU: r, z, n). Layer 0's input size is inferred at the
first call when ``input_size`` is 0. ``save_parameters`` writes them under MXNet's structural
names (``_unfused.<i>.<d>_cell.i2h_weight`` bidirectional, ``_unfused.<i>.i2h_weight``
otherwise), so parameter files move between MXNet and symjit.

A call is ``layer(inputs)`` (zero begin states; returns the output only) or
``layer(inputs, states)`` (returns ``(output, new_states)``); with ``use_sequence_length=True``
a third argument gives each sequence's length. With ``dropout`` > 0 the layers are run as one
``RNN`` operator each with ``Dropout`` between them, so that recorded training (autograd)
sees the masks it drew.

>>> import symjit as mx
>>> layer = mx.gluon.rnn.LSTM(5, num_layers=2, bidirectional=True)
>>> layer.initialize()
>>> out, (h, c) = layer(mx.nd.ones((3, 2, 4)), layer.begin_state(2))
>>> out.shape, h.shape, layer.l0_i2h_weight.shape
((3, 2, 10), (4, 2, 5), (20, 4))
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ... import ndarray, symbol
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import HybridBlock
from . import cell_base, cell_wrappers

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
_KEY = re.compile(r"(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z")


class _RNNLayer(HybridBlock):
    """What the three layers share."""

    def __init__(self, hidden_size: int, num_layers: int, layout: str, dropout: float, bidirectional: bool,
                 input_size: int, i2h_weight_initializer: Any, h2h_weight_initializer: Any,
                 i2h_bias_initializer: Any, h2h_bias_initializer: Any, mode: str, projection_size: int | None,
                 h2r_weight_initializer: Any, lstm_state_clip_min: float | None,
                 lstm_state_clip_max: float | None, lstm_state_clip_nan: bool, dtype: Any,
                 use_sequence_length: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise AssertionError(f"Invalid layout {layout}; must be one of ['TNC' or 'NTC']")
        if int(num_layers) < 1 or int(hidden_size) < 1:
            raise ValueError(
                f"{type(self).__name__}: hidden_size ({hidden_size}) and num_layers "
                f"({num_layers}) must be positive"
            )
        if not 0 <= float(dropout) <= 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1], got {dropout}")
        self._hidden_size, self._num_layers = int(hidden_size), int(num_layers)
        self._projection_size = int(projection_size) if projection_size else None
        self._mode, self._layout, self._dropout = mode, layout, float(dropout)
        self._dir = 2 if bidirectional else 1
        self._input_size = int(input_size)
        self._i2h_weight_initializer, self._h2h_weight_initializer = (i2h_weight_initializer,
                                                                      h2h_weight_initializer)
        self._i2h_bias_initializer, self._h2h_bias_initializer = i2h_bias_initializer, h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min, self._lstm_state_clip_max = lstm_state_clip_min, lstm_state_clip_max
        self._lstm_state_clip_nan = bool(lstm_state_clip_nan)
        self._dtype = dtype
        self._use_sequence_length = bool(use_sequence_length)
        self._gates = _GATES[mode]
        rows, nh, proj = self._gates * self._hidden_size, self._hidden_size, self._projection_size
        ni = self._input_size
        for i in range(self._num_layers):
            for d in "lr"[: self._dir]:
                self._register(f"{d}{i}_i2h_weight", (rows, ni), i2h_weight_initializer)
                self._register(f"{d}{i}_h2h_weight", (rows, proj or nh), h2h_weight_initializer)
                self._register(f"{d}{i}_i2h_bias", (rows,), i2h_bias_initializer)
                self._register(f"{d}{i}_h2h_bias", (rows,), h2h_bias_initializer)
                if proj:
                    self._register(f"{d}{i}_h2r_weight", (proj, nh), h2r_weight_initializer)
            ni = (proj or nh) * self._dir

    def _register(self, name: str, shape: tuple, init: Any) -> None:
        setattr(self, name,
                self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=self._dtype))

    def __repr__(self) -> str:
        extra = "" if self._num_layers == 1 else f", num_layers={self._num_layers}"
        extra += f", dropout={self._dropout}" if self._dropout else ""
        extra += ", bidirectional" if self._dir == 2 else ""
        mapping = cell_base._mapping(self.l0_i2h_weight, self._gates)
        return f"{type(self).__name__}({mapping}, {self._layout}{extra})"

    def _collect_params_with_prefix(self, prefix: str = "") -> dict:
        # MXNet's structural names, kept from when these layers were stacks of cells
        prefix = prefix + "." if prefix else prefix
        out = {}
        for key, p in self._reg_params.items():
            d, layer, group, kind = _KEY.match(key).groups()
            cell = f"{d}_cell." if self._dir == 2 else ""
            out[f"{prefix}_unfused.{layer}.{cell}{group}_{kind}"] = p
        for name, child in self._children.items():
            out.update(child._collect_params_with_prefix(prefix + name))
        return out

    def state_info(self, batch_size: int = 0) -> list[dict]:
        """The shape, layout and dtype of each begin state."""
        rows = self._num_layers * self._dir
        info = [{"shape": (rows, batch_size, self._projection_size or self._hidden_size), "__layout__": "LNC",
                "dtype": self._dtype}]
        if self._mode == "lstm":
            info.append(
                {"shape": (rows, batch_size, self._hidden_size), "__layout__": "LNC", "dtype": self._dtype}
            )
        return info

    def begin_state(self, batch_size: int = 0, func: Callable = ndarray.zeros, **kwargs: Any) -> list:
        """The initial states, ``func(name=..., shape=..., dtype=..., **kwargs)`` each
        (``mx.nd.zeros`` by default; ``mx.sym.zeros``/``mx.sym.var`` for symbols)."""
        return [
            func(name=f"{self.prefix}h0_{i}", **dict(info, **kwargs))
            for i, info in enumerate(self.state_info(batch_size))
        ]

    def cast(self, dtype: Any) -> None:
        super().cast(dtype)
        self._dtype = dtype

    def infer_shape(self, inputs: Any, *args: Any) -> None:
        """Fill layer 0's input size from ``inputs`` (3-D, features last)."""
        if len(inputs.shape) != 3:
            raise ValueError(
                f"{type(self).__name__}: inputs must be 3-D ({self._layout}), got shape {inputs.shape}"
            )
        ni = inputs.shape[2]
        for d in "lr"[: self._dir]:
            getattr(self, f"{d}0_i2h_weight").shape = (self._gates * self._hidden_size, ni)

    def _unfuse(self) -> cell_wrappers.HybridSequentialRNNCell:
        """The same layers as a stack of cells sharing this layer's parameters."""
        if self._projection_size:
            raise AssertionError("_unfuse does not support projection layer yet!")
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            raise AssertionError("_unfuse does not support state clipping yet!")
        make: Callable = {
            "rnn_relu": lambda **kw: cell_base.RNNCell(self._hidden_size, activation="relu", **kw),
            "rnn_tanh": lambda **kw: cell_base.RNNCell(self._hidden_size, activation="tanh", **kw),
            "lstm": lambda **kw: cell_base.LSTMCell(self._hidden_size, **kw),
            "gru": lambda **kw: cell_base.GRUCell(self._hidden_size, **kw),
        }[self._mode]
        stack = cell_wrappers.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kw = {"input_size": ni, "i2h_weight_initializer": self._i2h_weight_initializer,
                      "h2h_weight_initializer": self._h2h_weight_initializer,
                      "i2h_bias_initializer": self._i2h_bias_initializer,
                      "h2h_bias_initializer": self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(
                        cell_wrappers.BidirectionalCell(
                            make(prefix=f"l{i}_", **kw), make(prefix=f"r{i}_", **kw)
                        )
                    )
                else:
                    stack.add(make(prefix=f"l{i}_", **kw))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(cell_wrappers.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def forward(self, inputs: Any, states: Any = None, sequence_length: Any = None) -> Any:
        """``output`` (no ``states`` given) or ``(output, new_states)``."""
        skip = states is None
        batch_axis = self._layout.find("N")
        if skip:
            if isinstance(inputs, NDArray):
                states = self.begin_state(inputs.shape[batch_axis], ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, (NDArray, Symbol)):
            states = [states]
        states = list(states)
        if isinstance(inputs, NDArray):
            self._check_states(inputs, states)
        if self._use_sequence_length:
            if sequence_length is None:
                raise ValueError(f"{type(self).__name__}: use_sequence_length=True needs sequence_length")
            out, new_states = super().forward(inputs, states, sequence_length)
        else:
            out, new_states = super().forward(inputs, states)
        return out if skip else (out, new_states)

    def _check_states(self, inputs: NDArray, states: list) -> None:
        if inputs.ndim != 3:
            raise ValueError(
                f"{type(self).__name__}: inputs must be 3-D ({self._layout}), got shape {inputs.shape}"
            )
        info = self.state_info(inputs.shape[self._layout.find("N")])
        if len(states) != len(info):
            raise ValueError(f"{type(self).__name__}: expected {len(info)} begin state(s), got {len(states)}")
        for state, want in zip(states, info):
            if state.shape != want["shape"]:
                raise ValueError(
                    f"Invalid recurrent state shape. Expecting {want['shape']}, got {state.shape}."
                )

    def _mark_partial_shapes(self, params: dict) -> None:
        """Give layer 0's input weights, while their input size is unknown, their partial shape
        ``(G*H, 0)`` as a variable attribute (a Parameter's variable leaves an incomplete shape
        out): ``_rnn_param_concat`` then infers the input size from the data."""
        for d in "lr"[: self._dir]:
            name = f"{d}0_i2h_weight"
            shape, var = getattr(self, name).shape, params[name]
            if shape and not all(shape) and var.attr("__shape__") is None:
                var._set_attr(__shape__=str(tuple(shape)))

    def _packed(self, F: Any, params: dict, layers: range) -> Any:  # noqa: N803
        """The flat parameter vector of ``layers``, in the ``RNN`` operator's order (through
        ``_rnn_param_concat``, which lets inference find layer 0's input size from the data)."""
        groups = ("i2h", "h2h", "h2r") if self._projection_size else ("i2h", "h2h")
        names = [f"{d}{i}_{g}_weight" for i in layers for d in "lr"[: self._dir] for g in groups]
        names += [f"{d}{i}_{g}_bias" for i in layers for d in "lr"[: self._dir] for g in ("i2h", "h2h")]
        return F._internal._rnn_param_concat(*[params[n] for n in names], dim=0, num_args=len(names))

    def hybrid_forward(self, F: Any, inputs: Any, states: list, sequence_length: Any = None,  # noqa: N803
                       **params: Any) -> tuple[Any, list]:
        if F is symbol:
            self._mark_partial_shapes(params)
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        opts = {"state_size": self._hidden_size, "bidirectional": self._dir == 2, "mode": self._mode,
                "state_outputs": True, "use_sequence_length": self._use_sequence_length}
        if self._projection_size:
            opts["projection_size"] = self._projection_size
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            opts.update(lstm_state_clip_min=self._lstm_state_clip_min,
                        lstm_state_clip_max=self._lstm_state_clip_max,
                        lstm_state_clip_nan=self._lstm_state_clip_nan)
        extra = [sequence_length] if self._use_sequence_length else []
        if self._dropout > 0 and self._num_layers > 1:
            blocks = [range(i, i + 1) for i in range(self._num_layers)]  # Dropout between layers
        else:
            blocks = [range(self._num_layers)]
        x, per_block = inputs, []
        for k, layers in enumerate(blocks):
            if k:
                x = F.Dropout(x, p=self._dropout)
            rows = (layers.start * self._dir, layers.stop * self._dir)
            begin = [
                s if len(blocks) == 1 else F.slice_axis(s, axis=0, begin=rows[0], end=rows[1]) for s in states
            ]
            res = F.RNN(x, self._packed(F, params, layers), *begin, *extra, num_layers=len(layers), **opts)
            x, out_states = res[0], [res[j] for j in range(1, len(states) + 1)]
            per_block.append(out_states)
        new_states = [F.concat(*parts, dim=0) if len(parts) > 1 else parts[0] for parts in zip(*per_block)]
        if self._layout == "NTC":
            x = F.swapaxes(x, dim1=0, dim2=1)
        return x, new_states


class RNN(_RNNLayer):
    """Elman recurrent layers, ``h_t = act(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh)`` with ``activation``
    'relu' (default) or 'tanh'. Input (T, N, C) for layout 'TNC' ((N, T, C) for 'NTC'); one state
    (num_layers * directions, N, hidden_size).

    >>> import symjit as mx
    >>> layer = mx.gluon.rnn.RNN(4, 2, activation='tanh', layout='NTC')
    >>> layer.initialize()
    >>> layer(mx.nd.ones((3, 5, 6))).shape
    (3, 5, 4)
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, activation: str = "relu", layout: str = "TNC",
                 dropout: float = 0, bidirectional: bool = False, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", input_size: int = 0, dtype: Any = "float32",
                 **kwargs: Any):
        if activation not in ("relu", "tanh"):
            raise ValueError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, None, None, None, None, False, dtype,
                         **kwargs)


class LSTM(_RNNLayer):
    """LSTM layers (cuDNN's equations, gates i, f, c, o); two states (h, c), each
    (num_layers * directions, N, hidden_size) (h: projection_size with a projection). Optional
    LSTM projection (``projection_size``, weights ``h2r_weight``) and cell-state clipping
    (``state_clip_min``/``state_clip_max``, ``state_clip_nan``).

    >>> import symjit as mx
    >>> layer = mx.gluon.rnn.LSTM(4, projection_size=2, input_size=3)
    >>> layer.initialize()
    >>> out, (h, c) = layer(mx.nd.ones((5, 1, 3)), layer.begin_state(1))
    >>> out.shape, h.shape, c.shape
    ((5, 1, 2), (1, 1, 2), (1, 1, 4))
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, layout: str = "TNC", dropout: float = 0,
                 bidirectional: bool = False, input_size: int = 0, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", projection_size: int | None = None,
                 h2r_weight_initializer: Any = None, state_clip_min: float | None = None,
                 state_clip_max: float | None = None, state_clip_nan: bool = False, dtype: Any = "float32",
                 **kwargs: Any):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)


class GRU(_RNNLayer):
    """GRU layers (cuDNN's equations: the reset gate applied after the recurrent projection);
    one state (num_layers * directions, N, hidden_size).

    >>> import symjit as mx
    >>> layer = mx.gluon.rnn.GRU(3, bidirectional=True)
    >>> layer.initialize()
    >>> out, (h,) = layer(mx.nd.ones((2, 4, 5)), mx.nd.zeros((2, 4, 3)))
    >>> out.shape, h.shape
    ((2, 4, 6), (2, 4, 3))
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, layout: str = "TNC", dropout: float = 0,
                 bidirectional: bool = False, input_size: int = 0, i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", dtype: Any = "float32", **kwargs: Any):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", None, None, None, None, False, dtype, **kwargs)
