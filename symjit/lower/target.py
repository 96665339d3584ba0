"""Targets: what differs between code generators, behind one small interface.

A :class:`Target` owns the kernel decorator and the scalar-body wrapper of its modules, how a loop
over a group's elements opens (nested ``range`` loops on the CPU, a grid-stride loop on a GPU), and
how a phase's program calls its kernels (one compiled function calling them on the CPU, kernel
launches on a GPU). The loop generator and the program generator
(:mod:`symjit.compiler.codegen.generate`) are shared; the op lowerings are rules keyed by
``(op, Target class)`` (:mod:`symjit.lower.rules`). Adding a target means a new :class:`Target`
subclass registered with :func:`register_target` plus its rules; no pass changes.

The compiler receives the Target object itself (``device.target``, or :func:`as_target` at a
public entry point); a target's ``name`` is for messages and cache keys. Names are looked up only
where they come in as text: the ``--target`` option of ``symjit compile`` and a device's
``target_name`` (:func:`get_target`).

>>> get_target('cpu').name, get_target('cuda').host_calls
('cpu', True)
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import MXNetError
from ..jitext import on_install
from .writer import KernelWriter, ModuleWriter, takes_parts

__all__ = ["Target", "Launch", "register_target", "get_target", "target_names", "target_for",
           "as_target", "all_targets", "kernel_signature"]

# kernel name, value ids of its arguments, source of what it spans at run time, how it spans it
# ("element": a grid-stride loop over that many elements; "block": one block per slice), and the
# (module, function) of each scalar argument the host computes before the launch, and the value
# of each attribute argument passed after those (KernelWriter.const: an int or a tuple of ints)
Launch = tuple[str, list[int], str, str, list[tuple[str, str]], list]


class Target:
    """The interface every target implements (see the module docstring)."""

    name = ""
    host_calls = False     # can a phase stop for a Python host call (Custom ops) between segments
    stream_arg = False     # do program functions take the stream to queue work on as first argument
    kernel_modules = False  # does each distinct kernel go into a module of its own (cached across programs)

    def module_writer(self, cache: bool, fastmath: bool) -> ModuleWriter:
        """A writer for one generated module of this target."""
        raise NotImplementedError

    def open_loop(self, k: KernelWriter, dims: list[str]) -> list[str]:
        """Open a loop over every index of ``dims`` (source of each extent); return the index
        names. The caller emits the body at ``k.indent`` and then calls :meth:`close_loop`."""
        raise NotImplementedError

    def close_loop(self, k: KernelWriter, idx: list[str]) -> None:
        raise NotImplementedError

    def open_map_loop(self, k: KernelWriter, dims: list[str], sizes: tuple[int, ...]) -> list[str]:
        """Open a loop like :meth:`open_loop` whose iterations are independent (each reads its
        operands and writes only its own elements of its outputs; ``sizes`` are its static extents;
        in a kernel written for any extents of its ranks, ``k.any_pattern``, the loop's form had
        better not depend on them): a target may spread it over threads. This one is
        :meth:`open_loop`."""
        return self.open_loop(k, dims)

    def launch_config(self, n: int, per: str = "element") -> tuple[int, int] | None:
        """(grid, block) of a kernel whose loop covers ``n`` elements (``per='block'``: ``n``
        slices, one block each); None where kernels are plain calls (the CPU)."""
        return None

    def emit_seed(self, k: KernelWriter) -> str:
        """Emit what gives the kernel a fresh seed in ``[0, SEED_BOUND)``
        (:data:`symjit.ops.random_ops.SEED_BOUND`) at each call and return its local name (the
        samplers, :mod:`symjit.lower.random`). Every target draws it from the one stream that
        ``mx.random.seed`` seeds, numba's generator of the calling thread; where the kernel
        cannot draw it itself, the host draws it before the launch."""
        raise NotImplementedError

    def emit_check(self, k: KernelWriter, cond: str, message: str) -> None:
        """Emit a data check: when ``cond`` (source) holds at run time, the program stops with
        ``MXNetError(message)``; the kernel must go on safely (the caller clips the bad value)."""
        raise NotImplementedError

    def held(self, fn: Callable, arrays: list) -> bool:
        """Whether this process holds ``fn`` compiled for the types of ``arrays`` already (then
        :meth:`warm` has nothing to do); True where code compiles at its first launch."""
        return True

    def warm(self, fn: Callable, arrays: list) -> None:
        """Compile a program function for the types of ``arrays`` before its first call (nothing
        where code compiles at its first launch)."""

    def prepare(self, module: Any, name: str, payload: list) -> Callable[[], None]:
        """A call of phase function ``name`` of a loaded ``module`` with the bound ``payload``
        (its buffers never move), with whatever can be decided once decided here: on the CPU the
        compiled function with its arguments, on CUDA a launch table."""
        return functools.partial(getattr(module, name), *payload)

    def interpret(self, source: str) -> Callable | None:
        """The kernel of a kernel module's ``source`` (targets with :attr:`kernel_modules`) as a
        plain Python function computing its elements, which a small program runs before it is
        compiled (:mod:`symjit.compiler.tier`); None where it cannot (this one: never)."""
        return None

    def interpret_call(self, module: str, name: str) -> Callable | None:
        """A building block a program calls itself (``KernelWriter.direct``: function ``name`` of
        ``module``) as a plain Python function with its results, for the same interpreted passes
        as :meth:`interpret`; None where there is none (this one: never)."""
        return None

    def prepare_calls(self, module: Any, launches: list, by_vid: dict) -> list:
        """``(kernel, arguments)`` of each kernel call of a ``calls`` segment (targets with
        :attr:`kernel_modules`), ``by_vid`` the bound array of each value id."""
        raise NotImplementedError(f"the {self.name} target runs no host-driven kernel calls")

    def run_call(self, name: str, fn: Callable) -> Callable:
        """What runs kernel ``name``'s compiled function ``fn`` on the arguments
        :meth:`bound_calls` gives it (``fn`` itself, unless the target runs such a kernel its own
        way: the CPU's kernels split into parts)."""
        return fn

    def unit(self, fn: Callable) -> Callable:
        """The compiled function a call from :meth:`prepare_calls` runs: what compile workers and
        warm-up compile for it (the call itself, unless the target wraps its kernels)."""
        return fn

    def program(self, mw: ModuleWriter, name: str, launches: list[Launch],
                arg: Callable[[int], str]) -> list[int]:
        """Emit the function running ``launches`` in order; return the value ids it takes
        (``arg(vid)`` is an array's local name), after the stream when :attr:`stream_arg`, and
        before what :meth:`program_consts` gives."""
        raise NotImplementedError

    def program_consts(self, launches: list[Launch]) -> list:
        """What the function :meth:`program` writes for ``launches`` takes after its arrays (this
        one: nothing; its consts are written into it)."""
        return []

    def schedule(self, g: Any) -> Any:
        """The graph (:class:`~symjit.compiler.graph.Graph`) with this target's scheduling choices
        marked on its nodes, after the target-neutral simplifications and before fusion (the
        CPU's: a convolution net's GEMMs on numba's threads). This one changes nothing."""
        return g

    def bound_calls(self, launches: list, by_vid: dict) -> list[tuple[str, tuple]]:
        """``(kernel name, arguments)`` of each call ``(name, value ids, consts)`` of a ``calls``
        segment (targets with :attr:`kernel_modules`), ``by_vid`` the bound array of each value
        id: what :meth:`prepare_calls` calls, by name (the ahead-of-time modules' units)."""
        raise NotImplementedError(f"the {self.name} target runs no host-driven kernel calls")

    def signature(self, args: Any) -> tuple | None:
        """The compile signature of a call of a compiled function on ``args``, so that worker
        processes can compile it before the call (:mod:`symjit.compiler.workers`); None (this
        one): the target compiles its code in the binding process, at its first call."""
        return None

    def install(self) -> None:
        """Register this target's forms of symjit's numba helpers (``ops/fastmath``'s ``tanh``
        and ``sigmoid``, ``ops/intdiv``'s ``div``) with numba. :func:`register_target` runs it at
        :func:`symjit.jitext.install` (once per method: a subclass that keeps its parent's shares
        its registration). This one registers nothing."""


def kernel_signature(compiled: Any, name: str) -> tuple:
    """The numba argument types of kernel function ``name`` of a compiled program, in the order a
    launch passes them: its arrays (C-contiguous, of their values' dtypes and ranks), the scalars
    the host computes (an int64, or an int32 array for functions marked ``array_arg``: the error
    flag), then its attribute arguments (int64s and tuples of them, ``KernelWriter.const``), and
    for a kernel in parts the part arguments (``writer.PART_PARAMS``)."""
    import importlib

    from numba import from_dtype, typeof
    from numba import types as nt
    g, prog = compiled.graph, compiled.program
    arrays = tuple(nt.Array(from_dtype(g.values[v].dtype), max(len(g.values[v].shape), 1), "C")
                   for v in prog.kernels[name])
    hosts = tuple(nt.Array(nt.int32, 1, "C")
                  if getattr(getattr(importlib.import_module(module), fn), "array_arg", False) else nt.int64
                  for module, fn in prog.host_args.get(name, ()))
    consts = tuple(typeof(c if isinstance(c, tuple) else np.float64(c) if isinstance(c, float)
                          else np.int64(c)) for c in prog.consts.get(name, ()))
    parts = (nt.int64, nt.int64, nt.Array(nt.int64, 1, "C")) if takes_parts(name) else ()
    return arrays + hosts + consts + parts


_TARGETS: dict[str, Target] = {}
_INSTALLS: set = set()   # the install methods scheduled with symjit.jitext
DEFAULT = "cpu"   # the target compile_symbol uses when given none: the host's


def register_target(target: Target) -> Target:
    """Make ``target`` available to :func:`get_target` under its name, and have its numba
    helpers registered (:meth:`Target.install`) before symjit compiles."""
    _TARGETS[target.name] = target
    install = type(target).install
    if install is not Target.install and install not in _INSTALLS:
        _INSTALLS.add(install)
        on_install(functools.partial(install, target))
    return target


LOADERS: list[Callable[[], None]] = []
"""What imports the target packages and rule modules, registered by :mod:`symjit.lower` (which
finds them in its package): the first lookup of a rule or a target runs it, so ``import symjit``
imports no rule module (nor numba)."""


def load_builtin() -> None:
    """Run the registered loaders once: symjit's target packages register themselves and their
    rules."""
    while LOADERS:
        LOADERS.pop(0)()


def get_target(name: str) -> Target:
    """The target called ``name``; MXNetError naming the known ones otherwise."""
    if name not in _TARGETS:
        load_builtin()
    if name not in _TARGETS:
        raise MXNetError(f"unknown compile target {name!r} (expected one of {target_names()})")
    return _TARGETS[name]


def target_names() -> list[str]:
    """The names of the registered targets (symjit's own and any registered since)."""
    load_builtin()
    return sorted(_TARGETS)


def all_targets() -> list[Target]:
    """Every registered target, by name."""
    return [_TARGETS[n] for n in target_names()]


def as_target(target: Target | str | None) -> Target:
    """``target`` itself, the target of that name, or (None) the host's: how the public entry
    points (:func:`symjit.compiler.pipeline.compile_symbol`) take a target.

    >>> as_target(None) is as_target('cpu') is as_target(get_target('cpu'))
    True
    """
    if isinstance(target, Target):
        return target
    return get_target(DEFAULT if target is None else target)


def target_for(ctx) -> str:
    """The name of the target compiling for a device context (its device's, ``ctx.device``):
    ``cuda`` for a GPU, else ``cpu``.

    >>> from symjit.context import cpu, gpu
    >>> target_for(cpu()), target_for(gpu(0))
    ('cpu', 'cuda')
    """
    return ctx.device.target_name
