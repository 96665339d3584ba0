"""Float32 error of every convolution form the CPU lowering picks, against the float64 run of the
same executor, beside a direct float32 convolution written with numpy (one float32 GEMM per window
tap, summed over the taps in float32: the accumulation a direct convolution such as oneDNN's does).

    python benchmarks/bench_conv_numerics.py [--only NAME] [--seeds 2]

For each layer (ResNet-18's at batches 2 and 32, LeNet's, MobileNet's depthwise and pointwise
layers, SqueezeNet's, a stem, ResNet-50's and DenseNet's 1x1 layers on 7 x 7 maps: every form the
lowering picks for the model zoo's nets at batches 2 and 32) and each direction (forward, data
gradient, weight gradient) it prints the kernel form symjit runs, the error
``max |f32 - f64| / max |f64|`` of symjit and of the direct form (the worst over ``--seeds``
draws of data, weight and head gradient; inputs rounded to float32 first, so both runs see the
same numbers), and their ratio. A ratio above 4 fails the run (exit status 1): no form may lose
more than 4x the direct form's precision.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SYMJIT_AOT", "off")

import numpy as np  # noqa: E402

import symjit as mx  # noqa: E402
from symjit.lower.cpu.nn import _forward_kind, _gradient_kind  # noqa: E402
from symjit.ops.registry import get_op  # noqa: E402

# name: (data shape, filters, kernel, stride, pad, groups)
LAYERS = {
    "resnet-stem-b2": ((2, 3, 224, 224), 64, 7, 2, 3, 1),
    "resnet-s1-3x3-b2": ((2, 64, 56, 56), 64, 3, 1, 1, 1),
    "resnet-s2-3x3s2-b2": ((2, 64, 56, 56), 128, 3, 2, 1, 1),
    "resnet-s2-1x1s2-b2": ((2, 64, 56, 56), 128, 1, 2, 0, 1),
    "resnet-s2-3x3-b2": ((2, 128, 28, 28), 128, 3, 1, 1, 1),
    "resnet-s3-3x3-b2": ((2, 256, 14, 14), 256, 3, 1, 1, 1),
    "resnet-s4-3x3s2-b2": ((2, 256, 14, 14), 512, 3, 2, 1, 1),
    "resnet-s4-3x3-b2": ((2, 512, 7, 7), 512, 3, 1, 1, 1),
    "resnet-s4-1x1s2-b2": ((2, 256, 14, 14), 512, 1, 2, 0, 1),
    "resnet-s1-3x3-b32": ((32, 64, 56, 56), 64, 3, 1, 1, 1),
    "resnet-s3-3x3-b32": ((32, 256, 14, 14), 256, 3, 1, 1, 1),
    "resnet-s4-3x3-b32": ((32, 512, 7, 7), 512, 3, 1, 1, 1),
    "lenet-conv1-b64": ((64, 1, 28, 28), 20, 5, 1, 0, 1),
    "lenet-conv2-b64": ((64, 20, 12, 12), 50, 5, 1, 0, 1),
    "mobilenet-dw-b2": ((2, 32, 112, 112), 32, 3, 1, 1, 32),
    "mobilenet-1x1-b2": ((2, 64, 56, 56), 128, 1, 1, 0, 1),
    "squeezenet-3x3-b2": ((2, 64, 55, 55), 256, 3, 1, 1, 1),
    "resnet50-1x1-b2": ((2, 1024, 14, 14), 256, 1, 1, 0, 1),
    "resnet50-s4-1x1-b2": ((2, 2048, 7, 7), 512, 1, 1, 0, 1),
    "densenet-1x1-7x7-b2": ((2, 512, 7, 7), 128, 1, 1, 0, 1),
    "densenet-1x1-7x7-b32": ((32, 896, 7, 7), 128, 1, 1, 0, 1),
}


def _params(k: int, s: int, p: int, f: int, groups: int) -> dict:
    return get_op("Convolution").parse_params({"kernel": f"({k}, {k})", "stride": f"({s}, {s})",
                                               "pad": f"({p}, {p})", "num_filter": str(f),
                                               "num_group": str(groups), "no_bias": "True"})


def kinds(x_shape: tuple, f: int, k: int, s: int, p: int, groups: int) -> dict[str, str]:
    """The kernel forms the CPU lowering picks for float32 (forward, data and weight gradients)."""
    prm = _params(k, s, p, f, groups)
    w_shape = (f, x_shape[1] // groups, k, k)
    oh = (x_shape[2] + 2 * p - k) // s + 1
    out = (x_shape[0], f, oh, (x_shape[3] + 2 * p - k) // s + 1)
    dt = np.dtype("float32")
    return {"forward": _forward_kind(x_shape, w_shape, out, prm, dt),
            "data": _gradient_kind("backward_data", x_shape, w_shape, out, prm, dt),
            "weight": _gradient_kind("backward_weight", x_shape, w_shape, out, prm, dt)}


def symjit_run(x, w, head, k, s, p, groups, dtype) -> dict[str, np.ndarray]:
    sym = mx.sym.Convolution(mx.sym.Variable("x"), mx.sym.Variable("w"), kernel=(k, k), stride=(s, s),
                             pad=(p, p), num_filter=w.shape[0], num_group=groups, no_bias=True)
    ex = sym.simple_bind(mx.cpu(), x=x.shape, w=w.shape, type_dict={"x": dtype, "w": dtype})
    ex.arg_dict["x"][:] = x
    ex.arg_dict["w"][:] = w
    out = ex.forward(is_train=True)[0].asnumpy().astype(np.float64)
    ex.backward(mx.nd.array(head, dtype=dtype))
    return {"forward": out, "data": ex.grad_dict["x"].asnumpy().astype(np.float64),
            "weight": ex.grad_dict["w"].asnumpy().astype(np.float64)}


def direct_run(x, w, head, k, s, p, groups) -> dict[str, np.ndarray]:
    """A direct float32 convolution: per window tap one float32 GEMM over the channels, the taps
    summed in float32, for the forward and both gradients."""
    x, w, head = (a.astype(np.float32) for a in (x, w, head))
    n, c, h, wd = x.shape
    f, oh, ow = w.shape[0], head.shape[2], head.shape[3]
    xp = np.zeros((n, c, h + 2 * p, wd + 2 * p), np.float32)
    xp[:, :, p:p + h, p:p + wd] = x
    out = np.zeros(head.shape, np.float32)
    dxp = np.zeros_like(xp)
    dw = np.zeros(w.shape, np.float32)
    cg, fg = c // groups, f // groups
    for g in range(groups):
        cs, fs = slice(g * cg, (g + 1) * cg), slice(g * fg, (g + 1) * fg)
        for i in range(k):
            for j in range(k):
                win = (slice(None), cs, slice(i, i + s * (oh - 1) + 1, s), slice(j, j + s * (ow - 1) + 1, s))
                tap = w[fs, :, i, j]
                out[:, fs] += np.einsum("fc,nchw->nfhw", tap, xp[win], dtype=np.float32)
                dxp[win] += np.einsum("fc,nfhw->nchw", tap, head[:, fs], dtype=np.float32)
                dw[fs, :, i, j] = np.einsum("nfhw,nchw->fc", head[:, fs], xp[win], dtype=np.float32)
    return {"forward": out.astype(np.float64), "data": dxp[:, :, p:p + h, p:p + wd].astype(np.float64),
            "weight": dw.astype(np.float64)}


def error(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


def measure(name: str, seeds: int) -> list[tuple]:
    x_shape, f, k, s, p, groups = LAYERS[name]
    form = kinds(x_shape, f, k, s, p, groups)
    worst = {d: [0.0, 0.0] for d in form}
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        fan = x_shape[1] // groups * k * k
        x = np.maximum(rng.standard_normal(x_shape), 0).astype(np.float32).astype(np.float64)
        w = (rng.standard_normal((f, x_shape[1] // groups, k, k)) / np.sqrt(fan)).astype(np.float32)
        oh, ow = (x_shape[2] + 2 * p - k) // s + 1, (x_shape[3] + 2 * p - k) // s + 1
        head = rng.standard_normal((x_shape[0], f, oh, ow)).astype(np.float32).astype(np.float64)
        w = w.astype(np.float64)
        ref = symjit_run(x, w, head, k, s, p, groups, "float64")
        got = symjit_run(x, w, head, k, s, p, groups, "float32")
        direct = direct_run(x, w, head, k, s, p, groups)
        for d in form:
            worst[d][0] = max(worst[d][0], error(got[d], ref[d]))
            worst[d][1] = max(worst[d][1], error(direct[d], ref[d]))
    return [(name, d, form[d], *worst[d]) for d in form]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated layer names (default: all)")
    ap.add_argument("--seeds", type=int, default=2, help="draws of data, weight and head gradient")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(LAYERS)
    bad = [n for n in names if n not in LAYERS]
    if bad:
        ap.error(f"--only: unknown layers {bad}; known: {', '.join(LAYERS)}")
    print(f"{'layer':22s} {'direction':9s} {'symjit form':28s} {'symjit':>9s} {'direct':>9s} {'ratio':>6s}")
    failed = False
    for name in names:
        for layer, d, form, err, direct in measure(name, args.seeds):
            ratio = err / direct
            failed |= ratio > 4
            print(f"{layer:22s} {d:9s} {form:28s} {err:9.2e} {direct:9.2e} {ratio:6.2f}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
