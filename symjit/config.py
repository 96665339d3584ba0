"""The one explicit configuration object.

The documented environment settings are read here, in :func:`Config.from_env`, and nowhere else:

``SYMJIT_CACHE_DIR``
    where compiled kernels are cached (default: ``$XDG_CACHE_HOME/symjit`` or ``~/.cache/symjit``).
``SYMJIT_CACHE``
    ``0`` disables the on-disk kernel cache (default ``1``).
``SYMJIT_FUSION``
    ``0`` compiles one kernel per operator instead of fused groups (default ``1``).
``MXNET_HOME`` / ``SYMJIT_MNIST``
    where datasets are looked for (see :mod:`symjit.io`).
``SYMJIT_DIST_TIMEOUT``
    seconds a distributed KVStore waits for the other workers in one collective before it stops
    with an error (default ``300``; see :mod:`symjit.dist`).
``SYMJIT_COMPILE_WORKERS``
    how many processes compile a bind's uncached kernels at once (default: the cores this process
    may use, divided by the distributed workers on this host; ``1`` compiles in the binding
    process only; see :mod:`symjit.compiler.workers`).
``SYMJIT_BLAS_THREADS``
    a fixed number of threads for the BLAS (OpenBLAS) GEMMs of compiled kernels (default: the cores
    other processes leave free, re-measured while executors run; see :mod:`symjit.threads`; a
    user's ``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS`` is left as it is).
``SYMJIT_AOT``
    when ahead-of-time modules of bound programs and update kernels are built (loaded by later
    processes without importing numba; see :mod:`symjit.compiler.aot`): ``auto`` (default: loaded
    when present; a warm run notes what to build, and the next bind of a noted program builds it,
    waiting, as ``symjit aot build`` does in the foreground), ``sync`` (at the bind, waiting),
    ``background`` (by a low-priority process started when the program exits, which outlives it)
    or ``off`` (neither built nor loaded). With
    ``auto``, ``sync`` and ``off`` no process symjit starts outlives the program.
``SYMJIT_PROGRESS``
    ``0`` stops the progress lines a bind writes to stderr while it compiles for longer than
    ``Config.progress_seconds`` (default ``1``; see :mod:`symjit.compiler.progress`).
``SYMJIT_DIST_BUCKET_BYTES``
    the largest message of a distributed push: gradients travel in allreduces of at most this many
    bytes (default 64 MiB).
``MXNET_ELIMINATE_COMMON_EXPR``
    ``0`` binds a symbol as it is; by default (``1``, as MXNet) a bind first merges operator nodes
    that compute the same thing from the same inputs (:mod:`symjit.symbol.cse`).
``SYMJIT_PROGRAM_CALLS``
    the most kernel calls a step of a CPU program makes through one compiled program function;
    a longer step calls its kernels one by one from the executor (default 16, the compiler's
    ``PROGRAM_CALLS_LIMIT``; ``0``: always one by one). A program function saves ~1-2 us per kernel
    call at run time, but numba links and optimises all its kernels into it again, which about
    doubles the compile time of a small program (see :mod:`symjit.compiler.codegen.generate`).
``SYMJIT_PROGRAM_RUNS``
    the forward passes a CPU program runs with its steps' kernels called from the host before it
    compiles the program functions numba's cache does not hold yet (default 8; ``0`` compiles them
    at the bind). A program function links and optimises its kernels again (1-3 s) to save ~1-2 us
    per kernel call, which pays only over a loop (see :mod:`symjit.compiler.program_tier`); the
    program of an imperative call or a lazy queue also waits until those runs have taken
    :data:`symjit.imperative_bound.HOSTED_SECONDS`.
``SYMJIT_INTERPRET``
    ``0`` compiles every program at its bind. By default (``1``) a small CPU program (every value
    at most 4096 elements, kernels that only compose the operators' scalar bodies) runs its first
    passes with its kernels as plain Python, and compiles at the forward pass after those have
    taken 0.1 s in all (see :mod:`symjit.compiler.tier`).
``SYMJIT_INTERPRET_CALLS``
    the most forward passes such a program runs interpreted before it compiles (default: no
    limit but the time; ``0`` is ``SYMJIT_INTERPRET=0``).
``SYMJIT_LAZY``
    ``1`` (the default) queues NDArray arithmetic and assignments on the CPU and runs each queue,
    when a value is read, as one compiled fused program (see :mod:`symjit.lazy`); ``0`` runs every
    call at once.

Passes take a ``Config`` argument; nothing reads the environment behind their back, and nothing is
switched off silently: an invalid value raises.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import MXNetError

__all__ = ["Config", "default_config"]


def _flag(env: Mapping[str, str], key: str, default: bool) -> bool:
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise MXNetError(f"environment setting {key}={raw!r} is not a boolean (use 0 or 1)")


def _number(env: Mapping[str, str], key: str, default: float, kind: type) -> Any:
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not value > 0:
        raise MXNetError(f"environment setting {key}={raw!r} is not a positive {kind.__name__}")
    return value


def _count(env: Mapping[str, str], key: str) -> int | None:
    raw = env.get(key)
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()):
        raise MXNetError(f"environment setting {key}={raw!r} is not a count (an integer >= 0)")
    return int(raw)


def _choice(env: Mapping[str, str], key: str, default: str, choices: tuple[str, ...]) -> str:
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    if raw.lower() not in choices:
        raise MXNetError(f"environment setting {key}={raw!r} is not one of {', '.join(choices)}")
    return raw.lower()


def _default_cache_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "symjit"


@dataclasses.dataclass(frozen=True)
class Config:
    """Compiler and runtime settings.

    >>> Config(cache=False).fusion
    True
    """

    cache_dir: Path = dataclasses.field(default_factory=lambda: _default_cache_dir(dict(os.environ)))
    cache: bool = True
    fusion: bool = True
    fastmath: bool = False
    dist_timeout: float = 300.0
    dist_bucket_bytes: int = 64 << 20
    compile_workers: int | None = None   # None: automatic (symjit.compiler.workers.auto_workers)
    blas_threads: int | None = None      # None: adaptive (symjit.threads)
    aot: str = "auto"                     # "auto" | "sync" | "background" | "off" (symjit.compiler.aot)
    program_calls: int | None = None      # None: the compiler's default (PROGRAM_CALLS_LIMIT)
    program_runs: int = 8                 # passes before program functions compile (compiler.program_tier)
    interpret: bool = True                # small programs' first passes as Python (compiler.tier)
    interpret_calls: int | None = None    # most interpreted forward passes (None: the time budget)
    progress: bool = True                 # progress lines of long binds on stderr (compiler.progress)
    eliminate_common_expr: bool = True    # merge repeated computations at bind (symbol.cse)
    progress_seconds: float = 2.0         # a bind compiling longer than this shows its progress
    progress_interval: float = 5.0        # seconds between two progress lines on a non-terminal
    lazy: bool = True                     # queue NDArray calls, run them fused at a read (symjit.lazy)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        """Read the documented environment settings into a ``Config``."""
        env = os.environ if env is None else env
        cache_dir = Path(env["SYMJIT_CACHE_DIR"]) if env.get("SYMJIT_CACHE_DIR") else _default_cache_dir(env)
        runs = _count(env, "SYMJIT_PROGRAM_RUNS")
        return cls(
            cache_dir=cache_dir,
            cache=_flag(env, "SYMJIT_CACHE", True),
            fusion=_flag(env, "SYMJIT_FUSION", True),
            dist_timeout=_number(env, "SYMJIT_DIST_TIMEOUT", 300.0, float),
            dist_bucket_bytes=_number(env, "SYMJIT_DIST_BUCKET_BYTES", 64 << 20, int),
            compile_workers=_number(env, "SYMJIT_COMPILE_WORKERS", None, int),
            blas_threads=_number(env, "SYMJIT_BLAS_THREADS", None, int),
            aot=_choice(env, "SYMJIT_AOT", "auto", ("auto", "sync", "background", "off")),
            program_calls=_count(env, "SYMJIT_PROGRAM_CALLS"),
            program_runs=cls.program_runs if runs is None else runs,
            progress=_flag(env, "SYMJIT_PROGRESS", True),
            interpret=_flag(env, "SYMJIT_INTERPRET", True),
            interpret_calls=_count(env, "SYMJIT_INTERPRET_CALLS"),
            eliminate_common_expr=_flag(env, "MXNET_ELIMINATE_COMMON_EXPR", True),
            lazy=_flag(env, "SYMJIT_LAZY", cls.lazy),
        )

    def replace(self, **changes: object) -> Config:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


def default_config() -> Config:
    """The configuration read from the environment now."""
    return Config.from_env()
