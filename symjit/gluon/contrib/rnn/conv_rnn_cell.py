"""Convolutional recurrent cells (1-D, 2-D, 3-D; Elman, LSTM, GRU): the cells of
:mod:`symjit.gluon.rnn` with the input and recurrent projections made by convolutions, the
states images of ``hidden_channels`` channels.

``input_shape`` is one step's input without the batch axis, in ``conv_layout`` (``(C, W)`` for
'NCW', ``(W, C)`` for 'NWC'); a channel count of 0 is inferred at the first call. The input
convolution has stride 1, ``i2h_pad`` and ``i2h_dilate``; the recurrent one keeps the state's
size (odd ``h2h_kernel`` only, padded ``dilate * (kernel - 1) / 2``). Gates are stacked on the
channel axis (LSTM i, f, c, o; GRU r, z, n).

>>> import symjit as mx
>>> from symjit.gluon.contrib.rnn import Conv2DLSTMCell
>>> cell = Conv2DLSTMCell((3, 8, 8), 4, i2h_kernel=3, h2h_kernel=3, i2h_pad=1)
>>> cell.initialize()
>>> out, (h, c) = cell(mx.nd.ones((2, 3, 8, 8)), cell.begin_state(batch_size=2))
>>> out.shape, cell.h2h_weight.shape
((2, 4, 8, 8), (16, 4, 3, 3))
"""

from __future__ import annotations

from typing import Any

from ...rnn.cell_base import HybridRecurrentCell, lstm_update

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell", "Conv1DLSTMCell", "Conv2DLSTMCell",
           "Conv3DLSTMCell", "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell"]

_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _spec(value: Any, dims: int, what: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * dims
    value = tuple(int(v) for v in value)
    if len(value) != dims:
        raise AssertionError(
            f"For {dims}D convolution, the convolution settings can only be either int or "
            f"list/tuple of length {dims}; {what} is {value}"
        )
    return value


class _ConvCell(HybridRecurrentCell):
    """What the convolutional cells share: shapes, parameters, the two convolutions."""

    _gates = 1

    def __init__(self, input_shape: tuple, hidden_channels: int, i2h_kernel: Any, h2h_kernel: Any,
                 i2h_pad: Any, i2h_dilate: Any, h2h_dilate: Any, i2h_weight_initializer: Any,
                 h2h_weight_initializer: Any, i2h_bias_initializer: Any, h2h_bias_initializer: Any, dims: int,
                 conv_layout: str, activation: Any, prefix: str | None, params: Any):
        super().__init__(prefix=prefix, params=params)
        if conv_layout not in _LAYOUTS[dims]:
            raise ValueError(
                f"{type(self).__name__}: conv_layout must be one of {_LAYOUTS[dims]}, got {conv_layout!r}"
            )
        if len(input_shape) != dims + 1:
            raise ValueError(
                f"{type(self).__name__}: input_shape must have {dims + 1} entries (one step "
                f"without the batch axis, {conv_layout[1:]}), got {input_shape}"
            )
        self._hidden_channels, self._input_shape = int(hidden_channels), tuple(int(d) for d in input_shape)
        self._conv_layout, self._activation = conv_layout, activation
        self._i2h_kernel = _spec(i2h_kernel, dims, "i2h_kernel")
        self._h2h_kernel = _spec(h2h_kernel, dims, "h2h_kernel")
        self._i2h_pad = _spec(i2h_pad, dims, "i2h_pad")
        self._i2h_dilate = _spec(i2h_dilate, dims, "i2h_dilate")
        self._h2h_dilate = _spec(h2h_dilate, dims, "h2h_dilate")
        self._stride = (1,) * dims
        if any(k % 2 == 0 for k in self._h2h_kernel):
            raise AssertionError(f"Only support odd number, get h2h_kernel= {h2h_kernel}")
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))
        self._channel_axis = conv_layout.find("C")
        first = self._channel_axis == 1
        in_channels = self._input_shape[0] if first else self._input_shape[-1]
        spatial = self._input_shape[1:] if first else self._input_shape[:-1]
        out_size = tuple(
            x + 2 * p - d * (k - 1) if x else 0
            for x, k, p, d in zip(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        )
        rows, hc = hidden_channels * self._gates, self._hidden_channels
        if first:
            i2h_shape, h2h_shape = (rows, in_channels, *self._i2h_kernel), (rows, hc, *self._h2h_kernel)
            self._state_shape = (hc, *out_size)
        else:
            i2h_shape, h2h_shape = (rows, *self._i2h_kernel, in_channels), (rows, *self._h2h_kernel, hc)
            self._state_shape = (*out_size, hc)
        get = self.params.get
        self.i2h_weight = get(
            "i2h_weight", shape=i2h_shape, init=i2h_weight_initializer, allow_deferred_init=True
        )
        self.h2h_weight = get(
            "h2h_weight", shape=h2h_shape, init=h2h_weight_initializer, allow_deferred_init=True
        )
        self.i2h_bias = get("i2h_bias", shape=(rows,), init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(rows,), init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return [{"shape": (batch_size, *self._state_shape), "__layout__": self._conv_layout}]

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        c = shape[1 if self._channel_axis == 1 else -1] or None
        return f"{type(self).__name__}({c} -> {shape[0]}, {self._activation}, {self._conv_layout})"

    def _convolutions(self, F: Any, inputs: Any, h: Any, i2h_weight: Any, h2h_weight: Any,  # noqa: N803
                      i2h_bias: Any, h2h_bias: Any) -> tuple[str, Any, Any]:
        t, rows = f"t{self._counter}_", self._hidden_channels * self._gates
        i2h = F.Convolution(data=inputs, weight=i2h_weight, bias=i2h_bias, num_filter=rows,
                            kernel=self._i2h_kernel, stride=self._stride, pad=self._i2h_pad,
                            dilate=self._i2h_dilate, layout=self._conv_layout, name=t + "i2h")
        h2h = F.Convolution(data=h, weight=h2h_weight, bias=h2h_bias, num_filter=rows,
                            kernel=self._h2h_kernel, stride=self._stride, pad=self._h2h_pad,
                            dilate=self._h2h_dilate, layout=self._conv_layout, name=t + "h2h")
        return t, i2h, h2h


class _ConvRNN(_ConvCell):
    def _alias(self) -> str:
        return "conv_rnn"

    def hybrid_forward(self, F: Any, inputs: Any, states: list, i2h_weight: Any,  # noqa: N803
                       h2h_weight: Any, i2h_bias: Any, h2h_bias: Any) -> tuple[Any, list]:
        t, i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        out = self._get_activation(F, i2h + h2h, self._activation, name=t + "out")
        return out, [out]


class _ConvLSTM(_ConvCell):
    _gates = 4

    def _alias(self) -> str:
        return "conv_lstm"

    def state_info(self, batch_size: int = 0) -> list[dict]:
        return super().state_info(batch_size) * 2

    def hybrid_forward(self, F: Any, inputs: Any, states: list, i2h_weight: Any,  # noqa: N803
                       h2h_weight: Any, i2h_bias: Any, h2h_bias: Any) -> tuple[Any, list]:
        t, i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, axis=self._channel_axis, name=t + "slice")
        h, c = lstm_update(self, F, gates, states[1], t, self._activation)
        return h, [h, c]


class _ConvGRU(_ConvCell):
    _gates = 3

    def _alias(self) -> str:
        return "conv_gru"

    def hybrid_forward(self, F: Any, inputs: Any, states: list, i2h_weight: Any,  # noqa: N803
                       h2h_weight: Any, i2h_bias: Any, h2h_bias: Any) -> tuple[Any, list]:
        t, i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        xr, xz, xn = F.SliceChannel(i2h, num_outputs=3, axis=self._channel_axis, name=t + "i2h_slice")
        hr, hz, hn = F.SliceChannel(h2h, num_outputs=3, axis=self._channel_axis, name=t + "h2h_slice")
        r = F.Activation(xr + hr, act_type="sigmoid", name=t + "r_act")
        z = F.Activation(xz + hz, act_type="sigmoid", name=t + "z_act")
        n = self._get_activation(F, xn + r * hn, self._activation, name=t + "h_act")
        out = F.elemwise_add((1.0 - z) * n, z * states[0], name=t + "out")
        return out, [out]


def _cell_class(base: type, dims: int, name: str, doc: str) -> type:
    """A public cell class: ``base`` with ``dims`` spatial dimensions and their defaults."""
    layout = _LAYOUTS[dims][0]

    def __init__(self: Any, input_shape: tuple, hidden_channels: int, i2h_kernel: Any, h2h_kernel: Any,
                 i2h_pad: Any = (0,) * dims, i2h_dilate: Any = (1,) * dims, h2h_dilate: Any = (1,) * dims,
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 conv_layout: str = layout, activation: Any = "tanh", prefix: str | None = None,
                 params: Any = None) -> None:
        base.__init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate,
                      h2h_dilate, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                      h2h_bias_initializer, dims, conv_layout, activation, prefix, params)

    return type(name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


_DOC = (
    "{dims}-D convolutional {kind} cell: states of ``hidden_channels`` channels, layout "
    "``conv_layout`` ('{layout}' by default); see :mod:`symjit.gluon.contrib.rnn.conv_rnn_cell`.\n\n"
    "    >>> import symjit as mx\n"
    "    >>> from symjit.gluon.contrib.rnn import {name}\n"
    "    >>> {name}({shape}, 2, 3, 3).state_info(1)[0]['shape']\n"
    "    {state}\n"
)


def _make(base: type, kind: str) -> list[type]:
    out = []
    for dims, shape, state in ((1, (4, 9), (1, 2, 7)), (2, (4, 9, 9), (1, 2, 7, 7)),
                               (3, (4, 5, 5, 5), (1, 2, 3, 3, 3))):
        name = f"Conv{dims}D{kind}Cell"
        doc = _DOC.format(dims=dims, kind=kind, layout=_LAYOUTS[dims][0], name=name, shape=shape, state=state)
        out.append(_cell_class(base, dims, name, doc))
    return out


Conv1DRNNCell, Conv2DRNNCell, Conv3DRNNCell = _make(_ConvRNN, "RNN")
Conv1DLSTMCell, Conv2DLSTMCell, Conv3DLSTMCell = _make(_ConvLSTM, "LSTM")
Conv1DGRUCell, Conv2DGRUCell, Conv3DGRUCell = _make(_ConvGRU, "GRU")
