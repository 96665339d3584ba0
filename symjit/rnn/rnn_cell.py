"""MXNet's symbolic RNN cells: each step is built from FullyConnected, SliceChannel, Activation
and elementwise symbols, and ``unroll`` chains the steps over a sequence.

Parameters are Variables named ``<prefix>i2h_weight``, ``<prefix>i2h_bias``, ``<prefix>h2h_weight``
and ``<prefix>h2h_bias`` (gates stacked in the rows: LSTM ``i, f, c, o``, GRU ``r, z, o``), shared
by every step, so the parameters of an unrolled graph, checkpoints and :meth:`unpack_weights`
follow MXNet's names.

Begin states: the default ``begin_state`` makes ``symbol.zeros`` of the ``state_info`` shape,
``(0, num_hidden)``, and lets shape inference fill the batch size, as MXNet does; a cell defined
by the user (its own ``__call__``) receives these symbols. symjit's ``RNNCell``, ``LSTMCell`` and
``GRUCell`` get :class:`ZeroState` markers instead: their step builds the zeros from its input,
``broadcast_axis(sum(zeros_like(x), axis=1, keepdims=True), axis=1, size=num_hidden)``, so the
batch size follows the data without inference from consumers. ``begin_state(func=mx.sym.Variable)``
makes the states inputs of the graph, as in MXNet.

>>> import symjit as mx
>>> cell = mx.rnn.LSTMCell(8, prefix='lstm_')
>>> outputs, states = cell.unroll(3, mx.sym.Variable('data'), merge_outputs=True)
>>> outputs.infer_shape(data=(2, 3, 5))[1]
[(2, 3, 8)]
>>> sorted(n for n in outputs.list_arguments() if n != 'data')
['lstm_h2h_bias', 'lstm_h2h_weight', 'lstm_i2h_bias', 'lstm_i2h_weight']
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ndarray as nd
from .. import symbol
from ..base import MXNetError, ParamError
from ..initializer import LSTMBias

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "BidirectionalCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell", "ZeroState"]


class ZeroState:
    """A begin state of zeros whose batch size comes from the first input it meets."""

    def __init__(self, name: str, num_hidden: int):
        self.name, self.num_hidden = name, int(num_hidden)

    def like(self, inputs: Any) -> Any:
        """The zeros as a symbol shaped ``(batch of inputs, num_hidden)``."""
        col = symbol.sum(symbol.zeros_like(inputs), axis=1, keepdims=True)
        return symbol.broadcast_axis(col, axis=1, size=self.num_hidden, name=self.name)

    def __repr__(self) -> str:
        return f"ZeroState({self.name!r}, {self.num_hidden})"


def _states(states: list, inputs: Any) -> list:
    return [s.like(inputs) if isinstance(s, ZeroState) else s for s in states]


class RNNParams:
    """The Variables of a cell's parameters, created on first use under ``prefix``."""

    def __init__(self, prefix: str = ""):
        self._prefix = prefix
        self._params: dict[str, Any] = {}

    def get(self, name: str, **kwargs: Any) -> Any:
        """The Variable ``<prefix><name>`` (created with ``kwargs`` the first time)."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


def _normalize_sequence(length: int | None, inputs: Any, layout: str, merge: bool | None,
                        in_layout: str | None = None) -> tuple[Any, int]:
    """``inputs`` as a list of per-step symbols (``merge=False``), one merged symbol (``True``) or
    as given (``None``); the time axis of ``layout``."""
    if inputs is None:
        raise ParamError("unroll: inputs must be a Symbol or a list of Symbols, got None")
    if layout not in ("NTC", "TNC"):
        raise ParamError(f"unroll: layout must be 'NTC' or 'TNC', got {layout!r}")
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise ParamError("unroll: a grouped symbol cannot be split into steps; pass list(inputs)")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise ParamError(f"unroll: {len(inputs)} inputs for length {length}")
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs], dim=axis)
            in_axis = axis
    if isinstance(inputs, symbol.Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class BaseRNNCell:
    """Base class: ``cell(inputs, states) -> (output, new_states)`` builds one step."""

    def __init__(self, prefix: str = "", params: RNNParams | None = None):
        if params is None:
            params, self._own_params = RNNParams(prefix), True
        else:
            self._own_params = False
        self._prefix, self._params, self._modified = prefix, params, False
        self.reset()

    def reset(self) -> None:
        """Restart step numbering (a new unroll)."""
        self._init_counter = -1
        self._counter = -1

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        raise NotImplementedError(f"{type(self).__name__} cannot be stepped")

    @property
    def params(self) -> RNNParams:
        """The cell's parameter Variables."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list[dict]:
        """``[{'shape': (0, num_hidden), '__layout__': 'NC'}, ...]``, one per state."""
        raise NotImplementedError(f"{type(self).__name__}.state_info")

    @property
    def state_shape(self) -> list[tuple]:
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> tuple:
        return ()

    def begin_state(self, func: Callable | None = None, **kwargs: Any) -> list:
        """The states before the first step, ``func(name='<prefix>begin_state_<n>', shape=...,
        __layout__=..., **kwargs)`` each; by default ``symbol.zeros`` of the ``state_info`` shape
        (its 0 batch completed by shape inference), or :class:`ZeroState` markers for the cells
        whose steps size them from their input (symjit's ``RNNCell``, ``LSTMCell``, ``GRUCell``)."""
        if self._modified:
            raise MXNetError(f"{type(self).__name__}: after wrapping in a modifier cell, call begin_state "
                             "on the modifier")
        markers = func is None and _takes_markers(self)
        func = symbol.zeros if func is None else func
        states = []
        for info in self.state_info:
            self._init_counter += 1
            name = f"{self._prefix}begin_state_{self._init_counter}"
            if markers:
                states.append(ZeroState(name, info["shape"][1]))
            else:
                states.append(func(name=name, **{**kwargs, **(info or {})}))
        return states

    def unpack_weights(self, args: dict) -> dict:
        """Split each stacked ``i2h``/``h2h`` weight and bias into one array per gate."""
        args = dict(args)
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = args.pop(f"{self._prefix}{group}_weight")
            bias = args.pop(f"{self._prefix}{group}_bias")
            for j, gate in enumerate(self._gate_names):
                args[f"{self._prefix}{group}{gate}_weight"] = weight[j * h:(j + 1) * h].copy()
                args[f"{self._prefix}{group}{gate}_bias"] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args: dict) -> dict:
        """The inverse of :meth:`unpack_weights`."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            weights = [args.pop(f"{self._prefix}{group}{g}_weight") for g in self._gate_names]
            biases = [args.pop(f"{self._prefix}{group}{g}_bias") for g in self._gate_names]
            args[f"{self._prefix}{group}_weight"] = nd.concat(*weights, dim=0)
            args[f"{self._prefix}{group}_bias"] = nd.concat(*biases, dim=0)
        return args

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None, layout: str = "NTC",
               merge_outputs: bool | None = None) -> tuple[Any, list]:
        """Chain ``length`` steps over ``inputs`` (a symbol with a time axis in ``layout``, or a
        list of per-step symbols); the outputs (merged into one symbol with ``merge_outputs``)
        and the last states."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else list(begin_state)
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs: Any, activation: Any, **kwargs: Any) -> Any:
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class RNNCell(BaseRNNCell):
    """Elman RNN: ``h = activation(W_i x + b_i + W_h h + b_h)``."""

    def __init__(self, num_hidden: int, activation: Any = "tanh", prefix: str = "rnn_",
                 params: RNNParams | None = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden, self._activation = int(num_hidden), activation
        self._iW, self._iB = self.params.get("i2h_weight"), self.params.get("i2h_bias")
        self._hW, self._hB = self.params.get("h2h_weight"), self.params.get("h2h_bias")

    @property
    def state_info(self) -> list[dict]:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self) -> tuple:
        return ("",)

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        states = _states(states, inputs)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=self._num_hidden,
                                    name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden, name=f"{name}h2h")
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(BaseRNNCell):
    """Long short-term memory (Hochreiter & Schmidhuber); gates ``i, f, c, o`` stacked in that
    order, the forget gate's i2h bias initialised to ``forget_bias``."""

    def __init__(self, num_hidden: int, prefix: str = "lstm_", params: RNNParams | None = None,
                 forget_bias: float = 1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = int(num_hidden)
        self._iW, self._hW = self.params.get("i2h_weight"), self.params.get("h2h_weight")
        self._iB = self.params.get("i2h_bias", init=LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list[dict]:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"},
                {"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self) -> tuple:
        return ("_i", "_f", "_c", "_o")

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        states = _states(states, inputs)
        h = self._num_hidden
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=h * 4,
                                    name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB, num_hidden=h * 4,
                                    name=f"{name}h2h")
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol.elemwise_add(forget_gate * states[1], in_gate * in_transform, name=f"{name}state")
        next_h = symbol.elemwise_mul(out_gate, symbol.Activation(next_c, act_type="tanh"), name=f"{name}out")
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """Gated recurrent unit (Cho et al.); gates ``r, z`` and the candidate ``o`` stacked in order."""

    def __init__(self, num_hidden: int, prefix: str = "gru_", params: RNNParams | None = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = int(num_hidden)
        self._iW, self._iB = self.params.get("i2h_weight"), self.params.get("i2h_bias")
        self._hW, self._hB = self.params.get("h2h_weight"), self.params.get("h2h_bias")

    @property
    def state_info(self) -> list[dict]:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self) -> tuple:
        return ("_r", "_z", "_o")

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        states = _states(states, inputs)
        prev = states[0]
        h = self._num_hidden
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=h * 3,
                                    name=f"{name}_i2h")
        h2h = symbol.FullyConnected(data=prev, weight=self._hW, bias=self._hB, num_hidden=h * 3,
                                    name=f"{name}_h2h")
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = symbol.Activation(i2h + reset_gate * h2h, act_type="tanh", name=f"{name}_h_act")
        next_h = symbol.elemwise_add((1.0 - update_gate) * candidate, update_gate * prev, name=f"{name}out")
        return next_h, [next_h]


def _takes_markers(cell: BaseRNNCell) -> bool:
    """Whether ``cell``'s step is one of symjit's that turns :class:`ZeroState` into zeros (a
    subclass defining its own step gets real symbols)."""
    return type(cell).__call__ in (RNNCell.__call__, LSTMCell.__call__, GRUCell.__call__)


def _cells_state_info(cells: list[BaseRNNCell]) -> list[dict]:
    return sum((c.state_info for c in cells), [])


def _cells_begin_state(cells: list[BaseRNNCell], **kwargs: Any) -> list:
    return sum((c.begin_state(**kwargs) for c in cells), [])


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each one's outputs are the next one's inputs."""

    def __init__(self, params: RNNParams | None = None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: list[BaseRNNCell] = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append a cell."""
        self._cells.append(cell)
        if self._override_cell_params:
            if not cell._own_params:
                raise MXNetError("SequentialRNNCell.add: a cell with shared params cannot join a "
                                 "SequentialRNNCell given params")
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self) -> list[dict]:
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs: Any) -> list:
        if self._modified:
            raise MXNetError("SequentialRNNCell: call begin_state on the modifier cell")
        return _cells_begin_state(self._cells, **kwargs)

    def unpack_weights(self, args: dict) -> dict:
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args: dict) -> dict:
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def reset(self) -> None:
        super().reset()
        for cell in getattr(self, "_cells", []):
            cell.reset()

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        self._counter += 1
        next_states, p = [], 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise MXNetError("SequentialRNNCell: a BidirectionalCell cannot be stepped; use unroll")
            n = len(cell.state_info)
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None, layout: str = "NTC",
               merge_outputs: bool | None = None) -> tuple[Any, list]:
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        p, next_states = 0, []
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            last = i == len(self._cells) - 1
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n],
                                         layout=layout, merge_outputs=merge_outputs if last else None)
            p += n
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs (no state)."""

    def __init__(self, dropout: float, prefix: str = "dropout_", params: RNNParams | None = None):
        super().__init__(prefix, params)
        self.dropout = float(dropout)

    @property
    def state_info(self) -> list[dict]:
        return []

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None, layout: str = "NTC",
               merge_outputs: bool | None = None) -> tuple[Any, list]:
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """A cell wrapping another one (``base_cell``) to change what it computes."""

    def __init__(self, base_cell: BaseRNNCell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list[dict]:
        return self.base_cell.state_info

    def begin_state(self, func: Callable | None = None, **kwargs: Any) -> list:
        if self._modified:
            raise MXNetError(f"{type(self).__name__}: call begin_state on the outer modifier cell")
        if func is None and type(self).__call__ not in (ZoneoutCell.__call__, ResidualCell.__call__):
            func = symbol.zeros  # a user-defined modifier's step sees the states themselves
        self.base_cell._modified = False
        begin = self.base_cell.begin_state(func=func, **kwargs)
        self.base_cell._modified = True
        return begin

    def unpack_weights(self, args: dict) -> dict:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict) -> dict:
        return self.base_cell.pack_weights(args)

    def reset(self) -> None:
        super().reset()
        if hasattr(self, "base_cell"):
            self.base_cell.reset()


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al.): in training, each output/state keeps its previous value with
    probability ``zoneout_outputs``/``zoneout_states`` (masks from Dropout of ones)."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0):
        if isinstance(base_cell, BidirectionalCell):
            raise MXNetError("ZoneoutCell: a BidirectionalCell cannot be zoned out; wrap its cells")
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = float(zoneout_outputs), float(zoneout_states)
        self.prev_output = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        states = _states(states, inputs)
        next_output, next_states = self.base_cell(inputs, states)

        def mask(p: float, like: Any) -> Any:
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev_output = self.prev_output if self.prev_output is not None else symbol.zeros_like(next_output)
        output = (symbol.where(mask(self.zoneout_outputs, next_output), next_output, prev_output)
                  if self.zoneout_outputs else next_output)
        if self.zoneout_states:
            next_states = [symbol.where(mask(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds the cell's input to its output (He et al.'s residual connection)."""

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        output, states = self.base_cell(inputs, states)
        return symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual"), states

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None, layout: str = "NTC",
               merge_outputs: bool | None = None) -> tuple[Any, list]:
        self.reset()
        self.base_cell._modified = False
        outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                merge_outputs=merge_outputs)
        self.base_cell._modified = True
        merge = isinstance(outputs, symbol.Symbol) if merge_outputs is None else merge_outputs
        inputs, _ = _normalize_sequence(length, inputs, layout, merge)
        if merge:
            return symbol.elemwise_add(outputs, inputs, name=f"{outputs.name}_plus_residual"), states
        return [symbol.elemwise_add(o, i, name=f"{o.name}_plus_residual")
                for o, i in zip(outputs, inputs)], states


class BidirectionalCell(BaseRNNCell):
    """Two cells over the sequence, one forward (``l_cell``), one backward (``r_cell``); their
    outputs are concatenated per step (``<output_prefix>t<i>``, or ``<output_prefix>out`` merged)."""

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell, params: RNNParams | None = None,
                 output_prefix: str = "bi_"):
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        if self._override_cell_params:
            if not (l_cell._own_params and r_cell._own_params):
                raise MXNetError("BidirectionalCell: cells with shared params cannot take its params")
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args: dict) -> dict:
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args: dict) -> dict:
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    @property
    def state_info(self) -> list[dict]:
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs: Any) -> list:
        if self._modified:
            raise MXNetError("BidirectionalCell: call begin_state on the modifier cell")
        return _cells_begin_state(self._cells, **kwargs)

    def unroll(self, length: int, inputs: Any, begin_state: list | None = None, layout: str = "NTC",
               merge_outputs: bool | None = None) -> tuple[Any, list]:
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        begin_state = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        n = len(l_cell.state_info)
        l_out, l_states = l_cell.unroll(length, inputs=inputs, begin_state=begin_state[:n], layout=layout,
                                        merge_outputs=merge_outputs)
        r_out, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)), begin_state=begin_state[n:],
                                        layout=layout, merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_out, symbol.Symbol) and isinstance(r_out, symbol.Symbol)
            if not merge_outputs:
                if isinstance(l_out, symbol.Symbol):
                    l_out = list(symbol.SliceChannel(l_out, axis=axis, num_outputs=length, squeeze_axis=1))
                if isinstance(r_out, symbol.Symbol):
                    r_out = list(symbol.SliceChannel(r_out, axis=axis, num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            l_out, r_out = [l_out], [symbol.reverse(r_out, axis=axis)]
        else:
            r_out = list(reversed(r_out))
        prefix = self._output_prefix
        outputs = [symbol.Concat(lo, ro, dim=1 + int(merge_outputs),
                                 name=f"{prefix}out" if merge_outputs else f"{prefix}t{i}")
                   for i, (lo, ro) in enumerate(zip(l_out, r_out))]
        return (outputs[0] if merge_outputs else outputs), l_states + r_states

    def __call__(self, inputs: Any, states: list) -> tuple[Any, list]:
        raise MXNetError("BidirectionalCell cannot be stepped; use unroll")
