"""How symjit's kernels use the cores: GEMMs in BLAS threads, sized to the cores other processes
leave free; BatchNorm, pooling, the tile convolutions and big generated loops in parts on the
host's threads, as many parts as BLAS gets threads (:mod:`symjit.kernels.cpu._parallel`,
:mod:`symjit.parts`); everything else (im2col, small epilogues, updates) in the calling thread.

Measured on our 2-core machines (``docs/performance.md``, "Thread policy"): on an idle machine two
OpenBLAS threads run the tutorial MLP loop 25% faster and LeNet's step 30% faster than one; with
one other busy process on the machine the same two threads collapse (the MLP loop 3-4x slower, as
every GEMM waits at its join for the thread that shares a core with the other process), while one
thread keeps its idle speed. Numba's ``prange`` forms of the convolution kernels lost to the
serial ones on every shape measured (their threads and BLAS's compete for the two cores), so
generated code is serial. The memory-bound BatchNorm and max-pooling kernels are another matter on
an Intel Xeon of ours, where one core reads ~6 GB/s and two ~12: split over both cores they run
1.6-2x faster ("Two cores for BatchNorm and max pooling"); idle threads must then give their core
back quickly (:func:`idle_settings`).

So the policy is: BLAS threads = the cores this process may use minus the cores other processes
kept busy over the last :data:`INTERVAL` seconds (rounded, at least 1), re-read at most every
:data:`INTERVAL` seconds when an executor runs a forward pass (two small ``/proc`` reads). Our own
threads (BLAS's spinning ones included) do not count as load. It applies to the OpenBLAS that
numba's GEMMs call (scipy's); numpy's own BLAS is left as the user has it.

Where the user chose (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, or ``SYMJIT_BLAS_THREADS`` for a
fixed count, see :mod:`symjit.config`), symjit never changes the count. Off Linux (no ``/proc``)
the count stays OpenBLAS's default (the cores).

>>> threads_for(2, 0.1), threads_for(2, 0.9), threads_for(2, 1.7), threads_for(8, 2.2)
(2, 1, 1, 6)
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType

__all__ = ["import_scipy_blas", "usable_cores", "threads_for", "LoadProbe", "BlasThreads", "policy",
           "idle_settings", "INTERVAL", "OMP_SPINS", "USER_VARIABLES",
           "SPLIT_MIN", "PARTS_MIN", "set_parts", "parts_for_thread"]

INTERVAL = 0.1
"""Seconds between two load readings (and thread count changes): ten ``/proc`` reads a second
(~30 us each) against steps of milliseconds; /proc counts in 10 ms ticks, so a reading resolves
a tenth of a core."""

SPLIT_MIN = 1 << 17
"""Elements of a kernel's input from which the compiler calls its form in parts
(:mod:`symjit.kernels.cpu._parallel`): below it, a thread hand-off costs more than the second core
saves. Here, not there, so that lowering imports no numba (a process running ahead-of-time
modules never loads it)."""
PARTS_MIN = 1 << 20
"""Elements of a generated map loop from which the CPU target splits it into parts run on the host's
threads (:mod:`symjit.parts`). Each split call costs ~8-10 us more than numba's ``prange`` did
(the parts are dispatched from Python, and a worker that slept since its last part wakes later),
so below this a loop in parts ran no faster than the serial loop, or slower after a pause
(``benchmarks/bench_parts.py``; ``docs/performance.md``, "Generated loops in parts")."""
OMP_SPINS = 50000
"""``GOMP_SPINCOUNT``: the spins (``pause`` loops) an idle GNU OpenMP thread makes before it
sleeps, ~0.4 ms on an Intel Xeon of ours (a ``/tmp`` script: the process's CPU time in a sleep
right after an empty parallel region); GNU OpenMP counts it in place of ``OMP_WAIT_POLICY``."""
USER_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
"""Environment variables by which a user fixes BLAS's threads: symjit then leaves them alone."""


def usable_cores() -> set[int]:
    """The cores this process may run on (its affinity where the OS has one, else all)."""
    if hasattr(os, "sched_getaffinity"):
        return os.sched_getaffinity(0)
    return set(range(os.cpu_count() or 1))


def threads_for(cores: int, others: float) -> int:
    """BLAS threads for ``cores`` usable cores when other processes kept ``others`` cores busy."""
    return max(1, min(cores, round(cores - others)))


class LoadProbe:
    """CPU time other processes spent on this process's cores between two readings, in cores
    (Linux: the ``cpuN`` lines of ``/proc/stat`` minus this process's ``/proc/self/stat``)."""

    def __init__(self, cores: set[int] | None = None, stat: str = "/proc/stat",
                 own: str = "/proc/self/stat", clock: Callable[[], float] = time.monotonic):
        self.cores = cores if cores is not None else usable_cores()
        self.paths, self.clock = (stat, own), clock
        self.hz = os.sysconf("SC_CLK_TCK")
        self._last = self._read()

    def _read(self) -> tuple[float, int, int]:
        busy = 0
        with open(self.paths[0], "rb") as f:
            for line in f:
                if not line.startswith(b"cpu"):
                    break
                head, *vals = line.split()
                if head == b"cpu" or int(head[3:]) not in self.cores:
                    continue
                user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in vals[:7])
                busy += user + nice + system + irq + softirq
        with open(self.paths[1], "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2:].split()   # after the command name
        own = int(fields[11]) + int(fields[12])            # utime + stime, all threads
        return self.clock(), busy, own

    def others(self) -> float:
        """Cores' worth of CPU time other processes used since the last call (or construction)."""
        now, busy, own = self._read()
        then, busy0, own0 = self._last
        self._last = (now, busy, own)
        if now <= then:
            return 0.0
        return max(0.0, ((busy - busy0) - (own - own0)) / self.hz / (now - then))


_PARTS = threading.local()


def set_parts(n: int) -> None:
    """The parts a generated kernel split into parts (:mod:`symjit.parts`) runs in when this
    thread calls it (at least 1): the policy's count, set as it sets BLAS's."""
    _PARTS.parts = max(1, int(n))


def parts_for_thread() -> int:
    """The parts a kernel split into parts runs in when this thread calls it: what
    :func:`set_parts` set here, else ``NUMBA_NUM_THREADS`` where set, else the usable cores."""
    n = getattr(_PARTS, "parts", None)
    if n is None:
        env = os.environ.get("NUMBA_NUM_THREADS", "")
        n = _PARTS.parts = int(env) if env.isdigit() and int(env) > 0 else len(usable_cores())
    return n


class BlasThreads:
    """Keeps BLAS's thread count at :func:`threads_for` of the measured load (``fixed`` is None),
    or at ``fixed``; ``set_threads`` sets the count, ``probe`` measures the others' load. The
    kernels run in parts (:mod:`symjit.parts`) take the same count of parts in every thread that
    runs an executor (:func:`set_parts`)."""

    def __init__(self, set_threads: Callable[[int], None], probe: LoadProbe | None,
                 cores: int, fixed: int | None = None, interval: float = INTERVAL,
                 clock: Callable[[], float] = time.monotonic):
        self.set_threads, self.probe, self.cores = set_threads, probe, cores
        self.fixed, self.interval, self.clock = fixed, interval, clock
        self.current: int | None = None
        self._parts_current: dict[int, int] = {}   # thread id -> the parts it has
        self._next = clock() + interval   # the first reading covers a whole interval
        if fixed is not None:
            self._apply(fixed)

    def _apply(self, n: int) -> None:
        if n != self.current:
            self.set_threads(n)
            self.current = n

    def _sync_parts(self) -> None:
        n = self.current if self.current is not None else self.cores
        tid = threading.get_ident()
        if self._parts_current.get(tid) != n:
            set_parts(n)
            self._parts_current[tid] = n

    def adapt(self) -> None:
        """Re-read the load if :attr:`interval` has passed, and set the count it calls for."""
        if self.fixed is None and self.probe is not None:
            now = self.clock()
            if now >= self._next:
                self._next = now + self.interval
                self._apply(threads_for(self.cores, self.probe.others()))
        self._sync_parts()


_POLICY: list[BlasThreads | None] = []


BLAS_MODULE = "scipy.linalg.cython_blas"
"""The module whose BLAS numba's GEMMs call (numba's C helpers import it by this name)."""


class _AttachToPackage:
    """A finder that lets the import of ``scipy.linalg`` run as usual, then sets its ``cython_blas``
    attribute to the module :func:`import_scipy_blas` loaded alone (an import finds that module in
    ``sys.modules`` and would not set the attribute). Removes itself at that import."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name != "scipy.linalg":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Attaching(spec.loader)
        return spec


class _Attaching:
    """A loader that runs ``inner``'s and then attaches the loaded BLAS module to the package."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def create_module(self, spec: object) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        if BLAS_MODULE in sys.modules:
            module.cython_blas = sys.modules[BLAS_MODULE]


def import_scipy_blas() -> ModuleType:
    """The module ``scipy.linalg.cython_blas``, without the ``scipy.linalg`` package's ``__init__``
    when that is not imported yet: its extension file is loaded directly (~35 ms against ~0.15-0.4 s
    for the package, which imports most of scipy.linalg and numpy's f2py). numba's GEMMs find it in
    ``sys.modules`` by that name. A later ``import scipy.linalg`` runs as usual and gets the module
    as its ``cython_blas`` attribute.

    >>> import_scipy_blas().__name__
    'scipy.linalg.cython_blas'
    """
    module = sys.modules.get(BLAS_MODULE)
    if module is not None:
        return module
    if "scipy.linalg" in sys.modules:
        return importlib.import_module(BLAS_MODULE)
    scipy = importlib.util.find_spec("scipy")
    roots = (scipy.submodule_search_locations or []) if scipy is not None else []
    files = [os.path.join(root, "linalg", "cython_blas" + suffix) for root in roots
             for suffix in importlib.machinery.EXTENSION_SUFFIXES]
    path = next((f for f in files if os.path.isfile(f)), None)
    if path is None:    # scipy missing or laid out otherwise: the usual import (or its error)
        return importlib.import_module(BLAS_MODULE)
    spec = importlib.util.spec_from_file_location(BLAS_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[BLAS_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[BLAS_MODULE]
        raise
    sys.meta_path.insert(0, _AttachToPackage())
    return module


def _scipy_blas_setter() -> Callable[[int], None] | None:
    """Set the thread count of the OpenBLAS numba's GEMMs call (scipy's), through threadpoolctl."""
    import_scipy_blas()   # loads the library numba binds
    from threadpoolctl import ThreadpoolController
    libs = [lc for lc in ThreadpoolController().lib_controllers   # scipy's wheel: scipy.libs/
            if lc.internal_api == "openblas"
            and os.path.basename(os.path.dirname(lc.filepath)).startswith("scipy")]
    if not libs:
        return None

    def set_threads(n: int) -> None:
        for lc in libs:
            lc.set_num_threads(n)
    return set_threads


def idle_settings(env: dict[str, str] | None = None) -> dict[str, str]:
    """The variables symjit sets at import where the user has not, so that idle threads give
    their core back soon: OpenBLAS's threads spin at most 2^20 cycles (~0.4 ms) after a GEMM
    instead of 2^28 (~0.1 s), and OpenMP's (numba's ``prange`` loops) wait passively, except that
    GNU OpenMP (numba's ``omp`` layer on Linux) first spins :data:`OMP_SPINS` times (~0.4 ms on an
    Intel Xeon of ours), as long as OpenBLAS's. Spinning for ever, either took the core the other
    needs next (a GEMM right after a threaded BatchNorm ran 1.8x slower, a threaded BatchNorm right
    after a GEMM 1.9x); never spinning, each parallel region after a sleep cost ~75-120 us to wake
    the threads: 6-8% of LeNet's step and of ResNet's forwards at batch 2, 20-45% of MobileNet's
    and SqueezeNet's (``docs/performance.md``, "Waking numba's threads, again"). Where the user
    set either OpenMP variable, both are left as they are.

    >>> idle_settings({})
    {'OMP_WAIT_POLICY': 'PASSIVE', 'GOMP_SPINCOUNT': '50000', 'OPENBLAS_THREAD_TIMEOUT': '20'}
    >>> idle_settings({'OMP_WAIT_POLICY': 'active', 'OPENBLAS_THREAD_TIMEOUT': '28'})
    {}
    """
    env = dict(os.environ) if env is None else env
    wanted = {}
    if not env.get("OMP_WAIT_POLICY") and not env.get("GOMP_SPINCOUNT"):
        wanted = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": str(OMP_SPINS)}
    if not env.get("OPENBLAS_THREAD_TIMEOUT"):
        wanted["OPENBLAS_THREAD_TIMEOUT"] = "20"
    return wanted


def policy(fixed: int | None = None, env: dict[str, str] | None = None) -> BlasThreads | None:
    """The process's policy (BLAS threads are process-wide), made at the first call: ``fixed``
    threads (``Config.blas_threads``), else adaptive unless the user set :data:`USER_VARIABLES`.
    None where there is nothing to control (no scipy OpenBLAS found, or the user fixed it)."""
    if _POLICY:
        return _POLICY[0]
    env = dict(os.environ) if env is None else env
    result = None
    if fixed is not None or not any(env.get(v) for v in USER_VARIABLES):
        setter = _scipy_blas_setter()
        if setter is not None:
            cores = usable_cores()
            probe = LoadProbe(cores) if fixed is None and os.path.exists("/proc/stat") else None
            result = BlasThreads(setter, probe, len(cores), fixed)
    _POLICY.append(result)
    return result
