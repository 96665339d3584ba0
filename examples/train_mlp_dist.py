"""The tutorial MLP trained with ``Module.fit(kvstore='dist_sync')`` by several workers.

    symjit launch -n 2 python examples/train_mlp_dist.py [--kvstore dist_sync] [--epochs 2]
        [--batch-size 100] [--examples 60000] [--api module|feedforward] [--out DIR] [--mnist DIR]

``--batch-size`` is the global batch: each of the N workers reads its own ``1/N`` of the training
set (``NDArrayIter`` splits by rank under the launcher) in batches of ``batch_size / N``, and a
``dist_sync`` update sums the gradients of all of them, so N workers take the same steps as one
worker with the whole batch. Every worker logs its own ``Rank[r]`` lines; rank 0 writes the
checkpoints. With ``--out DIR`` each rank also writes ``DIR/rank<r>.npz``: its parameters after
every epoch and its test accuracy (the tests compare the ranks with it).
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.nets import mlp  # noqa: E402
from symjit.io import load_mnist  # noqa: E402


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kvstore", default="dist_sync")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=100, help="global batch (over all workers)")
    ap.add_argument("--examples", type=int, default=60000, help="training examples used")
    ap.add_argument("--api", choices=("module", "feedforward"), default="module")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--mnist", default=str(ROOT.parent / "shared" / "data" / "mnist"))
    ap.add_argument("--out", help="directory for per-rank results and rank 0's checkpoints")
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    kv = mx.kv.create(args.kvstore)
    rank, workers = kv.rank, kv.num_workers
    if args.batch_size % workers:
        raise SystemExit(f"--batch-size {args.batch_size} is not a multiple of {workers} workers")
    out = Path(args.out) if args.out else None
    logging.basicConfig(level=logging.INFO, format="%(message)s",
                        filename=str(out / f"log{rank}.txt") if out else None)
    data = load_mnist(args.mnist)
    X = data["train_data"].reshape(-1, 784)[:args.examples]
    Y = data["train_label"][:args.examples]
    train = mx.io.NDArrayIter(X, Y, batch_size=args.batch_size // workers, shuffle=False)
    test = mx.io.NDArrayIter(data["test_data"].reshape(-1, 784), data["test_label"], batch_size=100,
                             num_parts=1)
    mx.random.seed(42 + rank)   # different initial weights per rank: init sends rank 0's to all
    snapshots: dict[str, np.ndarray] = {}

    def keep(epoch: int, sym: mx.sym.Symbol, arg: dict, aux: dict) -> None:
        for name, value in arg.items():
            snapshots[f"epoch{epoch}/{name}"] = value.asnumpy()

    callbacks = [keep] + ([mx.callback.do_checkpoint(str(out / f"mlp-rank{rank}"))] if out else [])
    opt = {"learning_rate": args.lr, "momentum": args.momentum}
    speed = mx.callback.Speedometer(args.batch_size // workers, 100)
    if args.api == "module":
        mod = mx.mod.Module(mlp())
        mod.fit(train, num_epoch=args.epochs, kvstore=kv, optimizer="sgd", optimizer_params=opt,
                initializer=mx.init.Xavier(), epoch_end_callback=callbacks, batch_end_callback=speed)
        acc = dict(mod.score(test, "acc"))["accuracy"]
    else:
        model = mx.model.FeedForward(mlp(), num_epoch=args.epochs, optimizer="sgd",
                                     initializer=mx.init.Xavier(), **opt)
        model.fit(train, kvstore=kv, epoch_end_callback=callbacks, batch_end_callback=speed)
        acc = model.score(test, "acc")
    print(f"{mx.dist.rank_tag()}test accuracy: {acc:.4f}")
    if out:
        np.savez(out / f"rank{rank}.npz", accuracy=np.array(acc), **snapshots)


if __name__ == "__main__":
    main()
