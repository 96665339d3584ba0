"""The seed programs on ``mx.gpu(0)`` against ``mx.cpu()``, on numba's CUDA simulator (run as a
script with ``NUMBA_ENABLE_CUDASIM=1``; ``tests/test_gpu_seeds.py`` does that).

Each seed runs the example's own code path (its network, initialisation, training API and
optimizer) on a few small MNIST batches, once per context from the same seeds, and returns every
parameter, aux state and prediction; the GPU's must equal the CPU's to float32 rounding. The
simulator runs each CUDA thread as Python, so batches are tiny, the MLPs see 14x14 images and their
hidden layers are narrow (:data:`HIDDEN`). Prints ``ok <seed>`` per seed.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import symjit as mx
from symjit.io import load_mnist

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.nets import lenet, mlp, mlp_bn  # noqa: E402

MNIST = ROOT.parent / "shared" / "data" / "mnist"
BATCH = 4
HIDDEN = (32, 16)   # the examples' layers, narrower: the simulator runs every CUDA thread as Python


def _mnist(n: int, side: int = 28) -> tuple[np.ndarray, np.ndarray]:
    """``n`` MNIST images, flat; ``side=14`` keeps every other row and column (the MLP seeds: the
    simulator's cost is its per-element Python, and the first layer's product is most of it)."""
    data = load_mnist(str(MNIST))
    step = 28 // side
    images = data["train_data"][:n].reshape(n, 28, 28)[:, ::step, ::step]
    return np.ascontiguousarray(images.reshape(n, side * side)), data["train_label"][:n]


def _params(arg_params: dict, aux_params: dict | None = None) -> dict[str, np.ndarray]:
    out = {n: a.asnumpy() for n, a in arg_params.items()}
    out.update({n: a.asnumpy() for n, a in (aux_params or {}).items()})
    return out


def seed_bn_tanh_mlp(ctx) -> dict[str, np.ndarray]:
    """examples/train_mlp_bn.py: simple_bind, hand-written SGD on NDArrays, inference forward."""
    from examples.train_mlp_bn import init_params, train_epoch
    X, Y = _mnist(2 * BATCH, 14)
    ex = mlp_bn(HIDDEN).simple_bind(ctx, data=(BATCH, 196))
    rng = np.random.default_rng(0)
    params = init_params(ex, rng)
    train_epoch(ex, params, X, Y, rng, 0.1 / BATCH, 2)
    out = _params({n: ex.arg_dict[n] for n in params}, ex.aux_dict)
    out["prediction"] = ex.forward(is_train=False, data=X[:BATCH])[0].asnumpy()
    return out


def seed_feedforward(ctx) -> dict[str, np.ndarray]:
    """examples/train_mlp_feedforward.py: FeedForward.fit with momentum SGD, Xavier, predict."""
    from examples.train_mlp_feedforward import initializer
    X, Y = _mnist(3 * BATCH, 14)
    mx.random.seed(42)
    model = mx.model.FeedForward(mlp(HIDDEN), ctx=ctx, num_epoch=1, learning_rate=0.1, momentum=0.9,
                                 initializer=initializer())
    model.fit(X=mx.io.NDArrayIter(X[:2 * BATCH], Y[:2 * BATCH], BATCH),
              eval_data=mx.io.NDArrayIter(X[2 * BATCH:], Y[2 * BATCH:], BATCH))
    out = _params(model.arg_params, model.aux_params)
    out["prediction"] = model.predict(mx.io.NDArrayIter(X[:BATCH], Y[:BATCH], BATCH))
    return out


def seed_custom_loop(ctx) -> dict[str, np.ndarray]:
    """examples/custom_loop.py: simple_bind, mx.init.Uniform, get_updater(SGD), Accuracy."""
    X, Y = _mnist(2 * BATCH, 14)
    net = mlp(HIDDEN)
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    ex = net.simple_bind(ctx, data=(BATCH, 196), grad_req={n: "write" for n in params})
    mx.random.seed(0)
    init = mx.init.Uniform(0.07)
    for n in params:
        init(mx.init.InitDesc(n), ex.arg_dict[n])
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-4, rescale_grad=1.0 / BATCH)
    updater = mx.optimizer.get_updater(opt)
    metric = mx.metric.Accuracy()
    for b in mx.io.NDArrayIter(X, Y, BATCH):
        ex.forward(is_train=True, data=b.data[0], softmax_label=b.label[0])
        ex.backward()
        for k, n in enumerate(params):
            updater(k, ex.grad_dict[n], ex.arg_dict[n])
        metric.update([b.label[0]], ex.outputs)
    out = _params({n: ex.arg_dict[n] for n in params})
    out["accuracy"] = np.array([metric.get()[1]])
    return out


def seed_lenet(ctx) -> dict[str, np.ndarray]:
    """examples/lenet.py: Module.fit (SGD momentum, lr schedule, Xavier), then score, on the
    centre 16x16 of the images (28x28 takes the simulator over ten minutes a step)."""
    n = 1
    X, Y = _mnist(2 * n)
    X = np.ascontiguousarray(X.reshape(-1, 1, 28, 28)[:, :, 6:22, 6:22])
    mx.random.seed(0)
    mod = mx.mod.Module(lenet(), context=ctx)
    schedule = mx.lr_scheduler.MultiFactorScheduler(step=[1], factor=0.1, base_lr=0.05)
    mod.fit(mx.io.NDArrayIter(X[:n], Y[:n], n), optimizer="sgd",
            optimizer_params={"momentum": 0.9, "wd": 1e-4, "lr_scheduler": schedule},
            initializer=mx.init.Xavier(), num_epoch=1)
    out = _params(*mod.get_params())
    out["score"] = np.array([mod.score(mx.io.NDArrayIter(X[n:], Y[n:], n), "acc")[0][1]])
    return out


SEEDS = [seed_bn_tanh_mlp, seed_feedforward, seed_custom_loop, seed_lenet]


def compare(seed) -> None:
    """Run ``seed`` on both contexts; AssertionError naming the first value that differs."""
    cpu, gpu = seed(mx.cpu()), seed(mx.gpu(0))
    assert sorted(cpu) == sorted(gpu), (sorted(cpu), sorted(gpu))
    for name, want in cpu.items():
        np.testing.assert_allclose(gpu[name], want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"{seed.__name__}: {name}")


if __name__ == "__main__":
    # the simulator hands the GIL between its thread-per-CUDA-thread at every poll and barrier:
    # a short switch interval makes that several times faster (a test-harness setting)
    sys.setswitchinterval(1e-3)
    only = set(sys.argv[1:])
    for seed in SEEDS:
        if not only or seed.__name__ in only:
            compare(seed)
            print("ok", seed.__name__, flush=True)
