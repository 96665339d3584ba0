"""One kernel-choice rule on and off in one net, in one process: a zoo net or LeNet (``examples/nets.py``)
bound as the rules say and bound again with a constant of ``symjit.kernels.cpu.conv_shapes``
changed (say ``VEC_MIN_MACS=1000000000``), or of
another module named with it (``symjit.lower.cpu.SPLIT_MIN=...``: the size from which generated
loops run on threads), then the two executors' forwards (or training steps, ``--train``) timed in
turns (``bench_winograd.alternate_executors``). The machine's speed swings between runs, so a rule
is judged by executors measured side by side, not by two runs.

    python benchmarks/bench_rule_ab.py resnet50 --batch 2 [--train] [--rounds 6]
        --set symjit.kernels.cpu.conv_small_rules.POINTWISE_TILES_MIN_PIXELS=1000000000
    python benchmarks/bench_rule_ab.py resnet50 --batch 2 --set symjit.lower.cpu.SPLIT_MIN=1000000000000
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SYMJIT_AOT", "off")
from benchmarks.bench_winograd import alternate_executors  # noqa: E402

NETS = ("resnet18", "resnet50", "inception_v3", "squeezenet1_1", "mobilenet_v2", "lenet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("net", choices=NETS)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--set", required=True,
                    help="NAME=INT: a conv_shapes constant (or module.NAME), second executor")
    ap.add_argument("--train", action="store_true", help="time forward + backward (training mode)")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    import importlib
    name, value = args.set.split("=")
    module, _, attr = name.rpartition(".")
    where = importlib.import_module(module or "symjit.kernels.cpu.conv_shapes")
    if not hasattr(where, attr):
        ap.error(f"--set: {where.__name__} has no {attr}")

    @contextlib.contextmanager
    def changed():
        keep = getattr(where, attr)
        setattr(where, attr, int(value))
        try:
            yield
        finally:
            setattr(where, attr, keep)

    times, diff = alternate_executors(args.net, args.batch, args.train, args.rounds, changed)
    print(f"outputs differ by {diff:.1e} of their magnitude")
    mode = "training step" if args.train else "forward"
    for key, label in (("on", "as bound"), ("off", args.set)):
        ts = times[key]
        print(f"{args.net} batch {args.batch} {mode}, {label}: best {min(ts) * 1e3:.1f} ms, "
              f"median {statistics.median(ts) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
