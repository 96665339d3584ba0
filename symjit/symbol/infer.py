"""Shape and dtype inference over a symbol graph.

Each op's rule (see :mod:`symjit.ops.registry`) maps what is known of its inputs and aux states to
what it can say of inputs, outputs and aux states. The engine runs the rules over the graph in
order, repeatedly, until nothing changes: forward (data -> outputs) and backward (data shape ->
parameter shapes, one input -> its elementwise partner). Every disagreement between what a rule says
and what was already known is reported here, naming the operator, its node, the argument and both
shapes, with all the node's input shapes for context.

:func:`infer_graph` is the pass the compiler uses; ``Symbol.infer_shape``/``infer_type`` wrap it.
"""
from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import DTypeError, MXNetError, ShapeError, dtype_name, np_dtype, shape_str
from ..ops.partial_shape import UNKNOWN, is_complete, merge, partial_same
from ..ops.registry import RuleError, same_dtype, same_shape, unary_shape
from ..util import is_np_shape
from .graph import Node, aux_variable_ids, topo_order

if TYPE_CHECKING:
    from .symbol import Symbol

__all__ = ["infer_graph", "infer_shape", "infer_type", "Entry"]

Entry = tuple[Node, int]


def _shape_of(value: Any, what: str) -> tuple[int, ...] | None:
    """A shape a user gave (to ``infer_shape`` or a Variable's ``shape``) in the engine's form, where
    -1 is an unknown size and None an unknown rank: with classic shapes 0 (or -1) is an unknown size
    and ``()`` an unknown shape; with NumPy shape semantics -1 is an unknown size, 0 a real one and
    ``()`` a 0-d shape."""
    try:
        shape = tuple(int(d) for d in value)
    except TypeError:
        raise ShapeError(f"{what}: shape must be a tuple of integers, got {value!r}") from None
    if any(d < UNKNOWN for d in shape):
        raise ShapeError(f"{what}: shape {shape} has a negative dimension (only -1, an unknown size, "
                         "may be negative)")
    if is_np_shape():
        return shape
    return tuple(UNKNOWN if d == 0 else d for d in shape) if shape else None


def _user_shape(shape: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """An engine shape as ``infer_shape`` returns it: classic shapes have 0 for an unknown size and
    ``()`` for an unknown shape; NumPy shape semantics keep -1 and None."""
    if is_np_shape():
        return shape
    return () if shape is None else tuple(0 if d < 0 else d for d in shape)


def _var_attr_shape(node: Node, partial_dims: bool = False) -> tuple[int, ...] | None:
    """The Variable's ``__shape__``; one with unknown sizes only with ``partial_dims``."""
    text = node.attrs.get("__shape__")
    if not text:
        return None
    what = f"Variable '{node.name}' attribute __shape__"
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        raise ShapeError(f"{what}: {text!r} is not a tuple of integers") from None
    shape = _shape_of(value, what)
    return shape if partial_dims or is_complete(shape) else None


def _var_attr_dtype(node: Node) -> np.dtype | None:
    text = node.attrs.get("__dtype__")
    if text is None:
        return None
    try:
        return np_dtype(int(text)) if text.lstrip("-").isdigit() else np_dtype(text)
    except MXNetError as exc:
        raise DTypeError(f"Variable '{node.name}' attribute __dtype__={text!r}: {exc}") from None


class _Inference:
    """One run of shape or dtype inference; ``what`` is 'shape' or 'dtype'."""

    def __init__(self, nodes: list[Node], what: str, fmt: Callable[[Any], str], partial_dims: bool = False):
        self.nodes = nodes
        self.what = what
        self.fmt = fmt
        self.known: dict[tuple[int, int], Any] = {}
        # shapes with unknown (-1) dimensions, merged as they become known
        self.partial = partial_dims and what == "shape"
        self.relaxed = False   # whether ops waiting on inputs known in part run on them as unknown

    def get(self, e: Entry) -> Any:
        return self.known.get((id(e[0]), e[1]))

    def _describe(self, node: Node) -> str:
        names = node.input_names()
        ins = ", ".join(f"{n}={self.fmt(self.get(e))}" for n, e in zip(names, node.inputs))
        return f"{node.op.name} '{node.name}' (inputs: {ins})"

    def put(self, e: Entry, value: Any, node: Node, role: str) -> bool:
        if value is None:
            return False
        key = (id(e[0]), e[1])
        old = self.known.get(key)
        if old is None:
            self.known[key] = value
            return True
        if self.partial:
            try:
                new = merge(old, value)
            except RuleError:
                new = None
            if new is not None:
                self.known[key] = new
                return new != old
        if old != value:
            err = ShapeError if self.what == "shape" else DTypeError
            raise err(f"{self._describe(node)}: {role} has {self.what} {self.fmt(old)} "
                      f"but the operator expects {self.fmt(value)}")
        return False

    def rule(self, node: Node) -> Callable:
        if self.what == "shape":
            if node.op.shape is None:
                raise MXNetError(f"operator {node.op.name} has no shape rule")
            return node.op.shape
        if node.op.dtype is not None:
            return node.op.dtype
        n_out = node.num_outputs
        return lambda p, ins, aux: same_dtype(p, ins, aux, n_out)

    def partial_rule(self, node: Node) -> Callable | None:
        op = node.op
        if op.shape_partial is not None:
            return op.shape_partial
        return partial_same if op.shape in (same_shape, unary_shape) else None

    def step(self, node: Node) -> bool:
        n_args = node.num_args()
        vals = [self.get(e) for e in node.inputs]
        try:
            if self.what == "dtype":
                node.op.check_dtypes(node.params, vals[:n_args])
            rule = self.partial_rule(node) if self.partial else None
            if rule is not None and vals and all(is_complete(v) for v in vals):
                rule = None     # complete inputs: the ordinary rule says it all (and its errors)
            if rule is not None:
                outs_now = [self.get((node, i)) for i in range(node.num_outputs)]
                ins, outs, aux = rule(node.params, vals[:n_args], outs_now, vals[n_args:])
            else:
                # the ordinary rules see complete shapes only; one that is known in part waits to be
                # completed (given as unknown, the rule could guess a shape it would then contradict),
                # until nothing else moves: then it is given as unknown, and what the rule infers for
                # it must agree with its known sizes (a Gluon export's BatchNorm gamma of shape (0,))
                if self.partial and any(v is not None and not is_complete(v) for v in vals):
                    if not self.relaxed:
                        return False
                    vals = [v if v is None or is_complete(v) else None for v in vals]
                ins, outs, aux = self.rule(node)(node.params, vals[:n_args], vals[n_args:])
        except RuleError as exc:
            err = ShapeError if self.what == "shape" else DTypeError
            raise err(f"{self._describe(node)}: {exc}") from None
        names = node.input_names()
        changed = False
        for name, e, v in zip(names, node.inputs, list(ins) + list(aux)):
            changed |= self.put(e, v, node, f"argument '{name}'")
        out_names = node.op.list_outputs(node.params)
        for i, v in enumerate(outs):
            changed |= self.put((node, i), v, node, f"output '{out_names[i]}'")
        return changed

    def run(self) -> None:
        ops = [n for n in self.nodes if not n.is_variable]
        for _ in range(2 * len(ops) + 4 if self.partial else len(ops) + 2):
            changed = False
            for node in ops:
                changed |= self.step(node)
            if not changed:
                if not self.partial or self.relaxed:
                    return
                self.relaxed = True   # the waiting ops' turn (see step)


def infer_graph(outputs: list[Entry], what: str, known: dict[str, Any],
                partial_dims: bool = False) -> dict[tuple[int, int], Any]:
    """Infer shapes (``what='shape'``) or dtypes of every entry of the graph.

    ``known`` maps variable names to shapes/dtypes (shapes in the engine's form: -1 an unknown
    size, 0 a real one); variables' ``__shape__``/``__dtype__`` attrs are used where ``known`` says
    nothing (read as the current shape semantics say, see ``_shape_of``). Returns
    ``{(id(node), output_index): value}``, with entries that could not be inferred absent. With
    ``partial_dims`` (``infer_shape``, and the compiler's, where a source op's ``shape`` may leave
    sizes to its consumers) shapes are merged as their dimensions become known, in both
    directions through the ops' partial rules (:mod:`symjit.ops.partial_shape`), and returned
    shapes may hold unknown (-1) sizes. Without it every shape is complete or absent.
    """
    nodes = topo_order(outputs)
    fmt = shape_str if what == "shape" else dtype_name
    inf = _Inference(nodes, what, fmt, partial_dims)
    for node in nodes:
        if node.is_variable:
            value = known.get(node.name)
            if value is not None and what == "dtype":
                value = np_dtype(value)
            if value is None:
                value = _var_attr_shape(node, partial_dims) if what == "shape" else _var_attr_dtype(node)
            if value is not None:
                inf.known[(id(node), 0)] = value
    inf.run()
    return inf.known


def _known_inputs(sym: Symbol, args: tuple, kwargs: dict, conv: Callable, api: str) -> dict[str, Any]:
    arg_names = sym.list_arguments()
    inputs = set(sym.list_inputs())
    if args and kwargs:
        raise MXNetError(f"{api}: give either positional or keyword arguments, not both")
    if len(args) > len(arg_names):
        raise MXNetError(f"{api}: {len(args)} positional values for {len(arg_names)} arguments {arg_names}")
    given = dict(zip(arg_names, args)) if args else dict(kwargs)
    out = {}
    for k, v in given.items():
        if k not in inputs:
            raise MXNetError(f"{api}: unknown argument {k!r}; the symbol's inputs are {sym.list_inputs()}")
        if v is not None:
            out[k] = conv(v, f"{api}: argument {k!r}")
    return out


def _collect(sym: Symbol, known: dict, empty: Any):
    nodes = topo_order(sym._outputs)
    aux = aux_variable_ids(nodes)
    get = lambda e: known.get((id(e[0]), e[1]), empty)  # noqa: E731
    args = [get((n, 0)) for n in nodes if n.is_variable and id(n) not in aux]
    auxs = [get((n, 0)) for n in nodes if n.is_variable and id(n) in aux]
    outs = [get(e) for e in sym._outputs]
    return args, outs, auxs


def infer_shape(sym: Symbol, args: tuple, kwargs: dict, partial: bool):
    """The engine behind ``Symbol.infer_shape`` and ``infer_shape_partial``."""
    known = _known_inputs(sym, args, kwargs, _shape_of, "infer_shape")
    shapes = infer_graph(sym._outputs, "shape", known, partial_dims=True)
    args_s, outs_s, aux_s = _collect(sym, shapes, None)
    if not partial and not all(is_complete(s) for s in args_s + outs_s + aux_s):
        return None, None, None
    user = lambda xs: [_user_shape(s) for s in xs]  # noqa: E731
    return user(args_s), user(outs_s), user(aux_s)


def _dtype_of(value: Any, what: str) -> np.dtype:
    try:
        return np_dtype(value)
    except MXNetError as exc:
        raise DTypeError(f"{what}: {exc}") from None


def infer_type(sym: Symbol, args: tuple, kwargs: dict, partial: bool = False):
    """The engine behind ``Symbol.infer_type`` (numpy scalar types, or Nones if incomplete) and
    ``infer_type_partial`` (``None`` for each type that cannot be inferred)."""
    known = _known_inputs(sym, args, kwargs, _dtype_of, "infer_type")
    types = infer_graph(sym._outputs, "dtype", known)
    args_t, outs_t, aux_t = _collect(sym, types, None)
    if not partial and any(t is None for t in args_t + outs_t + aux_t):
        return None, None, None
    as_type = lambda ts: [None if t is None else t.type for t in ts]  # noqa: E731
    return as_type(args_t), as_type(outs_t), as_type(aux_t)
