"""Winograd F(2x2, 3x3) against im2col + GEMM, in one process (the machine's speed swings too much
between processes to compare a 10% change otherwise).

Layers (default): each zoo 3x3 stride-1 shape's forward, data gradient and weight gradient, both
kernels on the same arrays, in turns of ``--reps`` calls, best call of each::

    python benchmarks/bench_winograd.py [--batch 2] [--reps 8] [--layers s1,s2,s3,s4,i35,i35b,sq13,i8]

Nets (``--net resnet18``): two executors of one net, one bound with the Winograd kernels where
``prefers_winograd`` picks them and one bound with them switched off, their steps alternated::

    python benchmarks/bench_winograd.py --net resnet18 --batch 32 [--train] [--rounds 3]
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SYMJIT_AOT", "off")

# name: (C, F, image side) of a 3x3 convolution at stride 1, pad 1
LAYERS = {"s1": (64, 64, 56), "s2": (128, 128, 28), "s3": (256, 256, 14), "s4": (512, 512, 7),
          "i35": (64, 96, 35), "i35b": (96, 96, 35), "sq13": (64, 256, 13), "i8": (448, 384, 8)}
KINDS = ("forward", "backward_data", "backward_weight")


def best_of_turns(calls: list, reps: int, turns: int = 3) -> list[float]:
    """Best seconds per call of each of ``calls``, run in turns of ``reps`` calls."""
    best = [np.inf] * len(calls)
    for fn in calls:
        fn()
    for _ in range(turns):
        for i, fn in enumerate(calls):
            for _ in range(reps):
                t = time.perf_counter()
                fn()
                best[i] = min(best[i], time.perf_counter() - t)
    return best


def layers(names: list[str], batch: int, reps: int) -> None:
    from symjit.kernels.cpu import conv, conv_winograd
    from symjit.kernels.cpu.conv_shapes import prefers_winograd

    from symjit.parts import run_in_parts
    rng = np.random.default_rng(0)
    geometry = ((1, 1), (1, 1), (1, 1), 1)
    print(f"batch {batch}: im2col -> Winograd, ms (ratio); 'chosen' marks what the compiler picks")
    print("| layer | " + " | ".join(KINDS) + " |")
    print("|---|" + "---|" * len(KINDS))
    for name in names:
        c, f, h = LAYERS[name]
        x = rng.random((batch, c, h, h), np.float32)
        w = rng.random((f, c, 3, 3), np.float32) - 0.5
        dout = rng.random((batch, f, h, h), np.float32) - 0.5
        out, dx, dw = np.empty_like(dout), np.empty_like(x), np.empty_like(w)
        arrays = {"forward": (x, w, out), "backward_data": (dout, w, dx), "backward_weight": (dout, x, dw)}
        limit = conv.conv2d_block_elems(w.shape, 1)
        cells = []
        for kind in KINDS:
            scratch = [np.empty(conv.conv2d_cols_shape(k, x.shape, w.shape, dout.shape, 1, limit),
                                np.float32) for k in (kind, f"{kind}_winograd")]
            winograd = getattr(conv_winograd, f"conv2d_{kind}_winograd_parts")
            kernels = (getattr(conv, f"conv2d_{kind}"), functools.partial(run_in_parts, winograd))
            calls = [lambda fn=fn, s=s, a=arrays[kind]: fn(*a, s, *geometry)
                     for fn, s in zip(kernels, scratch)]
            t_im2col, t_wino = best_of_turns(calls, reps)
            chosen = prefers_winograd(x.shape, w.shape, dout.shape, *geometry, kind != "forward")
            cells.append(f"{t_im2col * 1e3:.2f} -> {t_wino * 1e3:.2f} ({t_im2col / t_wino:.2f}x)"
                         + (" chosen" if chosen else ""))
        print(f"| {name} {c}->{f} {h}x{h} | " + " | ".join(cells) + " |", flush=True)


def alternate_executors(name: str, batch: int, train: bool, rounds: int, switch_off) -> tuple[dict, float]:
    """Bind net ``name`` twice, once as the rule says (``"on"``) and once inside ``switch_off()`` (a
    context manager that turns a kernel family off), and time their steps in turns (the first of
    each round alternating): seconds per step of each, and how much the first outputs differ
    relative to their magnitude."""
    import symjit as mx
    from examples import nets as zoo
    build = {"resnet18": lambda: zoo.resnet(18), "resnet50": lambda: zoo.resnet(50),
             "inception_v3": zoo.inception_v3, "squeezenet1_1": zoo.squeezenet1_1,
             "mobilenet_v2": zoo.mobilenet_v2, "lenet": zoo.lenet}
    sym = build[name]()
    shape = {"inception_v3": (batch, 3, 299, 299),
             "lenet": (batch, 1, 28, 28)}.get(name, (batch, 3, 224, 224))
    classes = 10 if name == "lenet" else 1000
    reqs = {n: "write" if train and n not in ("data", "softmax_label") else "null"
            for n in sym.list_arguments()}

    def bind():
        ex = sym.simple_bind(mx.cpu(), data=shape, grad_req=reqs)
        mx.random.seed(0)
        for n, arr in ex.arg_dict.items():
            if n not in ("data", "softmax_label"):
                mx.init.Xavier(magnitude=2.0)(mx.init.InitDesc(n), arr)
        for n, arr in ex.aux_dict.items():
            arr[:] = 1.0 if n.endswith("var") else 0.0
        ex.arg_dict["data"][:] = np.random.default_rng(0).random(shape, np.float32)
        ex.arg_dict["softmax_label"][:] = np.arange(batch) % classes
        return ex

    def step(ex) -> None:
        ex.forward(is_train=train)
        if train:
            ex.backward()
            for g in ex.grad_arrays:
                if g is not None:
                    g.wait_to_read()
        else:
            ex.outputs[0].wait_to_read()

    executors = {"on": bind()}
    with switch_off():
        executors["off"] = bind()
    for ex in executors.values():
        step(ex)
    on, off = (executors[k].outputs[0].asnumpy() for k in ("on", "off"))
    diff = float(np.abs(on - off).max() / np.abs(off).max())
    times = {k: [] for k in executors}
    for r in range(rounds):   # each goes first in every other round
        for k, ex in list(executors.items())[::1 if r % 2 else -1]:
            for _ in range(2):
                t = time.perf_counter()
                step(ex)
                times[k].append(time.perf_counter() - t)
    return times, diff


def net(name: str, batch: int, train: bool, rounds: int) -> None:
    from symjit.kernels.cpu import conv_shapes

    @contextlib.contextmanager
    def no_winograd():
        keep = conv_shapes.WINOGRAD_MIN_CHANNELS
        conv_shapes.WINOGRAD_MIN_CHANNELS = 1 << 30   # no layer qualifies
        try:
            yield
        finally:
            conv_shapes.WINOGRAD_MIN_CHANNELS = keep

    times, _ = alternate_executors(name, batch, train, rounds, no_winograd)
    times = {"winograd": times["on"], "im2col": times["off"]}
    mode = "training step" if train else "forward"
    for k, ts in times.items():
        print(f"{name} batch {batch} {mode}, {k}: median {statistics.median(ts) * 1e3:.1f} ms, "
              f"best {min(ts) * 1e3:.1f} ms")
    print(f"im2col / Winograd: best {min(times['im2col']) / min(times['winograd']):.3f}x, median "
          f"{statistics.median(times['im2col']) / statistics.median(times['winograd']):.3f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--reps", type=int, default=8)
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
