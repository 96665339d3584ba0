"""Memory plans of the reference networks, for training and inference executors:
a 10-layer MLP (512 units, FullyConnected+BatchNorm+relu per layer, batch 100) and LeNet (batch 64).

    python benchmarks/bench_memory.py

Prints, per network and mode, the planned arena bytes (intermediate values only: arguments,
gradients, aux states and outputs are the executor's own arrays and are excluded), the part of it
that activations need without the kernels' workspaces (im2col columns and other scratch, which
MXNet's figures leave out), the naive bytes (one buffer per intermediate value, workspaces
included), the number of kernels, and the in-place pairs. Nothing runs:
this is the compile pipeline up to the plan, as ``symjit compile --format json`` reports it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from examples.nets import deep_mlp, lenet  # noqa: E402
from symjit.compiler.pipeline import compile_symbol  # noqa: E402
from symjit.config import Config  # noqa: E402

# What MXNet 1.9.1 reports for the same executors: its executor's debug_str prints the planned
# bytes >> 20 as "MB allocated", so "4 MB" is 4 to 5 MiB.
MXNET = {("mlp10", "training"): "4 MB", ("mlp10", "inference"): "< 1 MB",
         ("lenet", "training"): "12 MB", ("lenet", "inference"): "4 MB"}


def plan(sym, data_shape, training: bool):
    names = sym.list_arguments() + sym.list_auxiliary_states()
    arg_s, _, aux_s = sym.infer_shape(data=data_shape)
    shapes = dict(zip(names, list(arg_s) + list(aux_s)))
    dtypes = {n: np.dtype("float32") for n in names}
    reqs = {n: ("write" if training and n not in ("data", "softmax_label") else "null")
            for n in sym.list_arguments()}
    return compile_symbol(sym, shapes, dtypes, reqs, training, Config.from_env(), load=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args()
    nets = {"mlp10": (deep_mlp(), (100, 784)), "lenet": (lenet(), (64, 1, 28, 28))}
    print(f"{'network':8s} {'mode':10s} {'kernels':>7s} {'planned':>12s} {'activations':>12s} "
          f"{'naive':>12s} {'in-place':>8s}  MXNet 1.9.1")
    for key, (sym, shape) in nets.items():
        for mode in ("training", "inference"):
            c = plan(sym, shape, mode == "training")
            p = c.plan
            kernels = sum(not grp.view for grp in c.groups)
            print(f"{key:8s} {mode:10s} {kernels:7d} {p.planned_bytes / 2**20:9.2f} MB "
                  f"{p.activation_bytes / 2**20:9.2f} MB {p.naive_bytes / 2**20:9.2f} MB "
                  f"{len(p.inplace):8d}  {MXNET[(key, mode)]}")


if __name__ == "__main__":
    main()
