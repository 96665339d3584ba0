"""The Symbol: listing, composition, attributes, arithmetic, JSON and inference.

A :class:`Symbol` is a list of output entries ``(node, output_index)`` over the graph of
:mod:`symjit.symbol.graph` (its :class:`Node`, graph order, the variables MXNet creates); its JSON
is read and written by :mod:`symjit.symbol.json_io`, its shapes and dtypes inferred by
:mod:`symjit.symbol.infer`.
"""
from __future__ import annotations

import copy
import numbers
import os
from collections.abc import Iterator
from typing import Any

from ..base import MXNetError, NotImplementedForSymbol, np_dtype
from ..ops.registry import get_op
from . import infer as _infer
from . import json_io as _json_io
from .graph import Node, aux_variable_ids, input_variable, topo_order
from .naming import (
    HIDDEN_KEYS,
    current_attrs,
    current_name_manager,
    listed_attrs,
    normalize_attrs,
    split_attr_kwargs,
)

__all__ = ["Node", "Symbol", "Variable", "var", "Group", "load", "load_json", "make_op_symbol",
           "input_variable", "topo_order", "aux_variable_ids"]


_EXECUTOR: dict[str, Any] = {}
"""What binding needs from the layer above: the ``Executor`` class and ``simple_bind_arrays``,
registered by :mod:`symjit.executor` when it is imported (``import symjit`` imports it)."""


def register_executor(executor: type, simple_bind_arrays: Any) -> None:
    """Make :meth:`Symbol.bind` build ``executor`` objects and :meth:`Symbol.simple_bind`
    allocate their arrays with ``simple_bind_arrays`` (called by :mod:`symjit.executor`).

    >>> from symjit.executor import Executor
    >>> _EXECUTOR['Executor'] is Executor
    True
    """
    _EXECUTOR.update(Executor=executor, simple_bind_arrays=simple_bind_arrays)


def _executor(name: str) -> Any:
    if name not in _EXECUTOR:
        raise MXNetError("binding a symbol needs symjit.executor: import symjit first")
    return _EXECUTOR[name]


class Symbol:
    """A symbolic expression with one or more outputs.

    >>> import symjit as mx
    >>> net = mx.sym.FullyConnected(data=mx.sym.Variable('data'), name='fc1', num_hidden=10)
    >>> net.list_arguments()
    ['data', 'fc1_weight', 'fc1_bias']
    """

    __array_priority__ = 1000.0  # numpy scalars on the left defer to our reflected operators

    def __init__(self, outputs: list[tuple[Node, int]]):
        self._outputs = list(outputs)

    # --- structure ------------------------------------------------------------------------
    @property
    def name(self) -> str | None:
        """The node name of a single-output symbol, None for a group."""
        return self._outputs[0][0].name if len(self._outputs) == 1 else None

    def _topo(self) -> list[Node]:
        return topo_order(self._outputs)

    def list_outputs(self) -> list[str]:
        """Output names: ``fc1_output``, a variable's own name."""
        return [node.output_name(i) for node, i in self._outputs]

    def list_arguments(self) -> list[str]:
        """Variables that are not aux states, in graph order."""
        nodes = self._topo()
        aux = aux_variable_ids(nodes)
        return [n.name for n in nodes if n.is_variable and id(n) not in aux]

    def list_auxiliary_states(self) -> list[str]:
        """Variables consumed as aux states (``bn1_moving_mean``), in graph order."""
        nodes = self._topo()
        aux = aux_variable_ids(nodes)
        return [n.name for n in nodes if n.is_variable and id(n) in aux]

    def list_inputs(self) -> list[str]:
        """All variables, arguments and aux states alike, in graph order."""
        return [n.name for n in self._topo() if n.is_variable]

    def get_internals(self) -> Symbol:
        """A group of every node's visible outputs, variables included, in graph order."""
        return Symbol([(n, i) for n in self._topo() for i in range(n.num_visible)])

    def get_children(self) -> Symbol | None:
        """The inputs of this (single-output) symbol's node as a group, None for a variable."""
        node = self._outputs[0][0]
        return Symbol(list(node.inputs)) if node.inputs else None

    def _gen_atomic_symbol(self) -> Symbol:
        """A symbol of this symbol's head operator alone: same op, name and parameters, each of its
        inputs a fresh variable named after the op's argument (what MXNet's subgraph API starts
        from).

        >>> import symjit as mx
        >>> y = mx.sym.FullyConnected(mx.sym.relu(mx.sym.Variable('x')), num_hidden=2, name='fc')
        >>> y._gen_atomic_symbol().list_arguments()
        ['data', 'weight', 'bias']
        """
        node = self._outputs[0][0]
        if node.is_variable:
            raise MXNetError(f"_gen_atomic_symbol: '{node.name}' is a variable, not an operator")
        names = node.op.list_arguments(node.params) + node.op.list_aux(node.params)
        inputs = [(Node(None, name), 0) for name in names]
        head = Node(node.op, node.name, dict(node.params), dict(node.attrs), inputs, node.given)
        return Symbol([(head, i) for i in range(node.num_visible)])

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self) -> Iterator[Symbol]:
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index: int | str | slice) -> Symbol:
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise MXNetError(f"Symbol has no output named {index!r}; outputs: {names}")
            if len(matches) > 1:
                raise MXNetError(f"Symbol has several outputs named {index!r}")
            index = matches[0]
        if not isinstance(index, int):
            raise TypeError(f"Symbol index must be int, str or slice, got {type(index).__name__}")
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f"Symbol output index {index} out of range (it has {len(self._outputs)})")
        return Symbol([self._outputs[index]])

    def __repr__(self) -> str:
        if len(self._outputs) == 1:
            return f"<Symbol {self.name}>"
        return "<Symbol group [" + ", ".join(n.name for n, _ in self._outputs) + "]>"

    def __copy__(self) -> Symbol:
        return Symbol(list(self._outputs))

    def __deepcopy__(self, memo: dict) -> Symbol:
        return _clone(self, {}, memo)

    def __getstate__(self) -> dict:
        return {"json": self.tojson()}

    def __setstate__(self, state: dict) -> None:
        self._outputs = _json_io.read_json(state["json"])

    # --- composition ----------------------------------------------------------------------
    def __call__(self, *args: Symbol, **kwargs: Any) -> Symbol:
        """Compose: replace this symbol's variables by other symbols, returning a new symbol.

        ``net(data=net2, name='compose')`` also prefixes this symbol's own nodes (its other
        variables and its operators) with ``compose_``, as MXNet 1.x's overview tutorial shows.
        """
        name = kwargs.pop("name", None)
        args_names = self.list_arguments()
        subst: dict[str, Symbol] = {}
        if args:
            if kwargs:
                raise MXNetError("compose accepts either positional or keyword symbols, not both")
            if len(args) > len(args_names):
                raise MXNetError(f"compose: {len(args)} symbols given but only {len(args_names)} "
                                 f"arguments exist: {args_names}")
            subst = dict(zip(args_names, args))
        else:
            subst = dict(kwargs)
        inputs = set(self.list_inputs())
        for key, val in subst.items():
            if not isinstance(val, Symbol) or len(val) != 1:
                raise TypeError(f"compose: value for {key!r} must be a single-output Symbol")
            if key not in inputs:
                raise MXNetError(f"compose: {key!r} is not an input of this symbol; inputs: {sorted(inputs)}")
        return _clone(self, {k: v._outputs[0] for k, v in subst.items()}, {}, prefix=name)

    # --- attributes -----------------------------------------------------------------------
    def attr(self, key: str) -> str | None:
        """An attribute of this single-output symbol's node (op params included), or None.

        Hidden keys are found under either name: ``attr('lr_mult')`` reads ``__lr_mult__``.
        """
        attrs = self.list_attr()
        if key in attrs:
            return attrs[key]
        if key in HIDDEN_KEYS:
            return attrs.get(f"__{key}__")
        if key.startswith("__") and key.endswith("__") and key[2:-2] in HIDDEN_KEYS:
            return attrs.get(key[2:-2])
        return None

    def list_attr(self, recursive: bool = False) -> dict[str, str]:
        """Attributes of this symbol's node as strings: user attrs and op params. A hidden key
        (stored as ``__lr_mult__``) is listed under both names, as MXNet lists it."""
        if recursive:
            return {f"{n}${a}": v for n, d in self.attr_dict().items() for a, v in d.items()}
        if len(self._outputs) != 1:
            return {}
        return _node_attrs(self._outputs[0][0])

    def attr_dict(self) -> dict[str, dict[str, str]]:
        """Every node's attributes, keyed by node name (nodes without attributes omitted)."""
        out: dict[str, dict[str, str]] = {}
        for node in self._topo():
            attrs = _node_attrs(node)
            if attrs:
                out[node.name] = attrs
        return out

    def _set_attr(self, **kwargs: str) -> None:
        """Set string attributes on this symbol's node."""
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise TypeError(f"_set_attr: attribute {k!r} must be a string, got {type(v).__name__}")
        for node, _ in self._outputs:
            node.attrs.update(normalize_attrs(kwargs))

    # --- serialisation and inference (implemented in sibling modules) ----------------------
    def tojson(self) -> str:
        """The symbol in MXNet 1.x's JSON format."""
        return _json_io.to_json(self)

    def save(self, fname: str) -> None:
        """Write :meth:`tojson` to a file (MXNet's ``*-symbol.json``)."""
        with open(fname, "w") as f:
            f.write(self.tojson())

    def infer_shape(self, *args: Any, **kwargs: Any):
        """``(arg_shapes, out_shapes, aux_shapes)``, or ``(None, None, None)`` if incomplete."""
        return _infer.infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args: Any, **kwargs: Any):
        """Like :meth:`infer_shape`, with ``()`` for shapes that cannot be inferred."""
        return _infer.infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args: Any, **kwargs: Any):
        """``(arg_types, out_types, aux_types)`` as numpy types, or Nones if incomplete."""
        return _infer.infer_type(self, args, kwargs)

    def infer_type_partial(self, *args: Any, **kwargs: Any):
        """Like :meth:`infer_type`, with ``None`` for each type that cannot be inferred.

        >>> import symjit as mx
        >>> x = mx.sym.var('x')
        >>> y = mx.sym.Cast(x, dtype='float16') + mx.sym.var('b')
        >>> y.infer_type_partial()
        ([None, <class 'numpy.float16'>], [<class 'numpy.float16'>], [])
        """
        return _infer.infer_type(self, args, kwargs, partial=True)

    def debug_str(self) -> str:
        """A line per node: op, name, inputs."""
        lines = []
        for node in self._topo():
            if node.is_variable:
                lines.append(f"Variable:{node.name}")
            else:
                ins = ", ".join(src.output_name(i) for src, i in node.inputs)
                lines.append(f"Op:{node.op.name}, Name={node.name}\n  Inputs: {ins}")
        return "\n".join(lines)

    # --- binding (compilation) -------------------------------------------------------------
    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Compile this symbol for the given arrays and return an :class:`Executor`.

        >>> import symjit as mx
        >>> x = mx.sym.Variable('x')
        >>> ex = (x * 2).bind(mx.cpu(), {'x': mx.nd.ones((2,))})
        >>> ex.forward()[0].asnumpy().tolist()
        [2.0, 2.0]
        """
        return _executor("Executor")(self, ctx, args, args_grad, grad_req, aux_states, group2ctx=group2ctx)

    def eval(self, ctx=None, **kwargs):
        """Bind to the given arrays, run one inference forward pass and return the outputs (a list
        of NDArrays, one element for a single-output symbol), as MXNet's ``Symbol.eval``.

        Keyword arrays name the arguments; symjit also takes aux states by name (MXNet's eval has
        no way to pass them, so symbols with aux states fail there). ``ctx`` defaults to the
        current context.

        >>> import symjit as mx
        >>> a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
        >>> out = (a + b).eval(ctx=mx.cpu(), a=mx.nd.ones((2,)), b=mx.nd.array([1, 2]))
        >>> [o.asnumpy().tolist() for o in out]
        [[2.0, 3.0]]
        """
        from ..context import current_context
        arg_names, aux_names = self.list_arguments(), self.list_auxiliary_states()
        unknown = sorted(set(kwargs) - set(arg_names) - set(aux_names))
        if unknown:
            raise MXNetError(f"eval: unknown inputs {unknown}; the symbol's arguments are {arg_names}"
                             + (f" and aux states {aux_names}" if aux_names else ""))
        missing = [n for n in arg_names + aux_names if n not in kwargs]
        if missing:
            raise MXNetError(f"eval: no array given for {missing}")
        args = {n: kwargs[n] for n in arg_names}
        aux = {n: kwargs[n] for n in aux_names} or None
        ex = self.bind(ctx or current_context(), args, grad_req="null", aux_states=aux)
        return ex.forward(is_train=False)

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Allocate zeroed arrays for the given input shapes, then :meth:`bind`. As in MXNet, a
        keyword whose value is not a shape (a tuple or list) is ignored.

        >>> import symjit as mx
        >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc')
        >>> ex = net.simple_bind(mx.cpu(), data=(2, 3), axis=1)
        >>> ex.arg_dict['fc_weight'].shape
        (4, 3)
        """
        shapes = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        args, grads, aux, reqs = _executor("simple_bind_arrays")(self, ctx, grad_req, type_dict, shapes)
        return _executor("Executor")(self, ctx, args, grads, reqs, aux, group2ctx=group2ctx)

    # --- arithmetic -----------------------------------------------------------------------
    def _binary(self, other: Any, op: str, scalar_op: str) -> Symbol:
        if isinstance(other, Symbol):
            return make_op_symbol(op, self, other)
        if _is_number(other):
            return make_op_symbol(scalar_op, self, scalar=float(other))
        return NotImplemented

    def _rscalar(self, other: Any, scalar_op: str) -> Symbol:
        if _is_number(other):
            return make_op_symbol(scalar_op, self, scalar=float(other))
        return NotImplemented

    def __add__(self, o): return self._binary(o, "_Plus", "_PlusScalar")
    def __radd__(self, o): return self._rscalar(o, "_PlusScalar")
    def __sub__(self, o): return self._binary(o, "_Minus", "_MinusScalar")
    def __rsub__(self, o): return self._rscalar(o, "_RMinusScalar")
    def __mul__(self, o): return self._binary(o, "_Mul", "_MulScalar")
    def __rmul__(self, o): return self._rscalar(o, "_MulScalar")
    def __truediv__(self, o): return self._binary(o, "_Div", "_DivScalar")
    def __rtruediv__(self, o): return self._rscalar(o, "_RDivScalar")
    def __mod__(self, o): return self._binary(o, "_Mod", "_ModScalar")
    def __rmod__(self, o): return self._rscalar(o, "_RModScalar")
    def __pow__(self, o): return self._binary(o, "_Power", "_PowerScalar")
    def __rpow__(self, o): return self._rscalar(o, "_RPowerScalar")
    def __neg__(self): return self.__mul__(-1.0)
    def __abs__(self): return make_op_symbol("abs", self)
    def __eq__(self, o): return self._binary(o, "_equal", "_equal_scalar")  # type: ignore[override]
    def __ne__(self, o): return self._binary(o, "_not_equal", "_not_equal_scalar")  # type: ignore[override]
    def __gt__(self, o): return self._binary(o, "_greater", "_greater_scalar")
    def __ge__(self, o): return self._binary(o, "_greater_equal", "_greater_equal_scalar")
    def __lt__(self, o): return self._binary(o, "_lesser", "_lesser_scalar")
    def __le__(self, o): return self._binary(o, "_lesser_equal", "_lesser_equal_scalar")

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise NotImplementedForSymbol(Symbol.__bool__, "bool")   # comparisons build symbols


def _is_number(x: Any) -> bool:
    import numpy as np
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _node_attrs(node: Node) -> dict[str, str]:
    attrs = listed_attrs(node.attrs)
    if node.op is not None:
        attrs.update(node.op.format_params(node.params))
    return attrs


def _clone(sym: Symbol, subst: dict[str, tuple[Node, int]], memo: dict,
           prefix: str | None = None) -> Symbol:
    """Copy the graph, replacing variables named in ``subst`` and prefixing the rest."""
    pre = f"{prefix}_" if prefix else ""
    new: dict[int, Node] = {}
    for node in sym._topo():
        if node.is_variable and node.name in subst:
            continue
        new[id(node)] = Node(node.op, pre + node.name, copy.deepcopy(node.params, memo),
                             dict(node.attrs), [], node.given)
    def entry(e: tuple[Node, int]) -> tuple[Node, int]:
        src, i = e
        if src.is_variable and src.name in subst:
            return subst[src.name]
        return new[id(src)], i
    for node in sym._topo():
        if id(node) in new:
            new[id(node)].inputs = [entry(e) for e in node.inputs]
    return Symbol([entry(e) for e in sym._outputs])


def Variable(name: str, attr: dict[str, str] | None = None, shape: tuple | None = None,
             lr_mult: float | None = None, wd_mult: float | None = None, dtype: Any = None,
             init: Any = None, stype: str | None = None, **kwargs: Any) -> Symbol:
    """A free variable: data, a label or a parameter.

    >>> Variable('data', shape=(100, 784)).attr('__shape__')
    '(100, 784)'
    """
    if not isinstance(name, str) or not name:
        raise TypeError("Variable: name must be a non-empty string")
    attrs = current_attrs()
    attrs.update(attr or {})
    attrs = normalize_attrs(attrs)
    if isinstance(shape, (str, bytes)):
        raise TypeError(f"Variable '{name}': shape must be a tuple of ints, got the string {shape!r}")
    if shape is not None:   # an int is a 1-D shape, as MXNet's shape parser reads one
        shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(d) for d in shape)
        attrs["__shape__"] = str(shape)
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        from ..base import DTYPE_TO_FLAG
        attrs["__dtype__"] = str(DTYPE_TO_FLAG[np_dtype(dtype)])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:     # MXNet's attribute: the storage type's id (graphs compute dense)
        ids = {"default": 0, "row_sparse": 1, "csr": 2}
        if stype not in ids:
            raise MXNetError(f"Variable {name!r}: unknown storage type {stype!r}; expected one of "
                             f"{sorted(ids)}")
        attrs["__storage_type__"] = str(ids[stype])
    for k, v in kwargs.items():
        if k.startswith("__") and k.endswith("__"):
            attrs[k] = str(v)
        else:
            raise MXNetError(f"Variable {name!r}: unknown keyword {k!r} (attributes must be __key__)")
    return Symbol([(Node(None, name, attrs=attrs), 0)])


var = Variable


def load_json(text: str | bytes) -> Symbol:
    """Parse symbol JSON written by symjit or MXNet 1.x; raise FormatError for a bad document.

    >>> import symjit as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc1')
    >>> mx.sym.load_json(net.tojson()).list_arguments()
    ['data', 'fc1_weight', 'fc1_bias']
    """
    return Symbol(_json_io.read_json(text))


def load(fname: str | os.PathLike) -> Symbol:
    """Load a ``*-symbol.json`` file (MXNet 1.x's or symjit's).

    >>> import symjit as mx, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), 'net-symbol.json')
    >>> mx.sym.Variable('x').save(path)
    >>> mx.sym.load(path).list_arguments()
    ['x']
    """
    return Symbol(_json_io.read_file(fname))


def Group(symbols: list[Symbol]) -> Symbol:
    """One symbol whose outputs are the outputs of all given symbols."""
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise TypeError("Group expects a non-empty list of Symbols")
    return Symbol([e for s in symbols for e in s._outputs])


def _name_hint(op_name: str) -> str:
    """The automatic name's stem: the lower-cased op name, without a sub-namespace prefix
    (``_contrib_box_nms`` -> ``box_nms0``, ``_linalg_potrf`` -> ``potrf0``), as MXNet names them."""
    hint = op_name.lower()
    for prefix in ("_contrib_", "_linalg_", "_image_"):
        if hint.startswith(prefix):
            return hint[len(prefix):]
    return hint


def min_inputs(op: Any, params: dict) -> float:
    """How many inputs an operator takes given the keyword ``params`` (its static argument list's
    length; for a list that depends on params, the one these params give, else 0; a variadic op
    takes only inputs positionally: infinity)."""
    if op.variadic is not None:
        return float("inf")
    if not callable(op.arguments):
        return len(op.arguments)
    try:
        return len(op.list_arguments(op.parse_params({k: v for k, v in params.items()
                                                      if k in {p.name for p in op.params}})))
    except MXNetError:
        return 0


def positional_inputs(op: Any, args: tuple, params: dict, kind: type) -> int:
    """How many of ``args`` are inputs: the leading ``kind`` values (the rest are parameters given
    positionally, MXNet's generated functions' order; :func:`min_inputs` says when that is wrong)."""
    return next((i for i, a in enumerate(args) if not isinstance(a, kind)), len(args))


def absent_inputs(op: Any, args: tuple, n_inputs: int, params: dict) -> int:
    """How many ``None`` values right after the ``n_inputs`` positional inputs stand for inputs not
    given (MXNet's generated functions list every input slot before the parameters, so
    ``BilinearResize2D(data, None, scale_height=2)`` leaves ``like`` out): up to the op's
    signature slots (``op.extra['signature_inputs']``, else :func:`min_inputs`)."""
    if op.variadic is not None:
        return 0
    slots = op.extra.get("signature_inputs") or min_inputs(op, params)
    skip = 0
    while n_inputs + skip < min(len(args), slots) and args[n_inputs + skip] is None:
        skip += 1
    return skip


def possible_inputs(op: Any, given: dict) -> set[str]:
    """The names an operator's inputs may have: its argument list, or for a list that depends on
    params, the lists the ``given`` params give with each flag set either way."""
    if not callable(op.arguments):
        return set(op.arguments)
    found: set[str] = set()
    flips = [{}] + [{p.name: v} for p in op.params if p.kind == "bool" for v in (True, False)]
    for flip in flips:
        try:
            found.update(op.list_arguments(op.parse_params({**given, **flip})))
        except MXNetError:
            continue
    return found


def without_absent_inputs(op: Any, kwargs: dict) -> dict:
    """``kwargs`` without the inputs given as ``None`` (not given, as MXNet's generated functions
    take them: ``SequenceReverse(data=x, sequence_length=None)``); a ``None`` for a name that is
    no input stays, for the params' checks."""
    if all(v is not None for v in kwargs.values()):
        return kwargs
    params = {p.name for p in op.params}
    inputs = possible_inputs(op, {k: v for k, v in kwargs.items() if k in params and v is not None})
    return {k: v for k, v in kwargs.items() if v is not None or k in params or k not in inputs}


def make_op_symbol(op_name: str, *args: Any, name: str | None = None,
                   attr: dict[str, str] | None = None, **kwargs: Any) -> Symbol:
    """Apply the registered operator ``op_name`` (or an alias) to symbols and params.

    Symbols may come positionally (in argument order; all of them for a variadic op such as
    Concat) or by argument name (``None`` for an input: not given); everything else is a param, by
    keyword or positionally after the symbols (in the operator's parameter order, as MXNet's
    generated functions take them). Inputs
    not given become variables named ``{name}_{argument}`` (``fc1_weight``, ``softmax_label``,
    ``bn1_moving_mean``) carrying a copy of the op's attributes, as in MXNet.
    ``op.extra['input_var_attrs']`` (slot -> attrs) adds attributes to the variables read in those
    slots (BatchNorm's ``__init__`` of its moving stats).
    """
    op = get_op(op_name)
    kwargs = without_absent_inputs(op, kwargs)
    sym_kwargs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    raw_params, kw_attrs = split_attr_kwargs(
        op_name, {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)})
    n_syms = positional_inputs(op, args, raw_params, Symbol)
    args, extra = args[:n_syms], args[n_syms + absent_inputs(op, args, n_syms, raw_params):]
    if any(isinstance(a, Symbol) for a in extra) or (extra and n_syms < min_inputs(op, raw_params)):
        raise TypeError(f"{op_name}: positional inputs must be Symbols, got {type(extra[0]).__name__}; "
                        "inputs come first, then parameters")
    if extra:          # parameters given positionally after the inputs, in the operator's order
        free = [p.name for p in op.params if p.name not in raw_params]
        if len(extra) > len(free):
            raise MXNetError(f"{op_name}: {len(extra)} positional parameter(s) given, it has {free}")
        raw_params.update(zip(free, extra))
    if op.variadic is not None:
        if sym_kwargs:
            raise MXNetError(f"{op_name}: inputs must be given positionally")
        raw_params.setdefault(op.variadic, len(args))
    params = op.parse_params(raw_params)
    node_name = current_name_manager().get(name, _name_hint(op_name))
    arg_names, aux_names = op.list_arguments(params), op.list_aux(params)
    slots = arg_names + aux_names
    given: dict[str, Symbol] = {}
    if len(args) > len(slots):
        raise MXNetError(f"{op_name} '{node_name}': {len(args)} inputs given, it takes {len(slots)}: {slots}")
    given.update(zip(slots, args))
    if not slots:       # an operator without inputs drops Symbol keywords, as MXNet's composition does
        sym_kwargs = {}
    for k, v in sym_kwargs.items():
        if k not in slots:
            raise MXNetError(f"{op_name} '{node_name}': unknown input {k!r}; inputs are {slots}")
        if k in given:
            raise MXNetError(f"{op_name} '{node_name}': input {k!r} given twice")
        given[k] = v
    attrs = current_attrs()
    attrs.update(attr or {})
    attrs = normalize_attrs(attrs)
    attrs.update(kw_attrs)
    node = Node(op, node_name, params, attrs, [], frozenset(raw_params))
    slot_attrs = op.extra.get("input_var_attrs", {})
    for slot in slots:
        s = given.get(slot)
        if s is None:
            s = Symbol([(input_variable(node, slot), 0)])
        if len(s) != 1:
            raise MXNetError(f"{op_name} '{node_name}': input {slot!r} must be a single-output symbol, "
                             f"got a group of {len(s)}")
        src = s._outputs[0][0]
        if src.is_variable:
            for k, v in slot_attrs.get(slot, {}).items():
                src.attrs.setdefault(k, v)
        node.inputs.append(s._outputs[0])
    return Symbol([(node, i) for i in range(node.num_visible)])
