"""Cold and warm bind time of real networks along the default path: four new processes in a row
bind the net (inference, or training with forward and backward) and run its first forward (and
backward) on one kernel cache, with the default settings (``SYMJIT_AOT`` unset): the first with an
empty cache (cold), the second with the kernels that run compiled (warm: numba loads them, which
costs its once-per-process start, ~0.3-0.45 s, and notes the program's ahead-of-time module when
it exits), the third finds the noted module and builds it at the bind, waiting (timed as "the
build run"), the fourth loads it without numba. Prints seconds (bind and first step, and the bind
alone), the kernel count and the distinct kernels compiled (groups of one kernel form share a
kernel). ``SYMJIT_COMPILE_WORKERS`` in the environment sets how many processes compile (default:
the cores).

The nets are ResNets built with symjit's symbol API (``examples/nets.py``), or with
``--symbol-dir DIR`` symbol files exported by MXNet's Gluon model zoo (``DIR/<net>-symbol.json``,
as ``net.hybridize(); net(x); net.export(DIR/<net>)`` writes them in an MXNet venv; a
``SoftmaxOutput`` head is added for ``--train``), 299 x 299 images for Inception v3, 224 x 224
for the others. ``--cold-only`` runs the first process only.

    python benchmarks/bench_compile.py [--nets resnet18,resnet50] [--batch 2] [--train]
    python benchmarks/bench_compile.py --symbol-dir DIR --nets alexnet,vgg11_bn,resnet18_v1,... [--cold-only]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_net(mx, net: str, symbol_dir: str | None, train: bool):
    """The net's symbol and its input's side: an exported zoo file, or a ResNet of examples/nets.py."""
    if symbol_dir is None:
        from examples.nets import resnet
        return resnet(int(net.removeprefix("resnet"))), 224
    sym = mx.sym.load(str(Path(symbol_dir, f"{net}-symbol.json")))
    if train:
        sym = mx.sym.SoftmaxOutput(sym, name="softmax")
    return sym, 299 if net.startswith("inception") else 224


def child(net: str, batch: int, train: bool, symbol_dir: str | None = None) -> dict:
    sys.path.insert(0, str(ROOT))
    t0 = time.perf_counter()
    import numpy as np

    import symjit as mx
    sym, side = load_net(mx, net, symbol_dir, train)
    t1 = time.perf_counter()
    reqs = {n: ("write" if train and n not in ("data", "softmax_label") else "null")
            for n in sym.list_arguments()}
    ex = sym.simple_bind(mx.cpu(), grad_req=reqs, data=(batch, 3, side, side))
    t_bind = time.perf_counter()
    ex.arg_dict["data"][:] = np.random.default_rng(0).random((batch, 3, side, side), np.float32)
    module = type(ex._programs["train" if train else "infer"].module).__name__
    out = ex.forward(is_train=train)[0].asnumpy()
    if train:
        ex.backward()
        next(g for g in ex.grad_arrays if g is not None).asnumpy()
    t2 = time.perf_counter()
    prog = ex._programs["train" if train else "infer"].program
    kernel_of = getattr(prog, "kernel_of", None) or {k: k for k in prog.kernels}   # older symjit
    return {"import": t1 - t0, "bind_and_first_step": t2 - t1, "bind": t_bind - t1, "kernels": len(kernel_of),
            "distinct": len(set(kernel_of.values())), "finite": bool(np.isfinite(out).all()),
            "aot": module == "Loaded", "numba": "numba" in sys.modules}


def run(net: str, batch: int, train: bool, cache: str, symbol_dir: str | None = None) -> dict:
    env = dict(os.environ, SYMJIT_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
    env.pop("SYMJIT_AOT", None)
    cmd = [sys.executable, __file__, "--child", net, "--batch", str(batch)] + (["--train"] if train else [])
    cmd += ["--symbol-dir", symbol_dir] if symbol_dir else []
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nets", default="resnet18,resnet50")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--symbol-dir", default=None, help="exported zoo symbol files (DIR/<net>-symbol.json)")
    ap.add_argument("--cold-only", action="store_true", help="run the first (cold) process only")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.batch, args.train, args.symbol_dir)))
        return
    mode = "training" if args.train else "inference"
    for net in args.nets.split(","):
        with tempfile.TemporaryDirectory() as cache:
            cold = run(net, args.batch, args.train, cache, args.symbol_dir)
            if args.cold_only:
                print(f"{net} {mode} batch {args.batch}: cold import {cold['import']:.2f} s, "
                      f"bind + first step {cold['bind_and_first_step']:.2f} s "
                      f"(bind {cold['bind']:.2f} s); {cold['kernels']} kernels, "
                      f"{cold['distinct']} distinct", flush=True)
                continue
            warm, build, ahead = (run(net, args.batch, args.train, cache, args.symbol_dir) for _ in range(3))
            why = "; ".join(f"{p.name}: {p.read_text()[-300:]}" for p in Path(cache, "aot").glob("symjit_*")
                            if p.suffix in (".json", ".log") and not ahead["aot"])
        aot_note = (f"ahead of time {ahead['bind_and_first_step']:.2f} s (bind {ahead['bind']:.2f} s, "
                    f"numba imported: {ahead['numba']}; the build run {build['bind_and_first_step']:.1f} s, "
                    f"ahead of time: {build['aot']})" if ahead["aot"]
                    else f"no ahead-of-time module ({why or 'none noted'})")
        print(f"{net} {mode} batch {args.batch}: bind + first step cold {cold['bind_and_first_step']:.1f} s, "
              f"warm {warm['bind_and_first_step']:.2f} s (of which bind {cold['bind']:.1f} s / "
              f"{warm['bind']:.2f} s), {aot_note}; {cold['kernels']} kernels, {cold['distinct']} distinct "
              f"(import {warm['import']:.2f} s / {ahead['import']:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
