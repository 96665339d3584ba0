"""Source writing shared by every target's code generator.

A :class:`KernelWriter` collects the statements of one kernel function and the imports its module
needs. Lowering rules (:mod:`symjit.lower.rules`) receive one and emit statements through it, so
they never see the module layout.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..kernels.cpu.sync_state import SYNC_LENGTH

__all__ = ["KernelWriter", "ModuleWriter", "PARTS_SUFFIX", "WHOLE_SUFFIX", "PART_PARAMS", "pure_statement",
           "takes_parts"]

PARTS_SUFFIX = "_parts"
"""The name ending of a kernel function that runs one part of its loop (:attr:`KernelWriter.parts`):
the host calls it in parts at the same time (:mod:`symjit.parts`)."""
WHOLE_SUFFIX = "_whole"
"""The name ending of a kernel function written in parts (it takes :data:`PART_PARAMS`) that the
host calls whole, as part 0 of 1 (:attr:`KernelWriter.whole`): a small call of a loop written for
any extents, which shares its form with the calls big enough to run in parts."""
PART_PARAMS = ("_part", "_nparts", "_sync")
"""The trailing parameters of such a kernel: which part it runs, of how many (``0, 1``: all), and
the call's barrier state, where a hand-written building block's parts meet between its phases
(``kernels.cpu.spin.barrier``; a generated loop has one phase and leaves it alone)."""

_PURE_CALLS = re.compile(r"\b(?:min|max)\(|\.reshape\(")
_ASSIGN = re.compile(r"^\s*_\w+ = (.*)$")


def takes_parts(name: str) -> bool:
    """Whether kernel function ``name`` takes :data:`PART_PARAMS` (in parts or called whole).

    >>> takes_parts("k0_parts"), takes_parts("k0_whole"), takes_parts("k0")
    (True, True, False)
    """
    return name.endswith((PARTS_SUFFIX, WHOLE_SUFFIX))


def pure_statement(line: str) -> bool:
    """Whether a kernel statement only names a value: an assignment calling nothing but ``min``,
    ``max`` and ``reshape`` (a view of an argument, an index bound). Every part of a kernel in
    parts runs the statements outside its share of the work, so only such statements may stand
    beside a loop split into parts or a building block's call in parts.

    >>> pure_statement("    _y1 = a8[0, :a7.shape[1] * a7.shape[0]].reshape(a7.shape[1], a7.shape[0])")
    True
    >>> pure_statement("    _g2(_y1, a0, _w3)"), pure_statement("    _s1 = np.random.randint(0, 9)")
    (False, False)
    """
    m = _ASSIGN.match(line)
    return m is not None and "(" not in _PURE_CALLS.sub("", m.group(1))


class ModuleWriter:
    """The generated module: imports, body wrappers and functions."""

    def __init__(self, decorator: str, body_wrapper: str, preamble: tuple[str, ...] = (), target: Any = None):
        self.target = target       # the Target writing it (symjit.lower.target), asked by the rules
        self.decorator = decorator
        self.preamble = preamble   # extra import lines of the target (``from numba import cuda``)
        self.body_wrapper = body_wrapper
        self.imports: dict[tuple[str, str], str] = {}
        self.checks: list[str] = []   # messages of the data checks its kernels emit (code = index + 1)
        self.bodies: dict[tuple[str, str], str] = {}
        self.functions: list[str] = []

    def imp(self, module: str, name: str) -> str:
        """A local alias for ``module.name`` (imported once)."""
        key = (module, name)
        if key not in self.imports:
            self.imports[key] = f"_i{len(self.imports)}_{name}"
        return self.imports[key]

    def imp_as(self, module: str, name: str, alias: str) -> str:
        """Import ``module.name`` under the chosen ``alias``."""
        self.imports[(module, name, alias)] = alias
        return alias

    def body(self, fn) -> str:
        """The alias of a scalar body wrapped for the target (njit inline / cuda device)."""
        key = (fn.__module__, fn.__qualname__)
        if key not in self.bodies:
            raw = self.imp(*key)
            self.bodies[key] = f"{raw}_b"
        return self.bodies[key]

    def source(self, header: str) -> str:
        lines = [f'"""{header}"""', "import math", "", "import numba", "import numpy as np",
                 *self.preamble, ""]
        for key, alias in sorted(self.imports.items(), key=lambda kv: kv[1]):
            lines.append(f"from {key[0]} import {key[1]} as {alias}")
        lines.append("")
        for (module, name), alias in self.bodies.items():
            lines.append(f"{alias} = {self.body_wrapper}({self.imports[(module, name)]})")
        lines.append("")
        for fn in self.functions:
            lines += ["", fn]
        return "\n".join(lines) + "\n"


class KernelWriter:
    """Statements of one kernel function; lowerings emit through ``line``/``imp``/``tmp``."""

    def __init__(self, module: ModuleWriter, name: str, params: list[str], info: dict | None = None):
        self.module = module
        self.info = info or {}   # local array name -> compiler Value (static shape, dtype)
        self.workspace: list[str] = []   # local names of the emitting rule's planned scratch buffers
        # set by a rule whose kernel works one block per slice (a block reduction per channel):
        # (source of the slice count at run time, its static value for launch plans)
        self.per_block: tuple[str, int] | None = None
        # how such a kernel is launched: "block" (block-reduction threads) or "tile" (a GEMM tile's
        # threads, symjit.kernels.cuda.tile_launch)
        self.block_kind = "block"
        # a rule that runs the group's loop its own way (a tiled GEMM) sets (open, close) with the
        # signatures of Target.open_loop/close_loop; the shared loop generator then calls these
        self.loop: tuple | None = None
        # scalar kernel arguments the host computes before each launch: (parameter, module,
        # function of no arguments), e.g. a Dropout seed from symjit.random.next_seed
        self.host_args: list[tuple[str, str, str]] = []
        self.error_flag: str | None = None   # the parameter data checks write to (targets that flag)
        # attribute values passed to the kernel as arguments rather than written into its source
        # (a convolution's strides and pads, a softmax's temperature), so kernels differing only in
        # them share one form: (parameter, the value the program passes: an int, a float or a tuple
        # of ints)
        self.consts: list[tuple[str, int | float | tuple[int, ...]]] = []
        # building-block calls the program makes before this kernel, as kernels of their own:
        # (the array parameters they take, a function writing their body into a KernelWriter).
        # A convolution's im2col + GEMM is one such kernel, shared by every layer of its kind,
        # instead of being linked and re-optimised by numba inside each fused epilogue's kernel.
        self.prior: list[tuple[list[str], Callable[[KernelWriter], None]]] = []
        self._direct: tuple[str, str, str, list[str]] | None = None   # see ``call``
        # set by a target that split the kernel's loop into parts (Target.open_map_loop): the
        # kernel then takes PART_PARAMS last and runs only its part of the loop's outer iterations
        self.parts = False
        # with parts: the kernel is written in parts but the host calls it whole (WHOLE_SUFFIX)
        self.whole = False
        self.block_calls = 0   # calls of building blocks in parts (see parts_call)
        # indentation levels of each open loop (CPU target; with the statements that end each
        # iteration of a loop that steps its indices on: (levels, statements))
        self.loop_indents: list[int | tuple[int, tuple[str, ...]]] = []
        # outputs that are one array with one of the kernel's inputs (output name -> input name):
        # the kernel takes the array once, under the input's name (see codegen's _same_arrays),
        # so a rule that makes a local of each (a flat view) makes one, which LLVM vectorizes
        self.same: dict[str, str] = {}
        # set for the kernels of light programs (no GEMM or convolution: what tests and imperative
        # calls bind on ever new shapes): a broadcast loop, or a reduction to an output of its
        # input's rank, is written for every broadcast pattern / reduced axis set of its ranks,
        # read from the shapes at run time (symjit.lower.emit.axis_steps), and the
        # scalar bodies' constants are kernel arguments (consts), not literals
        self.any_pattern = False
        self.name = name
        self.params = params
        self.lines: list[str] = []
        self.indent = 1
        self._tmp = 0

    @property
    def target(self) -> Any:
        """The :class:`~symjit.lower.target.Target` this kernel is written for."""
        return self.module.target

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def imp(self, module: str, name: str) -> str:
        return self.module.imp(module, name)

    def tmp(self, prefix: str = "t") -> str:
        self._tmp += 1
        return f"_{prefix}{self._tmp}"

    def const(self, value: int | float | tuple[int, ...]) -> str:
        """A kernel parameter holding ``value`` (an int, a float such as a softmax temperature, or
        a tuple of ints such as a stride), passed by the program after the other arguments as
        int64s (a float as a float64)."""
        name = self.tmp("c")
        if isinstance(value, float):
            self.consts.append((name, value))
        else:
            self.consts.append((name, int(value) if isinstance(value, int) else tuple(int(v) for v in value)))
        return name

    def call(self, module: str, name: str, args: list[str], result: str | None = None) -> None:
        """Emit a call of the compiled function ``name`` of ``module`` (a building block), its
        result assigned to ``result`` if given. A kernel whose whole body is this call, on some
        of the kernel's array parameters and then all its consts in order, is that function
        itself (:attr:`direct`)."""
        if name.endswith(PARTS_SUFFIX):   # a building block in parts: this kernel runs them too
            args = self.parts_call(args)
        text = f"{self.imp(module, name)}({', '.join(args)})"
        self.line(f"{result} = {text}" if result else text)
        consts = [c for c, _ in self.consts]
        plain = args[:len(args) - len(PART_PARAMS)] if name.endswith(PARTS_SUFFIX) else args
        arrays = plain[:len(plain) - len(consts)]
        if (plain[len(arrays):] == consts and len(set(arrays)) == len(arrays)
                and all(a in self.params for a in arrays)):
            self._direct = (module, name, self.lines[-1], arrays)

    def parts_call(self, args: list[str]) -> list[str]:
        """``args`` and :data:`PART_PARAMS` for a call of a building block split into parts (its
        name ends in :data:`PARTS_SUFFIX`). Every part of a kernel in parts runs all its statements
        but for its share of the work, so the kernel runs in parts (:attr:`parts`, decided by
        :meth:`finish`) only when that call is its only work (the rest :func:`pure_statement`);
        otherwise (an epilogue loop after it) the call gets a whole call's arguments and runs all
        the parts itself, serially."""
        if self.parts and not self.block_calls:   # a loop split before it: every part would run it
            raise ValueError(f"kernel {self.name}: a building block in parts after a loop in parts")
        self.block_calls += 1
        return [*args, *PART_PARAMS]

    @property
    def direct(self) -> tuple[str, str, list[str]] | None:
        """``(module, function, the array parameters it takes in order)`` when the kernel only
        calls that function (see :meth:`call`): the program can call the function itself instead
        of compiling a kernel that numba would link it into and optimise again. None otherwise."""
        d = self._direct
        if d is None or self.lines != [d[2]] or self.host_args or self.per_block or self.loop \
                or self.error_flag:
            return None
        return d[0], d[1], d[3]

    def finish(self, decorator: str | None = None) -> str:
        if self.block_calls:   # see parts_call
            own = ", ".join(PART_PARAMS) + ")"
            calls = [i for i, line in enumerate(self.lines) if line.endswith(own)]
            alone = len(calls) == 1 and all(pure_statement(line) for i, line in enumerate(self.lines)
                                            if i != calls[0])
            if alone:
                self.parts = True
            else:
                whole = f"0, 1, np.zeros({SYNC_LENGTH}, np.int64))"   # symjit.parts.whole_call
                self.lines = [line[:-len(own)] + whole if i in calls else line
                              for i, line in enumerate(self.lines)]
            self.block_calls = 0
        deco = self.module.decorator if decorator is None else decorator
        body = self.lines or ["    pass"]
        head = [deco] if deco else []
        params = self.params + [c for c, _ in self.consts] + (list(PART_PARAMS) if self.parts else [])
        return "\n".join(head + [f"def {self.name}({', '.join(params)}):"] + body)
