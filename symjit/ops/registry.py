"""The operator registry: one :class:`OpDef` record per operator.

Every rule of an operator sits in its record, side by side (as JAX's ``lax.py`` keeps them):
the parameter schema (defaults, parsing from MXNet's string attrs, validation), the argument,
auxiliary-state and output names, the shape and dtype rules, and the slots the compiler fills
(gradient as graph nodes, fusion pattern kind, scalar body).
``mx.sym.<Op>`` constructors are generated from these records.

A shape rule has the signature ``rule(p, in_shapes, aux_shapes) -> (in_shapes, out_shapes, aux_shapes)``.
It receives what is known (``None`` for an unknown shape), and returns what it can say about every
input, output and aux state (``None`` where it cannot say yet). The inference engine
(:mod:`symjit.symbol.infer`) compares what a rule returns with what was known and reports any
conflict naming the op, the node, the argument and both shapes, so rules stay short. A rule raises
:class:`RuleError` for errors it detects itself (wrong rank, bad parameter for this shape).
A dtype rule has the same signature over numpy dtypes.

Compiler slots (filled per record, used by :mod:`symjit.compiler`):

``grad(b, node, ograds) -> list``
    Reverse-mode rule. ``b`` is a :class:`symjit.compiler.graph.GraphBuilder` in the backward phase,
    ``node`` the forward :class:`~symjit.compiler.graph.OpNode` (``node.inputs``/``node.outputs`` are
    value ids, ``node.params`` parsed params, ``node.train`` the mode), ``ograds`` one gradient value
    id (or None) per output. Returns one value id or None per input (arguments then aux states).
    New nodes are added with ``b.add(op_name, [value ids], **raw_params) -> [output ids]`` (shapes and
    dtypes are inferred by the new op's own rules) — so gradients are graph nodes built from other
    ops (internal ``_backward_*`` ops where no composition of public ops is efficient).
Lowerings are not part of the record: they are rules keyed by (op, target) in :mod:`symjit.lower`,
with the facts the passes need on each target (epilogue, reduction epilogue, in-place pairs,
shape-only inputs, host calls). An elementwise op needs none: its ``body`` is lowered everywhere.
"""
from __future__ import annotations

import ast
import dataclasses
import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base import MXNetError, ParamError, np_dtype

__all__ = [
    "Kind", "Param", "OpDef", "RuleError", "REQUIRED", "register", "get_op", "find_op", "all_ops",
    "same_shape", "same_dtype", "Shape", "FLOAT_DTYPES", "either",
]

Shape = tuple[int, ...]
# the floating-point dtypes (float16 computed by the float32 kernels): OpDef.dtypes of float-only ops
FLOAT_DTYPES = ("float16", "float32", "float64")


def either(names: Sequence[str]) -> str:
    """``'float16, float32 or float64'``: a list of alternatives in a message.

    >>> either(("float32",)), either(("float16", "float32", "float64"))
    ('float32', 'float16, float32 or float64')
    """
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


class Kind(enum.IntEnum):
    """Fusion pattern kinds, ordered as TVM orders them (a higher kind fuses less)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    REDUCTION = 3
    OUT_ELEMWISE_FUSABLE = 4
    OPAQUE = 8


class RuleError(MXNetError, ValueError):
    """Raised by a shape/dtype rule; the engine adds the op, node and shapes to the message."""


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


def _literal(text: str) -> Any:
    text = text.strip()
    if text in ("None", "none", ""):
        return None
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    try:
        return ast.literal_eval(text)  # literals only: never executes anything
    except (ValueError, SyntaxError):
        return text


def _as_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer, float, np.floating)):
        raise ValueError(f"expected an integer, got {v!r}")
    if float(v) != int(v):
        raise ValueError(f"expected an integer, got {v!r}")
    return int(v)


def _parse_value(kind: str, value: Any) -> Any:
    if isinstance(value, str) and kind != "str":
        value = _literal(value)
    if value is None:
        return None
    if kind == "int":
        return _as_int(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"expected a number, got {value!r}")
        return float(value)
    if kind == "bool":
        if isinstance(value, (bool, np.bool_)) or value in (0, 1):
            return bool(value)
        raise ValueError(f"expected a boolean, got {value!r}")
    if kind == "str":
        return str(value)
    if kind == "shape":
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return (int(value),)
        if isinstance(value, (tuple, list)):
            return tuple(_as_int(v) for v in value)
        raise ValueError(f"expected a tuple of integers, got {value!r}")
    if kind == "floats":
        values = value if isinstance(value, (tuple, list)) else (value,)
        numbers = (int, float, np.integer, np.floating)
        if any(isinstance(v, bool) or not isinstance(v, numbers) for v in values):
            raise ValueError(f"expected a tuple of numbers, got {value!r}")
        return tuple(float(v) for v in values)
    if kind == "dtype":
        return np_dtype(value).name
    raise AssertionError(f"unknown param kind {kind}")


def _format_value(kind: str, value: Any) -> str:
    if value is None:
        return "None"
    if kind in ("shape", "floats"):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


@dataclasses.dataclass(frozen=True)
class Param:
    """One operator parameter: name, kind (int, float, bool, str, shape, floats (a tuple of
    numbers), dtype), default, checks.

    ``nullable`` allows ``None`` (MXNet's optional parameters); ``choices`` restricts a string;
    ``check`` is a predicate on the parsed value with ``check_msg`` describing what it wants.

    >>> Param('num_hidden', 'int', check=lambda v: v > 0, check_msg='> 0').parse('16')
    16
    """

    name: str
    kind: str
    default: Any = REQUIRED
    choices: tuple[str, ...] | None = None
    nullable: bool = False
    check: Callable[[Any], bool] | None = None
    check_msg: str = ""
    doc: str = ""

    def parse(self, value: Any, op: str = "") -> Any:
        """Parse a Python value or an MXNet attr string; raise ParamError naming op and param."""
        where = f"{op}: parameter '{self.name}'"
        try:
            parsed = _parse_value(self.kind, value)
        except (ValueError, MXNetError) as exc:
            raise ParamError(f"{where}: {exc}") from None
        if parsed is None:
            if not (self.nullable or self.default is None):
                raise ParamError(f"{where} must not be None")
            return None
        if self.choices is not None and parsed not in self.choices:
            raise ParamError(f"{where}: {parsed!r} is not one of {list(self.choices)}")
        if self.check is not None and not self.check(parsed):
            raise ParamError(f"{where}: {parsed!r} is invalid, expected {self.check_msg}")
        return parsed

    def format(self, value: Any) -> str:
        """The value as MXNet writes it in symbol JSON attrs."""
        return _format_value(self.kind, value)


@dataclasses.dataclass
class OpDef:
    """Everything about one operator. See the module docstring for the rule signatures.

    ``arguments``/``aux``/``outputs`` are tuples of names or functions of the parsed params
    (for ops whose input or output count depends on a parameter). ``visible_outputs`` gives how
    many outputs a symbol exposes (BatchNorm hides mean/var unless ``output_mean_var``).
    ``variadic`` names the param holding the number of positional inputs (``Concat``'s
    ``num_args``). ``hint`` is the name-manager prefix (``fullyconnected``).
    Compiler slots: ``grad`` (gradient rule building graph nodes), ``kind`` (fusion pattern),
    ``body`` (elementwise ops: ``body(params) -> (fn, consts)`` where ``fn`` is a plain
    module-level scalar function ``fn(*input_scalars, *consts) -> scalar`` using only arithmetic,
    comparisons, conditional expressions and the ``math`` module, and ``consts`` a tuple of Python
    numbers taken from the params; codegen wraps ``fn`` for ``numba.njit`` and for
    ``numba.cuda.jit(device=True)``, so each body is written once).
    ``dtypes`` names the dtypes every argument may have (None: any dtype its rules accept); both
    inference engines check it (:meth:`check_dtypes`) before the dtype rule runs.
    ``loss`` marks heads that supply their own head gradient. ``extra["ignores_unknown_params"]``
    marks the ops MXNet registers without a parameter parser (the broadcast binary family): a
    keyword argument they do not have is dropped, as MXNet drops it, instead of being an error.
    ``extra["reads_mode"]`` marks the ops whose rules read ``node.train`` (BatchNorm, Dropout,
    Custom, ...): a graph without them computes the same in training and inference passes, so an
    executor runs its inference passes with its training program (one compile, not two).
    ``expand`` makes a composite op: ``expand(b, inputs, params) -> output value ids`` appends
    other ops to the graph builder ``b`` when the forward graph is built (the symbol keeps the op
    as one node, as MXNet's JSON has it); its gradient and its lowerings on every target are those
    of the ops it expands to, so it needs neither ``grad`` nor ``body`` nor lowering rules.
    ``shape_partial`` is the rule ``Symbol.infer_shape``/``infer_shape_partial`` use where shapes
    may have unknown (0) dimensions: ``shape_partial(params, ins, outs, aux) -> (ins, outs, aux)``
    over partial shapes of the inputs *and* outputs (:mod:`symjit.ops.partial_shape`); ops with
    ``same_shape``/``unary_shape`` get the elementwise one, the others have ``shape`` run on
    complete inputs.
    """

    name: str
    params: Sequence[Param] = ()
    arguments: Sequence[str] | Callable[[dict], list[str]] = ("data",)
    aux: Sequence[str] | Callable[[dict], list[str]] = ()
    outputs: Sequence[str] | Callable[[dict], list[str]] = ("output",)
    visible_outputs: int | Callable[[dict], int] | None = None
    shape: Callable | None = None
    dtype: Callable | None = None
    dtypes: Sequence[str] | None = None
    check: Callable[[dict], None] | None = None
    variadic: str | None = None
    aliases: Sequence[str] = ()
    hint: str | None = None
    doc: str = ""
    # slots the compiler fills
    kind: Kind = Kind.OPAQUE
    grad: Callable | None = None
    body: Callable | None = None
    loss: bool = False
    expand: Callable | None = None
    shape_partial: Callable | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self._params = {p.name: p for p in self.params}
        if self.hint is None:
            self.hint = self.name.lower()

    # --- params -----------------------------------------------------------------------------
    def parse_params(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Parse and validate raw params (Python values or MXNet strings); fill defaults."""
        unknown = sorted(set(raw) - set(self._params))
        if unknown and not self.extra.get("ignores_unknown_params"):
            raise ParamError(f"{self.name}: unknown parameter(s) {unknown}; "
                             f"accepted: {sorted(self._params)}")
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name in raw:
                out[p.name] = p.parse(raw[p.name], self.name)
            elif p.default is REQUIRED:
                raise ParamError(f"{self.name}: required parameter '{p.name}' is missing")
            else:
                out[p.name] = p.default
        if self.check is not None:
            self.check(out)
        return out

    def format_params(self, params: dict[str, Any]) -> dict[str, str]:
        """Params as MXNet's string-valued JSON attrs (all of them, defaults included)."""
        return {p.name: p.format(params[p.name]) for p in self.params if p.name in params}

    def param(self, name: str) -> Param:
        return self._params[name]

    def expansion(self, params: dict) -> Callable | None:
        """The ``expand`` function a node with these params is built by: the op's own (a composite
        op), else ``extra['expand_if'] = (predicate, expand)`` when the predicate holds (an op whose
        kernels cover some params only: 3-D Convolution), else None (the op's own kernels)."""
        if self.expand is not None:
            return self.expand
        when = self.extra.get("expand_if")
        return when[1] if when is not None and when[0](params) else None

    # --- names ------------------------------------------------------------------------------
    def list_arguments(self, params: dict) -> list[str]:
        return list(self.arguments(params) if callable(self.arguments) else self.arguments)

    def list_aux(self, params: dict) -> list[str]:
        return list(self.aux(params) if callable(self.aux) else self.aux)

    def list_outputs(self, params: dict) -> list[str]:
        return list(self.outputs(params) if callable(self.outputs) else self.outputs)

    def check_dtypes(self, params: dict, ins: Sequence[np.dtype | None]) -> None:
        """RuleError naming the first argument whose known dtype is not one of :attr:`dtypes`."""
        if self.dtypes is None:
            return
        for name, dt in zip(self.list_arguments(params), ins):
            if dt is not None and np.dtype(dt).name not in self.dtypes:
                raise RuleError(f"argument '{name}' has dtype {np.dtype(dt).name}; {self.name} takes "
                                f"{either(self.dtypes)}")

    def num_visible(self, params: dict) -> int:
        if self.visible_outputs is None:
            return len(self.list_outputs(params))
        if callable(self.visible_outputs):
            return int(self.visible_outputs(params))
        return int(self.visible_outputs)


_REGISTRY: dict[str, OpDef] = {}
_ALIASES: dict[str, str] = {}


def register(op: OpDef) -> OpDef:
    """Add an op record (and its aliases) to the registry."""
    for name in (op.name, *op.aliases):
        if name in _REGISTRY or name in _ALIASES:
            raise MXNetError(f"operator {name!r} registered twice")
    _REGISTRY[op.name] = op
    for alias in op.aliases:
        _ALIASES[alias] = op.name
    return op


def find_op(name: str) -> OpDef | None:
    """The op record for a name or alias, or None."""
    name = _ALIASES.get(name, name)
    return _REGISTRY.get(name)


def get_op(name: str) -> OpDef:
    """The op record for a name or alias; raises MXNetError for an unknown operator."""
    op = find_op(name)
    if op is None:
        raise MXNetError(f"unknown operator {name!r}")
    return op


def all_ops() -> dict[str, OpDef]:
    """Every registered op by canonical name."""
    return dict(_REGISTRY)


def aliases() -> dict[str, str]:
    """alias -> canonical name."""
    return dict(_ALIASES)


# --- common rules -----------------------------------------------------------------------------
def same_shape(p: dict, ins: list, aux: list):
    """All inputs and the outputs share one shape (elementwise ops)."""
    known = next((s for s in ins if s is not None), None)
    n_out = 1
    return [known] * len(ins), [known] * n_out, list(aux)


def unary_shape(p: dict, ins: list, aux: list):
    """One input, one output of its shape (unary elementwise ops)."""
    return [ins[0]], [ins[0]], []


def same_dtype(p: dict, ins: list, aux: list, n_out: int = 1):
    """All inputs, outputs and aux states share the first known dtype (the default dtype rule,
    used when an op's ``dtype`` slot is None)."""
    known = next((d for d in list(ins) + list(aux) if d is not None), None)
    return [known] * len(ins), [known] * n_out, [known] * len(aux)
