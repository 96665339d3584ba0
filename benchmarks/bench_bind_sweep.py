"""Binds of one operator over many shapes, as MXNet's operator tests make them: each shape pair of
a broadcast op bound and run forward, then bound with gradients and run backward, in a new kernel
cache (every broadcast pattern compiles its kernels once), seconds per op; and the step time of a
three-kernel elementwise program whose kernels the executor calls from the host against the same
program through compiled program functions (``Config.program_calls``)::

    python benchmarks/bench_bind_sweep.py [--ops broadcast_plus,broadcast_mul] [--program-calls 0]
    python benchmarks/bench_bind_sweep.py --steps [--ops broadcast_mul]

``--program-calls N`` binds with ``Config.program_calls = N`` (16: the program functions the
compiler built for such programs before; default: the compiler's choice). ``--steps`` times, instead,
each shape pair's bound forward and backward passes (the kernels' speed, not their compiling:
best of 5 x 10 passes, ms), to compare two trees' kernels in separate runs taking turns.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (lhs, rhs) shape pairs of the kind MXNet's broadcast tests draw: rank 5, a different axis set of
# each side broadcast
SHAPES = [((2, 5, 1, 30, 7), (1, 5, 448, 30, 1)), ((10, 49, 1, 77, 17), (10, 1, 2, 1, 17)),
          ((13, 2, 65, 2, 1), (13, 1, 65, 1, 225)), ((9, 434, 4, 2, 37), (9, 1, 4, 1, 37)),
          ((2, 52, 1, 4, 1), (1, 52, 60, 1, 37)), ((1, 23, 7, 122, 50), (2, 1, 7, 1, 50))]


def sweep(op: str, config) -> float:
    """Seconds to bind and run ``op`` forward, then with gradients backward, over :data:`SHAPES`."""
    import symjit as mx
    from symjit.executor import Executor
    net = getattr(mx.sym, op)(mx.sym.Variable("a"), mx.sym.Variable("b"))
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for lhs, rhs in SHAPES:
        args = {"a": mx.nd.array(rng.random(lhs)), "b": mx.nd.array(rng.random(rhs))}
        out = Executor(net, mx.cpu(), args, {}, "null", None, config=config).forward()[0].asnumpy()
        grads = {"a": mx.nd.zeros(lhs), "b": mx.nd.zeros(rhs)}
        ex = Executor(net, mx.cpu(), args, grads, "write", None, config=config)
        ex.forward(is_train=True)
        ex.backward(mx.nd.array(rng.random(out.shape)))
        ex.grad_dict["b"].wait_to_read()
    return time.perf_counter() - t0


def pattern_steps(op: str, config) -> list[tuple[float, float]]:
    """Best ms of a forward and of a forward + backward pass of ``op`` bound on each of
    :data:`SHAPES`."""
    import symjit as mx
    from symjit.executor import Executor
    net = getattr(mx.sym, op)(mx.sym.Variable("a"), mx.sym.Variable("b"))
    rng = np.random.default_rng(0)
    times = []
    for lhs, rhs in SHAPES:
        args = {"a": mx.nd.array(rng.random(lhs)), "b": mx.nd.array(rng.random(rhs))}
        grads = {"a": mx.nd.zeros(lhs), "b": mx.nd.zeros(rhs)}
        ex = Executor(net, mx.cpu(), args, grads, "write", None, config=config)
        head = mx.nd.array(rng.random(ex.forward(is_train=True)[0].shape))
        best = [float("inf"), float("inf")]
        for _ in range(5):
            for which in (0, 1):
                t = time.perf_counter()
                for _ in range(10):
                    ex.forward(is_train=True)
                    if which:
                        ex.backward(head)
                ex.grad_dict["b"].wait_to_read()
                ex.outputs[0].wait_to_read()
                best[which] = min(best[which], (time.perf_counter() - t) / 10 * 1e3)
        times.append((best[0], best[1]))
    return times


def step_us(shape: tuple, config, steps: int = 300) -> float:
    """Best us per forward + backward step of ``tanh(broadcast_mul(exp(a), b) + a)``."""
    import symjit as mx
    from symjit.executor import Executor
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    net = mx.sym.tanh(mx.sym.broadcast_mul(mx.sym.exp(a), b) + a)
    args = {"a": mx.nd.array(np.random.rand(*shape)), "b": mx.nd.array(np.random.rand(1, shape[1]))}
    ex = Executor(net, mx.cpu(), args, {n: mx.nd.zeros(v.shape) for n, v in args.items()}, "write",
                  None, config=config)
    head = mx.nd.ones(shape)
    best = float("inf")
    for _ in range(6):
        t = time.perf_counter()
        for _ in range(steps):
            ex.forward(is_train=True)
            ex.backward(head)
        ex.grad_dict["a"].wait_to_read()
        best = min(best, (time.perf_counter() - t) / steps)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="broadcast_plus,broadcast_mul")
    ap.add_argument("--program-calls", type=int, default=None)
    ap.add_argument("--steps", action="store_true", help="time the bound passes, not the binds")
    a = ap.parse_args()
    os.environ["SYMJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="symjit-sweep-")
    from symjit.config import Config
    config = Config.from_env().replace(program_calls=a.program_calls, interpret_calls=0)
    if a.steps:
        for op in a.ops.split(","):
            for (lhs, rhs), (fwd, both) in zip(SHAPES, pattern_steps(op, config)):
                print(f"{op} {lhs} x {rhs}: forward {fwd:.2f} ms, forward + backward {both:.2f} ms",
                      flush=True)
        return
    for op in a.ops.split(","):
        seconds = sweep(op, config)
        print(f"{op}: {len(SHAPES)} shape pairs bound and run forward and backward in {seconds:.1f} s",
              flush=True)
    for shape in ((100, 100), (300, 400)):
        print(f"elementwise step {shape}: {step_us(shape, config):.1f} us", flush=True)


if __name__ == "__main__":
    main()
