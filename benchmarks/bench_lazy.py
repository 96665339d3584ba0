"""The lazy engine (``SYMJIT_LAZY``) against eager NDArray calls, on the examples' training loops:
``examples/train_mlp_bn.py``'s hand-written SGD over the executor's arrays (``w[:] -= lr * g``
per parameter) and ``examples/custom_loop.py``'s ``get_updater`` loop (an SGD-with-momentum
update per parameter), both on random MNIST-shaped batches. Three ways alternate in one process,
round by round (after a warm-up round of each, which compiles): eager, the lazy engine's generic
path only (``lazy.enabled(fast=False)``: every queue looked up by its structure key) and the lazy
engine with its fast path (queues following the remembered one, ``symjit/lazy_replay.py``);
samples/s and process CPU time per step, the median of the rounds.

``--parts`` times the hand-SGD updates alone instead (the gradients fixed; process CPU time per
step, best of 7 rounds of 300 steps, the ways alternating within each round): eager, lazy
queueing only (the queue dropped unrun), lazy with its run, and the compiled queue program's own
call (through ``BoundProgram.run`` and through its entry point, as the fast path calls it).
``--calls`` times single calls each followed by a read of their result (``wait_to_read``), eager
and lazy alternating (microseconds per call and read, best of 7 rounds).

    python benchmarks/bench_lazy.py [--batch 100] [--batches 100] [--rounds 5] [--parts] [--calls]
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
from symjit import lazy, lazy_replay  # noqa: E402

WAYS = {"eager": (False, None), "lazy, generic path": (True, False), "lazy, fast path": (True, True)}


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


def rate(step, data: list, way: tuple) -> tuple[float, float]:
    """(samples/s, CPU ms per step) of ``step`` over ``data`` the ``way`` given."""
    on, fast = way
    with lazy.enabled(on, fast=fast):
        for x, y in data[:2]:       # the queues remembered again (programs stay compiled)
            step(x, y)
        mx.nd.waitall()
        t0, c0 = time.perf_counter(), time.process_time()
        for x, y in data:
            step(x, y)
        mx.nd.waitall()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(data) * data[0][0].shape[0] / wall, cpu / len(data) * 1e3


def loops(args) -> None:
    rng = np.random.default_rng(0)
    data = [(mx.nd.array(rng.normal(size=(args.batch, 784))), mx.nd.array(rng.integers(0, 10, args.batch)))
            for _ in range(args.batches)]
    print(f"batch {args.batch}, {args.batches} batches a round, median of {args.rounds} rounds")
    loops_ = (("hand SGD (train_mlp_bn.py)", hand_sgd), ("get_updater (custom_loop.py)", updater_loop))
    for name, make in loops_:
        step = make(args.batch)
        for way in WAYS.values():
            rate(step, data[:4], way)     # warm-up: compiles
        lazy.reset_stats()
        seen: dict[str, list] = {w: [] for w in WAYS}
        for _ in range(args.rounds):
            for w, way in WAYS.items():
                seen[w].append(rate(step, data, way))
        counts = lazy.stats()
        eager = statistics.median(r for r, _ in seen["eager"])
        print(f"{name}:")
        for w in WAYS:
            r, c = statistics.median(r for r, _ in seen[w]), statistics.median(c for _, c in seen[w])
            print(f"  {w:20s} {r:9,.0f} samples/s ({r / eager:.2f}x)  CPU {c:.3f} ms/step")
        print(f"  lazy rounds: {counts['programs']} programs, {counts['compiles']} compiles, "
              f"{counts['replayed']} calls replayed, {counts['followed']} of {counts['queued']} calls "
              "followed")


def best_rounds(fns: dict, rounds: int = 7, n: int = 300) -> dict[str, float]:
    """Best process CPU microseconds per call of each of ``fns`` (name: (way, fn); a way is
    (lazy on, fast path on), or None for the engine as it is), alternating."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, (way, fn) in fns.items():
            with lazy.enabled(way[0], fast=way[1]) if way else _nothing():
                for _ in range(3):
                    fn(True)
                t0 = time.process_time()
                for _ in range(n):
                    fn(False)
                best[name] = min(best[name], (time.process_time() - t0) / n * 1e6)
    return best


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def parts(batch: int) -> None:
    ex = mlp_bn().simple_bind(mx.cpu(), data=(batch, 784))
    params = init_params(ex, np.random.default_rng(0))
    ex.forward(is_train=True)
    ex.backward()
    engine = lazy.ENGINE

    def updates():
        for n in params:
            ex.arg_dict[n][:] -= 0.1 * ex.grad_dict[n]

    def step(_warm):
        updates()
        mx.nd.waitall()

    def dropped(warm):
        updates()
        if warm:
            mx.nd.waitall()
        else:
            engine._reset()
            lazy.dispatch.PENDING.clear()

    fns = {"eager": (WAYS["eager"], step)}
    for label, fast in (("generic", False), ("fast", True)):
        fns[f"lazy {label}: queueing only"] = ((True, fast), dropped)
        fns[f"lazy {label}: queueing and run"] = ((True, fast), step)
    best = best_rounds(fns)
    with lazy.enabled(True, fast=False):
        for _ in range(3):
            step(True)
        updates()
        arrays = [b.array() for b in engine.bufs]
        program = next(iter(engine.programs.values()))
        mx.nd.waitall()
        bound = best_rounds({"program": (None, lambda _w: program.run(arrays))})["program"]
    with lazy.enabled(True):
        for _ in range(3):
            step(True)
        updates()
        trace, cur = engine.follow.trace, list(engine.follow.cur)
        mx.nd.waitall()
        direct = best_rounds({"entry": (None, lambda _w: lazy_replay._run_program(trace, cur))})["entry"]
    print(f"hand-SGD updates of one step ({2 * len(params)} calls), CPU us per step:")
    for name, us in best.items():
        print(f"  {name:34s} {us:7.0f}")
    print(f"  {'the program: BoundProgram.run':34s} {bound:7.0f}")
    print(f"  {'the program: its entry point':34s} {direct:7.0f}")


def calls() -> None:
    rng = np.random.default_rng(0)
    x, y = mx.nd.array(rng.uniform(-1, 1, 100)), mx.nd.array(rng.uniform(-1, 1, 100))
    big = mx.nd.array(rng.uniform(-1, 1, (256, 784)))
    cases = {
        "mx.nd.relu(x), 100 elements": lambda: mx.nd.relu(x).wait_to_read(),
        "x * 2.0": lambda: (x * 2.0).wait_to_read(),
        "x + y": lambda: (x + y).wait_to_read(),
        "x += y": lambda: x.__iadd__(y).wait_to_read(),
        "relu, 256 x 784": lambda: mx.nd.relu(big).wait_to_read(),
        "x * 2.0 + y (two calls)": lambda: (x * 2.0 + y).wait_to_read(),
    }
    print("a call and a read of its result, CPU us (best of 7 rounds of 2000):")
    for name, fn in cases.items():
        best = best_rounds({w: (way, lambda _w, fn=fn: fn()) for w, way in WAYS.items()}, n=2000)
        print(f"  {name:30s} " + "  ".join(f"{w} {us:6.2f}" for w, us in best.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--parts", action="store_true")
    ap.add_argument("--calls", action="store_true")
    args = ap.parse_args()
    if args.parts:
        parts(args.batch)
    elif args.calls:
        calls()
    else:
        loops(args)


if __name__ == "__main__":
    main()
