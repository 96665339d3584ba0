"""The GEMM-tile convolutions (``conv_small``: per-image im2col and register tiles; ``conv_pointwise``:
1x1 layers in register tiles) against the kernels they replace, in one process, taking turns, best
ms of ``--reps`` rounds per kernel:

* ``--layers lenet``: LeNet's two layers, forward and both gradients: im2col + BLAS (the
  compiler's block size), the direct tiles of ``conv_vec`` (forward, where its rule takes it) and
  the small-plane kernels;
* ``--layers strided``: ResNet's stride-2 layers (3x3 and 1x1), forward and both gradients: im2col
  + BLAS against the small-plane kernels;
* ``--layers pointwise``: ResNet-50's and Inception's 1x1 layers, forward: BLAS (``conv_direct``'s
  per-image GEMM, or im2col's copy and one GEMM, as the compiler picked before) against the tiles;
* ``--layers stems``: ResNet's 7 x 7 stem and Inception's 3x3 one, forward and both gradients:
  im2col + BLAS, the small-plane kernels and the row-chunk forward and weight gradient;
* ``--layers squeeze``: SqueezeNet 1.1's 3x3 layers (and one of Inception's), stride 1, forward and
  both gradients: im2col + BLAS, the direct tiles (where their rule takes the layer) and the
  small-plane kernels (``prefers_small_wide``).

With ``--net``, LeNet's training step (forward + backward, parameter gradients) from two executors,
one bound with the small-plane rule and one without (``conv_small_rules.SMALL_MAX_COLS = 0``), alternated.

    python benchmarks/bench_conv_small.py [--layers lenet,strided,pointwise,stems,squeeze] [--batch 64]
        [--reps 9] [--net]
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
LENET = [("conv1", (1, 28, 28), 20, 5, 1, 0), ("conv2", (20, 12, 12), 50, 5, 1, 0)]
STRIDED = [   # ResNet-18's and ResNet-50's stride-2 layers: (label, image, filters, window, stride, pad)
    ("r18 s2b1a 3x3", (64, 56, 56), 128, 3, 2, 1), ("r18 s3b1a 3x3", (128, 28, 28), 256, 3, 2, 1),
    ("r18 s2 down 1x1", (64, 56, 56), 128, 1, 2, 0), ("r18 s3 down 1x1", (128, 28, 28), 256, 1, 2, 0),
    ("r50 s2b1a 1x1", (256, 56, 56), 128, 1, 2, 0), ("r50 s3b1a 1x1", (512, 28, 28), 256, 1, 2, 0),
    ("r18 s4b1a 3x3", (256, 14, 14), 512, 3, 2, 1), ("r18 s4 down 1x1", (256, 14, 14), 512, 1, 2, 0),
]
STEMS = [   # the zoo's strided first layers whose images' columns exceed 2 MiB
    ("resnet stem 7x7/2", (3, 224, 224), 64, 7, 2, 3), ("incep stem 3x3/2", (3, 299, 299), 32, 3, 2, 0),
]
SQUEEZE = [   # SqueezeNet 1.1's expand 3x3 layers, Inception's 8 x 8 one and ResNet's 7 x 7 one, stride 1
    ("sq fire2 3x3", (16, 55, 55), 64, 3, 1, 1), ("sq fire4 3x3", (32, 27, 27), 128, 3, 1, 1),
    ("sq fire6 3x3", (48, 13, 13), 192, 3, 1, 1), ("sq fire8 3x3", (64, 13, 13), 256, 3, 1, 1),
    ("incep 8x8 3x3", (448, 8, 8), 384, 3, 1, 1), ("r18 s4 3x3", (512, 7, 7), 512, 3, 1, 1),
]
POINTWISE = [   # (label, image, filters)
    ("r50 s1 c", (64, 56, 56), 256), ("r50 s1 a", (256, 56, 56), 64), ("r50 s2 c", (128, 28, 28), 512),
    ("r50 s2 a", (512, 28, 28), 128), ("r50 s3 c", (256, 14, 14), 1024), ("r50 s3 a", (1024, 14, 14), 256),
    ("r50 s4 c", (512, 7, 7), 2048), ("incep 17x17", (768, 17, 17), 192), ("incep 8x8", (2048, 8, 8), 320),
    ("incep 35x35", (288, 35, 35), 64),
]


def best_ms(fn: Callable[[], None], reps: int, calls: int = 5) -> float:
    """Best mean time of ``calls`` calls over ``reps`` rounds, in ms."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e3


def _arrays(batch: int, image: tuple, f: int, k: int, stride: int, pad: int):
    from symjit.kernels.cpu import conv
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, *image)).astype(np.float32)
    w = (rng.standard_normal((f, image[0], k, k)) * 0.1).astype(np.float32)
    oh, ow = conv.conv2d_output_size(image[1:], (k, k), (stride, stride), (pad, pad), (1, 1))
    dout = rng.standard_normal((batch, f, oh, ow)).astype(np.float32)
    return x, w, dout, ((stride, stride), (pad, pad), (1, 1), 1)


def conv_cases(batch: int, image: tuple, f: int, k: int, stride: int, pad: int) -> dict:
    """im2col + BLAS, the direct tiles (forward, where ``prefers_vec``) and the small-plane kernels
    of one layer, forward and both gradients, each on its own scratch."""
    from symjit.kernels.cpu import conv, conv_small, conv_vec
    from symjit.kernels.cpu.conv_shapes import conv2d_block_elems, prefers_vec
    from symjit.kernels.cpu.conv_small_rules import prefers_small_rows

    from symjit.parts import run_in_parts
    x, w, dout, g = _arrays(batch, image, f, k, stride, pad)
    out, dx, dw = np.empty_like(dout), np.empty_like(x), np.empty_like(w)
    limit = conv2d_block_elems(w.shape, 1)

    def scratch(kind):
        return np.zeros(conv.conv2d_cols_shape(kind, x.shape, w.shape, dout.shape, 1, limit), np.float32)
    s = {k: scratch(k) for k in ("forward", "backward_data", "backward_weight", "forward_small",
                                 "backward_data_small", "backward_weight_small")}
    small = conv_small
    cases = {
        "forward im2col": lambda: conv.conv2d_forward(x, w, out, s["forward"], *g),
        "forward small": lambda: run_in_parts(small.conv2d_forward_small_parts,
                                              x, w, out, s["forward_small"], *g),
        "data im2col": lambda: conv.conv2d_backward_data(dout, w, dx, s["backward_data"], *g),
        "data small": lambda: run_in_parts(small.conv2d_backward_data_small_parts,
            dout, w, dx, s["backward_data_small"], *g),
        "weight im2col": lambda: conv.conv2d_backward_weight(dout, x, dw, s["backward_weight"], *g),
        "weight small": lambda: run_in_parts(small.conv2d_backward_weight_small_parts,
            dout, x, dw, s["backward_weight_small"], *g),
    }
    if prefers_small_rows(x.shape, w.shape, dout.shape, g[0], 1, "float32"):
        rows, wrows = scratch("forward_rows_small"), scratch("backward_weight_rows_small")
        cases["forward rows"] = lambda: run_in_parts(small.conv2d_forward_rows_small_parts,
                                                     x, w, out, rows, *g)
        cases["weight rows"] = lambda: run_in_parts(small.conv2d_backward_weight_rows_small_parts,
            dout, x, dw, wrows, *g)
    if prefers_vec(x.shape, w.shape, dout.shape, *g, "float32"):
        cv = scratch("forward_vec")
        cases["forward tiles"] = lambda: run_in_parts(conv_vec.conv2d_forward_vec_parts, x, w, out, cv, *g)
    return cases


def pointwise_cases(batch: int, image: tuple, f: int) -> dict:
    """The 1x1 layer's forward by BLAS as the compiler picked it before the tiles, and the tiles."""
    from symjit.kernels.cpu import conv, conv_direct, conv_pointwise
    from symjit.kernels.cpu.conv_shapes import conv2d_block_elems, is_pointwise

    from symjit.parts import run_in_parts
    x, w, dout, g = _arrays(batch, image, f, 1, 1, 0)
    out = np.empty_like(dout)
    pointwise = conv_pointwise.conv2d_forward_pointwise_parts
    cases = {"forward tiles": lambda: run_in_parts(pointwise, x, w, out, 1)}
    if is_pointwise(x.shape, w.shape, (1, 1), (0, 0)):
        cases["forward BLAS"] = lambda: conv_direct.conv2d_forward_1x1(x, w, out, 1)
    else:
        cols = np.zeros(conv.conv2d_cols_shape("forward", x.shape, w.shape, out.shape, 1,
                                               conv2d_block_elems(w.shape, 1)), np.float32)
        cases["forward BLAS"] = lambda: conv.conv2d_forward(x, w, out, cols, *g)
    return cases


def table(layers: list, cases_of: Callable, reps: int) -> None:
    for label, *shape in layers:
        cases = cases_of(*shape)
        times = {k: float("inf") for k in cases}
        for _ in range(2):     # two rounds of turns
            for k, fn in cases.items():
                times[k] = min(times[k], best_ms(fn, reps))
        print("  ".join([f"{label:<16}"] + [f"{k} {times[k]:8.3f}" for k in sorted(times)]), flush=True)


def net_ab(batch: int, reps: int) -> None:
    sys.path.insert(0, str(ROOT))
    from symjit.kernels.cpu import conv_small_rules

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
    keep = conv_small_rules.SMALL_MAX_COLS
    conv_small_rules.SMALL_MAX_COLS = 0
    try:
        before = bind()
    finally:
        conv_small_rules.SMALL_MAX_COLS = keep
    steps: dict[str, list[float]] = {"small": [], "before": []}
    for r in range(2 * reps):
        order = (("small", small), ("before", before)) if r % 2 else (("before", before), ("small", small))
        for name, ex in order:
            def step(ex=ex):
                ex.forward(is_train=True)
                ex.backward()
            steps[name].append(best_ms(step, 1, 20))
    for name, v in steps.items():
        print(f"LeNet step, batch {batch}, {name:<6}: best {min(v):.2f} ms, "
              f"median {statistics.median(v):.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", default="lenet", help="lenet, strided, pointwise, stems and/or squeeze")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--net", action="store_true", help="also LeNet's step with and without the rule")
    args = ap.parse_args()
    which = args.layers.split(",") if args.layers else []
    if "lenet" in which:
        table(LENET, lambda *s: conv_cases(args.batch, *s), args.reps)
    if "strided" in which:
        table(STRIDED, lambda *s: conv_cases(args.batch, *s), args.reps)
    if "stems" in which:
        table(STEMS, lambda *s: conv_cases(args.batch, *s), args.reps)
    if "squeeze" in which:
        table(SQUEEZE, lambda *s: conv_cases(args.batch, *s), args.reps)
    if "pointwise" in which:
        table(POINTWISE, lambda *s: pointwise_cases(args.batch, *s), args.reps)
    if args.net:
        net_ab(args.batch, args.reps)


if __name__ == "__main__":
    main()
