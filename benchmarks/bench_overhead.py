"""Per-call cost of the training loop's Python paths on the CPU (the tutorial MLP, batch 100),
microseconds per call, best of several rounds:

- ``NDArray.__setitem__`` of a whole batch (``ex.arg_dict['data'][:] = batch.data[0]``);
- ``NDArrayIter.next`` (MNIST-sized arrays, batch 100);
- ``metric.update`` for ``Accuracy`` and ``CrossEntropy``;
- ``Executor.forward(is_train=True)`` and ``Executor.backward()`` (with the compiled kernels'
  own time: ``kernels only`` calls the bound programs directly);
- ``updater(i, grad, weight)`` over the six parameters (see also ``bench_update.py``).

    python benchmarks/bench_overhead.py [--calls 2000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import symjit as mx  # noqa: E402
from examples.nets import mlp  # noqa: E402

BATCH = 100


def best(run, calls: int, rounds: int = 3) -> float:
    run()
    out = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            run()
        out = min(out, (time.perf_counter() - t0) / calls)
    return out * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    n = args.calls
    rng = np.random.default_rng(0)
    x = rng.random((6000, 784), dtype=np.float32)
    y = rng.integers(0, 10, 6000).astype(np.float32)
    sym = mlp()
    reqs = {a: ("null" if a in ("data", "softmax_label") else "write") for a in sym.list_arguments()}
    ex = sym.simple_bind(mx.cpu(), grad_req=reqs, data=(BATCH, 784))
    for name, arr in ex.arg_dict.items():
        if name not in ("data", "softmax_label"):
            arr[:] = mx.nd.array(rng.uniform(-0.07, 0.07, arr.shape).astype(np.float32))
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH, shuffle=True)
    batch = it.next()
    data, label = ex.arg_dict["data"], ex.arg_dict["softmax_label"]

    def iter_next():
        try:
            return it.next()
        except StopIteration:
            it.reset()
            return it.next()

    ex.forward(is_train=True)
    ex.backward()
    acc, ce = mx.metric.Accuracy(), mx.metric.CrossEntropy()
    labels, outs = [batch.label[0]], ex.outputs
    steps = ex._arrays("train")
    prog = ex._programs["train"]

    def kernels_only():
        for phase in ("forward", "backward"):
            for seg, payload in steps[phase]:
                getattr(prog.module, seg.name)(*payload)

    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=1.0 / BATCH)
    updater = mx.optimizer.get_updater(opt)
    params = [(i, ex.grad_dict[k], ex.arg_dict[k]) for i, k in enumerate(ex.arg_dict)
              if reqs[k] != "null"]

    def update():
        for i, g, w in params:
            updater(i, g, w)
    runs = {
        "data[:] = batch (100 x 784)": lambda: data.__setitem__(slice(None), batch.data[0]),
        "label[:] = batch (100,)": lambda: label.__setitem__(slice(None), batch.label[0]),
        "NDArrayIter.next": iter_next,
        "Accuracy.update": lambda: acc.update(labels, outs),
        "CrossEntropy.update": lambda: ce.update(labels, outs),
        "Executor.forward(is_train=True)": lambda: ex.forward(is_train=True),
        "Executor.backward()": ex.backward,
        "forward + backward, kernels only": kernels_only,
        "updater(i, g, w) x 6": update,
    }
    for name, run in runs.items():
        print(f"{name}: {best(run, n):.1f} us")


if __name__ == "__main__":
    main()
