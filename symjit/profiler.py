"""``mx.profiler``: where a step's time goes, as a Chrome trace (``chrome://tracing``, Perfetto).

While the profiler runs (``set_state('run')``), symjit records complete events (``ph: 'X'``):

- ``kernel``: every kernel call of a bound executor, named by its fused group
  (``k<group> op1+op2``; ``profile_symbolic``). Executors run a *profiled program* meanwhile: the
  same kernels and memory plan, with each kernel called on its own so it can be timed (on a GPU
  each call is synchronized); outside profiling they run one call per phase, as before.
- ``Custom Operator``: each Custom op's Python code (``<op_type>::pure_python``, its backward
  ``_backward_<op_type>::pure_python``) and the operator calls it makes (``<op_type>::<op>``).
- ``operator``: each ``mx.nd`` operator call, named by its operator (``profile_imperative``;
  arithmetic with a number by MXNet's scalar operator, ``_plus_scalar``).
- ``compile``: each bind that compiles or loads a program, named by its symbol and mode.
- events of the user's :class:`Domain` objects (:class:`Task`, :class:`Frame`, :class:`Event`),
  :class:`Counter` values (``ph: 'C'``) and :class:`Marker` instants (``ph: 'i'``).

:func:`dump` writes ``{"traceEvents": [...], "displayTimeUnit": "ms"}`` to the configured file.
With ``set_config(aggregate_stats=True)`` each timed event is also added to per-category, per-name
statistics that :func:`dumps` returns in MXNet's layout (a table, or JSON
``{"Time": {category: {name: {"Count", "Total", "Min", "Max", "Avg"}}}, "Memory": {...},
"Unit": {"Time": "ms", "Memory": "kB"}}``). The profiler is off by default and then costs one flag
test per executor call.

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
        self.stats: dict[str, dict[str, list[float]]] = {}   # category -> name -> [count, total, min, max]
        self.local = threading.local()                        # .custom: the Custom op running (a stack)
        self.lock = threading.Lock()
        self.t0 = time.perf_counter()

    def on(self, what: str) -> bool:
        return self.running and not self.paused and bool(self.config.get(what, True))

    def add(self, event: dict) -> None:
        with self.lock:
            self.events.append(event)
            if event["ph"] == "X" and self.config.get("aggregate_stats"):
                ms = event["dur"] / 1e3
                s = self.stats.setdefault(event["cat"], {}).setdefault(event["name"], [0, 0.0, ms, ms])
                s[0] += 1
                s[1] += ms
                s[2], s[3] = min(s[2], ms), max(s[3], ms)

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


CUSTOM = "Custom Operator"


def record_op(op: str, start: float, end: float) -> None:
    """Record an operator call: category ``operator``, or inside a Custom op's Python code
    ``Custom Operator`` named ``<op_type>::<op>``."""
    running = getattr(_P.local, "custom", None)
    if running:
        _P.complete(f"{running[-1]}::{op}", CUSTOM, start, end)
    else:
        _P.complete(op, "operator", start, end)


class custom_op:
    """``with profiler.custom_op(op_type, backward):`` runs a Custom op's Python code: recorded as
    ``<op_type>::pure_python`` (``_backward_<op_type>::pure_python``) in ``Custom Operator`` while
    symbolic or imperative profiling is on; operator calls inside are named after it."""

    def __init__(self, op_type: str, backward: bool = False):
        self.name = f"_backward_{op_type}" if backward else str(op_type)

    def __enter__(self) -> custom_op:
        stack = getattr(_P.local, "custom", None)
        if stack is None:
            stack = _P.local.custom = []
        stack.append(self.name)
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        _P.local.custom.pop()
        if active("profile_symbolic") or active("profile_imperative"):
            _P.complete(f"{self.name}::pure_python", CUSTOM, self.start, time.perf_counter())


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


_FIELDS = ("Count", "Total", "Min", "Max", "Avg")
_SORT = {"count": 0, "total": 1, "min": 2, "max": 3, "avg": 4}


def _rows(names: dict[str, list[float]], sort_by: str, ascending: bool) -> list[tuple[str, tuple]]:
    """``(name, (count, total, min, max, avg))`` per name, ordered by ``sort_by`` (ties by name)."""
    rows = [(name, (int(c), t, lo, hi, t / c)) for name, (c, t, lo, hi) in names.items()]
    rows.sort(key=lambda r: r[0])
    rows.sort(key=lambda r: r[1][_SORT[sort_by]], reverse=not ascending)
    return rows


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total", ascending: bool = False) -> str:
    """The aggregate statistics (``set_config(aggregate_stats=True)``) in MXNet's layout: per
    category (``kernel``, ``operator``, ``Custom Operator``, ``compile``, a user's domain), per
    event name its Count and Total/Min/Max/Avg milliseconds, each category's names ordered by
    ``sort_by`` ('total', 'avg', 'min', 'max', 'count'), largest first unless ``ascending``;
    ``format`` 'table' or 'json'; ``reset`` then clears the statistics (not the trace's events).

    >>> import json, symjit as mx
    >>> mx.profiler.set_config(aggregate_stats=True, profile_api=True)
    >>> _ = mx.profiler.dumps(reset=True)
    >>> mx.profiler.set_state('run')
    >>> with mx.profiler.Task(mx.profiler.Domain('data'), 'load'):
    ...     pass
    >>> mx.profiler.set_state('stop')
    >>> doc = json.loads(mx.profiler.dumps(format='json', reset=True))
    >>> sorted(doc), doc['Time']['data']['load']['Count'], doc['Unit']['Time']
    (['Memory', 'Time', 'Unit'], 1, 'ms')
    >>> mx.profiler.set_config(aggregate_stats=False)
    """
    if format not in ("table", "json"):
        raise ParamError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    if sort_by not in _SORT:
        raise ParamError(f"profiler.dumps: sort_by must be total, avg, min, max or count, got {sort_by!r}")
    if not isinstance(ascending, bool) or not isinstance(reset, bool):
        raise ParamError(f"profiler.dumps: reset and ascending must be True or False, got "
                         f"reset={reset!r}, ascending={ascending!r}")
    with _P.lock:
        stats = {cat: {name: list(s) for name, s in names.items()} for cat, names in _P.stats.items()}
        if reset:
            _P.stats.clear()
    cats = [(cat, _rows(stats[cat], sort_by, ascending)) for cat in sorted(stats)]
    if format == "json":
        time_ = {cat: {name: dict(zip(_FIELDS, (v[0],) + tuple(round(x, 6) for x in v[1:])))
                       for name, v in rows} for cat, rows in cats}
        return json.dumps({"Time": time_, "Memory": {}, "Unit": {"Time": "ms", "Memory": "kB"}}, indent=4)
    width = max([25] + [len(name) + 1 for _, rows in cats for name, _ in rows])
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    for cat, rows in cats:
        lines += [cat, "=================",
                  f"{'Name':<{width}}{'Total Count':>16} {'Time (ms)':>16} {'Min Time (ms)':>16} "
                  f"{'Max Time (ms)':>16} {'Avg Time (ms)':>16}",
                  f"{'----':<{width}}{'-----------':>16} {'---------':>16} {'-------------':>16} "
                  f"{'-------------':>16} {'-------------':>16}"]
        lines += [f"{name:<{width}}{v[0]:>16} " + " ".join(f"{x:>16.4f}" for x in v[1:]) for name, v in rows]
        lines.append("")
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
