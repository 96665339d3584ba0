"""Two versions of the convolution kernels, call by call in one process: ResNet-18's layers.

The machine's speed swings by up to 1.6x for tens of seconds at a time (separate processes of the
same code gave ResNet-18's training step 2.9 s and 4.8 s), so two versions are compared by
alternating their calls on the same arrays: each layer's forward, data gradient and weight gradient
run ``--reps`` times, this checkout's kernel right after the other's, and the best of each is kept.

The other version is a copy of another checkout's ``kernels`` folder under another package name,
made by this script::

    git worktree add /tmp/wt_old <rev>
    python benchmarks/bench_conv_ab.py --old /tmp/wt_old/kernels [--batch 32] [--reps 5]
        [--layers stem,s1,s2,s3,s4,s2a,d2,d4] [--kinds backward_weight] [--winograd]

Each version gets the scratch its own ``conv2d_cols_shape`` asks for. ``--winograd`` compares the
Winograd kernels (``conv_winograd``) instead of im2col's, on the 3x3 stride-1 layers given.
Layers beyond ResNet-18's: ``r50`` (ResNet-50's 1024 -> 256 1x1 at 14 x 14), ``r50a`` (its 64 ->
256 1x1 at 56 x 56), LeNet's ``l1``, ``l2``.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# name: (C, F, kernel, stride, pad, image side) of ResNet-18's convolutions, and LeNet's (l1, l2)
LAYERS = {"stem": (3, 64, 7, 2, 3, 224), "s1": (64, 64, 3, 1, 1, 56), "s2": (128, 128, 3, 1, 1, 28),
          "s3": (256, 256, 3, 1, 1, 14), "s4": (512, 512, 3, 1, 1, 7), "s2a": (64, 128, 3, 2, 1, 56),
          "d2": (64, 128, 1, 2, 0, 56), "d4": (256, 512, 1, 2, 0, 14),
          "l1": (1, 20, 5, 1, 0, 28), "l2": (20, 50, 5, 1, 0, 12),
          "r50": (1024, 256, 1, 1, 0, 14), "r50a": (64, 256, 1, 1, 0, 56)}
KINDS = ("forward", "backward_data", "backward_weight")


def load_other(kernels: Path, module: str = "conv"):
    """``kernels/cpu/<module>.py`` of another checkout, imported as ``kernels_other.cpu.<module>``."""
    tmp = Path(tempfile.mkdtemp(prefix="symjit_ab_"))
    shutil.copytree(kernels, tmp / "kernels_other", ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(tmp))
    return importlib.import_module(f"kernels_other.cpu.{module}")


def _kernel(module, kind: str, winograd: bool):
    from symjit.parts import run_in_parts
    if not winograd:
        return getattr(module, f"conv2d_{kind}")
    parts = getattr(module, f"conv2d_{kind}_winograd_parts", None)
    if parts is None:   # a checkout from before the kernels ran in parts
        return getattr(module, f"conv2d_{kind}_winograd_parallel")
    return functools.partial(run_in_parts, parts)


def compare(old, new, layer: str, batch: int, reps: int, kinds=KINDS,
            winograd: tuple | None = None) -> list[tuple[str, float, float]]:
    """Best ms of each version's kernel per kind; ``winograd`` is the two versions'
    ``conv_winograd`` modules, whose kernels are then compared instead."""
    c, f, k, s, p, h = LAYERS[layer]
    rng = np.random.default_rng(0)
    x = rng.random((batch, c, h, h), np.float32)
    w = rng.random((f, c, k, k), np.float32) - 0.5
    oh = (h + 2 * p - k) // s + 1
    out = np.empty((batch, f, oh, oh), np.float32)
    dout = rng.random(out.shape, np.float32) - 0.5
    geometry = ((s, s), (p, p), (1, 1), 1)
    rows = []
    for kind in kinds:
        scratch = kind + ("_winograd" if winograd else "")
        cols = []
        for m in (old, new):
            limit = m.conv2d_block_elems(w.shape, 1, scratch, x.shape, out.shape)
            cols.append(np.empty(m.conv2d_cols_shape(scratch, x.shape, w.shape, out.shape, 1, limit),
                                 np.float32))
        arrays = {"forward": (x, w, out), "backward_data": (dout, w, np.empty_like(x)),
                  "backward_weight": (dout, x, np.empty_like(w))}[kind]
        calls = [_kernel(m, kind, winograd is not None) for m in (winograd or (old, new))]
        best = [np.inf, np.inf]
        for fn, c in zip(calls, cols):
            fn(*arrays, c, *geometry)
        for _ in range(reps):
            for i, fn in enumerate(calls):
                t = time.perf_counter()
                fn(*arrays, cols[i], *geometry)
                best[i] = min(best[i], time.perf_counter() - t)
        rows.append((kind, best[0] * 1e3, best[1] * 1e3))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", type=Path, required=True, help="another checkout's kernels folder")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--layers", default=",".join(LAYERS))
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated, of " + ", ".join(KINDS))
    ap.add_argument("--winograd", action="store_true", help="the Winograd kernels (3x3 stride-1 layers)")
    a = ap.parse_args()
    kinds = tuple(a.kinds.split(","))
    if set(kinds) - set(KINDS):
        ap.error(f"--kinds: unknown {sorted(set(kinds) - set(KINDS))}; known: {', '.join(KINDS)}")
    old = load_other(a.old)
    from symjit.kernels.cpu import conv as new
    winograd = None
    if a.winograd:
        from symjit.kernels.cpu import conv_winograd
        winograd = (importlib.import_module("kernels_other.cpu.conv_winograd"), conv_winograd)
    print(f"batch {a.batch}, best of {a.reps} alternated calls (ms): other -> this checkout")
    print("| layer | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    total = [0.0, 0.0]
    for layer in a.layers.split(","):
        cells = []
        for _, t_old, t_new in compare(old, new, layer, a.batch, a.reps, kinds, winograd):
            total[0] += t_old
            total[1] += t_new
            cells.append(f"{t_old:.2f} -> {t_new:.2f} ({t_old / t_new:.2f}x)")
        print(f"| {layer} | " + " | ".join(cells) + " |", flush=True)
    print(f"total {total[0]:.1f} -> {total[1]:.1f} ms ({total[0] / total[1]:.3f}x)")


if __name__ == "__main__":
    main()
