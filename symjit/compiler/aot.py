"""Ahead-of-time modules: a warm process runs a bind's compiled code without importing numba.

numba's own cache still needs numba in the process: ``import numba``, its target's registries and
the ``scipy.linalg`` import they make cost ~0.4 s before the first cached kernel runs, which is
most of a warm bind and of a small training program's process. So once a program's kernels are in
the kernel cache, a builder process (:mod:`symjit.compiler.aot_build`, started by :func:`_start`)
compiles the functions the executor calls for that bind into one CPython extension module with numba's
ahead-of-time compiler (``numba.pycc``, which needs a C compiler), stored in the cache beside the
kernels: every phase function, and every kernel call of a phase whose kernels are called one by one
from the host. A later process that binds the same program on arrays of the same types imports the
module and calls its functions instead; it never imports numba. The same holds for the optimizers'
update kernels (:class:`Kernels`).

A *unit* is one exported function: ``(export name, module, attribute, argument types)``, where the
module is a generated one of the kernel cache or an importable one (``symjit.kernels.cpu.optim``),
and each exported function calls that module's compiled function, which keeps its own options
(``error_model``, ``fastmath``). Argument types are read from the call's arguments without numba
(:func:`arg_type`: an array's dtype, ndim, layout, writeability and alignment, what numba's
``typeof`` tells apart; a scalar's type). An entry is named by a hash of its units, so it is only
ever loaded for exactly the argument types it was built for (pycc's wrappers do not check the
types they are given), and by symjit's code, the numba, numpy and Python versions and the processor
(entries use its instruction set, as numba's jit does). The wrappers release the GIL around the
call, as numba's ``nogil=True`` dispatchers do.

When entries are built is ``Config.aot`` (``SYMJIT_AOT``); at most one builder works on an entry
at a time (a lock file naming the process the build depends on):

* ``auto`` (the default): entries are loaded when present. When the process exits, the entries it
  would want are noted as specs in the cache (``<name>.spec.json``): those of programs whose bind
  found every compiled function in numba's disk cache (compiled before, so worth keeping; for a
  process that bound at most :data:`AUTO_MAX_PROGRAMS` such programs, a training script rather
  than a test suite, and compiled none), and the update kernels' entry when the process called
  them with argument types it lacks. The next process binding a noted program builds its entry at
  the bind, waiting, in one builder with the update kernels' noted entry (:func:`_build_now`),
  before it would import numba, then loads it: a program's third run starts from its entry, and
  no process outlives the program. ``symjit aot build`` (:func:`build_pending`) builds every noted
  entry in the foreground;
* ``sync``: every bind that finds no entry builds one and waits for it (tests, benchmarks);
* ``background``: what ``auto`` notes is built, when the process exits, by builders at low priority
  (``os.nice``) that outlive the process (an explicit choice: they use the machine for minutes);
* ``off``: entries are neither built nor loaded.

A builder the process waits for (``auto``, ``sync``, ``symjit aot build``) follows a
:class:`~symjit.compiler.lifeline.Lifeline`: it ends when the process does, however it ends.

The CPU's threaded kernels (BatchNorm, pooling and the convolutions on big arrays, and big
generated loops) are serial code run in parts on the host's threads (:mod:`symjit.parts`), which
entries hold like any other (no kernel uses numba's ``parallel=True``, which pycc cannot compile).
An entry the builder could not
make (no C compiler, say) records why, logged once per process (``symjit`` logger); binds then use
numba's cache as before. An entry whose shared object does not match its recorded hash (half-written, corrupt)
is deleted and never loaded.

Kernels that draw from numba's generator (the samplers' seeds, Dropout's CPU masks) run inside the
entry, but pycc links its own copy of numba's generator into every entry, which
``mx.random.seed`` does not reach. So each entry exports :data:`RANDOM_STATE` (the address of its
generator's state for the calling thread), and a call of such a kernel from the entry is run
between two state copies (:func:`_shared_stream`): numba's generator's state into the entry's
before, the entry's back after. The draws then continue the one stream numba's kernels draw from,
and a seeded program gives the numbers it gives from numba's kernels. A process that has not
imported numba has not seeded the stream (seeding imports it): its entries draw from their own
generators, unseeded as numba's would be, without importing numba.
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..base import write_atomic
from ..config import Config
from ..threads import import_scipy_blas
from .lifeline import Lifeline

__all__ = ["Unit", "RANDOM_STATE", "arg_type", "arg_types", "entry_name", "find", "note", "request",
           "build_pending", "Loaded", "Kernels", "load_program", "after_bind", "program_units",
           "random_kernels"]

_LOG = logging.getLogger("symjit")
STALE_LOCK_SECONDS = 1800.0
BACKGROUND_NICE = 10   # how much a background builder lowers its priority
# the builder imports the very symjit that started it: ``python -c`` puts the working directory
# first on sys.path, where another checkout's ``symjit`` would build entries named for this code
_BUILDER = ("import sys; sys.path.insert(0, {root!r}); from symjit.compiler.aot_build import main; "
            "sys.exit(main(sys.argv[1:]))")
BUILD_TIMEOUT = 3600.0

Unit = tuple   # (export name, module name, attribute, argument types)
RANDOM_STATE = "symjit_random_state"   # every entry's export: the address of its generator's state


class Unsupported(Exception):
    """An argument whose numba type :func:`arg_type` does not describe."""


_SCALARS = {bool: "boolean", int: "int64", float: "float64"}


def arg_type(value: Any) -> tuple:
    """The numba type of a call argument, described without numba.

    >>> arg_type(np.zeros((2, 3), np.float32))
    ('array', '<f4', 2, 'C', True, True)
    >>> arg_type(0.5), arg_type(np.int64(3)), arg_type((np.int64(1), np.int64(2)))
    (('scalar', 'float64'), ('scalar', 'int64'), ('tuple', 2, 'int64'))
    """
    if isinstance(value, np.ndarray):
        if not value.dtype.isnative:
            raise Unsupported(f"array of non-native byte order {value.dtype.str}")
        f = value.flags
        layout = "C" if f.c_contiguous else ("F" if f.f_contiguous else "A")
        return ("array", value.dtype.str, value.ndim, layout, bool(f.writeable), bool(f.aligned))
    kind = _SCALARS.get(type(value))
    if kind == "int64" and not -2 ** 63 <= value < 2 ** 63:
        raise Unsupported(f"integer {value} out of int64's range")
    if kind is not None:
        return ("scalar", kind)
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return ("scalar", "boolean" if value.dtype.kind == "b" else value.dtype.name)
    if isinstance(value, tuple) and value:
        inner = {arg_type(v) for v in value}
        if len(inner) == 1 and next(iter(inner))[0] == "scalar":
            return ("tuple", len(value), next(iter(inner))[1])
    raise Unsupported(f"argument of type {type(value).__name__}")


def arg_types(args: Iterable[Any]) -> tuple:
    """:func:`arg_type` of each argument."""
    return tuple(arg_type(a) for a in args)


@functools.cache
def _cpu_id() -> str:
    """The processor the entries are compiled for (they use its instruction set, as numba's own
    cache does): its vendor, model and feature flags, read without numba."""
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
    except OSError:
        import platform
        return f"{platform.machine()} {platform.processor()}"
    keep = ("vendor_id", "model name", "flags")
    return "\n".join(line for line in first.splitlines() if line.split(":")[0].strip() in keep)


def entry_name(units: list[Unit]) -> str:
    """The extension module name of the entry holding ``units``: a hash of all of them, of symjit's
    code, of the versions the shared object was built against (numba, numpy, Python) and of the
    processor it was compiled for."""
    try:
        return _entry_name(tuple(units))
    except TypeError:   # units read back from a builder spec hold lists (aot_build): not kept
        return _entry_name.__wrapped__(tuple(units))


@functools.lru_cache(maxsize=1024)
def _entry_name(units: tuple) -> str:
    from .cache import _numba_version, code_fingerprint
    h = hashlib.sha256()
    for part in (code_fingerprint(), _numba_version(), np.__version__, sys.version,
                 importlib.machinery.EXTENSION_SUFFIXES[0], _cpu_id()):
        h.update(part.encode() + b"\0")
    h.update(json.dumps(sorted(units, key=lambda u: u[0])).encode())
    return f"symjit_aot_{h.hexdigest()[:24]}"


def _aot_dir(cfg: Config) -> Path:
    path = Path(cfg.cache_dir) / "aot"
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
    return path


def _so_path(cfg: Config, name: str) -> Path:
    return _aot_dir(cfg) / (name + importlib.machinery.EXTENSION_SUFFIXES[0])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.cache
def _log_once(name: str, message: str) -> None:
    _LOG.info("no ahead-of-time module %s: %s; using numba's kernel cache", name, message)


def find(cfg: Config, units: list[Unit]) -> types.ModuleType | None:
    """The loaded entry of ``units``, or None when there is none (yet) or it cannot be used."""
    name = entry_name(units)
    if name in sys.modules:
        return sys.modules[name]
    meta = _aot_dir(cfg) / f"{name}.json"
    if not meta.is_file():
        return None
    try:
        info = json.loads(meta.read_text())    # written by the builder: data only
    except (OSError, ValueError):
        return None
    if info.get("error"):
        _log_once(name, info["error"])
        return None
    so = _so_path(cfg, name)
    try:
        if _sha256(so) != info.get("sha256"):
            raise ImportError("its shared object does not match the recorded hash")
        loader = importlib.machinery.ExtensionFileLoader(name, str(so))
        spec = importlib.util.spec_from_file_location(name, so, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except (OSError, ImportError) as exc:
        _LOG.info("ahead-of-time module %s removed (%s)", name, exc)
        for f in (meta, so):
            f.unlink(missing_ok=True)
        return None
    sys.modules[name] = module
    return module


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:   # another user's process: alive
        pass
    return True


def _lock(cfg: Config, name: str) -> bool:
    """Take the entry's build lock (False when another builder holds a fresh one). The lock names
    the process the build depends on; a lock whose process is gone (killed) is stale."""
    lock = _aot_dir(cfg) / f"{name}.lock"
    try:
        text = lock.read_text().strip()
        dead = text.isdigit() and not _alive(int(text))
        if dead or time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
            lock.unlink(missing_ok=True)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(str(os.getpid()))
    return True


def _spec_path(cfg: Config, name: str) -> Path:
    return _aot_dir(cfg) / f"{name}.spec.json"


def note(cfg: Config, units: list[Unit]) -> bool:
    """Write the spec of the entry of ``units`` (unless built or failed), for ``symjit aot build``
    or a builder; returns whether there is an entry to build."""
    name = entry_name(units)
    if (_aot_dir(cfg) / f"{name}.json").is_file():
        return False
    write_atomic(_spec_path(cfg, name), json.dumps({"name": name, "cache_dir": str(cfg.cache_dir),
                                                    "units": [list(u) for u in units]}))
    return True


def request(cfg: Config, units: list[Unit], wait: bool) -> bool:
    """Build the entry of ``units`` in a builder process (unless built, failed or being built);
    ``wait``: wait for it, the builder ending with this process (``sync``), else a low-priority
    builder that outlives it (``background``). Returns whether a build was started."""
    return note(cfg, units) and bool(_start(cfg, [entry_name(units)], wait))


def _start(cfg: Config, names: list[str], wait: bool) -> list[str]:
    """Run one builder (:mod:`symjit.compiler.aot_build`) on the noted entries ``names`` whose
    locks this process takes (see :func:`request`); returns those names."""
    names = [n for n in names if _lock(cfg, n)]
    if not names:
        return []
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    line = Lifeline() if wait else None
    how = ["--follow", str(line.parent), str(line.read)] if line else ["--background"]
    cmd = [sys.executable, "-c", _BUILDER.format(root=root), *[str(_spec_path(cfg, n)) for n in names], *how]
    log = open(_aot_dir(cfg) / f"{names[0]}.log", "wb")   # noqa: SIM115 - the child owns it
    try:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                pass_fds=(line.read,) if line else (), start_new_session=not wait,
                                cwd=_aot_dir(cfg))
    except BaseException:
        for n in names:
            (_aot_dir(cfg) / f"{n}.lock").unlink(missing_ok=True)
        if line:
            line.close()
        raise
    finally:
        log.close()
    if line is None:
        for n in names:
            write_atomic(_aot_dir(cfg) / f"{n}.lock", str(proc.pid))   # the build outlives us
        return names
    try:
        proc.wait(timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        _LOG.info("ahead-of-time modules %s still building after %.0f s; stopped", names, BUILD_TIMEOUT)
        proc.kill()
        proc.wait()
    finally:
        line.close()     # an exception here (Ctrl-C) ends the builder too
        for n in names:  # a builder that died (killed) leaves its locks: ours to remove
            (_aot_dir(cfg) / f"{n}.lock").unlink(missing_ok=True)
    return names


def _record(cfg: Config, name: str) -> dict:
    """The builder's record of an entry (data only), or why there is none."""
    try:
        return json.loads((_aot_dir(cfg) / f"{name}.json").read_text())
    except (OSError, ValueError):
        return {"error": f"the builder stopped (see {name}.log)"}


def build_noted(cfg: Config, names: list[str]) -> list[str]:
    """Build the noted entries ``names`` (those not being built by another process) in one
    builder, waiting for it; returns the names built."""
    started = _start(cfg, [n for n in names if _spec_path(cfg, n).is_file()], wait=True)
    return [n for n in started if not _record(cfg, n).get("error")]


def build_pending(cfg: Config, report: Callable[[str], None] = lambda text: None) -> int:
    """Build every entry noted by earlier processes (``SYMJIT_AOT=auto``) and not built yet, in one
    builder process, waiting for it (``symjit aot build``); ``report`` gets a line per entry.
    Returns how many entries were built."""
    names = []
    for spec in sorted(_aot_dir(cfg).glob("symjit_aot_*.spec.json")):
        name = spec.name.removesuffix(".spec.json")
        if (_aot_dir(cfg) / f"{name}.json").is_file():
            spec.unlink(missing_ok=True)
        else:
            names.append(name)
    started = _start(cfg, names, wait=True)
    for name in names:
        info = _record(cfg, name)
        if name not in started:
            report(f"{name}: being built by another process")
        elif info.get("error"):
            report(f"{name}: not built: {info['error']}")
        else:
            report(f"{name}: built ({info.get('units')} functions) in {info.get('seconds', 0):.1f} s")
    return sum(1 for n in started if not _record(cfg, n).get("error"))


# --- programs ---------------------------------------------------------------------------------


def _enabled(cfg: Config, target: Any) -> bool:
    """Whether ahead-of-time modules serve programs of ``target`` (a
    :class:`~symjit.lower.target.Target`; the kind of device it compiles for says)."""
    from ..devices import device_class
    return cfg.aot != "off" and cfg.cache and device_class(target.name).aot


def _segment_calls(target: Any, seg: Any, payload: Any) -> list[tuple[str, str, tuple, list[str]]]:
    """``(export name, attribute of the program's module, arguments, kernels it runs)`` of each
    compiled call of a bound ``njit`` or ``calls`` segment of a program of ``target`` (none for a
    host segment)."""
    if seg.kind == "njit":
        return [(seg.name, seg.name, tuple(payload), [fn for fn, *_ in seg.launches])]
    if seg.kind != "calls":
        return []
    return [(f"{seg.name}__{i}", fn, args, [fn])
            for i, (fn, args) in enumerate(target.bound_calls(seg.launches, dict(zip(seg.vids, payload))))]


def random_kernels(program: Any) -> set[str]:
    """The kernel functions of a program that draw from numba's generator (a seed, Dropout's mask):
    their calls from an entry run between the stream's state copies (:func:`_shared_stream`)."""
    return {fn for fn, (_, text) in program.kernel_texts.items()
            if "np.random." in text or "symjit.kernels.cpu.random import" in text}


def _shared_stream(module: types.ModuleType, fn: Callable, *args: Any) -> None:
    """``fn(*args)``, an entry's function drawing from its copy of numba's generator, on the
    stream of numba's generator of this thread: its state copied into the entry's before the call
    and back after. Without numba imported (so never seeded) the entry draws from its own."""
    if "numba" not in sys.modules:
        fn(*args)
        return
    from numba import _helperlib
    ours, theirs = _helperlib.rnd_get_np_state_ptr(), getattr(module, RANDOM_STATE)()
    _helperlib.rnd_set_state(theirs, _helperlib.rnd_get_state(ours))
    try:
        fn(*args)
    finally:
        _helperlib.rnd_set_state(ours, _helperlib.rnd_get_state(theirs))


def program_units(compiled: Any, steps: dict[str, list]) -> list[Unit] | None:
    """The units of a bound CPU program (``steps``: ``bind_phases``'s segments with their
    arguments): each phase function, each kernel call of a ``calls`` segment. None when an
    argument has no description (the program then runs from numba's cache)."""
    from .cache import module_name
    module = module_name(compiled.program.module_source, compiled.target.name)
    try:
        return [(export, module, attr, arg_types(args))
                for segs in steps.values() for seg, payload in segs
                for export, attr, args, _ in _segment_calls(compiled.target, seg, payload)]
    except Unsupported:
        return None


def exports(units: list[Unit]) -> dict[str, str]:
    """The function of the entry each unit calls: the first unit of its kernel function and
    argument types (the calls of one kernel form on arrays of one kind, a ResNet's many layers of
    one shape class, share one exported function; each export is compiled and optimised anew).

    >>> exports([("f_0", "m", "k1", [["scalar", "int64"]]), ("f_1", "m", "k1", [["scalar", "int64"]]),
    ...          ("f_2", "m", "k2", [["scalar", "int64"]])])
    {'f_0': 'f_0', 'f_1': 'f_0', 'f_2': 'f_2'}
    """
    first: dict[str, str] = {}
    return {u[0]: first.setdefault(json.dumps([u[1], u[2], u[3]]), u[0]) for u in units}


class Loaded:
    """A program's entry in place of its numba module: the prepared call of each segment. A
    segment whose bound arguments are not of the types the entry was built for (arrays of
    another executor sharing the program) runs numba's module instead (``numba_module()``).
    ``drawing``: the kernels drawing from numba's generator (:func:`random_kernels`); a call
    running one runs on numba's stream (:func:`_shared_stream`). ``target``: the program's
    :class:`~symjit.lower.target.Target`, which prepares the calls numba's module runs."""

    def __init__(self, module: types.ModuleType, units: list[Unit], numba_module: Callable[[], Any],
                 drawing: Iterable[str] = (), target: Any = None):
        self.module = module
        self.target = target
        self.__name__ = module.__name__
        self.sigs = {u[0]: u[3] for u in units}
        self.exports = exports(units)
        self.numba_module = numba_module
        self.drawing = frozenset(drawing)

    def _fits(self, name: str, args: tuple) -> bool:
        """Whether the entry holds call ``name`` for these arguments' types (arrays of another
        executor sharing the program may differ: that call runs numba's kernels)."""
        sig = self.sigs.get(name)
        if sig is None:
            return False
        try:
            if sig == arg_types(args):
                return True
        except Unsupported:
            pass
        _LOG.info("call %s runs numba's kernels: its arrays are not of the types "
                  "ahead-of-time module %s was built for", name, self.__name__)
        return False

    def call(self, seg: Any, payload: Any) -> Callable[[], None]:
        """The call of an ``njit`` or ``calls`` segment on its bound ``payload``: the entry's
        functions, numba's kernels for a call of arguments of other types."""
        target = self.target
        calls = []
        for i, (name, _, args, fns) in enumerate(_segment_calls(target, seg, payload)):
            if self._fits(name, args):
                fn = getattr(self.module, self.exports[name])
                if seg.kind == "calls":   # a kernel split into parts runs them at the same time
                    fn = target.run_call(fns[0], fn)
                if not self.drawing.isdisjoint(fns):
                    fn = functools.partial(_shared_stream, self.module, fn)
                calls.append((fn, args))
            elif seg.kind == "njit":
                return target.prepare(self.numba_module(), seg.name, payload)
            else:
                calls += target.prepare_calls(self.numba_module(), [seg.launches[i]],
                                              dict(zip(seg.vids, payload)))
        if len(calls) == 1:
            return functools.partial(calls[0][0], *calls[0][1])

        def run() -> None:
            for fn, args in calls:
                fn(*args)
        return run


def load_program(compiled: Any, steps: dict[str, list], cfg: Config) -> Loaded | None:
    """The entry of a bound program, if one was built for these argument types."""
    if not _enabled(cfg, compiled.target):
        return None
    units = program_units(compiled, steps)
    module = find(cfg, units) if units else None
    if module is None and units and cfg.aot == "auto" and _spec_path(cfg, entry_name(units)).is_file():
        module = _build_now(cfg, entry_name(units), units)
    if module is None:
        return None
    import_scipy_blas()   # what its GEMMs import, without scipy.linalg's package (see there)

    @functools.lru_cache(maxsize=1)
    def numba_module() -> types.ModuleType:
        from .cache import load_program as load_numba
        return load_numba(compiled.program, compiled.target, cfg)
    return Loaded(module, units, numba_module, random_kernels(compiled.program), compiled.target)


def _noted_kernels(cfg: Config) -> list[str]:
    """The noted entries of the update kernels' registries (:class:`Kernels`) in the cache."""
    names = []
    for registry in _aot_dir(cfg).glob("kernels-*.json"):
        try:
            units = [_unit(u) for u in json.loads(registry.read_text())["units"]]   # ours: data only
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if units and _spec_path(cfg, entry_name(units)).is_file():
            names.append(entry_name(units))
    return names


def _build_now(cfg: Config, name: str, units: list[Unit]) -> types.ModuleType | None:
    """``auto``: a bind (or the update kernels) whose entry an earlier process noted builds it now,
    waiting, before it would import numba, together with the update kernels' noted entry (the
    process that noted one usually noted both), in one builder; then loads it."""
    start = time.perf_counter()
    built = build_noted(cfg, [name, *[n for n in _noted_kernels(cfg) if n != name]])
    if built:
        _LOG.info("built ahead-of-time modules %s, noted by an earlier run, in %.1f s",
                  ", ".join(built), time.perf_counter() - start)
    return find(cfg, units) if name in built else None


AUTO_MAX_PROGRAMS = 4   # ``auto`` notes entries at exit for a process that bound at most this many
_auto_pending: dict[str, tuple[Config, list[Unit]]] = {}
_cold = [False]   # whether a bind of this process compiled kernels (a first run: notes nothing)


def after_bind(compiled: Any, steps: dict[str, list], cfg: Config, warm: bool) -> None:
    """After a bind through numba: build the program's entry as ``cfg.aot`` says. ``sync``: now,
    waiting for it. ``auto`` and ``background``: when every compiled function came from numba's
    disk cache (``warm``: the program was compiled before), and only for a process that bound few
    programs (a training script, not a test suite), when this process exits: noted for
    ``symjit aot build`` (``auto``), or built by a low-priority builder that outlives the process
    (``background``)."""
    if _enabled(cfg, compiled.target) and not warm:
        _cold[0] = True
    if not _enabled(cfg, compiled.target) or (cfg.aot != "sync" and not warm):
        return
    units = program_units(compiled, steps)
    if not units:
        return
    if cfg.aot == "sync":
        request(cfg, units, wait=True)
        return
    if not _auto_pending:
        atexit.register(_at_exit)
    _auto_pending[entry_name(units)] = (cfg, units)


def _at_exit() -> None:
    if _cold[0]:
        return      # a first run of some program: its next run notes what it binds
    if len(_auto_pending) > AUTO_MAX_PROGRAMS:
        _LOG.info("%d programs bound from the kernel cache; ahead-of-time modules are noted "
                  "for processes binding at most %d (SYMJIT_AOT=sync builds them all)",
                  len(_auto_pending), AUTO_MAX_PROGRAMS)
        return
    for name, (cfg, units) in _auto_pending.items():
        _exit_build(cfg, units, name)


def _exit_build(cfg: Config, units: list[Unit], name: str) -> None:
    """At exit: start a background builder (``background``) or note the entry (``auto``)."""
    if cfg.aot == "background":
        if request(cfg, units, wait=False):
            _LOG.info("building ahead-of-time module %s in the background", name)
    elif note(cfg, units):
        _LOG.info("ahead-of-time module %s can be built for the next runs: symjit aot build", name)


# --- hand-written kernels called from Python (the optimizers' updates) --------------------------


_FLAG_BITS = 0x503   # numpy's C_CONTIGUOUS | F_CONTIGUOUS | ALIGNED | WRITEABLE bits of flags.num


def _fast_key(args: tuple) -> tuple:
    """What tells two calls' argument types apart, cheaply (~0.8 us for eight arguments): an
    array's dtype, ndim and the flags :func:`arg_type` reads, a scalar's Python type."""
    return tuple([(a.dtype, a.ndim, a.flags.num & _FLAG_BITS) if type(a) is np.ndarray
                  else (arg_type(a) if type(a) is tuple else type(a)) for a in args])


class _Dispatch:
    """One kernel of a :class:`Kernels`: its entry's function for these argument types."""

    __slots__ = ("owner", "name", "table")

    def __init__(self, owner: Kernels, name: str):
        self.owner, self.name, self.table = owner, name, {}

    def __call__(self, *args: Any) -> None:
        key = _fast_key(args)
        fn = self.table.get(key)
        if fn is None:
            fn = self.table[key] = self.owner.resolve(self.name, args)
        fn(*args)


class Kernels:
    """A module of hand-written kernels called from Python (``symjit.kernels.cpu.optim``) through
    an entry built for every argument-type signature this cache has seen them called with, so a
    warm process updates its weights without numba. A call with a signature the entry lacks runs
    numba's kernel and records the signature; the entry is rebuilt with it as ``cfg.aot`` says
    (``sync``: at once; ``auto``: noted when the process exits; ``background``: built from then on).
    Attributes are the kernels.

    >>> import tempfile, numpy as np
    >>> from symjit.config import Config
    >>> k = Kernels("symjit.kernels.cpu.optim", Config(cache_dir=tempfile.mkdtemp(), aot="off"))
    >>> w = np.ones(3, np.float32)
    >>> k.sgd_update(w, np.ones(3, np.float32), 0.5, 0.0, 1.0, -1.0)
    >>> w.tolist()
    [0.5, 0.5, 0.5]
    """

    def __init__(self, module: str, cfg: Config):
        self.__name__ = module
        self._cfg = cfg
        self._registry = _aot_dir(cfg) / f"kernels-{module}.json" if cfg.aot != "off" else None
        self._units = self._read() if self._registry else []
        self._entry = find(cfg, self._units) if self._units else None
        if self._entry is None and self._units and cfg.aot == "auto" \
                and _spec_path(cfg, entry_name(self._units)).is_file():
            self._entry = _build_now(cfg, entry_name(self._units), self._units)
        self._requested = False

    def _read(self) -> list[Unit]:
        try:
            units = json.loads(self._registry.read_text())["units"]    # ours: data only
        except (OSError, ValueError, KeyError, TypeError):
            return []
        return [_unit(u) for u in units]

    def __getattr__(self, name: str) -> _Dispatch:
        if name.startswith("_"):
            raise AttributeError(name)
        fn = _Dispatch(self, name)
        setattr(self, name, fn)
        return fn

    def resolve(self, name: str, args: tuple) -> Callable:
        """The function running kernel ``name`` on ``args``' types: the entry's, else numba's
        (recording the signature for the next entry)."""
        try:
            sig = arg_types(args)
        except Unsupported:
            sig = None
        if sig is not None and self._entry is not None:
            for export, _, attr, usig in self._units:
                if attr == name and usig == sig:
                    return getattr(self._entry, export)
        if sig is not None and self._registry is not None:
            self._record((f"{name}__{hashlib.sha1(json.dumps(sig).encode()).hexdigest()[:10]}",
                          self.__name__, name, sig))
        return getattr(importlib.import_module(self.__name__), name)

    def _record(self, unit: Unit) -> None:
        units = sorted(set(self._read()) | set(self._units) | {unit})
        write_atomic(self._registry, json.dumps({"units": [list(u) for u in units]}))
        self._units = units
        if self._cfg.aot == "sync":
            request(self._cfg, units, wait=True)
        elif not self._requested:
            self._requested = True
            atexit.register(self._build_at_exit)

    def _build_at_exit(self) -> None:
        if _cold[0]:
            return      # as for programs: a process that compiled kernels notes nothing
        units = sorted(set(self._read()) | set(self._units))
        _exit_build(self._cfg, units, f"{entry_name(units)} of {self.__name__}")


def _unit(u: list) -> Unit:
    """A unit read back from JSON (lists to tuples, so units compare and hash)."""
    def tup(x: Any) -> Any:
        return tuple(tup(v) for v in x) if isinstance(x, list) else x
    export, module, attr, sig = u
    return (export, module, attr, tup(sig))
