"""MXNet's symbolic convolutional RNN cells (``mx.rnn.ConvRNNCell``, ``ConvLSTMCell``,
``ConvGRUCell``): the cells of :mod:`symjit.rnn.rnn_cell` with the input-to-state and
state-to-state projections made by ``Convolution`` symbols, the states images.

``input_shape`` is one step's input *with* its batch axis, in ``conv_layout`` ('NCHW' or
'NHWC'). The input convolution has ``i2h_kernel``, ``i2h_stride``, ``i2h_pad`` and
``i2h_dilate``; the recurrent one has stride 1 and keeps the state's size (odd ``h2h_kernel``
only, padded ``h2h_dilate * (h2h_kernel - 1) // 2``). The state shape is the input
convolution's output with the batch left 0 (``state_info``), so the begin states are
``symbol.zeros`` whose batch shape inference completes. Gates are stacked on the channel axis
(LSTM ``i, f, c, o``; GRU ``r, z, o``); parameters are ``<prefix>i2h_weight``, ``i2h_bias``,
``h2h_weight``, ``h2h_bias``. ``activation`` (default: leaky ReLU of slope 0.2) is a name for
``Activation`` or a callable ``f(symbol, name=...)``.

>>> import symjit as mx
>>> cell = mx.rnn.ConvLSTMCell((1, 3, 8, 6), num_hidden=4, prefix='c_')
>>> cell.state_info[0]
{'shape': (0, 4, 8, 6), '__layout__': 'NCHW'}
>>> out, _ = cell.unroll(2, [mx.sym.Variable('x0'), mx.sym.Variable('x1')])
>>> mx.sym.Group(out).infer_shape(x0=(1, 3, 8, 6), x1=(1, 3, 8, 6))[1]
[(1, 4, 8, 6), (1, 4, 8, 6)]
"""
from __future__ import annotations

import functools
from typing import Any

from .. import symbol
from ..base import ParamError
from ..gluon.contrib.rnn.conv_rnn_cell import _spec
from ..gluon.rnn.cell_base import lstm_update
from .rnn_cell import BaseRNNCell, RNNParams

__all__ = ["BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell"]

_LEAKY = functools.partial(symbol.LeakyReLU, act_type="leaky", slope=0.2)


class _Activations:
    """Gives :func:`symjit.gluon.rnn.cell_base.lstm_update` a cell's activations."""

    def __init__(self, cell: BaseRNNCell):
        self._cell = cell

    def _get_activation(self, F: Any, inputs: Any, activation: Any, **kwargs: Any) -> Any:  # noqa: N803
        return self._cell._get_activation(inputs, activation, **kwargs)


class BaseConvRNNCell(BaseRNNCell):
    """What the convolutional cells share: settings, state shape, parameters, the two convolutions."""

    _gates: tuple = ("",)
    _default_prefix = ""

    def __init__(self, input_shape: tuple, num_hidden: int, h2h_kernel: Any = (3, 3),
                 h2h_dilate: Any = (1, 1), i2h_kernel: Any = (3, 3), i2h_stride: Any = (1, 1),
                 i2h_pad: Any = (1, 1), i2h_dilate: Any = (1, 1), i2h_weight_initializer: Any = None,
                 h2h_weight_initializer: Any = None, i2h_bias_initializer: Any = "zeros",
                 h2h_bias_initializer: Any = "zeros", activation: Any = _LEAKY, prefix: str | None = None,
                 params: RNNParams | None = None, conv_layout: str = "NCHW"):
        super().__init__(prefix=self._default_prefix if prefix is None else prefix, params=params)
        who = type(self).__name__
        if conv_layout not in ("NCHW", "NHWC"):
            raise ParamError(f"{who}: conv_layout must be 'NCHW' or 'NHWC', got {conv_layout!r}")
        input_shape = tuple(int(d) for d in input_shape)
        if len(input_shape) != 4:
            raise ParamError(f"{who}: input_shape must be one step's (batch, {', '.join(conv_layout[1:])}) "
                             f"shape in {conv_layout}, got {input_shape}")
        self._input_shape, self._conv_layout = input_shape, conv_layout
        self._num_hidden, self._activation = int(num_hidden), activation
        self._h2h_kernel = _spec(h2h_kernel, 2, "h2h_kernel")
        self._h2h_dilate = _spec(h2h_dilate, 2, "h2h_dilate")
        if any(k % 2 == 0 for k in self._h2h_kernel):
            raise ParamError(f"{who}: h2h_kernel must be odd (the state keeps its size), got {h2h_kernel}")
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))
        self._i2h_kernel = _spec(i2h_kernel, 2, "i2h_kernel")
        self._i2h_stride = _spec(i2h_stride, 2, "i2h_stride")
        self._i2h_pad = _spec(i2h_pad, 2, "i2h_pad")
        self._i2h_dilate = _spec(i2h_dilate, 2, "i2h_dilate")
        probe = symbol.Convolution(data=symbol.Variable("data"), num_filter=self._num_hidden,
                                   kernel=self._i2h_kernel, stride=self._i2h_stride, pad=self._i2h_pad,
                                   dilate=self._i2h_dilate, layout=conv_layout)
        self._state_shape = (0, *probe.infer_shape(data=input_shape)[1][0][1:])
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _gate_names(self) -> tuple:
        return self._gates

    @property
    def _channel_axis(self) -> int:
        return self._conv_layout.find("C")

    @property
    def state_info(self) -> list[dict]:
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def _conv_forward(self, inputs: Any, states: list, name: str) -> tuple[Any, Any]:
        rows = self._num_hidden * len(self._gates)
        i2h = symbol.Convolution(data=inputs, weight=self._iW, bias=self._iB, num_filter=rows,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride, pad=self._i2h_pad,
                                 dilate=self._i2h_dilate, layout=self._conv_layout, name=f"{name}i2h")
        h2h = symbol.Convolution(data=states[0], weight=self._hW, bias=self._hB, num_filter=rows,
                                 kernel=self._h2h_kernel, stride=(1, 1), pad=self._h2h_pad,
                                 dilate=self._h2h_dilate, layout=self._conv_layout, name=f"{name}h2h")
        return i2h, h2h

    def _step_name(self) -> str:
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"


class ConvRNNCell(BaseConvRNNCell):
    """Convolutional Elman cell: ``h = activation(conv_i(x) + conv_h(h))``; ``prefix`` 'ConvRNN_'."""

    _default_prefix = "ConvRNN_"

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM (Shi et al., 2015): states ``[h, c]``; ``activation`` transforms both the
    candidate and the cell state; ``prefix`` 'ConvLSTM_'."""

    _gates, _default_prefix = ("_i", "_f", "_c", "_o"), "ConvLSTM_"

    @property
    def state_info(self) -> list[dict]:
        return super().state_info * 2

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, axis=self._channel_axis, name=f"{name}slice")
        next_h, next_c = lstm_update(_Activations(self), symbol, gates, states[1], name, self._activation)
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU: ``h' = (1 - z) * activation(i_o + r * h_o) + z * h``; ``prefix`` 'ConvGRU_'."""

    _gates, _default_prefix = ("_r", "_z", "_o"), "ConvGRU_"

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        axis = self._channel_axis
        i_r, i_z, i_o = symbol.SliceChannel(i2h, num_outputs=3, axis=axis, name=f"{name}_i2h_slice")
        h_r, h_z, h_o = symbol.SliceChannel(h2h, num_outputs=3, axis=axis, name=f"{name}_h2h_slice")
        reset = symbol.Activation(i_r + h_r, act_type="sigmoid", name=f"{name}_r_act")
        update = symbol.Activation(i_z + h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = self._get_activation(i_o + reset * h_o, self._activation, name=f"{name}_h_act")
        next_h = symbol.elemwise_add((1.0 - update) * candidate, update * states[0], name=f"{name}out")
        return next_h, [next_h]
