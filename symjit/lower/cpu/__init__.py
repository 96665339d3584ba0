"""The CPU target: ``numba.njit`` kernels, serial loop nests, and one compiled program function per
phase that calls the group kernels in order; its op rules are in this package by family."""
from __future__ import annotations

from ...discovery import import_submodules
from ...jitext import typeof
from ...kernels.cpu.sync_state import SYNC_LENGTH
from ...ops.random_ops import SEED_BOUND
from ...threads import PARTS_MIN
from ..target import Launch, Target, register_target
from ..writer import (
    PART_PARAMS,
    PARTS_SUFFIX,
    WHOLE_SUFFIX,
    KernelWriter,
    ModuleWriter,
    pure_statement,
    takes_parts,
)
from .interpret import interpret, interpret_call
from .overloads import register_overloads
from .threaded import place_gemms


def const_arg(value):
    """A const argument as the compiled programs pass it (int64, float64, or a tuple of int64)."""
    import numpy as np
    if isinstance(value, tuple):
        return tuple(np.int64(v) for v in value)
    return np.float64(value) if isinstance(value, float) else np.int64(value)


def bound_calls(launches: list, by_vid: dict) -> list[tuple[str, tuple]]:
    """``(kernel name, arguments)`` of each call ``(name, value ids, consts)`` of a ``calls``
    segment, ``by_vid`` the bound array of each value id; a kernel split into parts
    (:data:`~symjit.lower.writer.PARTS_SUFFIX`), or written so and called whole
    (:data:`~symjit.lower.writer.WHOLE_SUFFIX`), gets a whole call's part arguments last
    (:func:`symjit.parts.whole_call`; :meth:`CPUTarget.run_call` runs it in parts)."""
    from ...parts import whole_call
    return [(fn, tuple([by_vid[v] for v in vids] + [const_arg(c) for c in consts]
                       + (list(whole_call()) if takes_parts(fn) else [])))
            for fn, vids, consts in launches]


MAP_PARTS = 8
"""Iterations the split axis of a loop in parts has at least (:meth:`CPUTarget.open_map_loop`):
enough to hand both threads even shares."""


class CPUTarget(Target):
    """``numba.njit`` kernels; a loop is a nest of ``range`` loops (the last axis innermost)."""

    name = "cpu"
    host_calls = True
    kernel_modules = True

    def module_writer(self, cache: bool, fastmath: bool) -> ModuleWriter:
        flags = f"cache={cache}, nogil=True, error_model='numpy'" + (", fastmath=True" if fastmath else "")
        return ModuleWriter(f"@numba.njit({flags})", "numba.njit(inline='always', error_model='numpy')",
                            target=self)

    def open_loop(self, k: KernelWriter, dims: list[str]) -> list[str]:
        idx = [f"i{d}" for d in range(len(dims))]
        for i, n in zip(idx, dims):
            k.line(f"for {i} in range({n}):")
            k.indent += 1
        k.loop_indents.append(len(dims))
        return idx

    def open_map_loop(self, k: KernelWriter, dims: list[str], sizes: tuple[int, ...]) -> list[str]:
        """A loop over at least :data:`~symjit.threads.PARTS_MIN` elements is split into parts
        that run at the same time on the host's threads (:mod:`symjit.parts`; the kernel takes
        :data:`~symjit.lower.writer.PART_PARAMS` last and is named with
        :data:`~symjit.lower.writer.PARTS_SUFFIX`): its leading axes merged into one axis of at
        least :data:`MAP_PARTS` iterations, each part a run of them (the last axis stays an inner
        loop, which LLVM vectorizes), or, when all but the last axis make fewer, runs of the last
        axis itself. Smaller loops are :meth:`open_loop`'s.

        A loop of two or more axes in a kernel written for any extents of its ranks
        (``k.any_pattern``: a light program's, :mod:`symjit.compiler.codegen.loop`) has one form
        whatever its size: see :meth:`_open_any_sizes`."""
        n = 1
        for d in sizes:
            n *= d
        if not sizes or k.block_calls or not all(pure_statement(line) for line in k.lines):
            return self.open_loop(k, dims)
        lead = 1
        for d in sizes[:max(len(sizes) - 2, 1)]:
            lead *= d
        if k.any_pattern and len(sizes) >= 2 and (n < PARTS_MIN or lead >= MAP_PARTS):
            return self._open_any_sizes(k, dims, whole=n < PARTS_MIN)
        if n < PARTS_MIN:
            return self.open_loop(k, dims)
        idx = [f"i{d}" for d in range(len(dims))]
        merged, m = 1, 0
        while m < len(sizes) - 1 and merged < MAP_PARTS:
            merged *= sizes[m]
            m += 1
        k.parts = True
        if merged < MAP_PARTS:   # all but the last axis are few: serial loops, the last one in parts
            lo, hi = self._part_bounds(k, f"({dims[-1]})")
            for i, d in zip(idx[:-1], dims[:-1]):
                k.line(f"for {i} in range({d}):")
                k.indent += 1
            k.line(f"for {idx[-1]} in range({lo}, {hi}):")
            k.indent += 1
            k.loop_indents.append(len(dims))
        else:
            t = k.tmp("p")
            lo, hi = self._part_bounds(k, " * ".join(f"({d})" for d in dims[:m]))
            k.line(f"for {t} in range({lo}, {hi}):")
            k.indent += 1
            for a in range(m):   # index a of the merged axes: (t // the later axes' extents) % its own
                inner = " * ".join(f"({d})" for d in dims[a + 1:m])
                value = f"{t} // ({inner})" if inner else t
                k.line(f"{idx[a]} = {value} % ({dims[a]})" if a else f"{idx[a]} = {value}")
            for i, d in zip(idx[m:], dims[m:]):
                k.line(f"for {i} in range({d}):")
                k.indent += 1
            k.loop_indents.append(1 + len(dims) - m)
        return idx

    @staticmethod
    def _part_bounds(k: KernelWriter, extent: str) -> tuple[str, str]:
        """Emit the bounds of this kernel's part of ``extent`` iterations (even runs)."""
        part, parts, _ = PART_PARAMS
        n, lo, hi = k.tmp("n"), k.tmp("lo"), k.tmp("hi")
        k.line(f"{n} = {extent}")
        k.line(f"{lo} = {part} * {n} // {parts}")
        k.line(f"{hi} = ({part} + 1) * {n} // {parts}")
        return lo, hi

    def _open_any_sizes(self, k: KernelWriter, dims: list[str], whole: bool) -> list[str]:
        """The loop's leading axes (all but the last two; the first of two) as one run of
        iterations split into parts, each part's indices stepped on from its first one like an
        odometer (no division per iteration), the last two axes (one, of two) nested loops inside,
        which LLVM vectorizes whatever the operands' steps. Its source depends on the rank alone:
        a small loop (``whole``, named :data:`~symjit.lower.writer.WHOLE_SUFFIX`) is called as
        part 0 of 1 and shares its kernel with the big ones run in parts. Against nested loops
        over all five axes of a broadcast, LLVM compiles it in ~0.27 s instead of ~0.93 s."""
        idx = [f"i{d}" for d in range(len(dims))]
        m = max(len(dims) - 2, 1)
        k.parts, k.whole = True, whole
        lo, hi = self._part_bounds(k, " * ".join(f"({d})" for d in dims[:m]))
        tail: list[str] = []
        if m == 1:
            k.line(f"for {idx[0]} in range({lo}, {hi}):")
        else:
            for a in range(m):   # the first iteration's indices
                inner = " * ".join(f"({d})" for d in dims[a + 1:m])
                value = f"{lo} // ({inner})" if inner else lo
                k.line(f"{idx[a]} = {value} % ({dims[a]})" if a else f"{idx[a]} = {value}")
            k.line(f"for {k.tmp('t')} in range({lo}, {hi}):")
            for depth, a in enumerate(range(m - 1, 0, -1)):   # the next iteration's indices
                pad = "    " * depth
                tail += [f"{pad}{idx[a]} += 1", f"{pad}if {idx[a]} == ({dims[a]}):",
                         f"{pad}    {idx[a]} = 0"]
            tail.append("    " * (m - 1) + f"{idx[0]} += 1")
        k.indent += 1
        for i, d in zip(idx[m:], dims[m:]):
            k.line(f"for {i} in range({d}):")
            k.indent += 1
        k.loop_indents.append((1 + len(dims) - m, tuple(tail)))
        return idx

    def close_loop(self, k: KernelWriter, idx: list[str]) -> None:
        opened = k.loop_indents.pop() if k.loop_indents else len(idx)
        if isinstance(opened, tuple):   # a loop whose iterations step indices on (_open_any_sizes)
            opened, tail = opened
            k.indent -= opened - 1
            for line in tail:
                k.line(line)
            k.indent -= 1
            return
        k.indent -= opened

    def emit_seed(self, k: KernelWriter) -> str:
        """The kernel draws its seed from numba's generator when it starts."""
        seed = k.tmp("seed")
        k.line(f"{seed} = np.random.randint(0, {SEED_BOUND})")
        return seed

    def emit_check(self, k: KernelWriter, cond: str, message: str) -> None:
        err = k.imp("symjit.base", "MXNetError")   # numba raises it from the compiled program
        k.line(f"if {cond}:")
        k.line(f"    raise {err}({message!r})")

    def signature(self, args) -> tuple:
        """The numba argument types of a compiled call on ``args`` (compile workers compile it
        ahead, :mod:`symjit.compiler.workers`)."""
        return tuple(typeof(a) for a in args)

    def held(self, fn, arrays: list) -> bool:
        return self.signature(arrays) in fn.overloads

    def warm(self, fn, arrays: list) -> None:
        fn.compile(self.signature(arrays))

    def prepare_calls(self, module, launches: list, by_vid: dict) -> list:
        """``(kernel, arguments)`` of each call of a ``calls`` segment, bound once (a kernel split
        into parts through :meth:`run_call`)."""
        return [(self.run_call(fn, getattr(module, fn)), args) for fn, args in bound_calls(launches, by_vid)]

    def run_call(self, name: str, fn):
        """``fn``, or for a kernel split into parts (``name`` ends in
        :data:`~symjit.lower.writer.PARTS_SUFFIX`) a :class:`~symjit.parts.PartsCall` running its
        parts at the same time."""
        if not name.endswith(PARTS_SUFFIX):
            return fn
        from ...parts import PartsCall
        return PartsCall(fn)

    def unit(self, fn):
        """The compiled function a prepared call runs (what is compiled ahead for it)."""
        from ...parts import PartsCall
        return fn.fn if isinstance(fn, PartsCall) else fn

    def bound_calls(self, launches: list, by_vid: dict) -> list[tuple[str, tuple]]:
        return bound_calls(launches, by_vid)

    def interpret(self, source: str):
        """The kernel as plain Python, where it only composes scalar bodies
        (:func:`symjit.lower.cpu.interpret.interpret`)."""
        return interpret(source)

    def interpret_call(self, module: str, name: str):
        """The building blocks with a Python form a program calls itself
        (:data:`symjit.lower.cpu.interpret.CALL_TWINS`: the block copies of ``Concat``, ``stack``
        and ``SliceChannel``)."""
        return interpret_call(module, name)

    def schedule(self, g):
        """A convolution net's GEMMs on numba's threads beside its convolutions
        (:func:`~symjit.lower.cpu.threaded.place_gemms`)."""
        return place_gemms(g)

    def install(self) -> None:
        """The CPU forms of ``tanh``/``sigmoid`` (float32 through vectorizable formulas) and
        integer ``div`` (:mod:`symjit.lower.cpu.overloads`)."""
        register_overloads()


    def program(self, mw: ModuleWriter, name: str, launches: list[Launch], arg) -> list[int]:
        """The program function: the arrays, then every launch's consts as arguments (not literals,
        so programs that differ only in them, a softmax's temperature or an op's scalar, share
        one function, as they share their kernels); a kernel written in parts and called whole
        (:data:`~symjit.lower.writer.WHOLE_SUFFIX`) gets a whole call's part arguments."""
        params = list(dict.fromkeys(v for _, vs, *_ in launches for v in vs))
        names = [f"c{i}" for i in range(sum(len(consts) for *_, consts in launches))]
        k = KernelWriter(mw, name, [arg(v) for v in params] + names)
        taken = iter(names)
        for fn, vs, _, _, host, consts in launches:
            if host:   # a compiled program cannot call Python: no CPU rule asks for host arguments
                raise ValueError(f"kernel {fn}: the cpu target has no host-computed arguments")
            whole = [f"0, 1, np.zeros({SYNC_LENGTH}, np.int64)"] if fn.endswith(WHOLE_SUFFIX) else []
            k.line(f"{fn}({', '.join([arg(v) for v in vs] + [next(taken) for _ in consts] + whole)})")
        mw.functions.append(k.finish())
        return params

    def program_consts(self, launches: list[Launch]) -> list:
        """The launches' consts in order, as :func:`bound_calls` passes them."""
        return [const_arg(c) for *_, consts in launches for c in consts]


CPU = register_target(CPUTarget())


import_submodules(__name__, __path__)   # the rule modules of this target (each registers its rules)
