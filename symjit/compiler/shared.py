"""Pipeline results shared by binds of one computation in one process.

A bind runs its symbol through the pipeline (:func:`~symjit.compiler.pipeline.compile_symbol`).
Binding the same computation again -- the same symbol (operators, parameters, names, attributes,
inputs), argument shapes and dtypes, gradient requests, mode, configuration and target, under
the same shape semantics -- runs the same passes to the same result, which costs milliseconds per
small graph and seconds for a long unrolled RNN. Code that binds many executors of a few
computations (a test sweeping ``grad_req`` combinations, ``Module`` rebinding, a finite-difference
check binding per perturbation) pays that every time. :func:`compile_shared` keeps the passes'
results (graphs, groups, memory plan, generated program) of the :data:`MAX_PROGRAMS` most recently
bound computations and hands a later bind of one of them a copy of its record, its module loaded
afresh (an import of a module already loaded: a dictionary lookup). The records are never
changed after the pipeline made them; each executor keeps its own module field, so a program one
executor purges (a cache entry numba could not load) is reloaded by the others on their own.

A symbol with a Custom operator is never shared: its Python class (registered by name) may be
registered again between two binds.

>>> import symjit as mx
>>> from symjit.config import Config
>>> y = mx.sym.exp(mx.sym.Variable('x'))
>>> cfg = Config(cache=False)
>>> a = compile_shared(y, {'x': (3,)}, {'x': 'float32'}, {}, False, cfg, load=False)
>>> b = compile_shared(y, {'x': (3,)}, {'x': 'float32'}, {}, False, cfg, load=False)
>>> a is b, a.program is b.program
(False, True)
"""
from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any

import numpy as np

from ..config import Config
from ..lower.target import Target, as_target
from ..symbol.symbol import Symbol, topo_order
from ..util import is_np_shape
from .cache import load_program
from .pipeline import Compiled, compile_symbol

__all__ = ["compile_shared", "symbol_key", "MAX_PROGRAMS", "clear_shared"]

MAX_PROGRAMS = 64
_SHARED: collections.OrderedDict[tuple, Compiled] = collections.OrderedDict()
_LOCK = threading.Lock()


def _plain(value: Any) -> bool:
    """Whether ``repr(value)`` tells it apart from any other value (no array, whose repr elides)."""
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str, np.generic))


def symbol_key(sym: Symbol) -> tuple | None:
    """The symbol's structure as a hashable value: each node's operator, name, parameters,
    attributes and inputs, in graph order, and the outputs; None for a symbol that is never
    shared (a Custom operator, a parameter value that is not plain data)."""
    nodes = topo_order(sym._outputs)
    index = {id(n): i for i, n in enumerate(nodes)}
    parts = []
    for n in nodes:
        if n.op is not None and n.op.name == "Custom":
            return None
        params = sorted(n.params.items())
        if not all(_plain(v) for _, v in params):
            return None
        parts.append((n.op.name if n.op is not None else None, n.name, repr(params),
                      tuple(sorted(n.attrs.items())), tuple((index[id(m)], k) for m, k in n.inputs)))
    return tuple(parts), tuple((index[id(n)], k) for n, k in sym._outputs)


def _key(sym: Symbol, shapes: dict, dtypes: dict, grad_req: dict, is_train: bool, cfg: Config,
         target: Target, monitor: bool, profile: bool) -> tuple | None:
    """What the pipeline's result depends on, or None for a symbol that is never shared."""
    structure = symbol_key(sym)
    if structure is None:
        return None
    return (structure, tuple(sorted((k, tuple(v)) for k, v in shapes.items())),
            tuple(sorted((k, np.dtype(v).str) for k, v in dtypes.items())),
            tuple(sorted(grad_req.items())), bool(is_train), cfg, target, monitor, profile,
            is_np_shape())


def compile_shared(sym: Symbol, shapes: dict[str, tuple], dtypes: dict[str, Any],
                   grad_req: dict[str, str], is_train: bool, cfg: Config,
                   target: Target | str | None = None, load: bool = True, monitor: bool = False,
                   profile: bool = False) -> Compiled:
    """:func:`~symjit.compiler.pipeline.compile_symbol`'s result, from the table when the same
    computation was compiled before in this process (see the module's documentation); always a
    record of its own, whose ``module`` the caller may set."""
    tgt = as_target(target)
    key = _key(sym, shapes, dtypes, grad_req, is_train, cfg, tgt, monitor, profile)
    with _LOCK:
        found = _SHARED.get(key) if key is not None else None
        if found is not None:
            _SHARED.move_to_end(key)
    if found is None:
        found = compile_symbol(sym, shapes, dtypes, grad_req, is_train, cfg, target=tgt, load=False,
                               monitor=monitor, profile=profile)
        if key is not None:
            with _LOCK:
                _SHARED[key] = found
                while len(_SHARED) > MAX_PROGRAMS:
                    _SHARED.popitem(last=False)
    out = dataclasses.replace(found, module=None)
    if load:
        out.module = load_program(out.program, out.target, cfg)
    return out


def clear_shared() -> None:
    """Forget every kept pipeline result."""
    with _LOCK:
        _SHARED.clear()
