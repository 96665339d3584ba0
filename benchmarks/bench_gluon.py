"""Gluon training beside the same work through ``simple_bind`` and beside the peers, in one run.

Two workloads, each framework in a process of its own, the processes alternated ``--rounds`` times
(the best round counts, so a busy moment of the machine does not decide):

* ``mlp``: MXNet's tutorial MLP (784-128-64-10, batch 100) trained with ``autograd.record``,
  ``loss.backward()`` and ``gluon.Trainer`` (SGD, momentum 0.9), samples/s on MNIST. symjit runs it
  with the net not hybridized (every operator called from Python, the recorded backward compiled
  once) and hybridized; PyTorch eager (its default threads, and one thread) and ``torch.compile``
  run the same net with ``torch.optim.SGD`` (``--peer-python``, an interpreter that has torch),
  MXNet 1.9.1's Gluon the same program as symjit's (``--mxnet-python``; its own venv, numpy <
  1.24, with ``OMP_NUM_THREADS`` unset and 2).
* ``resnet18``: one training step of the model zoo's ResNet-18 v1 (``--batch`` images of 224 x
  224, 10 classes, SGD with momentum), ms per step: the hybridized Gluon net under
  ``autograd.record`` with a ``Trainer``, against the same net's symbol with a ``SoftmaxOutput``
  head through ``Module`` (``simple_bind``, the fused update): the same compiler behind both.

    python benchmarks/bench_gluon.py [--workloads mlp,resnet18] [--rounds 2]
        [--peer-python /path/to/venv/bin/python] [--mxnet-python /path/to/mxnet-venv/bin/python]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_peers import MOMENTUM, WD, timed  # noqa: E402

if os.environ.setdefault("SYMJIT_AOT", "off") == "background":
    os.environ["SYMJIT_AOT"] = "off"
MLP = {"batch": 100, "warm": 30, "steps": 300, "lr": 0.1}


def _mx(who: str):
    if who.startswith("mxnet"):
        import mxnet as mx
        return mx
    sys.path.insert(0, str(ROOT))
    import symjit as mx
    return mx


def gluon_mlp_worker(x, y, who: str, hybrid: bool) -> float:
    mx = _mx(who)
    from_gluon, autograd = mx.gluon, mx.autograd
    mx.random.seed(0)
    net = from_gluon.nn.HybridSequential()
    net.add(from_gluon.nn.Dense(128, activation="relu"), from_gluon.nn.Dense(64, activation="relu"),
            from_gluon.nn.Dense(10))
    net.initialize(mx.init.Uniform(0.07))
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    trainer = from_gluon.Trainer(net.collect_params(), "sgd",
                                 {"learning_rate": MLP["lr"], "momentum": MOMENTUM, "wd": WD})
    loss_fn = from_gluon.loss.SoftmaxCrossEntropyLoss()
    bs = MLP["batch"]

    def step(xb, yb):
        data, label = mx.nd.array(xb), mx.nd.array(yb)
        with autograd.record():
            out = net(data)
            loss = loss_fn(out, label)
        loss.backward()
        trainer.step(bs)
        return out.asnumpy()
    return timed(step, x, y, MLP)


def torch_mlp_worker(x, y, compiled: bool, threads: int = 0) -> float:
    import torch
    from torch import nn
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=MLP["lr"], momentum=MOMENTUM, weight_decay=WD)
    lossf = nn.CrossEntropyLoss()
    fwd = torch.compile(model) if compiled else model

    def step(xb, yb):
        z = fwd(torch.from_numpy(xb))
        loss = lossf(z, torch.from_numpy(yb).long())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return z.detach().numpy()
    return timed(step, x, y, MLP)


def _resnet(mx, classes: int = 10):
    net = mx.gluon.model_zoo.vision.resnet18_v1(classes=classes)
    net.initialize(mx.init.Xavier())
    return net


def resnet_gluon_worker(batch: int, steps: int) -> float:
    mx = _mx("symjit")
    mx.random.seed(0)
    net = _resnet(mx)
    net.hybridize(static_alloc=True, static_shape=True)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.standard_normal((batch, 3, 224, 224)).astype(np.float32))
    y = mx.nd.array(rng.integers(0, 10, batch).astype(np.float32))

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        mx.nd.waitall()
    return _ms_per_step(step, steps)


def resnet_module_worker(batch: int, steps: int) -> float:
    mx = _mx("symjit")
    mx.random.seed(0)
    net = _resnet(mx)
    sym = mx.sym.SoftmaxOutput(net(mx.sym.var("data")), name="softmax")
    mod = mx.mod.Module(sym, data_names=["data"], label_names=["softmax_label"], context=mx.cpu())
    mod.bind(data_shapes=[("data", (batch, 3, 224, 224))], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
    rng = np.random.default_rng(0)
    db = mx.io.DataBatch([mx.nd.array(rng.standard_normal((batch, 3, 224, 224)).astype(np.float32))],
                         [mx.nd.array(rng.integers(0, 10, batch).astype(np.float32))])

    def step():
        mod.forward_backward(db)
        mod.update()
        mx.nd.waitall()
    return _ms_per_step(step, steps)


def _ms_per_step(step, steps: int) -> float:
    for _ in range(2):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


WORKERS = {
    "symjit-gluon": lambda x, y, a: gluon_mlp_worker(x, y, "symjit", False),
    "symjit-gluon-hybrid": lambda x, y, a: gluon_mlp_worker(x, y, "symjit", True),
    "torch-eager": lambda x, y, a: torch_mlp_worker(x, y, False),
    "torch-compile": lambda x, y, a: torch_mlp_worker(x, y, True),
    "torch-eager-1t": lambda x, y, a: torch_mlp_worker(x, y, False, 1),
    "mxnet-gluon": lambda x, y, a: gluon_mlp_worker(x, y, "mxnet", False),
    "mxnet-gluon-hybrid": lambda x, y, a: gluon_mlp_worker(x, y, "mxnet", True),
    "resnet-gluon-hybrid": lambda x, y, a: resnet_gluon_worker(a.batch, a.steps),
    "resnet-module": lambda x, y, a: resnet_module_worker(a.batch, a.steps),
}


def run_worker(python: str, who: str, args, data: str | None, env_extra: dict) -> float | None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **env_extra)
    cmd = [python, __file__, "--worker", who, "--batch", str(args.batch), "--steps", str(args.steps)]
    proc = subprocess.run(cmd + (["--data", data] if data else []), env=env, capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {who}: skipped ({tail[:160]})", flush=True)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])["value"]


def _runs(args) -> dict[str, list[tuple[str, str, dict]]]:
    """workload -> [(label, worker, python, environment)]."""
    mlp = [("symjit gluon", "symjit-gluon", sys.executable, {}),
           ("symjit gluon hybridized", "symjit-gluon-hybrid", sys.executable, {})]
    if args.peer_python:
        mlp += [("torch eager", "torch-eager", args.peer_python, {}),
                ("torch eager, 1 thread", "torch-eager-1t", args.peer_python, {}),
                ("torch.compile", "torch-compile", args.peer_python, {})]
    if args.mxnet_python:
        for omp in (None, "2"):
            extra = {"OMP_NUM_THREADS": omp} if omp else {}
            tag = f" OMP_NUM_THREADS={omp}" if omp else ""
            mlp += [(f"mxnet gluon{tag}", "mxnet-gluon", args.mxnet_python, extra),
                    (f"mxnet gluon hybridized{tag}", "mxnet-gluon-hybrid", args.mxnet_python, extra)]
    resnet = [("symjit gluon hybridized", "resnet-gluon-hybrid", sys.executable, {}),
              ("symjit Module (simple_bind)", "resnet-module", sys.executable, {})]
    return {"mlp": mlp, "resnet18": resnet}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer-python", default=None, help="an interpreter with torch")
    ap.add_argument("--mxnet-python", default=None, help="an interpreter with MXNet 1.9.1")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workloads", default="mlp,resnet18")
    ap.add_argument("--batch", type=int, default=16, help="ResNet-18's batch")
    ap.add_argument("--steps", type=int, default=5, help="ResNet-18's timed steps (median)")
    ap.add_argument("--mnist", default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--data", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        x = y = None
        if args.data:
            with np.load(args.data) as f:
                x, y = f["x"], f["y"]
        print(json.dumps({"value": WORKERS[args.worker](x, y, args)}))
        return
    sys.path.insert(0, str(ROOT))
    from symjit.io import load_mnist
    shared = ROOT.parent / "shared" / "data" / "mnist"
    mnist = load_mnist(args.mnist or (str(shared) if shared.is_dir() else None))
    units = {"mlp": "samples/s", "resnet18": "ms per step"}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "mnist.npz")
        np.savez(data, x=np.ascontiguousarray(mnist["train_data"].reshape(-1, 784), np.float32),
                 y=mnist["train_label"].astype(np.float32))
        runs = _runs(args)
        for name in args.workloads.split(","):
            best: dict[str, float] = {}
            better = max if name == "mlp" else min
            for r in range(args.rounds):
                for label, who, python, extra in runs[name]:
                    value = run_worker(python, who, args, data if name == "mlp" else None, extra)
                    if value is not None:
                        best[label] = better(best.get(label, value), value)
                        print(f"  round {r}: {label}: {value:,.1f} {units[name]}", flush=True)
            print(f"{name} ({units[name]}, best of {args.rounds}): "
                  + ", ".join(f"{k} {v:,.1f}" for k, v in best.items()), flush=True)
            ours = [k for k in best if k.startswith("symjit")]
            for k in [k for k in best if not k.startswith("symjit")] + ours[1:]:
                ratio = best[ours[0]] / best[k] if name == "mlp" else best[k] / best[ours[0]]
                print(f"  {ours[0]} / {k} = {ratio:.2f}x (speed)", flush=True)


if __name__ == "__main__":
    main()
