"""Float32 training gradients of whole nets against the same step in float64: one
``forward(is_train=True)`` + ``backward()`` of a net with a SoftmaxOutput head (``examples/nets.py``'s,
or the Gluon model zoo's exported as a symbol: ``resnet18_v1`` and the like), Xavier-uniform
weights, BatchNorm's gamma 1 and beta 0, data N(0, 1), at a small batch, bound in float32 and in
float64 on the same float32-representable numbers.

    python benchmarks/bench_float32_grads.py [--nets resnet18_v1,resnet18_v2] [--batch 2] [--seeds 1]
        [--flips] [--mxnet-python /path/to/mxnet-venv/bin/python]
    python benchmarks/bench_float32_grads.py --ops [--seeds 3]

The error of one gradient array is ``max |g32 - g64| / max(max |g64|, 1e-2 * the net's largest
gradient)`` (a bias ahead of a BatchNorm has a true gradient of 0); per net and draw the worst and
the median over its parameter arrays are printed. With ``--flips``, also the number of ReLU inputs
whose sign differs between the two runs ("flips": a float32 forward error larger than a value's
distance from 0 sends that element's gradient the other way, which accounts for errors of 1e-2
and more; without flips the errors are near 1e-5) and the forward's error at the last ReLU input
(relative to its largest value). ``--mxnet-python`` runs the same symbol (its JSON) on the same
numbers in MXNet 1.9.1 too (its own venv, numpy < 1.24), in a process of its own; MXNet is never
a dependency of symjit or its tests.

``--ops`` measures the backward kernels of ResNet v1's basic block one group at a time instead, on
its stage-4 shape (2, 512, 7, 7): BatchNorm, BatchNorm + relu, BatchNorm + add + relu and a 3x3
convolution + BatchNorm + relu, training forward and every gradient, float32 against float64, in
units of 2^-24 of each array's largest value.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("SYMJIT_AOT", "off")

import numpy as np  # noqa: E402

EXAMPLES = {"resnet18": ("resnet", 18), "resnet50": ("resnet", 50), "mobilenet_v2": ("mobilenet_v2",),
            "squeezenet1_1": ("squeezenet1_1",), "inception_v3": ("inception_v3",)}
ZOO = ("resnet18_v1", "resnet18_v2", "resnet50_v1", "mobilenet1_0", "mobilenet_v2_1_0", "densenet121")
SIZE = {"inception_v3": 299}


def build(name: str):
    """The net's symbol with its SoftmaxOutput head, built by symjit."""
    import symjit as mx
    if name in EXAMPLES:
        from examples import nets
        fn, *args = EXAMPLES[name]
        return getattr(nets, fn)(*args)
    from symjit.gluon.model_zoo import vision
    return mx.sym.SoftmaxOutput(getattr(vision, name)()(mx.sym.var("data")), name="softmax")


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


def draw(sym, name: str, batch: int, seed: int) -> dict[str, np.ndarray]:
    size = SIZE.get(name, 224)
    rng = np.random.default_rng(1000 + seed)
    values = {"data": rng.standard_normal((batch, 3, size, size)).astype(np.float32).astype(np.float64),
              "softmax_label": rng.integers(0, 1000, batch).astype(np.float64)}
    values.update(xavier(sym, {"data": values["data"].shape, "softmax_label": (batch,)}, seed))
    return values


def _set(ex, values: dict) -> None:
    for name, arr in ex.arg_dict.items():
        arr[:] = values[name]
    for name, arr in ex.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0


def _types(sym, dtype: str) -> dict[str, str]:
    """Every variable's dtype (a Gluon export records float32 on its parameters and statistics)."""
    return {n: dtype for n in sym.list_arguments() + sym.list_auxiliary_states()}


def step(mx: Any, sym, dtype: str, values: dict) -> dict[str, np.ndarray]:
    """The parameter gradients of one training step (the fused program users run)."""
    shapes = {"data": values["data"].shape, "softmax_label": values["softmax_label"].shape}
    ex = sym.simple_bind(mx.cpu(), grad_req="write", type_dict=_types(sym, dtype), **shapes)
    _set(ex, values)
    ex.forward(is_train=True)
    ex.backward()
    return {n: g.asnumpy().astype(np.float64) for n, g in ex.grad_dict.items()
            if g is not None and n not in shapes}


def relu_inputs(mx: Any, sym, dtype: str, values: dict, grad_req: str) -> list[np.ndarray]:
    """Every ReLU (and relu6: clip) input of a training forward, as outputs of a program that
    returns them."""
    nodes = json.loads(sym.tojson())["nodes"]
    relu = [n for n in nodes if n["op"] == "clip"
            or (n["op"] == "Activation" and n.get("attrs", {}).get("act_type") == "relu")]
    names = [nodes[n["inputs"][0][0]]["name"] + "_output" for n in relu]
    if not names:
        return []
    internals = sym.get_internals()
    probe = mx.sym.Group([internals[k] for k in names])
    ex = probe.simple_bind(mx.cpu(), grad_req=grad_req, type_dict=_types(probe, dtype),
                           data=values["data"].shape)
    _set(ex, values)
    return [o.asnumpy().astype(np.float64) for o in ex.forward(is_train=True)]


def measure(mx: Any, sym, values: dict, flips: bool, grad_req: str = "null") -> dict:
    """Worst and median gradient error of one draw (and the relu flips, the last relu input's error)."""
    g64, g32 = step(mx, sym, "float64", values), step(mx, sym, "float32", values)
    big = max(np.abs(g).max() for g in g64.values())
    errors = [float(np.abs(g32[n] - g64[n]).max() / max(np.abs(g64[n]).max(), 1e-2 * big)) for n in g64]
    out = {"worst": max(errors), "median": statistics.median(errors), "flips": None, "forward": None}
    if flips:
        r64, r32 = (relu_inputs(mx, sym, dt, values, grad_req) for dt in ("float64", "float32"))
        out["flips"] = sum(int(((a > 0) != (b > 0)).sum()) for a, b in zip(r64, r32))
        if r64:
            out["forward"] = float(np.abs(r64[-1] - r32[-1]).max() / np.abs(r64[-1]).max())
    return out


def mxnet_worker(folder: str, flips: bool) -> None:
    """In an MXNet 1.9.1 interpreter: the symbol's JSON and the draw's values from ``folder``.
    MXNet's MKLDNN backend folds BatchNorm into the convolutions of a bind without gradients (an
    inference program), so its probe of the relu inputs binds with them."""
    import mxnet as mx
    sym = mx.sym.load(os.path.join(folder, "net.json"))
    with np.load(os.path.join(folder, "values.npz")) as f:
        values = dict(f)
    print(json.dumps(measure(mx, sym, values, flips, grad_req="write")))


def run_mxnet(python: str, sym, values: dict, flips: bool) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "net.json").write_text(sym.tojson())
        np.savez(os.path.join(tmp, "values.npz"), **values)
        cmd = [python, __file__, "--mxnet-worker", tmp] + (["--flips"] if flips else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
    if proc.returncode != 0:
        print(f"  mxnet: failed ({(proc.stderr.strip().splitlines() or ['?'])[-1][:160]})")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def block_ops(mx: Any, seeds: int) -> None:
    """The ``--ops`` table: each group's worst error over ``seeds`` draws, per output/gradient."""
    shape = (2, 512, 7, 7)
    x, s = mx.sym.Variable("x"), mx.sym.Variable("s")

    def bn(v):
        return mx.sym.BatchNorm(v, fix_gamma=False, eps=1e-5, name="bn")
    conv = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=512, no_bias=True, name="c")
    groups = {"BatchNorm": bn(x), "BatchNorm+relu": mx.sym.Activation(bn(x), act_type="relu"),
              "BatchNorm+add+relu": mx.sym.Activation(bn(x) + s, act_type="relu"),
              "conv3x3+BatchNorm+relu": mx.sym.Activation(bn(conv), act_type="relu")}
    for name, net in groups.items():
        worst: dict[str, float] = {}
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            values = {"x": rng.standard_normal(shape) * 0.3 + 0.1,
                      "s": np.maximum(rng.standard_normal(shape), 0),
                      "bn_gamma": 1 + 0.1 * rng.standard_normal(512),
                      "bn_beta": 0.1 * rng.standard_normal(512),
                      "c_weight": rng.uniform(-1, 1, (512, 512, 3, 3)) * np.sqrt(6 / (2 * 4608)),
                      "head": rng.standard_normal(shape)}
            values = {k: v.astype(np.float32).astype(np.float64) for k, v in values.items()}
            runs = []
            for dtype in ("float64", "float32"):
                ex = net.simple_bind(mx.cpu(), type_dict=_types(net, dtype),
                                     **{k: shape for k in ("x", "s") if k in net.list_arguments()})
                for k, arr in ex.arg_dict.items():
                    arr[:] = values[k]
                out = {"output": ex.forward(is_train=True)[0].asnumpy().astype(np.float64)}
                ex.backward(mx.nd.array(values["head"], dtype=dtype))
                out.update((k, g.asnumpy().astype(np.float64)) for k, g in ex.grad_dict.items())
                runs.append(out)
            for k, ref in runs[0].items():
                err = np.abs(runs[1][k] - ref).max() / max(np.abs(ref).max(), 1e-30) / 2.0 ** -24
                worst[k] = max(worst.get(k, 0.0), float(err))
        print(f"{name:24s} " + ", ".join(f"{k} {v:.1f}" for k, v in worst.items()), flush=True)


def _row(who: str, name: str, seed: int, r: dict) -> str:
    fl = "" if r["flips"] is None else r["flips"]
    fw = "" if r["forward"] is None else f"{r['forward']:.2e}"
    return f"{name:17s} {who:6s} {seed:4d} {r['worst']:9.3g} {r['median']:9.3g} {fl:>6} {fw:>10s}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    known = [*EXAMPLES, *ZOO]
    ap.add_argument("--nets", default="resnet18_v1,resnet18_v2",
                    help=f"comma-separated, of {', '.join(known)}")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=1, help="draws of weights and data per net")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--flips", action="store_true",
                    help="count ReLU sign flips too (binds a probe program per dtype)")
    ap.add_argument("--mxnet-python", default=None,
                    help="an interpreter with MXNet 1.9.1: run it on the same draws")
    ap.add_argument("--ops", action="store_true", help="the basic block's kernels one group at a time")
    ap.add_argument("--mxnet-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mxnet_worker:
        mxnet_worker(args.mxnet_worker, args.flips)
        return
    sys.path.insert(0, str(ROOT))
    import symjit as mx
    if args.ops:
        block_ops(mx, args.seeds)
        return
    names = args.nets.split(",")
    bad = [n for n in names if n not in known]
    if bad:
        ap.error(f"--nets: unknown {bad}; known: {', '.join(known)}")
    print(f"{'net':17s} {'who':6s} {'seed':>4s} {'worst':>9s} {'median':>9s} {'flips':>6s} {'fwd err':>10s}")
    for name in names:
        sym = build(name)
        results: dict[str, list[dict]] = {"symjit": [], "mxnet": []}
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            values = draw(sym, name, args.batch, seed)
            r = measure(mx, sym, values, args.flips)
            results["symjit"].append(r)
            print(_row("symjit", name, seed, r), flush=True)
            if args.mxnet_python:
                r = run_mxnet(args.mxnet_python, sym, values, args.flips)
                if r is not None:
                    results["mxnet"].append(r)
                    print(_row("mxnet", name, seed, r), flush=True)
        for who, rs in results.items():
            if len(rs) > 1:
                fl = sum(r["flips"] for r in rs) if args.flips else ""
                print(f"{name:17s} {who:6s}  all {statistics.median(r['worst'] for r in rs):9.3g} "
                      f"{statistics.median(r['median'] for r in rs):9.3g} {fl:>6}   "
                      "(medians over draws; flips summed)", flush=True)


if __name__ == "__main__":
    main()
