"""Imperative calls' programs from one ahead-of-time entry per kernel cache.

An ``mx.nd`` call runs a one-operator program (:mod:`symjit.imperative`), compiled with numba and
loaded from its disk cache in a warm process, which then pays numba's import (~0.4 s) for calls
such as an initializer's draws or a metric's argmax before its first training step. So these
programs' functions go into an entry of their own, as the update kernels' do
(:class:`~symjit.compiler.aot.Kernels`): the registry ``aot/kernels-imperative-calls.json`` lists
every unit (a phase function, or a kernel call of a program whose kernels are called from the
host, with its argument types) the calls of earlier processes ran, and the entry holding all of them
serves later processes. A call whose units the entry lacks runs numba's module and records them;
when the process exits, the grown registry's entry is noted (``SYMJIT_AOT=auto``: the next process
builds it at its first call, waiting, together with any noted program entry; ``sync``: built at
once; ``background``: by a low-priority builder), unless the process compiled kernels, for a bound
program or for these calls (its next run notes it, as for programs: a test suite's processes,
sharing one cache, each compile something, and note nothing).

A process that records more than :data:`MAX_NEW_UNITS` units is a test suite or an exploration
rather than a script, and records no more; the registry holds at most :data:`MAX_UNITS`. The
entry's functions are numba's own kernels compiled ahead of time, so results are the same.

>>> import tempfile
>>> from symjit.config import Config
>>> CallEntries(Config(cache_dir=tempfile.mkdtemp(), aot="off")).enabled
False
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import json
import types
from typing import Any

from ..base import write_atomic
from ..config import Config
from . import aot

__all__ = ["CallEntries", "entries", "MAX_NEW_UNITS", "MAX_UNITS"]

MAX_NEW_UNITS = 32    # units one process records at most (more: not a script's few calls)
MAX_UNITS = 64        # units the registry holds at most (an entry's build: ~0.1 s a unit)
REGISTRY = "kernels-imperative-calls.json"   # read with the update kernels' registries (aot._noted_kernels)


class CallEntries:
    """The entry of imperative calls' programs for one kernel cache (``cfg.cache_dir``)."""

    def __init__(self, cfg: Config):
        self._cfg = cfg
        self.enabled = cfg.aot != "off" and cfg.cache
        self._registry = aot._aot_dir(cfg) / REGISTRY if self.enabled else None
        self._units: list[aot.Unit] = self._read() if self.enabled else []
        self._entry = aot.find(cfg, self._units) if self._units else None
        if self._entry is None and self._units and cfg.aot == "auto" \
                and aot._spec_path(cfg, aot.entry_name(self._units)).is_file():
            self._entry = aot._build_now(cfg, aot.entry_name(self._units), self._units)
        self._held = set(self._units) if self._entry is not None else set()
        self._new: set[aot.Unit] = set()
        self._full = False
        self._numba: list[Any] = []     # numba's modules of the calls the entry lacked

    def _read(self) -> list[aot.Unit]:
        try:
            units = json.loads(self._registry.read_text())["units"]    # ours: data only
        except (OSError, ValueError, KeyError, TypeError):
            return []
        return [aot._unit(u) for u in units]

    def module(self, compiled: Any, steps: dict[str, list]) -> Any:
        """An object whose attributes are the program's functions from the entry (a drawing
        kernel's call on numba's stream, see :func:`aot._shared_stream`) when the entry holds
        every unit of the program bound with ``steps`` (sample arrays of its calls' types); else
        None, the units recorded for the next entry (the caller loads numba's module)."""
        if not self.enabled or not aot._enabled(self._cfg, compiled.target):
            return None
        units = aot.program_units(compiled, steps)
        if not units or len(units) != sum(len(aot._segment_calls(compiled.target, s, p))
                                          for segs in steps.values() for s, p in segs):
            return None     # a threaded kernel or an argument without a description: numba's
        named = [(_export(u), *u[1:]) for u in units]
        if len({u[2] for u in named}) != len(named):
            return None     # a function called with arguments of two types: numba's dispatcher
        if self._entry is not None and self._held.issuperset(named):
            drawing = aot.random_kernels(compiled.program)
            fns = {}
            for (export, _, attr, _), plain in zip(named, units):
                fn = getattr(self._entry, export)
                if attr in drawing or any(k in drawing for k in _kernels(compiled, plain)):
                    fn = functools.partial(aot._shared_stream, self._entry, fn)
                fns[attr] = fn
            return types.SimpleNamespace(**fns)
        self._record(named)
        return None

    def ran_numba(self, module: Any) -> None:
        """Note that a call runs numba's ``module`` (the entry lacked it): at exit, a process whose
        such modules compiled a kernel (numba's cache missed) notes nothing."""
        if not self.enabled or self._full:
            return
        if len(self._numba) >= 4 * MAX_NEW_UNITS:
            self._full = True     # that many calls: not a script's few (and the list stays short)
            return
        self._numba.append(module)

    def _compiled_here(self) -> bool:
        for module in self._numba:
            for fn in vars(module).values():
                stats = getattr(fn, "stats", None)
                if stats is not None and hasattr(stats, "cache_misses") and sum(stats.cache_misses.values()):
                    return True
        return False

    def _record(self, units: list[aot.Unit]) -> None:
        new = set(units) - set(self._units) - self._new
        if not new or self._full:
            return
        if len(self._new) + len(new) > MAX_NEW_UNITS:
            self._full = True
            return
        if not self._new:
            atexit.register(self._note_at_exit)
        self._new |= new

    def _note_at_exit(self) -> None:
        if aot._cold[0] or not self._new or self._compiled_here():
            return      # a process that compiled kernels: its next run notes them
        units = sorted(set(self._read()) | set(self._units) | self._new)
        if len(units) > MAX_UNITS:
            return
        write_atomic(self._registry, json.dumps({"units": [list(u) for u in units]}))
        if self._cfg.aot == "sync":
            aot.request(self._cfg, units, wait=True)
        else:
            aot._exit_build(self._cfg, units, f"{aot.entry_name(units)} of imperative calls")


def _export(unit: aot.Unit) -> str:
    """A unit's export name, unique across programs: its own and a hash of what it calls."""
    export, module, attr, sig = unit
    key = json.dumps([module, attr, sig]).encode()
    return f"{export}__{hashlib.sha1(key).hexdigest()[:12]}"


def _kernels(compiled: Any, unit: aot.Unit) -> list[str]:
    """The kernel functions a unit's phase function runs (itself for a kernel call)."""
    for segs in compiled.program.segments.values():
        for seg in segs:
            if seg.name == unit[2]:
                return [fn for fn, *_ in seg.launches]
    return [unit[2]]


@functools.lru_cache(maxsize=4)
def entries(cfg: Config) -> CallEntries:
    """The process's :class:`CallEntries` of ``cfg``'s cache (one per configuration)."""
    return CallEntries(cfg)

