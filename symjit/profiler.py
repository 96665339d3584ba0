"""``mx.profiler``: where a step's time goes, as a Chrome trace (``chrome://tracing``, Perfetto).

While the profiler runs (``set_state('run')``), symjit records complete events (``ph: 'X'``):

- ``kernel``: every kernel call of a bound executor, named by its fused group
  (``k<group> op1+op2``; ``profile_symbolic``). Executors run a *profiled program* meanwhile: the
  same kernels and memory plan, with each kernel called on its own so it can be timed (on a GPU
  each call is synchronized); outside profiling they run one call per phase, as before.
- ``custom``: each Custom op's Python code between kernels.
- ``imperative``: each ``mx.nd`` operator call (``profile_imperative``).
- ``compile``: each bind that compiles or loads a program, named by its symbol and mode.
- events of the user's :class:`Domain` objects (:class:`Task`, :class:`Frame`, :class:`Event`),
  :class:`Counter` values (``ph: 'C'``) and :class:`Marker` instants (``ph: 'i'``).

:func:`dump` writes ``{"traceEvents": [...], "displayTimeUnit": "ms"}`` to the configured file;
:func:`dumps` returns per-name statistics (count, total, min, max, average in ms) as a table or
JSON. The profiler is off by default and then costs one flag test per executor call.

>>> import json, os, tempfile, symjit as mx
>>> path = os.path.join(tempfile.mkdtemp(), 'trace.json')
>>> mx.profiler.set_config(filename=path, profile_all=True)
>>> mx.profiler.set_state('run')
>>> with mx.profiler.Task(mx.profiler.Domain('data'), 'load'):
...     pass
>>> mx.profiler.set_state('stop')
>>> mx.profiler.dump()
>>> [e['name'] for e in json.load(open(path))['traceEvents'] if e['ph'] == 'X']
['load']
"""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from .base import ParamError, write_atomic

__all__ = ["set_config", "set_state", "state", "pause", "resume", "dump", "dumps", "Domain", "Task",
           "Frame", "Event", "Counter", "Marker", "profiler_set_config", "profiler_set_state", "scope"]

_CONFIG_KEYS = {"filename", "profile_all", "profile_symbolic", "profile_imperative", "profile_memory",
                "profile_api", "aggregate_stats", "continuous_dump", "dump_period", "contiguous_dump",
                "profile_process"}


class _Profiler:
    """The process's profiler state (one per process, as MXNet's)."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {"filename": "profile.json", "profile_symbolic": True,
                                       "profile_imperative": True, "profile_memory": True,
                                       "profile_api": True, "aggregate_stats": False}
        self.running = False
        self.paused = False
        self.events: list[dict] = []
        self.lock = threading.Lock()
        self.t0 = time.perf_counter()

    def on(self, what: str) -> bool:
        return self.running and not self.paused and bool(self.config.get(what, True))

    def add(self, event: dict) -> None:
        with self.lock:
            self.events.append(event)

    def complete(self, name: str, cat: str, start: float, end: float, args: dict | None = None) -> None:
        event = {"name": name, "cat": cat, "ph": "X", "ts": round((start - self.t0) * 1e6, 3),
                 "dur": round((end - start) * 1e6, 3), "pid": os.getpid(), "tid": threading.get_ident()}
        if args:
            event["args"] = args
        self.add(event)


_P = _Profiler()


def active(what: str = "profile_symbolic") -> bool:
    """Whether events of kind ``what`` (a ``profile_*`` setting) are being recorded now."""
    return _P.running and not _P.paused and bool(_P.config.get(what, True))


def record(name: str, cat: str, start: float, end: float, args: dict | None = None) -> None:
    """Record a complete event from ``time.perf_counter()`` readings ``start`` and ``end``."""
    _P.complete(name, cat, start, end, args)


class scope:
    """``with profiler.scope(name, cat, what):`` records the block as one event when ``what`` is on."""

    def __init__(self, name: str, cat: str, what: str = "profile_api"):
        self.name, self.cat, self.what = name, cat, what

    def __enter__(self) -> scope:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if active(self.what):
            record(self.name, self.cat, self.start, time.perf_counter())


def set_config(**kwargs: Any) -> None:
    """Set profiler options: ``filename``, ``profile_all`` (turns on every ``profile_*``),
    ``profile_symbolic``, ``profile_imperative``, ``profile_memory``, ``profile_api``,
    ``aggregate_stats``, ``continuous_dump``, ``dump_period``."""
    unknown = sorted(set(kwargs) - _CONFIG_KEYS)
    if unknown:
        raise ParamError(f"profiler.set_config: unknown options {unknown}; known: {sorted(_CONFIG_KEYS)}")
    if kwargs.get("profile_all"):
        for key in ("profile_symbolic", "profile_imperative", "profile_memory", "profile_api"):
            kwargs.setdefault(key, True)
    if "filename" in kwargs and not isinstance(kwargs["filename"], (str, os.PathLike)):
        raise ParamError(f"profiler.set_config: filename must be a path, got {kwargs['filename']!r}")
    _P.config.update(kwargs)


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """MXNet's older form: ``mode`` ``'symbolic'`` or ``'all'``."""
    if mode not in ("symbolic", "all"):
        raise ParamError(f"profiler_set_config: mode must be 'symbolic' or 'all', got {mode!r}")
    set_config(filename=filename, profile_symbolic=True, profile_imperative=mode == "all",
               profile_api=mode == "all")


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """``'run'`` starts recording, ``'stop'`` stops it (the events stay until :func:`dump`)."""
    if state not in ("run", "stop"):
        raise ParamError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    _P.running, _P.paused = state == "run", False


profiler_set_state = set_state


def state() -> str:
    """``'run'`` or ``'stop'``."""
    return "run" if _P.running else "stop"


def pause(profile_process: str = "worker") -> None:
    """Stop recording until :func:`resume` (the state stays ``'run'``)."""
    _P.paused = True


def resume(profile_process: str = "worker") -> None:
    """Record again after :func:`pause`."""
    _P.paused = False


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the events recorded so far to the configured file as a Chrome trace; with
    ``finished`` the recorded events are then dropped."""
    with _P.lock:
        events = list(_P.events)
        if finished:
            _P.events.clear()
    doc = {"traceEvents": [{"name": "process_name", "ph": "M", "pid": os.getpid(),
                            "args": {"name": "symjit"}}] + events, "displayTimeUnit": "ms"}
    write_atomic(_P.config["filename"], json.dumps(doc).encode())


def _stats() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    with _P.lock:
        events = [e for e in _P.events if e["ph"] == "X"]
    for e in events:
        key = f"{e['cat']}:{e['name']}"
        ms = e["dur"] / 1e3
        s = out.setdefault(key, {"count": 0, "total": 0.0, "min": ms, "max": ms})
        s["count"] += 1
        s["total"] += ms
        s["min"], s["max"] = min(s["min"], ms), max(s["max"], ms)
    for s in out.values():
        s["avg"] = s["total"] / s["count"]
    return out


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total", ascending: bool = False) -> str:
    """Per-event-name statistics in milliseconds: a text table or JSON; ``reset`` drops the events."""
    if format not in ("table", "json"):
        raise ParamError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    if sort_by not in ("total", "avg", "min", "max", "count"):
        raise ParamError(f"profiler.dumps: sort_by must be total, avg, min, max or count, got {sort_by!r}")
    stats = _stats()
    if reset:
        with _P.lock:
            _P.events.clear()
    rows = sorted(stats.items(), key=lambda kv: kv[1][sort_by], reverse=not ascending)
    if format == "json":
        return json.dumps({name: s for name, s in rows}, indent=1)
    lines = ["Profile Statistics (ms)", f"{'Name':<60} {'Count':>7} {'Total':>11} {'Min':>9} {'Max':>9} "
             f"{'Avg':>9}"]
    lines += [f"{name[:60]:<60} {int(s['count']):>7} {s['total']:>11.3f} {s['min']:>9.3f} {s['max']:>9.3f} "
              f"{s['avg']:>9.3f}" for name, s in rows]
    return "\n".join(lines)


# -- user annotations ------------------------------------------------------------------------------
class Domain:
    """A category for the user's own events."""

    def __init__(self, name: str):
        self.name = str(name)

    def new_task(self, name: str) -> Task:
        return Task(self, name)

    def new_frame(self, name: str) -> Frame:
        return Frame(self, name)

    def new_counter(self, name: str, value: int | None = None) -> Counter:
        return Counter(self, name, value)

    def new_marker(self, name: str) -> Marker:
        return Marker(self, name)

    def __str__(self) -> str:
        return self.name


class Task:
    """A timed span: ``start()`` ... ``stop()`` (or ``with``) records one event of its domain."""

    def __init__(self, domain: Domain, name: str):
        self.domain, self.name = domain, str(name)
        self._start: float | None = None

    def start(self) -> None:
        self._start = time.perf_counter()

    def stop(self) -> None:
        if self._start is None:
            raise ParamError(f"profiler {type(self).__name__} '{self.name}': stop() without start()")
        if active("profile_api"):
            record(self.name, self.domain.name, self._start, time.perf_counter())
        self._start = None

    def __enter__(self) -> Task:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __str__(self) -> str:
        return self.name


class Frame(Task):
    """A timed span (a frame of the user's loop)."""


class Event(Task):
    """A timed span not tied to a domain (its category is ``'event'``)."""

    def __init__(self, name: str):
        super().__init__(Domain("event"), name)


class Counter:
    """A named value over time (``ph: 'C'`` events): ``set_value``, ``increment``, ``decrement``,
    ``+=`` and ``-=``."""

    def __init__(self, domain: Domain, name: str, value: int | None = None):
        self.domain, self.name, self.value = domain, str(name), 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value: int) -> None:
        self.value = value
        if active("profile_api"):
            _P.add({"name": self.name, "cat": self.domain.name, "ph": "C", "pid": os.getpid(),
                    "ts": round((time.perf_counter() - _P.t0) * 1e6, 3), "args": {self.name: value}})

    def increment(self, delta: int = 1) -> None:
        self.set_value(self.value + delta)

    def decrement(self, delta: int = 1) -> None:
        self.set_value(self.value - delta)

    def __iadd__(self, delta: int) -> Counter:
        self.increment(delta)
        return self

    def __isub__(self, delta: int) -> Counter:
        self.decrement(delta)
        return self


class Marker:
    """An instant (``ph: 'i'``) with scope ``'global'``, ``'process'`` or ``'thread'``."""

    def __init__(self, domain: Domain, name: str):
        self.domain, self.name = domain, str(name)

    def mark(self, scope: str = "process") -> None:
        if scope not in ("global", "process", "thread"):
            raise ParamError(f"profiler Marker.mark: scope must be global, process or thread, got {scope!r}")
        if active("profile_api"):
            _P.add({"name": self.name, "cat": self.domain.name, "ph": "i", "s": scope[0], "pid": os.getpid(),
                    "tid": threading.get_ident(), "ts": round((time.perf_counter() - _P.t0) * 1e6, 3)})
