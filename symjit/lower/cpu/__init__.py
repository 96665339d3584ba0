"""The CPU target: ``numba.njit`` kernels, serial loop nests, and one compiled program function per
phase that calls the group kernels in order; its op rules are in this package by family."""
from __future__ import annotations

from ..emit import const_source
from ..target import Launch, Target, register_target
from ..writer import KernelWriter, ModuleWriter
from . import elementwise, linalg, loss, nn, norm, reduce, shape  # noqa: F401  (register rules)


def const_arg(value):
    """A const argument as the compiled programs pass it (int64, or a tuple of int64)."""
    import numpy as np
    return tuple(np.int64(v) for v in value) if isinstance(value, tuple) else np.int64(value)


def bound_calls(launches: list, by_vid: dict) -> list[tuple[str, tuple]]:
    """``(kernel name, arguments)`` of each call ``(name, value ids, consts)`` of a ``calls``
    segment, ``by_vid`` the bound array of each value id."""
    return [(fn, tuple([by_vid[v] for v in vids] + [const_arg(c) for c in consts]))
            for fn, vids, consts in launches]


class CPUTarget(Target):
    """``numba.njit`` kernels; a loop is a nest of ``range`` loops (the last axis innermost)."""

    name = "cpu"
    host_calls = True
    kernel_modules = True

    def module_writer(self, cache: bool, fastmath: bool) -> ModuleWriter:
        flags = f"cache={cache}, nogil=True, error_model='numpy'" + (", fastmath=True" if fastmath else "")
        return ModuleWriter(f"@numba.njit({flags})", "numba.njit(inline='always', error_model='numpy')",
                            target=self.name)

    def open_loop(self, k: KernelWriter, dims: list[str]) -> list[str]:
        idx = [f"i{d}" for d in range(len(dims))]
        for i, n in zip(idx, dims):
            k.line(f"for {i} in range({n}):")
            k.indent += 1
        return idx

    def close_loop(self, k: KernelWriter, idx: list[str]) -> None:
        k.indent -= len(idx)

    def emit_check(self, k: KernelWriter, cond: str, message: str) -> None:
        err = k.imp("symjit.base", "MXNetError")   # numba raises it from the compiled program
        k.line(f"if {cond}:")
        k.line(f"    raise {err}({message!r})")

    def signature(self, args) -> tuple:
        """The numba argument types of a compiled call on ``args``."""
        import numba
        return tuple(numba.typeof(a) for a in args)

    def warm(self, fn, arrays: list) -> None:
        fn.compile(self.signature(arrays))

    def prepare_calls(self, module, launches: list, by_vid: dict) -> list:
        """``(kernel, arguments)`` of each call of a ``calls`` segment, bound once."""
        return [(getattr(module, fn), args) for fn, args in bound_calls(launches, by_vid)]


    def program(self, mw: ModuleWriter, name: str, launches: list[Launch], arg) -> list[int]:
        params = list(dict.fromkeys(v for _, vs, *_ in launches for v in vs))
        k = KernelWriter(mw, name, [arg(v) for v in params])
        for fn, vs, _, _, host, consts in launches:
            if host:   # a compiled program cannot call Python: no CPU rule asks for host arguments
                raise ValueError(f"kernel {fn}: the cpu target has no host-computed arguments")
            k.line(f"{fn}({', '.join([arg(v) for v in vs] + [const_source(c) for c in consts])})")
        mw.functions.append(k.finish())
        return params


CPU = register_target(CPUTarget())
