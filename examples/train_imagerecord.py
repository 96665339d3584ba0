"""LeNet trained on MNIST read from RecordIO files through ``mx.io.ImageRecordIter``.

    python examples/train_imagerecord.py [--epochs 2] [--train-limit 60000] [--workdir DIR]
        [--threads 2] [--mnist DIR]

Packs MNIST into ``train.rec``/``test.rec`` (PNG records, ``examples/im2rec.py --mnist``) in
``--workdir`` unless they exist, then trains with ``Module.fit`` from an ``ImageRecordIter``
(gray 1x28x28, pixels scaled to [0, 1], random 28x28 crops of the 28x28 images do nothing, so no
augmentation but a shuffle) and prints the test accuracy and the images/s the iterator kept up.
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.im2rec import pack_mnist  # noqa: E402
from examples.nets import lenet  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--train-limit", type=int, default=60000)
    ap.add_argument("--test-limit", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=2, help="preprocess_threads")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--workdir", default=None, help="where the .rec files go (default: a temp dir)")
    ap.add_argument("--mnist", default=str(ROOT.parent / "shared" / "data" / "mnist"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    work = Path(args.workdir or tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    for split, limit in (("train", args.train_limit), ("test", args.test_limit)):
        if not (work / f"{split}.rec").exists():
            n = pack_mnist(args.mnist, str(work / split), split, limit)
            print(f"packed {n} {split} images into {work / split}.rec")
    common = dict(data_shape=(1, 28, 28), batch_size=args.batch_size, scale=1.0 / 255,
                  preprocess_threads=args.threads)
    train = mx.io.ImageRecordIter(path_imgrec=str(work / "train.rec"), path_imgidx=str(work / "train.idx"),
                                  shuffle=True, seed=1, **common)
    test = mx.io.ImageRecordIter(path_imgrec=str(work / "test.rec"), num_parts=1, **common)
    mx.random.seed(7)
    mod = mx.mod.Module(lenet())
    t0 = time.perf_counter()
    mod.fit(train, num_epoch=args.epochs, optimizer="sgd",
            optimizer_params={"learning_rate": args.lr, "momentum": 0.9},
            initializer=mx.init.Xavier(), batch_end_callback=mx.callback.Speedometer(args.batch_size, 200))
    seconds = time.perf_counter() - t0
    acc = dict(mod.score(test, "acc"))["accuracy"]
    print(f"trained {args.epochs} epochs of {train.num_image} images in {seconds:.1f} s "
          f"({args.epochs * train.num_image / seconds:.0f} images/s)")
    print(f"test accuracy: {acc:.4f}")
    train.close()
    test.close()


if __name__ == "__main__":
    main()
