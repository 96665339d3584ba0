"""Program functions compiled once a program has proved to be run often.

A CPU program's phase is a few compiled program functions, each calling its step's kernels
(``Segment`` of kind ``njit``, :mod:`symjit.compiler.codegen.generate`), so that a step pays one
dispatch instead of one per kernel. numba links every kernel a program function calls into it and
optimises the whole again: 1-3 s a program function on our machines, as much as its kernels, to
save ~1-2 us per kernel call per pass. That pays back over a long loop, and numba's disk cache
keeps it for every later process; a program bound for a test, a check or a notebook cell, run a
few times, never gets it back. MXNet's operator tests bind hundreds of such graphs, each with new
shapes (``test_stn``'s 256 binds of a convolution, FullyConnected and SpatialTransformer graph:
95 s, nearly all of it program functions).

So a bind compiles (or loads) every kernel, and only the program functions numba's cache holds
already; a step whose program function is not cached calls its kernels from the host, as a
``calls`` segment does, with the same kernels on the same buffers (the same results, bit for bit),
until one of the program's phases has run ``Config.program_runs`` times (``SYMJIT_PROGRAM_RUNS``;
0 compiles them at the bind, as before). Then the next pass compiles the program's missing program
functions (in the compile workers, :mod:`symjit.compiler.workers`) and runs them from then on. This
is the ski-rental rule of the interpreted tier (:mod:`symjit.compiler.tier`) one level up: a loop
pays for its program functions once it is a loop, and only once per machine.

>>> from symjit.config import Config
>>> t = ProgramTier(Config(program_runs=2))
>>> t.defer("train", {"forward_0", "backward_1"})
>>> "forward_0" in t.deferred("train"), t.ran("train"), t.ran("train")
(True, False, True)
>>> t.compiled("train"); t.deferred("train")
set()
"""
from __future__ import annotations

from ..config import Config

__all__ = ["ProgramTier"]


class ProgramTier:
    """Which program functions of an executor's programs wait to be compiled (by segment name,
    per program mode) and how many passes each program has run."""

    def __init__(self, cfg: Config):
        self.runs = cfg.program_runs
        self._deferred: dict[str, set[str]] = {}
        self._passes: dict[str, int] = {}

    @property
    def on(self) -> bool:
        """Whether binds leave uncached program functions for later."""
        return self.runs > 0

    def defer(self, mode: str, names: set[str]) -> None:
        """The program functions ``names`` of program ``mode`` are not compiled yet."""
        if names:
            self._deferred[mode] = set(names)
            self._passes[mode] = 0

    def deferred(self, mode: str) -> set[str]:
        """The program functions of ``mode`` whose steps call their kernels from the host."""
        return self._deferred.get(mode, set())

    def ran(self, mode: str) -> bool:
        """Count a pass of program ``mode``; True when it has run often enough to compile its
        deferred program functions."""
        if mode not in self._deferred:
            return False
        self._passes[mode] += 1
        return self._passes[mode] >= self.runs

    def compiled(self, mode: str) -> None:
        """The deferred program functions of ``mode`` are compiled."""
        self._deferred.pop(mode, None)
        self._passes.pop(mode, None)
