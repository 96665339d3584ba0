"""Compile every generated CUDA kernel of every op case (inference and training programs) and of the
seed networks' training programs (MLP, BatchNorm MLP, LeNet), and every optimizer update kernel
(one parameter, and all parameters of a step from an address table), to PTX for a real device
(``sm_90`` by default), with
``numba.cuda.compile_ptx``: no GPU needed, but numba-cuda with the CUDA compiler packages (``pip
install -e '.[cuda]'``) and no simulator. This catches code the simulator accepts but the CUDA
compiler rejects.
``.ci/run`` runs it in its CUDA venv:

    python -m tests.ptx_cases [--arch sm_90] [--ops BatchNorm,LayerNorm]

Prints one line per failing case and a summary; exits 1 when a kernel does not compile.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import symjit as mx
from symjit.base import MXNetError
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config
from symjit.lower.cuda.ptx import function_ptx, kernel_ptx

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


def case_ptx(case, arch: str) -> int:
    """Compile the case's CUDA inference program, and its training program (forward + backward),
    to PTX; return the number of kernels."""
    n = len(kernel_ptx(_program(case, False), arch))
    if case.grad != "none":
        n += len(kernel_ptx(_program(case, True), arch))
    return n


def nets_ptx(arch: str) -> int:
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
        n += len(kernel_ptx(compiled, arch))
    return n


# arrays (weight, grad, states) of each optimizer update kernel; its other arguments are scalars
UPDATE_ARRAYS = {"sgd": 2, "sgd_mom": 3, "nag_mom": 3, "adagrad": 3, "adadelta": 4, "adam_wdclip": 4,
                 "rmsprop_wdclip": 3, "rmspropalex": 5, "signsgd": 2, "signum": 3, "ftml": 5, "ftrl": 4,
                 "adamax": 4, "nadam": 4, "dcasgd": 3, "dcasgd_mom": 4, "sgld": 3, "lamb": 5, "lars": 2,
                 "lars_mom": 3, "lbsgd": 3, "lbsgd_mom": 4}


def optim_ptx(arch: str) -> int:
    """Compile every optimizer update kernel (one parameter, and the address-table form for
    many) for float32 and float64 weights to PTX; return the number of kernels."""
    import inspect

    from numba import types
    from symjit.kernels.cpu import optim as cpu_optim
    from symjit.kernels.cuda import optim, optim_norm
    n = 0
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
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--ops", default="", help="only the cases of these ops (comma-separated)")
    ap.add_argument("--part", default="1/1", help="I/N: every N-th case from the I-th (1-based), so N "
                    "processes share the work; part 1 also compiles the seed networks and updates")
    args = ap.parse_args(argv)
    arch, only = args.arch, set(filter(None, args.ops.split(",")))
    part, parts = (int(x) for x in args.part.split("/"))
    if not 1 <= part <= parts:
        ap.error(f"--part {args.part}: I must be between 1 and N")
    done, kernels, failed, unlowered = 0, 0, 0, 0
    for i, case in enumerate(all_cases()):
        if (only and case.op not in only) or i % parts != part - 1:
            continue
        try:
            kernels += case_ptx(case, arch)
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
                kernels += build(arch)
            except MXNetError as exc:
                failed += 1
                print(f"FAILED {what}: {exc}")
    what = f"{done} cases" + ("" if only or part != 1 else ", the seed networks and the optimizer updates")
    print(f"ptx ({arch}): {what}, {kernels} kernels compiled, {failed} failed, {unlowered} without a "
          "CUDA lowering of their variant")
    return 1 if failed or not done else 0


if __name__ == "__main__":
    sys.exit(main())
