"""One kernel-choice rule on and off in one net, in one process: a zoo net (``examples/nets.py``)
bound twice, the second time with a constant of ``symjit.kernels.cpu.conv_shapes`` changed (say
``POINTWISE_TILES_MIN_PIXELS=1000000000``, which turns the 1x1 tiles off), then the two executors
timed in turns (best of a few forwards, or training steps with ``--train``, per turn). Both
executors' outputs are compared first. The machine's speed swings between runs, so a rule is
judged by executors measured side by side, not by two runs.

    python benchmarks/bench_rule_ab.py resnet50 --batch 2 --set POINTWISE_TILES_MIN_PIXELS=1000000000
        [--train] [--turns 6]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def bind(name: str, batch: int, train: bool):
    """The zoo net ``name`` (``resnet18``, ``resnet50``, ``mobilenet_v2``, ...) bound on the CPU
    with random weights (aux states: mean 0, variance 1)."""
    sys.path.insert(0, str(ROOT))
    import symjit as mx
    from examples import nets as zoo
    net = zoo.resnet(int(name[6:])) if name.startswith("resnet") else getattr(zoo, name)()
    size = 299 if name == "inception_v3" else 224
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    req = dict.fromkeys(params, "write") if train else "null"
    ex = net.simple_bind(mx.cpu(), data=(batch, 3, size, size), grad_req=req)
    rng = np.random.default_rng(0)
    for a in ex.arg_dict.values():
        a[:] = rng.normal(0, 0.05, a.shape)
    for k, a in ex.aux_dict.items():
        a[:] = 1.0 if "var" in k else 0.0
    return ex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("net")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--set", required=True, help="NAME=INT: a conv_shapes constant, second executor")
    ap.add_argument("--train", action="store_true", help="time forward + backward (training mode)")
    ap.add_argument("--turns", type=int, default=6)
    args = ap.parse_args()
    from symjit.kernels.cpu import conv_shapes
    attr, value = args.set.split("=")
    rule = bind(args.net, args.batch, args.train)
    keep = getattr(conv_shapes, attr)
    setattr(conv_shapes, attr, int(value))
    try:
        other = bind(args.net, args.batch, args.train)
    finally:
        setattr(conv_shapes, attr, keep)

    def step(ex):
        ex.forward(is_train=args.train)
        if args.train:
            ex.backward()
    for ex in (rule, other):
        step(ex)
        step(ex)
    a, b = rule.outputs[0].asnumpy(), other.outputs[0].asnumpy()
    print(f"outputs differ by at most {np.abs(a - b).max():.3g} (largest {np.abs(b).max():.3g})")
    times: dict[str, list[float]] = {"as bound": [], args.set: []}
    per_turn = 5 if args.batch <= 2 else 2
    for t in range(args.turns):
        pairs = [("as bound", rule), (args.set, other)]
        for label, ex in (pairs if t % 2 else pairs[::-1]):
            runs = []
            for _ in range(per_turn):
                t0 = time.perf_counter()
                step(ex)
                runs.append(time.perf_counter() - t0)
            times[label].append(min(runs) * 1e3)
    for label, v in times.items():
        print(f"{args.net} batch {args.batch}{' training' if args.train else ''}, {label}: "
              f"best {min(v):.1f} ms, median {statistics.median(v):.1f} ms")


if __name__ == "__main__":
    main()
