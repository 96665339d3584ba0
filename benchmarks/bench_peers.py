"""symjit beside the tools a user would pick instead, in one run on one machine, samples/s on MNIST:

* ``mlp``: the custom training loop (MLP 784-128-64-10, batch 100, ``get_updater``'s SGD with
  momentum called per parameter, accuracy per batch, shuffled batches);
* ``mlp_bn``: the low-level loop (``examples/train_mlp_bn.py``'s BatchNorm + tanh MLP, batch 100,
  ``ex.forward(is_train=True, data=..., softmax_label=...)``, ``ex.backward()``, then plain SGD
  written as NDArray arithmetic, ``w[:] -= lr * (g * norm)`` per parameter);
* ``lenet``: LeNet training (batch 64, the ``mlp`` loop's updater).

Each framework runs in a process of its own, one after the other, ``--rounds`` times (the best
round counts, so a busy moment of the machine does not decide), every peer at each of its
settings: JAX (``jax.jit`` of the whole step: forward, backward and the update) and PyTorch
(eager, and ``torch.compile`` of the model; ``torch.optim.SGD``) run with ``--peer-python`` (an
interpreter that has them; a peer that is not installed there is skipped), MXNet 1.9.1 with
``--mxnet-python`` (its own venv, numpy < 1.24) as installed and with ``OMP_NUM_THREADS=2``
(faster on convolution nets). MXNet runs the very program symjit's worker runs
(``import mxnet as mx``). Peers are never a dependency of symjit or its tests.

    python benchmarks/bench_peers.py --peer-python /path/to/venv/bin/python [--rounds 2]
        [--workloads mlp,mlp_bn,lenet] [--mxnet-python /path/to/mxnet-venv/bin/python]

Every worker does the same work per batch: gather a shuffled batch from the arrays in memory,
one training step, the batch's accuracy on the host.
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
# The timed processes bind programs from a warm cache; with SYMJIT_AOT=background each would start
# an ahead-of-time builder when it exits, which would load the machine during the next measurement.
if os.environ.setdefault("SYMJIT_AOT", "off") == "background":
    os.environ["SYMJIT_AOT"] = "off"
WORKLOADS = {"mlp": {"batch": 100, "warm": 30, "steps": 300, "lr": 0.1},
             "mlp_bn": {"batch": 100, "warm": 30, "steps": 300, "lr": 0.1},
             "lenet": {"batch": 64, "warm": 5, "steps": 60, "lr": 0.05}}
MOMENTUM, WD = 0.9, 1e-4


def batches(x: np.ndarray, y: np.ndarray, batch: int, count: int, seed: int = 0):
    """``count`` shuffled batches (reshuffled every epoch), gathered from the arrays."""
    rng = np.random.default_rng(seed)
    n, done = len(x) // batch, 0
    while True:
        order = rng.permutation(len(x))
        for i in range(n):
            if done == count:
                return
            ids = order[i * batch:(i + 1) * batch]
            yield x[ids], y[ids]
            done += 1


def timed(step, x, y, work: dict) -> float:
    """samples/s of ``step(xb, yb) -> probabilities or logits (host array)`` over the workload's
    steps, after its warm-up steps; the accuracy is computed per batch on the host."""
    bs = work["batch"]
    for xb, yb in batches(x, y, bs, work["warm"], seed=1):
        step(xb, yb)
    correct = 0
    t0 = time.perf_counter()
    for xb, yb in batches(x, y, bs, work["steps"]):
        out = step(xb, yb)
        correct += int((np.argmax(out, axis=1) == yb).sum())
    return work["steps"] * bs / (time.perf_counter() - t0)


# -- workers -----------------------------------------------------------------------------------

def symjit_worker(x, y, name: str, work: dict) -> float:
    sys.path.insert(0, str(ROOT))
    import symjit as mx
    from examples.nets import lenet, mlp
    if name == "mlp_bn":
        return _hand_sgd_worker(mx, x, y, work)
    bs = work["batch"]
    net = mlp() if name == "mlp" else lenet()
    shape = (bs, 784) if name == "mlp" else (bs, 1, 28, 28)
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    ex = net.simple_bind(mx.cpu(), data=shape, grad_req={n: "write" for n in params})
    mx.random.seed(0)
    init = mx.init.Xavier() if name == "lenet" else mx.init.Uniform(0.07)
    for n in params:
        init(mx.init.InitDesc(n), ex.arg_dict[n])
    opt = mx.optimizer.SGD(learning_rate=work["lr"], momentum=MOMENTUM, wd=WD, rescale_grad=1.0 / bs)
    updater = mx.optimizer.get_updater(opt)
    metric = mx.metric.Accuracy()
    data, label = ex.arg_dict["data"], ex.arg_dict["softmax_label"]
    grads, weights = [ex.grad_dict[n] for n in params], [ex.arg_dict[n] for n in params]

    def step(xb, yb):   # the seed's loop: copy the batch in, forward, backward, update, metric
        data[:] = xb.reshape(shape)
        label[:] = yb
        ex.forward(is_train=True)
        ex.backward()
        for k in range(len(params)):
            updater(k, grads[k], weights[k])
        metric.update([label], ex.outputs)
        return ex.outputs[0].asnumpy()
    return timed(step, x, y, work)


def _hand_sgd_worker(mx, x, y, work: dict) -> float:
    """The low-level loop, as ``examples/train_mlp_bn.py`` writes it (``mx`` is symjit or MXNet)."""
    from examples.nets import mlp_bn
    from examples.train_mlp_bn import init_params
    bs = work["batch"]
    ex = mlp_bn().simple_bind(mx.cpu(), data=(bs, 784))
    params = init_params(ex, np.random.default_rng(0))
    lr, norm = work["lr"], 1.0 / bs

    def step(xb, yb):
        ex.forward(is_train=True, data=xb, softmax_label=yb)
        ex.backward()
        for n in params:
            ex.arg_dict[n][:] -= lr * (ex.grad_dict[n] * norm)
        return ex.outputs[0].asnumpy()
    return timed(step, x, y, work)


def jax_worker(x, y, name: str, work: dict) -> float:
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)

    def dense(n_in, n_out):
        return [jnp.asarray(rng.uniform(-0.07, 0.07, (n_in, n_out)).astype(np.float32)),
                jnp.zeros(n_out, jnp.float32)]
    if name == "mlp":
        params = dense(784, 128) + dense(128, 64) + dense(64, 10)

        def logits(p, xb):
            h = jax.nn.relu(xb @ p[0] + p[1])
            h = jax.nn.relu(h @ p[2] + p[3])
            return h @ p[4] + p[5]
    elif name == "mlp_bn":
        params = (dense(784, 128) + [jnp.ones(128), jnp.zeros(128)] + dense(128, 64)
                  + [jnp.ones(64), jnp.zeros(64)] + dense(64, 10))

        def bn_tanh(h, gamma, beta):   # training BatchNorm (batch statistics), then tanh
            mean, var = h.mean(0), h.var(0)
            return jnp.tanh((h - mean) * jax.lax.rsqrt(var + 1e-3) * gamma + beta)

        def logits(p, xb):
            h = bn_tanh(xb @ p[0] + p[1], p[2], p[3])
            h = bn_tanh(h @ p[4] + p[5], p[6], p[7])
            return h @ p[8] + p[9]
    else:
        def conv(c_in, c_out):
            return [jnp.asarray(rng.uniform(-0.1, 0.1, (c_out, c_in, 5, 5)).astype(np.float32)),
                    jnp.zeros((1, c_out, 1, 1), jnp.float32)]
        params = conv(1, 20) + conv(20, 50) + dense(800, 500) + dense(500, 10)

        def stage(h, w, b):
            h = jax.lax.conv_general_dilated(h, w, (1, 1), "VALID") + b
            h = jnp.tanh(h)
            return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

        def logits(p, xb):
            h = stage(xb.reshape(-1, 1, 28, 28), p[0], p[1])
            h = stage(h, p[2], p[3]).reshape(xb.shape[0], -1)
            h = jnp.tanh(h @ p[4] + p[5])
            return h @ p[6] + p[7]

    def loss(p, xb, yb):
        z = logits(p, xb)
        ll = jax.nn.log_softmax(z)
        return -jnp.mean(jnp.take_along_axis(ll, yb[:, None].astype(jnp.int32), axis=1)), z

    momentum, wd = (0.0, 0.0) if name == "mlp_bn" else (MOMENTUM, WD)   # mlp_bn: plain SGD

    @jax.jit
    def train(p, m, xb, yb):
        (_, z), g = jax.value_and_grad(loss, has_aux=True)(p, xb, yb)
        m = [momentum * mi - work["lr"] * (gi + wd * pi) for mi, gi, pi in zip(m, g, p)]
        return [pi + mi for pi, mi in zip(p, m)], m, jax.nn.softmax(z)
    state = {"p": params, "m": [jnp.zeros_like(q) for q in params]}

    def step(xb, yb):
        state["p"], state["m"], out = train(state["p"], state["m"], xb, yb)
        return np.asarray(out)
    return timed(step, x, y, work)


def torch_worker(x, y, name: str, work: dict, compiled: bool = False) -> float:
    import torch
    from torch import nn
    torch.manual_seed(0)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, 10))
    elif name == "mlp_bn":
        model = nn.Sequential(nn.Linear(784, 128), nn.BatchNorm1d(128, eps=1e-3, momentum=0.1),
                              nn.Tanh(), nn.Linear(128, 64), nn.BatchNorm1d(64, eps=1e-3, momentum=0.1),
                              nn.Tanh(), nn.Linear(64, 10))
    else:
        model = nn.Sequential(nn.Unflatten(1, (1, 28, 28)), nn.Conv2d(1, 20, 5), nn.Tanh(),
                              nn.MaxPool2d(2), nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))
    plain = name == "mlp_bn"
    opt = torch.optim.SGD(model.parameters(), lr=work["lr"], momentum=0.0 if plain else MOMENTUM,
                          weight_decay=0.0 if plain else WD)
    lossf = nn.CrossEntropyLoss()
    run = torch.compile(model) if compiled else model

    def step(xb, yb):
        z = run(torch.from_numpy(xb))
        loss = lossf(z, torch.from_numpy(yb).long())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return torch.softmax(z.detach(), 1).numpy()
    return timed(step, x, y, work)


def mxnet_worker(x, y, name: str, work: dict) -> float:
    import mxnet as mx  # MXNet 1.9.1: the same program as symjit's worker
    sys.modules["symjit"] = mx
    return symjit_worker(x, y, name, work)


def torch_compile_worker(x, y, name: str, work: dict) -> float:
    return torch_worker(x, y, name, work, compiled=True)


WORKERS = {"symjit": symjit_worker, "jax": jax_worker, "torch": torch_worker,
           "torch.compile": torch_compile_worker, "mxnet": mxnet_worker}


# -- driver ------------------------------------------------------------------------------------

def run_worker(python: str, who: str, name: str, data: str, env_extra: dict | None = None) -> float | None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env_extra or {}))
    proc = subprocess.run([python, __file__, "--worker", who, "--workload", name, "--data", data],
                          env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {who} {name}: skipped ({tail[:120]})")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])["samples_per_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer-python", default=None, help="an interpreter with jax and/or torch")
    ap.add_argument("--mxnet-python", default=None, help="an interpreter with MXNet 1.9.1")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workloads", default="mlp,lenet")
    ap.add_argument("--mnist", default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--workload", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--data", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        with np.load(args.data) as f:
            x, y = f["x"], f["y"]
        rate = WORKERS[args.worker](x, y, args.workload, WORKLOADS[args.workload])
        print(json.dumps({"samples_per_s": rate}))
        return
    sys.path.insert(0, str(ROOT))
    from symjit.io import load_mnist
    shared = ROOT.parent / "shared" / "data" / "mnist"
    mnist = load_mnist(args.mnist or (str(shared) if shared.is_dir() else None))
    x = np.ascontiguousarray(mnist["train_data"].reshape(-1, 784), np.float32)
    y = mnist["train_label"].astype(np.float32)
    runs = {"symjit": ("symjit", sys.executable, {})}   # label: (worker, interpreter, environment)
    if args.peer_python:
        runs.update({"jax": ("jax", args.peer_python, {}), "torch": ("torch", args.peer_python, {}),
                     "torch.compile": ("torch.compile", args.peer_python, {})})
    if args.mxnet_python:
        runs.update({"mxnet": ("mxnet", args.mxnet_python, {}),
                     "mxnet OMP_NUM_THREADS=2": ("mxnet", args.mxnet_python, {"OMP_NUM_THREADS": "2"})})
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "mnist.npz")
        np.savez(data, x=x, y=y)
        for name in args.workloads.split(","):
            best: dict[str, float] = {}
            for r in range(args.rounds):
                for who, (worker, python, extra) in runs.items():
                    rate = run_worker(python, worker, name, data, extra)
                    if rate is not None:
                        best[who] = max(best.get(who, 0.0), rate)
                        print(f"  round {r}: {who} {name}: {rate:,.0f} samples/s", flush=True)
            peers = {k: v for k, v in best.items() if k != "symjit"}
            line = ", ".join(f"{k} {v:,.0f}" for k, v in best.items())
            if peers and "symjit" in best:
                top = max(peers, key=peers.get)
                line += f"; symjit / best peer ({top}) = {best['symjit'] / peers[top]:.2f}x"
            print(f"{name}: {line}", flush=True)


if __name__ == "__main__":
    main()
