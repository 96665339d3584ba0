"""A compiled program's forward bound to an arena of its own, its arguments' and outputs' buffers
filled in per call: what an imperative operator call runs (:mod:`symjit.imperative`, one operator)
and what the lazy engine runs for a queue of calls (:mod:`symjit.lazy`).

>>> import numpy as np, symjit as mx
>>> from symjit.compiler.pipeline import compile_symbol
>>> from symjit.config import Config
>>> x = mx.sym.Variable('x')
>>> c = compile_symbol(x * 2, {'x': (2,)}, {'x': 'float32'}, {}, False, Config(cache=False))
>>> out = np.empty(2, np.float32)
>>> BoundProgram(c, ['x'], mx.cpu(), 'twice').run([np.ones(2, np.float32), out]); out.tolist()
[2.0, 2.0]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import MXNetError
from .compiler import aot_calls
from .compiler.binding import bind_phases, value_arrays
from .compiler.cache import load_program
from .config import Config
from .context import Context
from .ndarray import storage

__all__ = ["BoundProgram"]


class _Slot:
    """Where a program argument comes from at call time: input/output buffer ``index`` (seen
    with ``shape`` when the plan made the value a view of it)."""

    __slots__ = ("index", "shape")

    def __init__(self, index: int, shape: tuple | None = None):
        self.index, self.shape = index, shape

    def reshape(self, shape: tuple) -> _Slot:
        return _Slot(self.index, tuple(shape))


class BoundProgram:
    """A compiled program's forward bound to a private arena: the buffers of its arguments
    (variables named ``names``, in that order) and of its outputs are filled in per call
    (:meth:`run`). ``where`` names it in errors. A program compiled without loading its module
    (``compile_symbol(..., load=False)``) takes its functions from the imperative calls'
    ahead-of-time entry when it holds them (:mod:`symjit.compiler.aot_calls`: no numba in the
    process), else from numba's module, as ``cfg`` says. ``arena``: a buffer of the plan's size
    to carve the temporaries from (one made here when None), such as the arena of an executor of
    the same compiled program that never runs at the same time."""

    def __init__(self, compiled: Any, names: list[str], ctx: Context, where: str,
                 cfg: Config | None = None, arena: Any = None):
        self.compiled, self.ctx = compiled, ctx
        g = compiled.graph
        self.outputs = [(g.values[v].shape, g.values[v].dtype) for v in g.outputs]
        index = {n: i for i, n in enumerate(names)}
        n_in = len(names)
        metas: dict[int, tuple] = {}    # each slot's value: (shape, dtype)

        def external(vid: int, v: Any) -> Any:
            if v.kind == "out":
                slot = _Slot(n_in + g.outputs.index(vid))
            elif v.kind in ("arg", "aux"):
                slot = _Slot(index[v.ref])
            else:
                raise MXNetError(f"{where}: imperative call needs a '{v.kind}' buffer")
            metas[slot.index] = (v.shape, v.dtype)
            return slot

        if any(seg.kind == "host" for seg in compiled.program.segments.get("forward", [])):
            raise MXNetError(f"{where}: an operator that runs Python code (Custom) cannot be "
                             "called imperatively yet")
        if arena is None:
            arena = storage.arena(compiled.plan.planned_bytes, ctx)
        phases = bind_phases(compiled, value_arrays(compiled, arena, external), storage.stream(ctx))
        self.steps = []
        target = ctx.device.target
        module = compiled.module
        if module is None:
            module = self._module(phases.get("forward", []), metas, cfg or Config.from_env())
        for seg, payload in phases.get("forward", []):
            fills = [(i, s) for i, s in enumerate(payload) if isinstance(s, _Slot)]
            if seg.kind == "calls":     # a big program: its kernels called one by one from here
                fn = _host_calls(module, target, seg, len(payload) - len(seg.vids))
            else:
                fn = getattr(module, seg.name)
            self.steps.append((fn, list(payload), fills))

    def _module(self, forward: list, metas: dict, cfg: Config) -> Any:
        """The program's functions (see the class): the entry's, or numba's module loaded."""
        def sample(a: Any) -> Any:      # an array of the type the call will pass there
            if not isinstance(a, _Slot):
                return a
            shape, dtype = metas[a.index]
            return np.empty(shape if a.shape is None else a.shape, dtype)
        steps = {"forward": [(seg, [sample(a) for a in payload]) for seg, payload in forward]}
        entries = aot_calls.entries(cfg)
        module = entries.module(self.compiled, steps)
        if module is None:
            module = self.compiled.module = load_program(self.compiled.program, self.compiled.target, cfg)
            entries.ran_numba(module)
        return module

    def run(self, buffers: list) -> None:
        """Call the program with ``buffers``: the inputs' storage, then the outputs'."""
        with storage.device_scope(self.ctx):
            for fn, template, fills in self.steps:
                args = list(template)
                for i, s in fills:
                    buf = buffers[s.index]
                    args[i] = buf if s.shape is None else buf.reshape(s.shape)
                fn(*args)


def _host_calls(module: Any, target: Any, seg: Any, lead: int) -> Any:
    """A function running a ``calls`` segment's kernels on the arguments of this call."""
    def run(*args: Any) -> None:
        for fn, call_args in target.prepare_calls(module, seg.launches, dict(zip(seg.vids, args[lead:]))):
            fn(*call_args)
    return run
