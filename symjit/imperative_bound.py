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

import time
from typing import Any

import numpy as np

from .base import MXNetError
from .compiler import aot, aot_calls, workers
from .compiler.binding import bind_phases, value_arrays
from .compiler.cache import load_program
from .config import Config
from .context import Context
from .ndarray import storage

__all__ = ["BoundProgram", "HOSTED_SECONDS"]

HOSTED_SECONDS = 1.0
"""The time a bound program's runs take, calling the kernels of its uncached program functions
from the host, before those compile (:meth:`BoundProgram.run`): about what numba takes to link a
few kernels into one program function."""


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
        forward = phases.get("forward", [])
        self.steps = []
        self._metas = metas
        target = ctx.device.target
        cfg = cfg or Config.from_env()
        module = compiled.module
        if module is None:
            module = self._module(forward, cfg)
        # program functions numba does not hold yet wait for program_runs passes (see run)
        self._later: list[tuple[int, str]] = []
        self._passes, self._runs, self._fns, self._spent = 0, cfg.program_runs, module, 0.0
        numba_module = not isinstance(module, aot.Loaded)
        for seg, payload in forward:
            fills = [(i, s) for i, s in enumerate(payload) if isinstance(s, _Slot)]
            if seg.kind == "calls":     # a big program: its kernels called one by one from here
                fn = _host_calls(module, target, seg, len(payload) - len(seg.vids))
            elif numba_module and self._runs > 0 and not self._cached(target, module, seg.name, payload):
                fn = _host_calls(module, target, seg, 0)
                self._later.append((len(self.steps), seg.name))
            else:
                fn = getattr(module, seg.name)
            self.steps.append((fn, list(payload), fills))

    def _sample(self, a: Any) -> Any:
        """An array of the type a call will pass where ``a`` is (a buffer, or a slot)."""
        if not isinstance(a, _Slot):
            return a
        shape, dtype = self._metas[a.index]
        return np.empty(shape if a.shape is None else a.shape, dtype)

    def _cached(self, target: Any, module: Any, name: str, payload: list) -> bool:
        """Whether numba holds program function ``name`` for this call's types (or the target
        gives no signature to ask with)."""
        sig = target.signature([self._sample(a) for a in payload])
        return sig is None or workers.is_cached(getattr(module, name), sig)

    def _module(self, forward: list, cfg: Config) -> Any:
        """The program's functions (see the class): the entry's, or numba's module loaded."""
        steps = {"forward": [(seg, [self._sample(a) for a in payload]) for seg, payload in forward]}
        entries = aot_calls.entries(cfg)
        module = entries.module(self.compiled, steps)
        if module is None:
            module = self.compiled.module = load_program(self.compiled.program, self.compiled.target, cfg)
            entries.ran_numba(module)
        return module

    def run(self, buffers: list) -> None:
        """Call the program with ``buffers``: the inputs' storage, then the outputs'. A step whose
        program function numba held neither in memory nor in its disk cache at the bind calls its
        kernels from the host, the same kernels on the same buffers, until the program has run
        ``Config.program_runs`` times (``SYMJIT_PROGRAM_RUNS``) and those runs (but the first,
        which compiles the kernels) have taken :data:`HOSTED_SECONDS`; the next call compiles it
        (:mod:`symjit.compiler.program_tier`). A program function saves ~1-2 us per kernel call,
        and numba takes 1-5 s to link its kernels into it again: the queues and recorded graphs
        that tests and short scripts run hundreds of times on small arrays never pay that, a
        training loop's step does once it has run for a second."""
        steps = self.steps   # first: an imperative call binds its program at its first use
        if not self._later:
            self._run(steps, buffers)
            return
        if self._passes > self._runs and self._spent >= HOSTED_SECONDS:
            for k, name in self._later:
                _, template, fills = steps[k]
                steps[k] = (getattr(self._fns, name), template, fills)
            self._later = []
            self._run(steps, buffers)
            return
        start = time.perf_counter()
        self._run(steps, buffers)
        if self._passes:     # the first pass compiles or loads the kernels: not counted
            self._spent += time.perf_counter() - start
        self._passes += 1

    def _run(self, steps: list, buffers: list) -> None:
        with storage.device_scope(self.ctx):
            for fn, template, fills in steps:
                args = list(template)
                for i, s in fills:
                    buf = buffers[s.index]
                    args[i] = buf if s.shape is None else buf.reshape(s.shape)
                fn(*args)


def _host_calls(module: Any, target: Any, seg: Any, lead: int) -> Any:
    """A function running a segment's kernels, one by one, on the arguments of this call (its
    arrays from ``lead`` on; an ``njit`` segment's program function takes its arrays first)."""
    n = len(seg.vids)

    def run(*args: Any) -> None:
        arrays = dict(zip(seg.vids, args[lead:lead + n]))
        for fn, call_args in target.prepare_calls(module, seg.launches, arrays):
            fn(*call_args)
    return run
