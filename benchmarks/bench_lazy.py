"""The lazy engine (``SYMJIT_LAZY``) against eager NDArray calls, on the examples' training loops:
``examples/train_mlp_bn.py``'s hand-written SGD over the executor's arrays (``w[:] -= lr * g``
per parameter) and ``examples/custom_loop.py``'s ``get_updater`` loop (an SGD-with-momentum
update per parameter), both on random MNIST-shaped batches. Eager and lazy rounds alternate in
one process (after a warm-up round of each, which compiles); samples/s, the median of the rounds.
``--parts`` times the hand-SGD updates alone instead (the gradients fixed; process CPU time per
step, best of 7 x 300 steps): eager, lazy queueing only (the queue dropped unrun), lazy with its
run, and the compiled queue program's own call.

    python benchmarks/bench_lazy.py [--batch 100] [--batches 100] [--rounds 5] [--parts]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.nets import mlp, mlp_bn  # noqa: E402
from examples.train_mlp_bn import init_params  # noqa: E402
from symjit import lazy  # noqa: E402


def hand_sgd(batch: int):
    """A step of train_mlp_bn.py's loop, and its executor."""
    ex = mlp_bn().simple_bind(mx.cpu(), data=(batch, 784))
    params = init_params(ex, np.random.default_rng(0))

    def step(x, y):
        ex.forward(is_train=True, data=x, softmax_label=y)
        ex.backward()
        for n in params:
            ex.arg_dict[n][:] -= 0.1 * ex.grad_dict[n]
    return step


def updater_loop(batch: int):
    """A step of custom_loop.py's loop."""
    net = mlp()
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    ex = net.simple_bind(mx.cpu(), data=(batch, 784), grad_req={n: "write" for n in params})
    mx.random.seed(0)
    for n in params:
        mx.init.Uniform(0.07)(mx.init.InitDesc(n), ex.arg_dict[n])
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-4,
                                                        rescale_grad=1.0 / batch))

    def step(x, y):
        ex.forward(is_train=True, data=x, softmax_label=y)
        ex.backward()
        for k, n in enumerate(params):
            updater(k, ex.grad_dict[n], ex.arg_dict[n])
    return step


def rate(step, data: list, on: bool) -> float:
    with lazy.enabled(on):
        t0 = time.perf_counter()
        for x, y in data:
            step(x, y)
        mx.nd.waitall()
        return len(data) * data[0][0].shape[0] / (time.perf_counter() - t0)


def parts(batch: int) -> None:
    ex = mlp_bn().simple_bind(mx.cpu(), data=(batch, 784))
    params = init_params(ex, np.random.default_rng(0))
    ex.forward(is_train=True)
    ex.backward()
    engine = lazy.ENGINE

    def updates():
        for n in params:
            ex.arg_dict[n][:] -= 0.1 * ex.grad_dict[n]

    def dropped():
        updates()
        engine._reset()
        lazy.dispatch.PENDING.clear()

    def step():
        updates()
        mx.nd.waitall()

    def best_us(fn) -> float:
        out = float("inf")
        for _ in range(7):
            t0 = time.process_time()
            for _ in range(300):
                fn()
            out = min(out, (time.process_time() - t0) / 300)
        return out * 1e6

    with lazy.enabled(False):
        eager = best_us(step)
    with lazy.enabled(True):
        for _ in range(3):
            step()
        queued, whole = best_us(dropped), best_us(step)
        updates()
        arrays = [b.array() for b in engine.bufs]
        program = next(iter(engine.programs.values()))
        mx.nd.waitall()
        run = best_us(lambda: program.run(arrays))
    print(f"hand-SGD updates of one step ({2 * len(params)} calls): eager {eager:.0f} us; lazy: queueing "
          f"{queued:.0f} us, with the run {whole:.0f} us, the program's call {run:.0f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--parts", action="store_true")
    args = ap.parse_args()
    if args.parts:
        parts(args.batch)
        return
    rng = np.random.default_rng(0)
    data = [(mx.nd.array(rng.normal(size=(args.batch, 784))), mx.nd.array(rng.integers(0, 10, args.batch)))
            for _ in range(args.batches)]
    print(f"batch {args.batch}, {args.batches} batches a round, median of {args.rounds} rounds")
    loops = (("hand SGD (train_mlp_bn.py)", hand_sgd), ("get_updater (custom_loop.py)", updater_loop))
    for name, make in loops:
        step = make(args.batch)
        for on in (False, True):
            rate(step, data[:3], on)     # warm-up: compiles
        lazy.reset_stats()
        rates: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.rounds):
            for on in (False, True):
                rates[on].append(rate(step, data, on))
        counts = lazy.stats()
        eager, queued = statistics.median(rates[False]), statistics.median(rates[True])
        print(f"{name}: eager {eager:,.0f} samples/s, lazy {queued:,.0f} samples/s "
              f"({queued / eager:.2f}x); lazy rounds: {counts['programs']} programs, "
              f"{counts['compiles']} compiles, {counts['replayed']} calls replayed, "
              f"{counts['updates']} updates queued")


if __name__ == "__main__":
    main()
