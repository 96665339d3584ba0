"""Programs that tests/test_dist.py runs as MPI jobs: ``python -m tests.dist_programs SCENARIO OUT``.

Each rank writes what it saw to ``OUT/rank<r>.npz`` (arrays) or ``OUT/rank<r>.txt`` (errors); the
test compares them with the single-process result it computes itself.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

import symjit as mx
from symjit.dist.mpi import DistError

KEYS = ["a", "b", "c"]
SHAPES = {"a": (3, 4), "b": (5,), "c": (2, 2)}
DTYPES = {"a": "float32", "b": "float32", "c": "float64"}
ROUNDS = 4


def pushed(rank: int, round_: int, key: str) -> np.ndarray:
    """What ``rank`` pushes for ``key`` in ``round_``: small multiples of 1/4, so sums are exact."""
    rng = np.random.default_rng(1000 * round_ + 10 * rank + KEYS.index(key))
    return (rng.integers(-8, 8, SHAPES[key]) / 4).astype(DTYPES[key])


def initial(rank: int, key: str) -> np.ndarray:
    """Each rank initialises with its own values: rank 0's must win."""
    return np.full(SHAPES[key], 1.0 + rank, dtype=DTYPES[key])


def run_pushpull(kv, rank: int, workers: int, devices: int = 1, ctx=None) -> dict[str, np.ndarray]:
    """init, pushes without an updater, then with SGD momentum; pulls after every round.

    With ``workers`` > the number of ranks, this is the single-process reference: one process
    pushes the values of every rank as a list (a local store sums a list, as MXNet does)."""
    seen: dict[str, np.ndarray] = {}
    kv.init(KEYS, [mx.nd.array(initial(rank, k), dtype=DTYPES[k]) for k in KEYS])

    def values(round_: int) -> list:
        ranks = range(workers) if devices == workers else [rank]
        return [[mx.nd.array(pushed(r, round_, k), ctx=ctx, dtype=DTYPES[k]) for r in ranks] for k in KEYS]

    def pull(tag: str) -> None:
        outs = [mx.nd.zeros(SHAPES[k], ctx=ctx, dtype=DTYPES[k]) for k in KEYS]
        kv.pull(KEYS, out=outs)
        for k, o in zip(KEYS, outs):
            seen[f"{tag}/{k}"] = o.asnumpy()
            seen[f"ctx/{tag}/{k}"] = np.array(str(o.context))

    pull("init")
    kv.push(KEYS, values(0))
    pull("round0")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
    for r in range(1, ROUNDS):
        kv.push(KEYS, values(r))
        pull(f"round{r}")
    return seen


def pushpull(out: Path) -> None:
    kv = mx.kv.create(os.environ.get("KV_TYPE", "dist_sync"))
    ctx = mx.gpu(0) if os.environ.get("PUSH_CTX") == "gpu" else mx.cpu()
    seen = run_pushpull(kv, kv.rank, kv.num_workers, ctx=ctx)
    seen["store_ctx"] = np.array(str(kv._store["a"].context))
    kv.barrier()
    kv.save_optimizer_states(str(out / f"states{kv.rank}.bin"))
    kv.barrier()
    kv.load_optimizer_states(str(out / f"states{(kv.rank + 1) % kv.num_workers}.bin"))   # a neighbour's
    kv.push(KEYS, [mx.nd.array(pushed(kv.rank, 9, k), dtype=DTYPES[k]) for k in KEYS])
    outs = [mx.nd.zeros(SHAPES[k], dtype=DTYPES[k]) for k in KEYS]
    kv.pull(KEYS, out=outs)
    seen.update({f"after_load/{k}": o.asnumpy() for k, o in zip(KEYS, outs)})
    seen["num_workers"] = np.array(kv.num_workers)
    np.savez(out / f"rank{kv.rank}.npz", **seen)


def pushpull_async(out: Path) -> None:
    """dist_async with plain SGD: after every worker's pushes, w = w0 - lr * (sum of all pushes)."""
    kv = mx.kv.create("dist_async")
    rank = kv.rank
    kv.init(KEYS, [mx.nd.array(initial(rank, k), dtype=DTYPES[k]) for k in KEYS])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    for i in range(ROUNDS):
        kv.push(KEYS, [mx.nd.array(pushed(rank, i, k), dtype=DTYPES[k]) for k in KEYS])
    outs = [mx.nd.zeros(SHAPES[k], dtype=DTYPES[k]) for k in KEYS]
    kv.pull(KEYS, out=outs)       # after this worker's own pushes (MPI keeps their order)
    kv.barrier()                  # ... and after everyone's
    kv.pull(KEYS, out=outs)
    try:
        kv.save_optimizer_states(str(out / f"states{rank}.bin"))
    except mx.MXNetError as exc:
        (out / f"states{rank}.txt").write_text(str(exc))
    np.savez(out / f"rank{rank}.npz", **{f"final/{k}": o.asnumpy() for k, o in zip(KEYS, outs)})


def bad_push(out: Path) -> None:
    """Rank 1 makes three bad pushes; every rank must get an error naming rank 1, then go on."""
    kv = mx.kv.create("dist_sync")
    kv.init(["w", "v"], [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))])
    errors = []
    for case in ("shape", "key", "uninitialised"):
        key, value = "w", mx.nd.ones((2, 3))
        if kv.rank == 1:
            if case == "shape":
                value = mx.nd.ones((3, 3))
            key = {"shape": "w", "key": "v", "uninitialised": "nope"}[case]
        try:
            kv.push(key, value)
            errors.append(f"{case}: no error")
        except DistError as exc:
            errors.append(f"{case}: {exc}")
    kv.push("w", mx.nd.ones((2, 3)))      # the store still works after the errors
    w = mx.nd.zeros((2, 3))
    kv.pull("w", out=w)
    errors.append(f"after: {w.asnumpy().ravel().tolist()}")
    (out / f"rank{kv.rank}.txt").write_text("\n".join(errors))


def fail(out: Path) -> None:
    """Rank 1 dies (``kill``), raises (``raise``) or stalls (``stall``) in round 3."""
    how = os.environ["FAIL_HOW"]
    kv = mx.kv.create("dist_sync")
    kv.init("w", mx.nd.ones((3,)))
    for i in range(10):
        if i == 3 and kv.rank == 1:
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if how == "raise":
                raise ValueError("rank 1 fails on purpose")
            time.sleep(600)
        kv.push("w", mx.nd.ones((3,)))
    (out / f"rank{kv.rank}.txt").write_text("finished")


SCENARIOS = {"pushpull": pushpull, "pushpull_async": pushpull_async, "bad_push": bad_push, "fail": fail}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](Path(sys.argv[2]))
