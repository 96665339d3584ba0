"""Per-layer roofline of a network's inference on this machine: each fused kernel's time (symjit's
profiler: every kernel of the bound program called and timed on its own), the FLOPs of the
convolutions and dense layers it computes (2 per multiply-add), the bytes it must move at least
(its operators' inputs, weights and outputs, each once), and how close it runs to what the machine
can do: the lesser of the measured compute peak and the arithmetic intensity times the measured
memory bandwidth.

The peaks are measured here, in the same run: compute as OpenBLAS's float32 GEMM at 2048^3 (numpy's;
the threads symjit's thread policy gives BLAS, see ``symjit/threads.py``), memory as a numpy copy
of 256 MiB (read + write). The nets are symbol files exported by MXNet's Gluon model zoo
(``DIR/<net>-symbol.json``; ``net.hybridize(); net(x); net.export(DIR/<net>)`` in an MXNet venv),
299 x 299 images for Inception v3, 224 x 224 for the others, random weights.

    python benchmarks/bench_roofline.py --symbol-dir DIR
        [--nets resnet18_v1,resnet50_v1,mobilenetv2_1.0,inceptionv3] [--batch 2] [--runs 10] [--top 12]

Prints, per net, the whole forward (the sum of its kernels), and a table of the kernels that take
the most time: kernel, its operators, ms per call, GFLOP/s, FLOPs per byte, and the share of the
roofline reached.
"""
from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np

import symjit as mx

WEIGHTED = ("Convolution", "FullyConnected", "Deconvolution")


def measure_peaks(reps: int = 5) -> tuple[float, float]:
    """(GFLOP/s of a float32 GEMM at 2048^3, GB/s of a 256 MiB copy), best of ``reps``."""
    a = np.random.default_rng(0).random((2048, 2048), np.float32)
    b, c = a.copy(), np.empty_like(a)
    src, dst = np.ones(1 << 26, np.float32), np.empty(1 << 26, np.float32)
    np.dot(a, b, out=c)
    gemm, copy = [], []
    for _ in range(reps):
        t = time.perf_counter()
        np.dot(a, b, out=c)
        gemm.append(time.perf_counter() - t)
        t = time.perf_counter()
        np.copyto(dst, src)
        copy.append(time.perf_counter() - t)
    return 2 * 2048 ** 3 / min(gemm) / 1e9, 2 * src.nbytes / min(copy) / 1e9


def node_work(node, shapes: dict) -> tuple[float, float]:
    """(FLOPs, bytes) of one operator: 2 FLOPs per multiply-add of a convolution or dense layer
    (0 for the others), and the bytes of its inputs and outputs, each read or written once."""
    ins = [shapes[e] for e in node["inputs"]]
    outs = [shapes[(node["name"], i)] for i in range(node["outputs"])]
    nbytes = 4 * sum(int(np.prod(s)) for s in ins + outs)
    if node["op"] not in WEIGHTED:
        return 0.0, nbytes
    w = ins[1]
    if node["op"] == "FullyConnected":
        return 2.0 * int(np.prod(outs[0])) * int(np.prod(w[1:])), nbytes
    if node["op"] == "Deconvolution":
        return 2.0 * int(np.prod(ins[0])) * int(np.prod(w[1:])), nbytes
    return 2.0 * int(np.prod(outs[0])) * int(np.prod(w[1:])), nbytes


def graph_nodes(sym, data_shape: tuple) -> tuple[dict[str, dict], dict]:
    """Each operator of the symbol by name: op, input entries, outputs, and the shapes of every
    entry (from shape inference on the internals)."""
    doc = json.loads(sym.tojson())
    internals = sym.get_internals()
    _, out_shapes, _ = internals.infer_shape(data=data_shape)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=data_shape)
    names = internals.list_outputs()
    shapes: dict = {}
    for name, s in zip(names, out_shapes):
        m = re.fullmatch(r"(.*)_output(\d*)", name)
        if m:
            shapes[(m.group(1), int(m.group(2) or 0))] = s
    for name, s in zip(sym.list_arguments() + sym.list_auxiliary_states(), arg_shapes + aux_shapes):
        shapes[(name, 0)] = s
    nodes = {}
    by_index = doc["nodes"]
    for n in by_index:
        if n["op"] == "null":
            continue
        entries = [(by_index[i]["name"], k) for i, k, *_ in n["inputs"]]
        n_out = sum(1 for key in shapes if key[0] == n["name"])
        nodes[n["name"]] = {"name": n["name"], "op": n["op"], "inputs": entries, "outputs": max(n_out, 1)}
    return {name: n for name, n in nodes.items() if all(e in shapes for e in n["inputs"])
            and all((name, i) in shapes for i in range(n["outputs"]))}, shapes


def profile_net(sym, data_shape: tuple, runs: int) -> dict[str, dict]:
    """Per-kernel profiler statistics of ``runs`` inference forwards (after two warm-up runs)."""
    ex = sym.simple_bind(mx.cpu(), grad_req="null", data=data_shape)
    ex.arg_dict["data"][:] = np.random.default_rng(0).random(data_shape, np.float32)
    for name, arr in ex.arg_dict.items():
        if name != "data":
            arr[:] = np.random.default_rng(1).standard_normal(arr.shape).astype(np.float32) * 0.05
    for name, arr in ex.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    mx.profiler.set_config(profile_symbolic=True, aggregate_stats=True)
    mx.profiler.set_state("run")
    for _ in range(2):
        ex.forward(is_train=False)[0].wait_to_read()
    mx.profiler.dumps(reset=True)
    for _ in range(runs):
        ex.forward(is_train=False)[0].wait_to_read()
    mx.profiler.set_state("stop")
    stats = json.loads(mx.profiler.dumps(reset=True, format="json"))
    return stats["Time"].get("kernel", {})


def kernel_ops(label: str, nodes: dict) -> list[str]:
    """The operators a kernel label (``k<group> op1+op2``) names that the graph has."""
    _, _, ops = label.partition(" ")
    return [n for n in ops.split("+") if n in nodes]


def describe(ops: list[str], nodes: dict, shapes: dict) -> str:
    """A short description of a kernel's weighted operators (or its first operator)."""
    for name in ops:
        n = nodes[name]
        if n["op"] in WEIGHTED:
            x, w = shapes[n["inputs"][0]], shapes[n["inputs"][1]]
            if n["op"] == "FullyConnected":
                return f"dense {w[1]}->{w[0]}"
            kind = "conv" if n["op"] == "Convolution" else "deconv"
            return f"{kind} {w[2]}x{w[3]} {x[1]}->{w[0]} on {x[2]}x{x[3]}"
    return nodes[ops[0]]["op"] if ops else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--symbol-dir", required=True)
    ap.add_argument("--nets", default="resnet18_v1,resnet50_v1,mobilenetv2_1.0,inceptionv3")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    peak, bandwidth = measure_peaks()
    print(f"machine: float32 GEMM {peak:.0f} GFLOP/s, copy {bandwidth:.1f} GB/s")
    for net in args.nets.split(","):
        side = 299 if net.startswith("inception") else 224
        shape = (args.batch, 3, side, side)
        sym = mx.sym.load(str(Path(args.symbol_dir, f"{net}-symbol.json")))
        nodes, shapes = graph_nodes(sym, shape)
        stats = profile_net(sym, shape, args.runs)
        rows, total_ms, total_flops = [], 0.0, 0.0
        for label, st in stats.items():
            ops = kernel_ops(label, nodes)
            ms = st["Total"] / args.runs                                          # per forward
            work = [node_work(nodes[o], shapes) for o in ops]
            flops = sum(f for f, _ in work)
            nbytes = max(sum(b for _, b in work), 1)
            bound = min(peak, flops / nbytes * bandwidth) if flops else bandwidth
            rate = flops / (ms / 1e3) / 1e9 if flops else nbytes / (ms / 1e3) / 1e9
            kernel = label.split(" ")[0]
            rows.append((ms, kernel, describe(ops, nodes, shapes), flops, nbytes, rate, bound))
            total_ms += ms
            total_flops += flops
        print(f"\n{net} batch {args.batch}: forward {total_ms:.1f} ms in {len(rows)} kernels, "
              f"{total_flops / 1e9:.2f} GFLOP, {total_flops / (total_ms / 1e3) / 1e9:.0f} GFLOP/s overall")
        print("| kernel | what | ms | GFLOP/s (GB/s if none) | FLOP/byte | of the roofline |")
        print("|---|---|---|---|---|---|")
        for ms, k, what, flops, nbytes, rate, bound in sorted(rows, reverse=True)[:args.top]:
            unit = "" if flops else " GB/s"
            print(f"| {k} | {what} | {ms:.2f} | {rate:.0f}{unit} | {flops / nbytes:.1f} "
                  f"| {rate / bound:.0%} |")


if __name__ == "__main__":
    main()
