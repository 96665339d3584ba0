"""Compile every generated CUDA kernel of every op case the CUDA target can lower (inference and, where
it lowers, training programs) to PTX for a real device (``sm_90`` by default), with
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

from symjit.base import MXNetError
from symjit.lower.cuda.ptx import kernel_ptx

from .cases import all_cases
from .cuda_cases import _program, lowered_on_cuda


def case_ptx(case, arch: str) -> int:
    """Compile the case's CUDA inference program, and its training program (forward + backward)
    where the target lowers it, to PTX; return the number of kernels."""
    n = len(kernel_ptx(_program(case, False), arch))
    if case.grad != "none" and lowered_on_cuda(case, train=True):
        n += len(kernel_ptx(_program(case, True), arch))
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--ops", default="", help="only the cases of these ops (comma-separated)")
    args = ap.parse_args(argv)
    arch, only = args.arch, set(filter(None, args.ops.split(",")))
    done, kernels, failed, unlowered = 0, 0, 0, 0
    for case in all_cases():
        if (only and case.op not in only) or not lowered_on_cuda(case):
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
    print(f"ptx ({arch}): {done} cases, {kernels} kernels compiled, {failed} failed, "
          f"{unlowered} without a CUDA lowering of their variant")
    return 1 if failed or not done else 0


if __name__ == "__main__":
    sys.exit(main())
