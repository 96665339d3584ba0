"""The Executor: preallocated buffers from the memory plan and compiled forward/backward programs.

``bind`` compiles the program of its main mode (training when some gradient is requested, else
inference); the other mode compiles the first time ``forward`` asks for it. Each program has its
own memory plan. The arrays given to ``bind`` are the executor's storage: the compiled code reads
and writes them in place. On ``mx.gpu(i)`` the programs are compiled for the CUDA target and every
buffer (the bound arrays, outputs, head gradients, the plan's arena) is a numba.cuda device array
on that device; a phase queues its kernels on the device's stream (``storage.stream``), and
reading a result (``asnumpy``) waits for them.

With a monitor callback installed (``set_monitor_callback``), watched passes run a third kind of
program, ``train_mon``/``infer_mon``: one kernel per op and no memory reuse, so that after the
pass every op's outputs (``fc1_output``) and, after ``backward``, the gradients each op's rule
computed (``fc1_backward_weight``) can be handed to the callback.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import profiler
from .base import MXNetError, dtype_name, shape_str
from .compiler import aot, workers
from .compiler.binding import bind_phases, value_arrays
from .compiler.cache import load_program, purge_program
from .compiler.pipeline import Compiled
from .compiler.program_tier import ProgramTier
from .compiler.progress import Progress, Tally, summary
from .compiler.shared import compile_shared
from .compiler.tier import Tier
from .config import Config, default_config
from .context import Context
from .devices import provide as provide_to_devices
from .executor_args import (
    _as_list,
    _half_outputs,
    _has_half,
    _shared,
    check_group2ctx,
    normalize_grad_req,
    simple_bind_arrays,
)
from .lower.target import get_target
from .ndarray import NDArray, dispatch, storage
from .ndarray import zeros as nd_zeros
from .symbol.cse import eliminate_common_expr
from .symbol.symbol import register_executor

__all__ = ["Executor", "HalfExecutor", "normalize_grad_req", "simple_bind_arrays"]

# numba has no float16 arithmetic: the compiled programs never see a float16 array (bound float16
# arrays and float16 outputs go through HalfExecutor's float32 copies; float16 values inside a
# program are float32 values rounded where they are made, compiler/passes/half.py)
_UNSUPPORTED = frozenset({np.dtype("float16")})
_HALF = np.dtype("float16")


PROGRESS_STREAM: Any = None   # where a long bind's progress lines go (None: sys.stderr at the bind)


def _run_all(calls: list) -> Callable[[], None]:
    def run() -> None:
        for fn, args in calls:
            fn(*args)
    return run


def _named(module: Any, programs: list, names: set[str]) -> list:
    """The program-function units (``workers.units``) of ``module``'s functions ``names``."""
    fns = {id(getattr(module, n)) for n in names}
    return [u for u in programs if id(u[0]) in fns]


def _base(mode: str) -> str:
    """``train``/``infer``/``infer_grad`` without the monitored or profiled suffix."""
    return mode.removesuffix("_mon").removesuffix("_prof")


def cache_stats(prog: Compiled) -> dict[str, tuple[int, int]]:
    """Per distinct kernel of a loaded program, numba's (cache hits, cache misses) so far (its
    dispatcher may be shared with other programs: compare two snapshots)."""
    out = {}
    for f in sorted(set(prog.program.kernel_of.values())):
        st = getattr(getattr(prog.module, f, None), "stats", None)
        out[f] = (sum(st.cache_hits.values()), sum(st.cache_misses.values())) if st is not None else (0, 0)
    return out


def cache_tally(prog: Compiled, before: dict) -> Tally:
    """Where a program's distinct kernels came from since ``before`` (a :func:`cache_stats`
    snapshot), from numba's counts alone: for targets whose compiles are not listed as units
    (CUDA), whose kernels numba compiles or loads one by one."""
    now = cache_stats(prog)
    old = {f: before.get(f, (0, 0)) for f in now}
    here = sum(now[f][1] > old[f][1] for f in now)
    disk = sum(now[f][1] == old[f][1] and now[f][0] > old[f][0] for f in now)
    return Tally(here=here, disk=disk, loaded=len(now) - here - disk)


def compile_summary(prog: Compiled, seconds: float, tally: Tally, cfg: Config) -> str:
    """The closing line of a bind (:func:`symjit.compiler.progress.summary`): the program's group
    kernels, the distinct ones, and where each compiled function it needs came from."""
    return summary(len(prog.program.kernel_of), len(set(prog.program.kernel_of.values())), tally,
                   seconds, cfg)


class Executor:
    """Runs a bound symbol. Build it with ``Symbol.bind`` or ``Symbol.simple_bind``."""

    def __new__(cls, symbol: Any, ctx: Context, args: Any, args_grad: Any = None, grad_req: Any = "write",
                aux_states: Any = None, *rest: Any, **kwargs: Any) -> Executor:
        if cls is Executor and (_has_half(args, args_grad, aux_states) or _half_outputs(symbol, args)):
            cls = HalfExecutor
        return super().__new__(cls)

    def __init__(self, symbol, ctx: Context, args: Any, args_grad: Any = None, grad_req: Any = "write",
                 aux_states: Any = None, config: Config | None = None, _compiled: dict | None = None,
                 group2ctx: Any = None, _half: frozenset = frozenset(), _outputs: list | None = None):
        self._half = _half   # names whose float32 arrays hold float16 values (HalfExecutor's copies)
        self._share_outputs = _outputs   # a reshaped executor's: views of them where they fit
        self._symbol = symbol
        self._ctx = ctx
        self._cfg = config or default_config()
        # what the programs compile: repeated computations merged (MXNET_ELIMINATE_COMMON_EXPR)
        self._optimized = eliminate_common_expr(symbol) if self._cfg.eliminate_common_expr else symbol
        self._threads: Any = None   # the BLAS thread policy (CPU), made at the first forward
        storage.check_ctx(ctx, "bind")   # a GPU context needs a GPU (or numba's simulator)
        check_group2ctx(symbol, ctx, group2ctx)
        self._device = ctx.device
        self._target = self._device.target   # the Target its programs compile for
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self.arg_arrays = _as_list("args", args, self._arg_names, False)
        self.grad_arrays = _as_list("args_grad", args_grad, self._arg_names, True)
        self.aux_arrays = _as_list("aux_states", aux_states, self._aux_names, not self._aux_names)
        reqs = normalize_grad_req(grad_req, self._arg_names)
        self._grad_req = {n: (r if g is not None else "null")
                          for (n, r), g in zip(reqs.items(), self.grad_arrays)}
        for n, r in reqs.items():
            if r != "null" and self.grad_arrays[self._arg_names.index(n)] is None and args_grad is not None \
                    and isinstance(args_grad, (list, tuple)):
                raise MXNetError(f"bind: grad_req for {n!r} is {r!r} but args_grad has no array for it")
        self._check_arrays()
        self._programs: dict[str, Compiled] = dict(_compiled or {})
        self._bound: dict[str, tuple] = {}
        self._arenas: dict[str, Any] = {}       # mode -> the buffer its temporaries are carved from
        self._calls: dict[tuple[str, str], list] = {}   # (mode, phase) -> prepared segment calls
        self._monitor: tuple | None = None
        self._lookup: dict[str, Any] = {}       # mode -> value id -> its numpy array
        self._head_grads: dict[str, dict] = {}  # mode -> output index -> head gradient array
        self._last: str | None = None           # the program mode of the last forward pass
        self._infer_grad = False                # inference forwards keep what backward needs
        self._alike: bool | None = None         # training and inference compute the same (_mode)
        self._tier = Tier(self._cfg)            # which programs run interpreted for now
        self._later = ProgramTier(self._cfg)    # program functions compiled once a program is a loop
        main_mode = "train" if any(r != "null" for r in self._grad_req.values()) else "infer"
        self.outputs = self._make_outputs(self._program(main_mode, load=False))
        self._prepare(main_mode)

    # --- binding -------------------------------------------------------------------------------
    def _check_arrays(self) -> None:
        for what, names, arrs in (("args", self._arg_names, self.arg_arrays),
                                  ("args_grad", self._arg_names, self.grad_arrays),
                                  ("aux_states", self._aux_names, self.aux_arrays)):
            for n, a in zip(names, arrs):
                if a is None:
                    continue
                if a.context.device is not self._device:
                    raise MXNetError(f"bind: {what}[{n!r}] lives on {a.context}, the executor on "
                                     f"{self._ctx} (copy it there with as_in_context)")
                if not storage.is_contiguous(a._data):
                    raise MXNetError(f"bind: {what}[{n!r}] must be a contiguous array")
                if np.dtype(a.dtype) in _UNSUPPORTED:
                    raise MXNetError(f"bind: {what}[{n!r}] has dtype {np.dtype(a.dtype).name}, which the "
                                     f"compiled kernels do not support (use float32 or float64)")
        for n, a, g in zip(self._arg_names, self.arg_arrays, self.grad_arrays):
            if g is not None and (g.shape != a.shape or g.dtype != a.dtype):
                raise MXNetError(f"bind: gradient array of {n!r} has shape {shape_str(g.shape)} "
                                 f"{dtype_name(g.dtype)}, the argument "
                                 f"{shape_str(a.shape)} {dtype_name(a.dtype)}")
        self._shapes = {n: a.shape for n, a in zip(self._arg_names + self._aux_names,
                                                    self.arg_arrays + self.aux_arrays)}
        self._dtypes = {n: _HALF if n in self._half else np.dtype(a.dtype)
                        for n, a in zip(self._arg_names + self._aux_names, self.arg_arrays + self.aux_arrays)}
        if not self._aux_names:   # the arguments' shapes are checked by the pipeline's inference
            return
        _, _, aux_s = self._symbol.infer_shape(**{n: self._shapes[n] for n in self._arg_names})
        for n, want in zip(self._aux_names, aux_s or []):
            if self._shapes[n] != tuple(want):
                raise MXNetError(f"bind: aux state {n!r} has shape {shape_str(self._shapes[n])}, "
                                 f"expected {shape_str(tuple(want))}")

    def _make_outputs(self, prog: Compiled) -> list[NDArray]:
        """The executor's output arrays (shared by its training and inference programs)."""
        g = prog.forward_graph
        old = self._share_outputs or [None] * len(g.outputs)
        return [_shared(o, g.values[v].shape, "output", True, self._ctx)
                if o is not None and o.dtype == g.values[v].dtype
                else nd_zeros(g.values[v].shape, ctx=self._ctx, dtype=g.values[v].dtype)
                for o, v in zip(old, g.outputs)]

    def _program(self, mode: str, load: bool = True) -> Compiled:
        prog = self._programs.get(mode)
        if prog is None:
            base = _base(mode)
            reqs = {} if base == "infer" else self._grad_req
            start = time.perf_counter()
            prog = compile_shared(self._optimized, self._shapes, self._dtypes, reqs, base == "train",
                                  self._cfg, target=self._target, load=load,
                                  monitor=mode.endswith("_mon"), profile=mode.endswith("_prof"))
            if profiler.active("profile_symbolic"):
                profiler.record(f"compile {self._symbol.name or 'symbol'} ({mode})", "compile", start,
                                time.perf_counter())
            self._programs[mode] = prog
        elif load and prog.module is None:
            prog.module = load_program(prog.program, prog.target, self._cfg)
        return prog

    def _load(self, mode: str) -> Compiled:
        """The program of ``mode`` with its module loaded: the ahead-of-time entry built for these
        arrays when there is one (the process then needs no numba), else numba's module."""
        prog = self._program(mode, load=False)
        if prog.module is None:
            prog.module = aot.load_program(prog, self._arrays(mode), self._cfg)
        return self._program(mode)

    def _arrays(self, mode: str) -> dict[str, list[np.ndarray]]:
        if mode in self._bound:
            return self._bound[mode]
        prog = self._program(mode, load=False)
        g = prog.graph
        arena = self._arenas[mode] = storage.arena(prog.plan.planned_bytes, self._ctx)
        ext = {"arg": dict(zip(self._arg_names, self.arg_arrays)),
               "aux": dict(zip(self._aux_names, self.aux_arrays)),
               "grad": dict(zip(self._arg_names, self.grad_arrays))}
        ext["grad_in"] = ext["grad"]
        out_of = {v: self.outputs[i] for i, v in enumerate(g.outputs)}
        heads = {i: storage.alloc(g.values[v].shape, g.values[v].dtype, self._ctx, 1)
                 for i, v in g.head_grads.items()}
        self._head_grads[mode] = heads
        head_of = {v: heads[i] for i, v in g.head_grads.items()}

        def external(vid: int, v: Any) -> Any:
            if v.kind == "out":
                return out_of[vid]._data
            if v.kind == "head_grad":
                return head_of[vid]
            return ext[v.kind][v.ref]._data

        array = value_arrays(prog, arena, external)
        env = {"ctx": self._ctx}   # shared by the host calls of this program (Custom ops)
        bound = bind_phases(prog, array, storage.stream(self._ctx), env)
        self._bound[mode] = bound
        self._lookup[mode] = array
        return bound

    def _prepare(self, mode: str) -> None:
        """Compile (or load from the kernel cache) every phase of a program for the bound arrays.
        A cache entry numba cannot load (corrupt, stale) is purged and compiled afresh. A bind
        compiling for longer than ``Config.progress_seconds`` writes its progress to stderr and
        ends with one line on where its compiled functions came from (:mod:`symjit.compiler.progress`)."""
        target = self._device.target
        start = time.perf_counter()
        if self._interprets(mode):
            return      # a small program's first passes: its kernels as Python, nothing compiled
        if isinstance(self._load(mode).module, aot.Loaded):
            return      # compiled ahead of time for these arrays: nothing to load or compile
        for attempt in (0, 1):
            prog = self._program(mode)
            before = cache_stats(prog)
            try:
                progress = Progress(self._cfg, PROGRESS_STREAM, start)
                origins = self._precompile(target, prog, mode, progress)
                self._warm(target, prog, mode, progress, count=not origins)
                tally = origins.tally() if origins else cache_tally(prog, before)
                progress.close(compile_summary(prog, time.perf_counter() - start, tally, self._cfg))
                warm = not (tally.here or tally.workers or self._later.deferred(mode)) and tally.disk > 0
                aot.after_bind(prog, self._arrays(mode), self._cfg, warm)
                return
            except (MXNetError, KeyboardInterrupt):
                raise
            except Exception:
                if attempt:
                    raise
                purge_program(prog.program, prog.module)
                prog.module = None

    def _interprets(self, mode: str) -> bool:
        """Whether the program of ``mode`` runs interpreted for now (:mod:`symjit.compiler.tier`):
        a small program no ahead-of-time module serves."""
        if self._tier.active(mode):
            return True
        prog = self._program(mode, load=False)
        if prog.module is None:
            prog.module = aot.load_program(prog, self._arrays(mode), self._cfg)
        return prog.module is None and self._tier.start(mode, prog)

    def _tier_switches(self) -> int:
        """How many of this executor's programs ran interpreted and compile from now on
        (:mod:`symjit.compiler.tier`): passes with a switch between them ran on different tiers,
        whose float results may differ in their last roundings (what a finite difference of two
        passes must not see)."""
        return self._tier.switches

    def _warm(self, target: Any, prog: Compiled, mode: str, progress: Progress, count: bool) -> None:
        """Load (or compile) every compiled function of the program's phases that this process
        does not hold yet, with ``progress``'s ticker running; ``count``: it counts the kernel
        calls of hosted segments (targets without units, see :meth:`_precompile`)."""
        later = self._later.deferred(mode)
        todo: list[tuple[Any, list, bool]] = []   # (function, arguments, counted)
        for steps in self._arrays(mode).values():
            for seg, arrays in steps:
                if seg.kind == "njit" and seg.name not in later:
                    todo.append((getattr(prog.module, seg.name), arrays, False))
                elif seg.kind in ("calls", "njit"):   # kernels called from the host
                    by_vid = dict(zip(seg.vids, arrays))
                    todo.extend((target.unit(fn), list(args), count)
                                for fn, args in target.prepare_calls(prog.module, seg.launches, by_vid))
        progress.expect(id(fn) for fn, _, counted in todo if counted)
        pending = []
        for fn, args, counted in todo:
            if not target.held(fn, args):
                pending.append((fn, args, counted))
            elif counted:
                progress.done(id(fn))
        if not pending:
            return
        with progress.ticking():
            for fn, args, counted in pending:
                target.warm(fn, args)
                if counted:
                    progress.done(id(fn))

    def _precompile(self, target: Any, prog: Compiled, mode: str,
                    progress: Progress) -> workers.Origins | None:
        """Compile the program's uncached kernels and program functions, in worker processes
        when the cache is on, for targets with kernel modules; None for other targets. See
        :mod:`symjit.compiler.workers`."""
        if not target.kernel_modules:
            return None
        bound = self._arrays(mode)
        kernels, programs = workers.units(target, prog.module, bound)
        if self._later.on and not mode.endswith(("_prof", "_mon")):
            later = workers.uncached_programs(target, prog.module, bound)
            self._later.defer(mode, later)
            deferred = _named(prog.module, programs, later)
            programs = [u for u in programs if u not in deferred]
        return workers.precompile(kernels, programs, workers.auto_workers(self._cfg), progress,
                                  parallel=self._cfg.cache)

    def _compile_later(self, mode: str) -> None:
        """Compile the program functions of ``mode`` its bind left for later
        (:mod:`symjit.compiler.program_tier`); its steps call them from the next pass on."""
        names, prog = self._later.deferred(mode), self._load(mode)
        _, programs = workers.units(self._target, prog.module, self._arrays(mode))
        units = _named(prog.module, programs, names)
        self._later.compiled(mode)
        start = time.perf_counter()
        progress = Progress(self._cfg, PROGRESS_STREAM, start)
        workers.precompile([], units, workers.auto_workers(self._cfg), progress, parallel=self._cfg.cache)
        progress.close(f"{len(units)} program functions compiled after {self._later.runs} passes, "
                       f"in {time.perf_counter() - start:.1f} s")
        self._calls = {key: c for key, c in self._calls.items() if key[0] != mode}

    # --- running -------------------------------------------------------------------------------
    def _mode(self, is_train: bool) -> str:
        """The program a forward pass runs: ``train``; for inference ``infer`` (``infer_grad`` once
        a backward followed one), or ``train`` when its program is compiled and no op of it reads
        the mode (``OpDef.extra['reads_mode']``: BatchNorm, Dropout, Custom, ...), so both modes
        compute the same and one program serves them."""
        if is_train or self._modes_alike():
            return "train"
        return "infer_grad" if self._infer_grad else "infer"

    def _modes_alike(self) -> bool:
        prog = self._programs.get("train")
        if prog is None:
            return False
        if self._alike is None:
            self._alike = not any(op.op.extra.get("reads_mode") for op in prog.forward_graph.ops)
        return self._alike

    def _run(self, mode: str, phase: str) -> None:
        steps = self._arrays(mode).get(phase)
        if not steps:
            return
        dispatch.settle()    # queued NDArray work (symjit.lazy) runs before the program reads or writes
        with storage.device_scope(self._ctx):
            if phase == "forward" and self._tier.spent(mode):   # interpreted passes done: compile
                self._tier.stop(mode)
                self._calls = {key: c for key, c in self._calls.items() if key[0] != mode}
                self._prepare(mode)
            if phase == "forward" and self._later.ran(mode):   # a loop: its program functions now
                self._compile_later(mode)
            calls = self._calls.get((mode, phase))
            start = time.perf_counter()
            if calls is None:
                if mode.endswith("_prof") and not any(key[0] == mode for key in self._calls):
                    # compile every step first: the events time the kernels
                    start = time.perf_counter()
                    self._prepare(mode)
                    profiler.record(f"prepare {self._symbol.name or 'symbol'} ({mode})", "compile", start,
                                    time.perf_counter())
                calls = self._calls[(mode, phase)] = self._prepare_calls(mode, steps)
            if mode.endswith("_prof"):
                self._run_timed(steps, calls)
            else:
                self._run_steps(mode, phase, steps, calls)
            self._tier.ran(mode, phase, time.perf_counter() - start)

    def _run_timed(self, steps: list, calls: list) -> None:
        """Run a profiled program's steps one by one, each recorded as a profiler event (kernels
        by their group; on a GPU each step is waited for)."""
        for (seg, _), call in zip(steps, calls):
            start = time.perf_counter()
            call()
            storage.synchronize(self._ctx)
            if seg.kind != "host":          # a Custom op's code records itself (profiler.custom_op)
                profiler.record(seg.label or seg.name, "kernel", start, time.perf_counter(),
                                {"program": seg.name})

    def _prepare_calls(self, mode: str, steps: list) -> list[Callable[[], Any]]:
        """Each segment's call with its bound buffers, prepared once by the target (a Custom op's
        host call as it is)."""
        if self._interprets(mode):
            return self._tier.prepare_calls(mode, self._program(mode, load=False), steps,
                                            lambda name: getattr(self._program(mode).module, name))
        prog, target = self._load(mode), self._device.target
        later = self._later.deferred(mode)

        def one(seg: Any, payload: Any) -> Callable[[], Any]:
            if seg.kind == "host":
                return payload
            if isinstance(prog.module, aot.Loaded):
                return prog.module.call(seg, payload)
            if seg.kind == "calls" or seg.name in later:   # kernels called one by one from here
                return _run_all(target.prepare_calls(prog.module, seg.launches, dict(zip(seg.vids, payload))))
            return target.prepare(prog.module, seg.name, payload)
        return [one(seg, payload) for seg, payload in steps]

    def _run_steps(self, mode: str, phase: str, steps: list, calls: list) -> None:
        for k, (seg, _) in enumerate(steps):
            if seg.kind == "host":
                calls[k]()   # a Custom op's Python code (errors are MXNetErrors naming it)
                continue
            try:
                calls[k]()
            except (MXNetError, KeyboardInterrupt):
                raise
            except Exception:   # a cache entry numba cannot load: purge and compile again once
                prog = self._program(mode)
                if isinstance(prog.module, aot.Loaded):
                    raise
                purge_program(prog.program, prog.module)
                prog.module = None
                self._programs[mode] = prog
                self._calls = {key: c for key, c in self._calls.items() if key[0] != mode}
                calls = self._calls[(mode, phase)] = self._prepare_calls(mode, steps)
                calls[k]()

    def forward(self, is_train: bool = False, **kwargs: Any) -> list[NDArray]:
        """Run the forward pass; keyword arrays are copied into the bound arguments first."""
        for name, value in kwargs.items():
            self._set_arg(name, value)
        if self._threads is None:
            self._threads = self._device.thread_policy(self._cfg.blas_threads) or False
        if self._threads:
            self._threads.adapt()   # BLAS threads = the cores other processes leave free
        mode = self._mode(is_train)
        if self._monitor is not None and self._monitor[2]():
            mode += "_mon"
        elif profiler.active("profile_symbolic"):
            mode += "_prof"
        self._run(mode, "forward")
        self._last = mode
        if mode.endswith("_mon"):
            self._report(mode, "forward")
        return self.outputs

    def compiled_program(self, is_train: bool = False) -> tuple[Compiled, Any] | None:  # noqa: FBT001, FBT002
        """The compiled program a forward pass in this mode runs, with its module loaded (numba's,
        or an ahead-of-time entry's), and the buffer its temporaries are carved from, once one
        has run compiled: None before, while it runs interpreted (:mod:`symjit.compiler.tier`)
        and while its program functions wait (:mod:`symjit.compiler.program_tier`). A caller
        running the program on buffers of its own (:class:`~symjit.imperative_bound.BoundProgram`)
        may share that buffer while it does not run this executor at the same time.

        >>> import symjit as mx
        >>> x = mx.sym.var('x')
        >>> exe = (x * 2).bind(mx.cpu(), {'x': mx.nd.ones((2,))}, grad_req='null')
        >>> exe.compiled_program() is None
        True
        """
        mode = self._mode(is_train)
        prog = self._programs.get(mode)
        if prog is None or prog.module is None or self._tier.active(mode) \
                or self._later.deferred(mode) or (mode, "forward") not in self._calls \
                or mode not in self._arenas:
            return None
        return prog, self._arenas[mode]

    def _set_arg(self, name: str, value: Any) -> None:
        if name not in self._arg_names:
            raise MXNetError(f"forward: unknown argument {name!r}; arguments: {self._arg_names}")
        dst = self.arg_arrays[self._arg_names.index(name)]
        src = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
        if tuple(src.shape) != dst.shape:
            raise MXNetError(f"forward: argument {name!r} has shape {shape_str(tuple(src.shape))}, "
                             f"the executor was bound with {shape_str(dst.shape)}")
        if src.dtype.kind not in "biuf":
            raise MXNetError(f"forward: argument {name!r} has dtype {src.dtype}, expected a number type")
        dst[:] = src

    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        """Run the backward pass of the last ``forward``: the gradient of what that pass computed.

        After ``forward(is_train=False)`` that is the inference-mode function, as in MXNet
        (``SoftmaxOutput``'s gradient from the inference output, Dropout as identity, BatchNorm
        with its moving statistics as constants). The inference program keeps no intermediates,
        so the first such backward runs the forward pass again in a program that does (the same
        outputs up to rounding), and later inference passes of this executor use that program.
        A graph no op of which reads the mode (no BatchNorm, Dropout, Custom) runs its inference
        passes with the training program when it has one, so its backward follows directly. ``is_train`` is
        accepted for MXNet's signature; the gradient always follows the forward's mode. A
        ``backward`` before any ``forward`` runs an inference-mode ``forward`` first (symjit's
        choice: MXNet differentiates whatever its buffers hold), so it never changes aux states.

        >>> import symjit as mx
        >>> x = mx.sym.Variable('x')
        >>> ex = mx.sym.Dropout(x * 3, p=0.5).bind(mx.cpu(), {'x': mx.nd.ones((2,))},
        ...                                         args_grad={'x': mx.nd.zeros((2,))})
        >>> _ = ex.forward(is_train=False); ex.backward(mx.nd.ones((2,)))
        >>> ex.grad_dict['x'].asnumpy().tolist()
        [3.0, 3.0]
        """
        mode = self._last
        if mode is None:   # no forward yet: MXNet reads whatever its buffers hold; symjit computes
            self.forward(is_train=False)   # them (inference mode: no aux state changes)
            mode = self._last
        if _base(mode) == "infer":
            self._infer_grad = True
            mode = mode.replace("infer", "infer_grad")
            self._run(mode, "forward")
            self._last = mode
        g = self._program(mode, load=False).graph
        if out_grads is not None:
            grads = [out_grads] if isinstance(out_grads, (NDArray, np.ndarray)) else list(out_grads)
            self._arrays(mode)
            heads = self._head_grads[mode]
            # as MXNet: fewer out_grads than outputs is fine while every output whose gradient the
            # backward reads has one (outputs that reach no gradient need none); out_grads past the
            # last output are not read
            grads = grads[:len(g.outputs)]
            needed = sorted(i for i in heads if i >= len(grads))
            if needed:
                raise MXNetError(f"backward: {len(grads)} out_grads for {len(g.outputs)} outputs"
                                 + (f"; outputs {[g.output_names[i] for i in needed]} need a head gradient"
                                    if needed else ""))
            for i, og in enumerate(grads):
                if i in heads and og is not None:
                    src = og.asnumpy() if isinstance(og, NDArray) else np.asarray(og)
                    dst = heads[i]
                    if src.shape != tuple(dst.shape):
                        raise MXNetError(f"backward: out_grads[{i}] has shape {shape_str(src.shape)}, "
                                         f"output {g.output_names[i]!r} has "
                                         f"{shape_str(tuple(dst.shape))}")
                    storage.copy_from_host(dst, src)
        self._run(mode, "backward")
        if mode.endswith("_mon"):
            self._report(mode, "backward")

    # --- dictionaries and helpers ------------------------------------------------------------
    def get_optimized_symbol(self) -> Any:
        """The symbol the programs were compiled from: the bound symbol with repeated computations
        merged (:mod:`symjit.symbol.cse`; the symbol itself with ``MXNET_ELIMINATE_COMMON_EXPR=0``).

        >>> import symjit as mx
        >>> a = mx.sym.Variable('a')
        >>> ex = ((a * 2) + (a * 2)).simple_bind(mx.cpu(), a=(2,))
        >>> len(ex.get_optimized_symbol().get_internals())
        3
        """
        return self._optimized

    @property
    def arg_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._arg_names, self.arg_arrays))

    @property
    def grad_dict(self) -> dict[str, NDArray]:
        return {n: g for n, g in zip(self._arg_names, self.grad_arrays) if g is not None}

    @property
    def aux_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._aux_names, self.aux_arrays))

    @property
    def output_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    def copy_params_from(self, arg_params: dict, aux_params: dict | None = None,
                         allow_extra_params: bool = False) -> None:
        """Copy parameter values into the bound arrays (shapes must match)."""
        for what, params, table in (("arg_params", arg_params, self.arg_dict),
                                    ("aux_params", aux_params or {}, self.aux_dict)):
            for name, value in params.items():
                if name not in table:
                    if allow_extra_params:
                        continue
                    raise MXNetError(f"copy_params_from: {what} has {name!r}, which the symbol lacks")
                dst = table[name]
                src = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
                if src.shape != dst.shape:
                    raise MXNetError(f"copy_params_from: {name!r} has shape {shape_str(src.shape)}, "
                                     f"expected {shape_str(dst.shape)}")
                dst[:] = src

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **kwargs: Any) -> Executor:
        """A new executor for new input shapes, sharing memory with this one as MXNet's does: an
        array of the same shape is shared, a smaller one is a view of the first elements of this
        one's (outputs too), a larger one new (only with ``allow_up_sizing``); kernels reused. A
        monitor callback (:meth:`set_monitor_callback`) is installed on the new executor too.

        >>> import symjit as mx
        >>> ex = mx.sym.relu(mx.sym.Variable('x')).simple_bind(mx.cpu(), x=(4,), grad_req='null')
        >>> ex.arg_dict['x'][:] = 1
        >>> small = ex.reshape(x=(2,))
        >>> small.forward()[0].asnumpy().tolist(), ex.outputs[0].asnumpy().tolist()
        ([1.0, 1.0], [1.0, 1.0, 0.0, 0.0])
        """
        shapes = {n: a.shape for n, a in zip(self._arg_names, self.arg_arrays)}
        for n, s in kwargs.items():
            if n not in shapes:
                raise MXNetError(f"reshape: unknown argument {n!r}; arguments: {self._arg_names}")
            shapes[n] = tuple(s)
        arg_s, _, aux_s = self._symbol.infer_shape(**{n: shapes[n] for n in kwargs})
        if arg_s is None:
            raise MXNetError(f"reshape: shapes {kwargs} do not determine every argument")

        def pick(old: NDArray | None, shape: tuple, name: str) -> NDArray | None:
            if old is None:
                return None
            if old.shape == tuple(shape):
                return old
            if name not in kwargs and not partial_shaping:
                raise MXNetError(f"reshape: {name!r} would change shape {shape_str(old.shape)} -> "
                                 f"{shape_str(tuple(shape))}; pass partial_shaping=True")
            return _shared(old, tuple(shape), name, allow_up_sizing, self._ctx)

        args = [pick(a, s, n) for a, s, n in zip(self.arg_arrays, arg_s, self._arg_names)]
        grads = [pick(g, s, n) for g, s, n in zip(self.grad_arrays, arg_s, self._arg_names)]
        aux = [pick(a, s, n) for a, s, n in zip(self.aux_arrays, aux_s, self._aux_names)]
        ex = Executor(self._symbol, self._ctx, args, grads, self._grad_req, aux, self._cfg,
                      _outputs=self.outputs)
        ex._monitor = getattr(self, "_monitor", None)   # a monitor callback stays installed
        return ex

    def set_monitor_callback(self, callback: Any, monitor_all: bool = False,
                             active: Any = None, *, variables: bool = True) -> None:
        """Call ``callback(name, NDArray)`` for every op's outputs after each forward pass
        (``fc1_output``; with ``monitor_all`` first its inputs, ``fc1_weight``, an input that is a
        variable first under its own name, ``data``), and after each
        backward pass for the gradient each op computes for its inputs (``fc1_backward_weight``).

        Watched passes run an unfused program without memory reuse (compiled on first use); the
        arrays handed to the callback are views valid until the next pass. ``active`` (a symjit
        extension) is a function of no arguments saying whether the next pass is watched; the
        others run the fused program. ``mx.mon.Monitor`` passes its ``interval`` gate here.
        ``variables=False`` (a symjit extension) reports inputs by their op's names only, as
        MXNet's Gluon op hooks do.
        ``callback=None`` removes the monitor.

        >>> import symjit as mx
        >>> fc = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
        >>> ex = mx.sym.Activation(fc, act_type='relu', name='relu').simple_bind(mx.cpu(), data=(1, 3))
        >>> seen = []
        >>> ex.set_monitor_callback(lambda name, arr: seen.append(name))
        >>> _ = ex.forward(is_train=True); ex.backward(); seen  # doctest: +NORMALIZE_WHITESPACE
        ['fc_output', 'relu_output', 'relu_backward_data',
         'fc_backward_weight', 'fc_backward_bias', 'fc_backward_data']
        """
        if callback is None:
            self._monitor = None
            return
        if not callable(callback):
            raise MXNetError("set_monitor_callback: callback must be callable, got "
                             f"{type(callback).__name__}")
        self._monitor = (callback, bool(monitor_all), active or (lambda: True), variables)

    def _report(self, mode: str, phase: str) -> None:
        """Hand the watched values of one pass of a monitored program to the callback."""
        callback, monitor_all, _, variables = self._monitor
        g = self._programs[mode].graph
        array = self._lookup[mode]
        for op in g.ops:
            if op.phase != phase:
                continue
            if monitor_all and phase == "forward":
                names = op.op.list_arguments(op.params) + op.op.list_aux(op.params)
                for name, i in zip(names, op.inputs):
                    value = g.values[i]
                    if variables and value.kind in ("arg", "aux"):   # under its own name first
                        callback(value.ref, NDArray(array(i), self._ctx))
                    callback(f"{op.name}_{name}", NDArray(array(i), self._ctx))
            for o in op.outputs:
                if o in g.watch:
                    callback(g.watch[o], NDArray(array(o), self._ctx))

    def debug_str(self) -> str:
        """The compiled programs: graph, fused groups and memory plan; the last line, as MXNet's,
        ``Total <n> MB allocated``: the planned temporaries of every program (arguments, gradients
        and outputs not counted), in whole MiB."""
        lines = [f"Symbol outputs: {self._symbol.list_outputs()}"]
        for mode, prog in self._programs.items():
            lines.append(f"== {mode} program ==")
            lines.append(prog.graph.dump())
            lines += [grp.describe() for grp in prog.groups]
            lines.append(prog.plan.summary())
        lines.append(f"Total {self.planned_bytes >> 20} MB allocated")
        return "\n".join(lines)

    @property
    def planned_bytes(self) -> int:
        """Bytes of the planned temporaries of every compiled program (arguments, gradients and
        outputs not counted)."""
        return sum(prog.plan.planned_bytes for prog in self._programs.values())


class HalfExecutor(Executor):
    """An executor over float16 arrays (symjit's choice: numba has no float16 arithmetic): the
    program runs in float32 on widened copies of the float16 arguments, gradients and aux states,
    held by an inner :class:`Executor`; each pass copies the float16 arrays in, and the float16
    outputs, gradients and aux states out, rounded once (MXNet rounds after every operator, so
    results agree to float16's precision, not bit for bit). Arrays of other dtypes are shared
    with the inner executor, as a plain bind shares them.

    >>> import symjit as mx
    >>> x = mx.nd.array([1, 2, 3], dtype='float16')
    >>> ex = (mx.sym.Variable('x') * 2).bind(mx.cpu(), {'x': x},
    ...                                      args_grad={'x': mx.nd.zeros(3, dtype='float16')})
    >>> out = ex.forward(is_train=True)[0]; ex.backward(mx.nd.ones(3, dtype='float16'))
    >>> out.dtype.__name__, out.asnumpy().tolist(), ex.grad_dict['x'].asnumpy().tolist()
    ('float16', [2.0, 4.0, 6.0], [2.0, 2.0, 2.0])
    """

    def __init__(self, symbol, ctx: Context, args: Any, args_grad: Any = None, grad_req: Any = "write",
                 aux_states: Any = None, config: Config | None = None, _compiled: dict | None = None,
                 group2ctx: Any = None, _outputs: list | None = None):
        self._symbol, self._ctx, self._cfg = symbol, ctx, config or default_config()
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self.arg_arrays = _as_list("args", args, self._arg_names, False)
        self.grad_arrays = _as_list("args_grad", args_grad, self._arg_names, True)
        self.aux_arrays = _as_list("aux_states", aux_states, self._aux_names, not self._aux_names)
        groups = (self.arg_arrays, self.grad_arrays, self.aux_arrays)
        wide = [[self._widen(a) for a in group] for group in groups]
        self._inner = object.__new__(Executor)   # a plain one, whatever its outputs' dtypes
        named = zip(self._arg_names + self._aux_names, self.arg_arrays + self.aux_arrays)
        half = frozenset(n for n, a in named if np.dtype(a.dtype) == _HALF)
        self._inner.__init__(symbol, ctx, wide[0], None if args_grad is None else wide[1], grad_req,
                             wide[2], config, _compiled, group2ctx, _half=half)
        self._pairs = [[(a, w) for a, w in zip(group, ws) if a is not None and a is not w]
                       for group, ws in zip(groups, wide)]
        self._grad_req = self._inner._grad_req
        _, out_types, _ = symbol.infer_type(**{n: np.dtype(a.dtype)
                                               for n, a in zip(self._arg_names, self.arg_arrays)})
        self.outputs = [nd_zeros(o.shape, ctx=ctx, dtype=_HALF) if np.dtype(t) == _HALF else o
                        for o, t in zip(self._inner.outputs, out_types or [None] * len(self._inner.outputs))]

    def compiled_program(self, is_train: bool = False) -> None:  # noqa: FBT001, FBT002
        """Always None: the program runs on the inner executor's widened float32 copies, never on
        a caller's float16 buffers, so callers run this executor's passes instead."""
        return None

    def _tier_switches(self) -> int:
        return self._inner._tier_switches()

    def _widen(self, a: NDArray | None) -> NDArray | None:
        if a is None or np.dtype(a.dtype) != _HALF:
            return a
        return nd_zeros(a.shape, ctx=a.context, dtype=np.float32)

    def forward(self, is_train: bool = False, **kwargs: Any) -> list[NDArray]:
        """Copy the float16 arguments and aux states into their float32 copies, run the float32
        program, and round its outputs (and updated aux states) into the float16 arrays."""
        for name, value in kwargs.items():
            self._set_arg(name, value)
        for a, w in self._pairs[0] + self._pairs[2]:
            a._copyto(w)
        self._inner.forward(is_train)
        for out, inner in zip(self.outputs, self._inner.outputs):
            if out is not inner:
                inner._copyto(out)
        if is_train:
            for a, w in self._pairs[2]:
                w._copyto(a)
        return self.outputs

    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        """The float32 program's backward pass; gradients rounded into the float16 arrays (those
        accumulated with ``grad_req='add'`` are copied in first)."""
        for a, w in self._pairs[1]:
            if self._grad_req[self._arg_names[self._index(a)]] == "add":
                a._copyto(w)
        self._inner.backward(out_grads, is_train)
        for a, w in self._pairs[1]:
            w._copyto(a)

    def _index(self, grad: NDArray) -> int:
        return next(i for i, g in enumerate(self.grad_arrays) if g is grad)

    def get_optimized_symbol(self) -> Any:
        """The inner executor's :meth:`Executor.get_optimized_symbol`."""
        return self._inner.get_optimized_symbol()

    def set_monitor_callback(self, callback: Any, monitor_all: bool = False, active: Any = None, *,
                             variables: bool = True) -> None:
        """As :meth:`Executor.set_monitor_callback`: the callback sees the float32 values."""
        self._inner.set_monitor_callback(callback, monitor_all, active, variables=variables)

    def debug_str(self) -> str:
        """The float32 program's :meth:`Executor.debug_str`."""
        return self._inner.debug_str()

    @property
    def planned_bytes(self) -> int:
        return self._inner.planned_bytes


# what the layers below hand out from this one: Symbol.bind/simple_bind build Executors, a device
# gives its code-generation Target and the ahead-of-time loader of its update kernels
register_executor(Executor, simple_bind_arrays)
provide_to_devices(target=get_target, aot_kernels=aot.Kernels)
