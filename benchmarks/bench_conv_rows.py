"""Time the CPU convolution forward over blocks of output rows against blocks of whole images, on
the model zoo's big-plane layers: best and median milliseconds of alternated calls, float32.

    python benchmarks/bench_conv_rows.py [--calls 8]

"rows" is the scratch the compiler plans (``conv2d_cols_shape`` with the layer's
``conv2d_block_elems``, which takes rows when one image exceeds the block and the plane has at
least ``ROWS_MIN_PIXELS`` outputs); "images" a scratch of one whole image.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from symjit.kernels.cpu import conv

# (name, x shape, w shape, stride, pad)
CASES = [
    ("ResNet stem 7x7/2, batch 2", (2, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3)),
    ("ResNet 3x3 at 56x56, batch 2", (2, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1)),
    ("ResNet 3x3 at 56x56, batch 8", (8, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1)),
    ("Inception stem 3x3 (32 filters), batch 2", (2, 32, 149, 149), (32, 32, 3, 3), (1, 1), (0, 0)),
    ("Inception stem 3x3 pad 1 (64), batch 2", (2, 32, 147, 147), (64, 32, 3, 3), (1, 1), (1, 1)),
    ("Inception stem 3x3 (192), batch 2", (2, 80, 73, 73), (192, 80, 3, 3), (1, 1), (0, 0)),
    ("Inception 5x5 at 35x35, batch 2", (2, 48, 35, 35), (64, 48, 5, 5), (1, 1), (2, 2)),
    ("VGG 3x3 at 224x224, batch 2", (2, 64, 224, 224), (64, 64, 3, 3), (1, 1), (1, 1)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=8)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    for name, xs, ws, stride, pad in CASES:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        oh, ow = conv.conv2d_output_size(xs[2:], ws[2:], stride, pad, (1, 1))
        out_shape = (xs[0], ws[0], oh, ow)
        out = np.empty(out_shape, np.float32)
        k = xs[1] * ws[2] * ws[3]
        planned = np.empty(conv.conv2d_cols_shape("forward", xs, ws, out_shape, 1,
                                                  conv.conv2d_block_elems(ws, 1)), np.float32)
        image = np.empty((1, (k + ws[0]) * oh * ow), np.float32)
        times = {"images": [], "rows": []}
        for _ in range(args.calls + 1):
            for label, cols in (("images", image), ("rows", planned)):
                t = time.perf_counter()
                conv.conv2d_forward(x, w, out, cols, stride, pad, (1, 1), 1)
                times[label].append(time.perf_counter() - t)
        rows = min(oh, planned.shape[1] // ((k + ws[0]) * ow))
        im, ro = (np.array(times[lab][1:]) * 1e3 for lab in ("images", "rows"))
        print(f"{name}: {rows}/{oh} rows per block; images best {im.min():.2f} median {np.median(im):.2f} "
              f"ms, rows best {ro.min():.2f} median {np.median(ro):.2f} ms ({im.min() / ro.min():.2f}x)")


if __name__ == "__main__":
    main()
