"""The interpreted tier: a small program's first passes run its kernels as plain Python; then it
compiles.

Compiling a program's kernels with numba costs 0.2-0.5 s a distinct kernel (and, in a new
process, ~0.75 s to import numba and register symjit's extensions), which is what binding a graph
of a few elementwise ops costs, while running its kernels on a few thousand elements takes
microseconds compiled and milliseconds as Python. So a program runs interpreted when

* its target can run its kernels as Python (:meth:`Target.interpret
  <symjit.lower.target.Target.interpret>`: the CPU, for kernels composing the operators' scalar
  bodies and the few hand-written kernels with Python forms, the reductions; not the GEMMs,
  convolutions, softmax, threaded loops or samplers' draws),
* every value it computes has at most :data:`INTERPRET_ELEMENTS` elements, and
* no ahead-of-time module serves it (:mod:`symjit.compiler.aot`) and it is not profiled,

until its interpreted passes (forward and backward) have taken :data:`INTERPRET_SECONDS` in all,
or it has run ``Config.interpret_calls`` forward passes when that is set
(``SYMJIT_INTERPRET_CALLS``); ``SYMJIT_INTERPRET=0`` turns the tier off. The next forward pass
compiles it in the calling thread, as a bind without the tier does, and it runs compiled from then
on. This is the ski-rental rule: an interpreted pass costs microseconds to milliseconds, a compile
0.2-0.5 s a distinct kernel, so a program stops paying the interpreter's rent once the rent
would have bought a good part of its compile, and no program loses more than
:data:`INTERPRET_SECONDS` to the interpreter. A program bound for a test, a quick check or one
notebook cell compiles nothing, a finite-difference gradient check on a few elements (two forward
passes an element) neither; a loop over a program pays for its compile once it has proved to be
a loop.

The results are the compiled program's up to float rounding (see
:mod:`symjit.lower.cpu.interpret`): float64 to the last bit (but numba's own ``gamma`` and
``lgamma``), float32 within a few float32 roundings of the values it is computed from.
A kernel that raises in Python where compiled code would not (``math.log(0.0)``, a Python float
divided by zero: numba gives inf or nan, numpy's error model) has its arrays put back as they
were and runs compiled instead, and the program compiles at its next forward pass; a data check
(``take`` with ``mode='raise'``) raises the same :class:`~symjit.base.MXNetError` either way.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import MXNetError
from ..config import Config

__all__ = ["Tier", "kernel_functions", "small", "INTERPRET_ELEMENTS", "INTERPRET_SECONDS"]

# The most elements a value of an interpreted program may have. Python runs a training pass of a
# few fused elementwise kernels at ~4-6 us an element (docs/performance.md, the tiny graphs
# benchmark): ~16 ms at this size, which still leaves a few passes before the budget below.
INTERPRET_ELEMENTS = 4096
# The time a program's interpreted passes may take in all before it compiles (less than one
# distinct kernel's compile, 0.2-0.5 s).
INTERPRET_SECONDS = 0.1

_IMPORT = re.compile(r"^from (\S+) import (\w+) as (\w+)$", re.M)


def small(compiled: Any) -> bool:
    """Whether every value of a program has at most :data:`INTERPRET_ELEMENTS` elements (an
    argument no operator reads does not count)."""
    g = compiled.graph
    read = {vid for op in g.ops for vid in op.inputs}
    for vid, v in g.values.items():
        if v.kind in ("arg", "aux") and vid not in read:
            continue
        n = 1
        for d in v.shape:
            n *= d
        if n > INTERPRET_ELEMENTS:
            return False
    return True


def kernel_functions(compiled: Any) -> dict[str, Callable] | None:
    """Each kernel function a program calls (its name in the program's module) as plain Python,
    or None when some kernel cannot run so (:meth:`Target.interpret`)."""
    program, target = compiled.program, compiled.target
    if not target.kernel_modules or program.host_args:
        return None
    imported = {alias: (module, name) for module, name, alias in _IMPORT.findall(program.module_source)}
    fns: dict[str, Callable] = {}
    for segments in program.segments.values():
        for seg in segments:
            for fn, _, _ in (() if seg.kind == "host" else seg.launches):
                if fn in fns:
                    continue
                module, name = imported.get(fn, (None, None))
                if name == "KERNEL":
                    source = program.kernel_modules.get(module)
                    fns[fn] = target.interpret(source) if source is not None else None
                else:    # a building block the program calls itself
                    fns[fn] = target.interpret_call(module, name) if module is not None else None
                if fns[fn] is None:
                    return None
    return fns


class _Call:
    """One kernel call run as Python; where Python raises and compiled code would not, its arrays
    are restored and the compiled kernel (``compiled(name)``) runs instead."""

    __slots__ = ("fn", "name", "args", "compiled", "fell_back")

    def __init__(self, fn: Callable, name: str, args: tuple, compiled: Callable[[str], Callable],
                 fell_back: Callable[[], None]):
        self.fn, self.name, self.args = fn, name, args
        self.compiled, self.fell_back = compiled, fell_back

    def __call__(self) -> None:
        arrays = [a for a in self.args if isinstance(a, np.ndarray)]
        saved = [a.copy() for a in arrays]   # small arrays: a few microseconds
        try:
            with np.errstate(all="ignore"):   # numba's error model: inf/nan, no warnings
                self.fn(*self.args)
            return
        except MXNetError as exc:   # a data check: the compiled kernel raises the same
            raise exc.with_traceback(None) from None   # without the generated code's frames
        except Exception:   # noqa: BLE001 - Python's math raising where compiled code goes on
            pass
        for a, s in zip(arrays, saved):
            a[...] = s
        self.fell_back()
        self.compiled(self.name)(*self.args)


class Tier:
    """Which programs of one executor run interpreted, and for how many more forward passes
    (keyed by the executor's program modes)."""

    def __init__(self, cfg: Config):
        self.on = cfg.interpret and cfg.interpret_calls != 0
        self.calls = cfg.interpret_calls   # None: the time budget alone
        self.seconds = INTERPRET_SECONDS
        self._left: dict[str, tuple[float, float]] = {}   # mode -> (passes, seconds) left
        self._fns: dict[str, dict[str, Callable]] = {}
        self._done: set[str] = set()
        self.switches = 0   # programs that ran interpreted and compile from now on

    def start(self, mode: str, compiled: Any) -> bool:
        """Run the program of ``mode`` interpreted if it can be (see the module docstring);
        whether it does. A program runs interpreted once at most."""
        if mode in self._fns:
            return True
        if mode in self._done or not self.on or mode.endswith("_prof") or not small(compiled):
            return False
        fns = kernel_functions(compiled)
        self._done.add(mode)
        if fns is None:
            return False
        self._fns[mode] = fns
        self._left[mode] = (float("inf") if self.calls is None else self.calls, self.seconds)
        return True

    def active(self, mode: str) -> bool:
        """Whether the program of ``mode`` runs interpreted now."""
        return mode in self._fns

    def spent(self, mode: str) -> bool:
        """Whether the program of ``mode`` has run its interpreted passes (or fell back to
        compiled code): it compiles before its next forward pass."""
        return mode in self._fns and min(self._left[mode]) <= 0

    def ran(self, mode: str, phase: str, seconds: float) -> None:
        """Count a pass of ``mode`` that took ``seconds`` (a forward pass counts as a call)."""
        if mode in self._left:
            calls, left = self._left[mode]
            self._left[mode] = (calls - (phase == "forward"), left - seconds)

    def stop(self, mode: str) -> None:
        """From now on ``mode`` runs compiled."""
        self.switches += mode in self._fns
        self._fns.pop(mode, None)
        self._left.pop(mode, None)

    def prepare_calls(self, mode: str, compiled: Any, steps: list,
                      kernel: Callable[[str], Callable]) -> list[Callable[[], Any]]:
        """Each segment's call with its bound buffers (``steps``: the executor's bound phase),
        its kernels run as Python; ``kernel(name)`` is the compiled kernel of that name (loaded
        only if some call falls back to it)."""
        fns = self._fns[mode]

        def fell_back() -> None:
            if mode in self._left:
                self._left[mode] = (0, 0.0)

        def one(seg: Any, payload: Any) -> Callable[[], Any]:
            if seg.kind == "host":
                return payload
            calls = [_Call(fns[fn], fn, args, kernel, fell_back)
                     for fn, args in compiled.target.bound_calls(seg.launches, dict(zip(seg.vids, payload)))]
            if len(calls) == 1:
                return calls[0]

            def run() -> None:
                for call in calls:
                    call()
            return run
        return [one(seg, payload) for seg, payload in steps]
