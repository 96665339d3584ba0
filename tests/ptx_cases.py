"""Compile every generated CUDA kernel of every op case (inference and training programs) and of the
seed networks' training programs (MLP, BatchNorm MLP, LeNet), and every optimizer update kernel
(one parameter, and all parameters of a step from an address table), to PTX for a real device
(``sm_90`` by default), with
``numba.cuda.compile_ptx``: no GPU needed, but numba-cuda with the CUDA compiler packages (``pip
install -e '.[cuda]'``) and no simulator. This catches code the simulator accepts but the CUDA
compiler rejects. A kernel that several programs share (a training program repeats its inference
program's kernels) is compiled once.
``.ci/run`` runs it in its CUDA venv:

    python -m tests.ptx_cases [--arch sm_90] [--ops BatchNorm,LayerNorm]

Prints one line per failing case and a summary; exits 1 when a kernel does not compile.
"""
from __future__ import annotations

import argparse
import inspect
import re
import sys
from typing import Any

import numpy as np

import symjit as mx
from symjit.base import MXNetError
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config
from symjit.lower.cuda.ptx import function_ptx
from symjit.lower.target import kernel_signature

from .cases import all_cases
from .opcheck import grad_inputs


def _program(case, train: bool):
    """The case's compiled CUDA program: inference, or training with gradients of its inputs."""
    sym = case.build({n: mx.sym.Variable(n) for n in case.inputs})
    names = sym.list_arguments() + sym.list_auxiliary_states()
    wrt = grad_inputs(case, sym.list_arguments()) if train else []
    reqs = {n: ("write" if n in wrt else "null") for n in sym.list_arguments()} if wrt else {}
    return compile_symbol(sym, {n: case.inputs[n].shape for n in names},
                          {n: case.inputs[n].dtype for n in names}, reqs, train or case.is_train,
                          Config.from_env(), target="cuda")


def _canon(value: Any, module: str, seen: frozenset) -> str:
    """What a kernel's global name stands for, independent of the generated module's aliases: an
    imported function by its module and name (a device wrapper by the function it wraps), a function
    the generated module defines by its own source, anything else by its repr."""
    value = getattr(value, "py_func", value)
    if inspect.isfunction(value):
        if value.__module__ == module and value.__name__ not in seen:
            return _source_key(value, module, seen | {value.__name__})
        return f"{value.__module__}.{value.__qualname__}"
    if inspect.ismodule(value):
        return value.__name__
    return repr(value)


def _source_key(fn: Any, module: str, seen: frozenset = frozenset()) -> str:
    """A generated function's source with its own name and every global it reads replaced by what
    they stand for: equal keys compile to the same PTX, whichever program and module they come from."""
    src = inspect.getsource(fn).replace(f"def {fn.__name__}(", "def _(", 1)
    names = set(fn.__code__.co_names)
    for const in fn.__code__.co_consts:   # names read by nested code (comprehensions, closures)
        if inspect.iscode(const):
            names.update(const.co_names)
    canon = {n: _canon(fn.__globals__[n], module, seen) for n in sorted(names) if n in fn.__globals__}
    src = re.sub(r"\b\w+\b", lambda m: canon.get(m.group(0), m.group(0)), src)
    return src


class Compiler:
    """Compiles kernels to PTX for one architecture, each distinct kernel once: a training program
    repeats its inference program's kernels, and many cases share kernels (the key is the kernel's
    source with its globals resolved, and its argument types)."""

    def __init__(self, arch: str):
        self.arch, self.seen, self.compiled = arch, set(), 0

    def program(self, compiled) -> int:
        """Compile the kernels of a loaded CUDA program not compiled before; return how many
        kernels the program has."""
        module = compiled.module
        for name in compiled.program.kernels:
            fn = getattr(module, name).py_func
            sig = kernel_signature(compiled, name)
            key = (_source_key(fn, module.__name__), str(sig))
            if key not in self.seen:
                function_ptx(name, fn, sig, self.arch)
                self.seen.add(key)
                self.compiled += 1
        return len(compiled.program.kernels)


def case_ptx(case, ptx: Compiler) -> int:
    """Compile the case's CUDA inference program, and its training program (forward + backward),
    to PTX; return the number of kernels."""
    n = ptx.program(_program(case, False))
    if case.grad != "none":
        n += ptx.program(_program(case, True))
    return n


def nets_ptx(ptx: Compiler) -> int:
    """Compile the training programs of the seed networks to PTX; return the number of kernels."""
    from examples.nets import lenet, mlp, mlp_bn
    n = 0
    for sym, data in ((mlp(), (100, 784)), (mlp_bn(), (100, 784)), (lenet(), (64, 1, 28, 28))):
        shapes, _, aux = sym.infer_shape(data=data)
        names = sym.list_arguments()
        reqs = {a: ("null" if a in ("data", "softmax_label") else "write") for a in names}
        all_shapes = dict(zip(names + sym.list_auxiliary_states(), shapes + aux))
        compiled = compile_symbol(sym, all_shapes, {a: np.float32 for a in all_shapes}, reqs, True,
                                  Config.from_env(), target="cuda")
        n += ptx.program(compiled)
    return n


# arrays (weight, grad, states) of each optimizer update kernel; its other arguments are scalars
UPDATE_ARRAYS = {"sgd": 2, "sgd_mom": 3, "nag_mom": 3, "adagrad": 3, "adadelta": 4, "adam_wdclip": 4,
                 "rmsprop_wdclip": 3, "rmspropalex": 5, "signsgd": 2, "signum": 3, "ftml": 5, "ftrl": 4,
                 "adamax": 4, "nadam": 4, "dcasgd": 3, "dcasgd_mom": 4, "sgld": 3, "lamb": 5, "lars": 2,
                 "lars_mom": 3, "lbsgd": 3, "lbsgd_mom": 4}


def optim_ptx(ptx: Compiler) -> int:
    """Compile every optimizer update kernel (one parameter, and the address-table form for
    many) for float32 and float64 weights to PTX; return the number of kernels."""
    from numba import types
    from symjit.kernels.cpu import optim as cpu_optim
    from symjit.kernels.cuda import optim, optim_norm
    arch, n = ptx.arch, 0
    for name, arrays in UPDATE_ARRAYS.items():
        scalars = len(inspect.signature(getattr(cpu_optim, f"{name}_update").py_func).parameters) - arrays
        module = optim_norm if f"{name}_update" in optim_norm.__all__ else optim
        for dtype in (types.float32, types.float64):
            vec = types.Array(dtype, 1, "C")
            function_ptx(f"{name}_update", getattr(module, f"_{name}_step_kernel").py_func,
                         (vec,) * arrays + (types.float64,) * scalars, arch)
            function_ptx(f"multi_{name}_update", getattr(module, f"_multi_{name}_kernel").py_func,
                         (types.Array(types.int64, 2, "C"), types.Array(types.int64, 1, "C"),
                          types.Array(types.float64, 2, "C"), vec), arch)
            n += 2
    ptx.compiled += n
    return n


# part 1 also compiles the seed networks and the optimizer updates: about this many cases' work (measured)
_PART1_EXTRA = 120


def _parts(cases: list, parts: int) -> dict[str, int]:
    """op -> the part (0-based) that compiles its cases: the ops by decreasing case count, each to
    the part with the fewest cases so far (part 0 starts with the networks' and updates' share), so
    the processes finish together; every process computes the same answer."""
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.op] = counts.get(case.op, 0) + 1
    load = [_PART1_EXTRA] + [0] * (parts - 1)
    owner = {}
    for op in sorted(counts, key=lambda o: (-counts[o], o)):
        i = min(range(parts), key=lambda k: (load[k], k))
        owner[op] = i
        load[i] += counts[op]
    return owner


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--ops", default="", help="only the cases of these ops (comma-separated)")
    ap.add_argument("--part", default="1/1", help="I/N: the I-th (1-based) of N balanced shares of the "
                    "ops, so N processes share the work (an op's cases share kernels, so they stay in one "
                    "process); part 1 also compiles the seed networks and updates")
    args = ap.parse_args(argv)
    arch, only = args.arch, set(filter(None, args.ops.split(",")))
    part, parts = (int(x) for x in args.part.split("/"))
    if not 1 <= part <= parts:
        ap.error(f"--part {args.part}: I must be between 1 and N")
    done, kernels, failed, unlowered = 0, 0, 0, 0
    ptx = Compiler(arch)
    cases = all_cases()
    owner = _parts(cases, parts)
    for case in cases:
        if (only and case.op not in only) or owner[case.op] != part - 1:
            continue
        try:
            kernels += case_ptx(case, ptx)
            done += 1
        except MXNetError as exc:
            if "no cuda lowering" in str(exc):
                unlowered += 1
                continue
            failed += 1
            print(f"FAILED {case}: {exc}")
    if not only and part == 1:
        for what, build in (("seed networks", nets_ptx), ("optimizer updates", optim_ptx)):
            try:
                kernels += build(ptx)
            except MXNetError as exc:
                failed += 1
                print(f"FAILED {what}: {exc}")
    what = f"{done} cases" + ("" if only or part != 1 else ", the seed networks and the optimizer updates")
    print(f"ptx ({arch}): {what}, {kernels} kernels, {ptx.compiled} distinct ones compiled, {failed} failed, "
          f"{unlowered} without a CUDA lowering of their variant")
    return 1 if failed or not done else 0


if __name__ == "__main__":
    sys.exit(main())
