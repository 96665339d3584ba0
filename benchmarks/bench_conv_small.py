"""The small-plane kernels (``symjit.kernels.cpu.conv_small``) against the kernels they replace, in
one process, taking turns: per layer (LeNet's two convolutions at batch 64 by default), the forward
and both gradients of im2col + BLAS (the compiler's block size), the direct tiles of ``conv_vec``
(forward) and the small-plane kernels, best ms of ``--reps`` rounds; then, with ``--net``, LeNet's
training step (forward + backward, parameter gradients) from two executors, one bound with the
small-plane rule and one without (``conv_shapes.SMALL_MAX_COLS = 0``), alternated.

    python benchmarks/bench_conv_small.py [--batch 64] [--reps 9] [--net]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"lenet-conv1": ((1, 28, 28), (20, 1, 5, 5)), "lenet-conv2": ((20, 12, 12), (50, 20, 5, 5))}


def best_ms(fn: Callable[[], None], reps: int, calls: int = 20) -> float:
    """Best mean time of ``calls`` calls over ``reps`` rounds, in ms."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e3


def layer_cases(batch: int, image: tuple, w_shape: tuple) -> dict[str, Callable[[], None]]:
    """The kernels of one layer (stride 1, no padding), each on its own scratch."""
    from symjit.kernels.cpu import conv, conv_small, conv_vec
    from symjit.kernels.cpu.conv_shapes import conv2d_block_elems, prefers_vec
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, *image)).astype(np.float32)
    w = (rng.standard_normal(w_shape) * 0.1).astype(np.float32)
    oh, ow = conv.conv2d_output_size(image[1:], w_shape[2:], (1, 1), (0, 0), (1, 1))
    out_shape = (batch, w_shape[0], oh, ow)
    out, dout = np.empty(out_shape, np.float32), rng.standard_normal(out_shape).astype(np.float32)
    dx, dw = np.empty_like(x), np.empty_like(w)
    g = ((1, 1), (0, 0), (1, 1), 1)
    limit = conv2d_block_elems(w_shape, 1)

    def scratch(kind):
        shape = conv.conv2d_cols_shape(kind, x.shape, w_shape, out_shape, 1, limit)
        return np.zeros(shape, np.float32)
    s = {k: scratch(k) for k in ("forward", "backward_data", "backward_weight", "forward_vec",
                                 "forward_small", "backward_data_small", "backward_weight_small")}
    cases = {
        "forward im2col": lambda: conv.conv2d_forward(x, w, out, s["forward"], *g),
        "forward small": lambda: conv_small.conv2d_forward_small_parallel(x, w, out, s["forward_small"], *g),
        "data im2col": lambda: conv.conv2d_backward_data(dout, w, dx, s["backward_data"], *g),
        "data small": lambda: conv_small.conv2d_backward_data_small_parallel(
            dout, w, dx, s["backward_data_small"], *g),
        "weight im2col": lambda: conv.conv2d_backward_weight(dout, x, dw, s["backward_weight"], *g),
        "weight small": lambda: conv_small.conv2d_backward_weight_small_parallel(
            dout, x, dw, s["backward_weight_small"], *g),
    }
    if prefers_vec(x.shape, w_shape, out_shape, *g, "float32"):
        cases["forward tiles"] = lambda: conv_vec.conv2d_forward_vec_parallel(x, w, out, s["forward_vec"], *g)
    return cases


def layer_table(batch: int, reps: int) -> None:
    print(f"{'layer':<14} {'kernel':<16} {'best ms':>8}")
    for name, (image, w_shape) in LAYERS.items():
        cases = layer_cases(batch, image, w_shape)
        times = {k: float("inf") for k in cases}
        for _ in range(2):     # two rounds of turns
            for k, fn in cases.items():
                times[k] = min(times[k], best_ms(fn, reps))
        for k in sorted(times):
            print(f"{name:<14} {k:<16} {times[k]:8.3f}", flush=True)


def net_ab(batch: int, reps: int) -> None:
    sys.path.insert(0, str(ROOT))
    from symjit.kernels.cpu import conv_shapes

    import symjit as mx
    from examples.nets import lenet

    def bind():
        net = lenet()
        params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
        ex = net.simple_bind(mx.cpu(), data=(batch, 1, 28, 28), grad_req=dict.fromkeys(params, "write"))
        rng = np.random.default_rng(0)
        for a in ex.arg_dict.values():
            a[:] = rng.normal(0, 0.05, a.shape)
        ex.arg_dict["softmax_label"][:] = np.arange(batch) % 10
        return ex
    small = bind()
    keep = conv_shapes.SMALL_MAX_COLS
    conv_shapes.SMALL_MAX_COLS = 0
    try:
        before = bind()
    finally:
        conv_shapes.SMALL_MAX_COLS = keep
    steps: dict[str, list[float]] = {"small": [], "before": []}
    for r in range(2 * reps):
        order = (("small", small), ("before", before)) if r % 2 else (("before", before), ("small", small))
        for name, ex in order:
            def step(ex=ex):
                ex.forward(is_train=True)
                ex.backward()
            steps[name].append(best_ms(step, 1))
    for name, v in steps.items():
        print(f"LeNet step, batch {batch}, {name:<6}: best {min(v):.2f} ms, "
              f"median {statistics.median(v):.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--net", action="store_true", help="also LeNet's step with and without the rule")
    args = ap.parse_args()
    layer_table(args.batch, args.reps)
    if args.net:
        net_ab(args.batch, args.reps)


if __name__ == "__main__":
    main()
