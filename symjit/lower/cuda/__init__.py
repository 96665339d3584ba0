"""The CUDA target: ``numba.cuda.jit`` kernels with grid-stride loops, and a host function per
phase that launches them in order. Elementwise/broadcast groups need no op rule (the shared loop
generator composes the scalar bodies, wrapped with ``cuda.jit(device=True)``); an op without a
CUDA rule is reported by name when a program needs it."""
from __future__ import annotations

from ...discovery import import_submodules
from ...kernels.cuda import THREADS, TILE
from ..emit import const_source, decode_flat
from ..target import Launch, Target, register_target
from ..writer import KernelWriter, ModuleWriter

MAX_BLOCKS = 1024   # the most blocks a launch plan that names no device shows
# how each kind of kernel is launched (symjit.kernels.cuda): a grid-stride loop over elements, a
# block per slice (block reductions), a block per output tile (tiled GEMM)
_LAUNCH = {"element": "launch", "block": "block_launch", "tile": "tile_launch"}
_FLAG = ("symjit.kernels.cuda.errors", "flags")   # the host argument of a kernel with data checks
# the host argument of a sampler's seed: numba's generator of the launching thread, the draw a CPU
# kernel makes itself (so a seeded program draws the same seeds on both targets)
_SEED = ("symjit.random", "next_seed")


def blocks_for(n: int) -> int:
    """Blocks of :data:`THREADS` for a grid-stride loop over ``n`` elements in a launch plan that
    names no device (``symjit compile``): at most :data:`MAX_BLOCKS`. A running program takes its
    launch shape from the device (:func:`symjit.kernels.cuda.launch`).

    >>> blocks_for(1), blocks_for(257), blocks_for(10**9)
    (1, 2, 1024)
    """
    return max(1, min(MAX_BLOCKS, (n + THREADS - 1) // THREADS))


class CUDATarget(Target):
    """A loop is one grid-stride loop over the flat element index, decoded into loop indices."""

    name = "cuda"
    host_calls = True   # a Custom op's Python code runs between launches, on device NDArrays
    stream_arg = True   # a program function takes the stream to queue its launches on first

    def module_writer(self, cache: bool, fastmath: bool) -> ModuleWriter:
        return ModuleWriter("@cuda.jit", "cuda.jit(device=True)", ("from numba import cuda",), self)

    def open_loop(self, k: KernelWriter, dims: list[str]) -> list[str]:
        k.line(f"n = {' * '.join(dims) or '1'}")
        k.line("for flat in range(cuda.grid(1), n, cuda.gridsize(1)):")
        k.indent += 1
        return decode_flat(k, "flat", dims, [f"i{d}" for d in range(len(dims))])   # the CPU's names

    def close_loop(self, k: KernelWriter, idx: list[str]) -> None:
        k.indent -= 1

    def emit_seed(self, k: KernelWriter) -> str:
        """A kernel argument the host draws before each launch (:data:`_SEED`)."""
        seed = k.tmp("seed")
        k.params.append(seed)
        k.host_args.append((seed, *_SEED))
        return seed

    def emit_check(self, k: KernelWriter, cond: str, message: str) -> None:
        flag = k.error_flag
        if flag is None:   # the device's flag, passed by the host program at every launch
            flag = k.error_flag = k.tmp("err")
            k.params.append(flag)
            k.host_args.append((flag, *_FLAG))
        if message not in k.module.checks:
            k.module.checks.append(message)
        k.line(f"if {cond}:")
        k.line(f"    {flag}[0] = {k.module.checks.index(message) + 1}")

    def launch_config(self, n: int, per: str = "element") -> tuple[int, int]:
        if per == "block":
            return max(1, min(n, 65535)), THREADS
        if per == "tile":
            return max(1, min(n, 65535)), TILE * TILE
        return blocks_for(n), THREADS

    def program(self, mw: ModuleWriter, name: str, launches: list[Launch], arg) -> list[int]:
        """Two host functions: ``name(stream, arrays...)`` launches the kernels in order, and
        ``name_launches(stream, arrays...)`` returns them as a launch table (each kernel
        configured with its grid, block and stream, its array arguments, the host functions of
        its scalar arguments) plus the data checks to read after them, for :meth:`prepare`."""
        params = list(dict.fromkeys(v for _, vs, *_ in launches for v in vs))
        k = KernelWriter(mw, name, ["stream"] + [arg(v) for v in params])
        table = KernelWriter(mw, f"{name}_launches", ["stream"] + [arg(v) for v in params])
        table.line("return (")
        for fn, vs, size, per, host, values in launches:
            consts = [const_source(c) for c in values]
            shape = k.imp("symjit.kernels.cuda", _LAUNCH[per])
            hosts = [k.imp(module, f) for module, f in host]
            args = [arg(v) for v in vs] + [f"{h}()" for h in hosts] + consts
            k.line(f"{fn}[{shape}({size}, stream)]({', '.join(args)})")
            table.line(f"    ({fn}[{shape}({size}, stream)], ({''.join(arg(v) + ', ' for v in vs)}), "
                       f"({''.join(h + ', ' for h in hosts)}), ({''.join(c + ', ' for c in consts)})),")
        checks = tuple(mw.checks) if any(_FLAG in host for *_, host, _ in launches) else ()
        if checks:   # a kernel may have flagged a bad value
            k.line(f"{k.imp('symjit.kernels.cuda.errors', 'check')}(stream, {checks!r})")
        table.line(f"), {checks!r}")
        mw.functions.append(k.finish(""))   # plain host functions
        mw.functions.append(table.finish(""))
        return params

    def prepare(self, module, name: str, payload: list):
        """The launch table of phase function ``name`` for its bound buffers (the stream first),
        built once; the returned call runs it: per launch only the host-computed scalars (a
        Dropout seed, the error flag) are fetched, and the data checks read after the launches."""
        from ...kernels.cuda.errors import check
        launches, checks = getattr(module, f"{name}_launches")(*payload)
        stream = payload[0]

        def run() -> None:
            for kernel, arrays, hosts, consts in launches:
                if hosts:
                    kernel(*arrays, *[h() for h in hosts], *consts)
                else:
                    kernel(*arrays, *consts)
            if checks:
                check(stream, checks)
        return run


CUDA = register_target(CUDATarget())


import_submodules(__name__, __path__)   # the rule modules of this target (each registers its rules)
