"""The CUDA target: ``numba.cuda.jit`` kernels with grid-stride loops, and a host function per
phase that launches them in order. Elementwise/broadcast groups need no op rule (the shared loop
generator composes the scalar bodies, wrapped with ``cuda.jit(device=True)``); an op without a
CUDA rule is reported by name when a program needs it."""
from __future__ import annotations

from ..target import Launch, Target, register_target
from ..writer import KernelWriter, ModuleWriter

THREADS = 256     # threads per block of a grid-stride kernel
MAX_BLOCKS = 1024


class CUDATarget(Target):
    """A loop is one grid-stride loop over the flat element index, decoded into loop indices."""

    name = "cuda"
    host_calls = False

    def module_writer(self, cache: bool, fastmath: bool) -> ModuleWriter:
        return ModuleWriter("@cuda.jit", "cuda.jit(device=True)", ("from numba import cuda",))

    def open_loop(self, k: KernelWriter, dims: list[str]) -> list[str]:
        idx = [f"i{d}" for d in range(len(dims))]
        k.line(f"n = {' * '.join(dims) or '1'}")
        k.line("for flat in range(cuda.grid(1), n, cuda.gridsize(1)):")
        k.indent += 1
        k.line("rest = flat")
        for d in reversed(range(len(dims))):
            k.line(f"{idx[d]} = rest % {dims[d]}")
            k.line(f"rest = rest // {dims[d]}")
        return idx

    def close_loop(self, k: KernelWriter, idx: list[str]) -> None:
        k.indent -= 1

    def program(self, mw: ModuleWriter, name: str, launches: list[Launch], arg) -> list[int]:
        params = list(dict.fromkeys(v for _, vs, _ in launches for v in vs))
        k = KernelWriter(mw, name, [arg(v) for v in params])
        for fn, vs, size in launches:
            blocks = f"max(1, min({MAX_BLOCKS}, ({size} + {THREADS - 1}) // {THREADS}))"
            k.line(f"{fn}[{blocks}, {THREADS}]({', '.join(arg(v) for v in vs)})")
        mw.functions.append(k.finish(""))   # a plain host function
        return params


CUDA = register_target(CUDATarget())
