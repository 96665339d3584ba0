"""The SIMD tile kernels (``conv_vec``) against im2col + GEMM and Winograd, in one process (the
machine's speed swings too much between processes to compare a 10-20% change otherwise).

Layers (default): stride-1 layers of the zoo nets, forward and both gradients, each kernel on the
same arrays, in turns of ``--reps`` calls, best call of each (ms); "chosen" marks the tile kernel
where ``prefers_vec`` picks it::

    python benchmarks/bench_conv_vec.py [--batch 2] [--reps 5] [--layers s1,s2,i147,...]

Nets (``--net inception_v3``): two executors of one net, one bound with the tile kernels where the
rule picks them, one with them switched off, their steps alternated::

    python benchmarks/bench_conv_vec.py --net resnet18 --batch 2 [--train] [--rounds 5]
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SYMJIT_AOT", "off")
from benchmarks.bench_winograd import alternate_executors, best_of_turns  # noqa: E402

# name: (C, F, image side, window, pad) of a convolution at stride 1 (window and pad: an int, or
# (rows, columns))
LAYERS = {"s1": (64, 64, 56, 3, 1), "s2": (128, 128, 28, 3, 1), "s3": (256, 256, 14, 3, 1),
          "s4": (512, 512, 7, 3, 1), "i147": (32, 64, 147, 3, 1), "i149": (32, 32, 149, 3, 0),
          "i35": (64, 96, 35, 3, 1), "i35b": (96, 96, 35, 3, 1), "i35x5": (48, 64, 35, 5, 2),
          "i17": (160, 160, 17, (1, 7), (0, 3)), "i17t": (160, 192, 17, (7, 1), (3, 0)),
          "i17p": (768, 192, 17, 1, 0), "i8": (448, 384, 8, 3, 1), "i8r": (384, 384, 8, (1, 3), (0, 1)),
          "i73": (80, 192, 73, 3, 0), "sq55": (16, 64, 55, 3, 1), "sq27": (32, 128, 27, 3, 1),
          "sq13a": (48, 192, 13, 3, 1), "sq13": (64, 256, 13, 3, 1), "vgg224": (3, 64, 224, 3, 1),
          "lenet2": (20, 50, 12, 5, 0)}


def _pair(v) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


def _kernels(kind: str, w_shape: tuple, pad: tuple) -> dict:
    """The kernels to compare for ``kind`` (``'forward'``, ``'backward_data'`` or
    ``'backward_weight'``): name -> (kernel kind, function)."""
    from symjit.kernels.cpu import conv, conv_vec, conv_winograd
    from symjit.kernels.cpu.conv_shapes import is_winograd

    from symjit.parts import run_in_parts
    out = {"im2col": (kind, getattr(conv, f"conv2d_{kind}"))}
    if is_winograd(w_shape, (1, 1), pad, (1, 1), 1):
        winograd = getattr(conv_winograd, f"conv2d_{kind}_winograd_parts")
        out["winograd"] = (f"{kind}_winograd", functools.partial(run_in_parts, winograd))
    tiles = getattr(conv_vec, f"conv2d_{kind}_vec_parts")
    out["tiles"] = (f"{kind}_vec", functools.partial(run_in_parts, tiles))
    return out


def layers(names: list[str], batch: int, reps: int) -> None:
    from symjit.kernels.cpu import conv
    from symjit.kernels.cpu.conv_shapes import prefers_vec
    rng = np.random.default_rng(0)
    print(f"batch {batch}: best ms of each kernel; the tile kernel's speed-up over the faster other one")
    print("| layer | forward | data gradient | weight gradient |")
    print("|---|---|---|---|")
    for name in names:
        c, f, h, k, p = LAYERS[name]
        (kh, kw), (ph, pw) = _pair(k), _pair(p)
        geometry = ((1, 1), (ph, pw), (1, 1), 1)
        x = rng.random((batch, c, h, h), np.float32)
        w = rng.random((f, c, kh, kw), np.float32) - 0.5
        dout = rng.random((batch, f, h + 2 * ph - kh + 1, h + 2 * pw - kw + 1), np.float32) - 0.5
        out, dx, dw = np.empty_like(dout), np.empty_like(x), np.empty_like(w)
        arrays = {"forward": (x, w, out), "backward_data": (dout, w, dx), "backward_weight": (dout, x, dw)}
        cells = []
        for kind in ("forward", "backward_data", "backward_weight"):
            kernels = _kernels(kind, w.shape, (ph, pw))
            calls = []
            for kkind, fn in kernels.values():
                # the compiler's budget
                limit = conv.conv2d_block_elems(w.shape, 1, kkind, x.shape, dout.shape)
                s = np.empty(conv.conv2d_cols_shape(kkind, x.shape, w.shape, dout.shape, 1, limit),
                             np.float32)
                calls.append(lambda fn=fn, s=s, a=arrays[kind], g=geometry: fn(*a, s, *g))
            best = dict(zip(kernels, best_of_turns(calls, reps)))
            other = min(v for n, v in best.items() if n != "tiles")
            gradient = {"forward": False, "backward_data": True, "backward_weight": "weight"}[kind]
            chosen = prefers_vec(x.shape, w.shape, dout.shape, *geometry, np.float32, gradient)
            cells.append(", ".join(f"{n} {v * 1e3:.2f}" for n, v in best.items())
                         + f" ({other / best['tiles']:.2f}x)" + (" chosen" if chosen else ""))
        print(f"| {name} {c}->{f} {h}x{h} {kh}x{kw} | " + " | ".join(cells) + " |", flush=True)


def net(name: str, batch: int, train: bool, rounds: int) -> None:
    from symjit.kernels.cpu import conv_shapes

    @contextlib.contextmanager
    def no_tiles():
        names = ("VEC_MIN_PLANE", "VEC_MIN_PLANE_WEIGHT", "VEC_MIN_MACS")
        keep = [getattr(conv_shapes, n) for n in names]
        for n in names:
            setattr(conv_shapes, n, 1 << 60)   # no layer qualifies
        try:
            yield
        finally:
            for n, v in zip(names, keep):
                setattr(conv_shapes, n, v)

    times, diff = alternate_executors(name, batch, train, rounds, no_tiles)
    times = {"tiles": times["on"], "without": times["off"]}
    mode = "training step" if train else "forward"
    for k, ts in times.items():
        print(f"{name} batch {batch} {mode}, {k}: median {statistics.median(ts) * 1e3:.1f} ms, "
              f"best {min(ts) * 1e3:.1f} ms")
    print(f"without / tiles: best {min(times['without']) / min(times['tiles']):.3f}x, median "
          f"{statistics.median(times['without']) / statistics.median(times['tiles']):.3f}x; "
          f"outputs differ by {diff:.1e} of their magnitude")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--layers", default=",".join(LAYERS))
    ap.add_argument("--net", choices=("resnet18", "resnet50", "inception_v3", "squeezenet1_1"))
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if a.net:
        net(a.net, a.batch, a.train, a.rounds)
    else:
        layers(a.layers.split(","), a.batch, a.reps)


if __name__ == "__main__":
    main()
