"""Float32 training gradients of whole nets against the same step in float64: one
``forward(is_train=True)`` + ``backward()`` of a zoo net (``examples/nets.py``, SoftmaxOutput head,
Xavier-uniform weights, BatchNorm's gamma 1 and beta 0, data N(0, 1)) at a small batch, bound in
float32 and in float64 on the same float32-representable numbers.

    python benchmarks/bench_float32_grads.py [--nets resnet18,mobilenet_v2] [--batch 2] [--seeds 1]

The error of one gradient array is ``max |g32 - g64| / max(max |g64|, 1e-2 * the net's largest
gradient)`` (a bias ahead of a BatchNorm has a true gradient of 0); per net the worst and the median
over its parameter arrays are printed, and with ``--flips`` the number of ReLU inputs whose sign
differs between the two runs ("flips": a float32 forward error larger than a value's distance
from 0 sends that element's gradient the other way, which accounts for errors of 1e-2 and more;
without flips the errors are near 1e-5).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SYMJIT_AOT", "off")

import numpy as np  # noqa: E402

import symjit as mx  # noqa: E402
from examples import nets  # noqa: E402

NETS = {"resnet18": lambda: nets.resnet(18), "resnet50": lambda: nets.resnet(50),
        "mobilenet_v2": nets.mobilenet_v2, "squeezenet1_1": nets.squeezenet1_1,
        "inception_v3": nets.inception_v3}
SIZE = {"inception_v3": 299}


def xavier(sym, shapes: dict, seed: int) -> dict[str, np.ndarray]:
    """Parameters as Gluon's model zoo draws them (Xavier uniform), rounded to float32."""
    rng = np.random.default_rng(seed)
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    out = {}
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        if name in shapes:
            continue
        if name.endswith("gamma"):
            value = np.ones(shape)
        elif name.endswith(("beta", "bias")):
            value = np.zeros(shape)
        else:
            fan_in, fan_out = np.prod(shape[1:]), shape[0] * np.prod(shape[2:])
            scale = np.sqrt(6.0 / (fan_in + fan_out))
            value = rng.uniform(-scale, scale, shape)
        out[name] = value.astype(np.float32).astype(np.float64)
    return out


def _bind(sym, dtype: str, values: dict):
    shapes = {"data": values["data"].shape, "softmax_label": values["softmax_label"].shape}
    ex = sym.simple_bind(mx.cpu(), grad_req="write", type_dict={n: dtype for n in sym.list_arguments()},
                         **shapes)
    for name, arr in ex.arg_dict.items():
        arr[:] = values[name]
    for name, arr in ex.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    return ex


def step(sym, dtype: str, values: dict) -> dict[str, np.ndarray]:
    """The parameter gradients of one training step (the fused program users run)."""
    ex = _bind(sym, dtype, values)
    ex.forward(is_train=True)
    ex.backward()
    return {n: g.asnumpy().astype(np.float64) for n, g in ex.grad_dict.items()
            if g is not None and n not in ("data", "softmax_label")}


def relu_inputs(sym, dtype: str, values: dict) -> dict[str, np.ndarray]:
    """Every ReLU (and clip) input of a training forward, through a monitor (its program runs
    one kernel per op, so its rounding differs a little from the fused one's)."""
    ex = _bind(sym, dtype, values)
    seen = {}

    def keep(name, arr):
        if name.endswith("_data") and ("relu" in name or "clip" in name):
            seen[name] = arr.asnumpy().astype(np.float64)

    ex.set_monitor_callback(keep, monitor_all=True)
    ex.forward(is_train=True)
    return seen


def measure(name: str, batch: int, seed: int, flips: bool) -> tuple[float, float, int | None]:
    sym = NETS[name]()
    size = SIZE.get(name, 224)
    rng = np.random.default_rng(1000 + seed)
    values = {"data": rng.standard_normal((batch, 3, size, size)).astype(np.float32).astype(np.float64),
              "softmax_label": rng.integers(0, 1000, batch).astype(np.float64)}
    values.update(xavier(sym, {"data": values["data"].shape, "softmax_label": (batch,)}, seed))
    g64, g32 = step(sym, "float64", values), step(sym, "float32", values)
    big = max(np.abs(g).max() for g in g64.values())
    errors = [np.abs(g32[n] - g64[n]).max() / max(np.abs(g64[n]).max(), 1e-2 * big) for n in g64]
    count = None
    if flips:
        r64, r32 = relu_inputs(sym, "float64", values), relu_inputs(sym, "float32", values)
        count = sum(int(((r32[k] > 0) != (r64[k] > 0)).sum()) for k in r64)
    return max(errors), statistics.median(errors), count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nets", default=",".join(NETS), help=f"comma-separated, of {', '.join(NETS)}")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=1, help="draws of weights and data per net")
    ap.add_argument("--flips", action="store_true",
                    help="count ReLU sign flips too (binds a monitored executor per dtype)")
    args = ap.parse_args()
    names = args.nets.split(",")
    bad = [n for n in names if n not in NETS]
    if bad:
        ap.error(f"--nets: unknown {bad}; known: {', '.join(NETS)}")
    print(f"{'net':14s} {'seed':>4s} {'worst':>9s} {'median':>9s} {'relu flips':>10s}")
    for name in names:
        for seed in range(args.seeds):
            worst, median, flips = measure(name, args.batch, seed, args.flips)
            print(f"{name:14s} {seed:4d} {worst:9.3g} {median:9.3g} {'' if flips is None else flips:>10}",
                  flush=True)


if __name__ == "__main__":
    main()
