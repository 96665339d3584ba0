"""Fine-tuning a model-zoo network on a folder of images with Gluon: the network's features come
from a ``gluon.model_zoo.vision`` net (its published pretrained parameters with ``--pretrained``,
read from ``$MXNET_HOME/models``: nothing is downloaded; else a random start), its output layer is
replaced by a new one for the folder's classes, and the whole net is trained (``--freeze``: only
the new output layer) with ``autograd``, ``gluon.Trainer`` and ``DataLoader`` batches of a
``gluon.data.vision.ImageFolderDataset`` (``train/`` and ``val/`` sub-folders, one folder per class
in each) through ``transforms`` (random crops and flips for training, a resize for validation,
then ``ToTensor`` and ``Normalize``).

Without ``--data`` it makes a small synthetic folder in a temporary directory (three classes of
noisy images: a reddish square, a greenish disc, bluish horizontal stripes), so it runs anywhere.

    python examples/gluon_finetune.py [--model resnet18_v1] [--data DIR] [--size 32]
                                      [--epochs 3] [--batches N] [--batch-size 16] [--pretrained]
                                      [--freeze] [--imperative] [--save FILE]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import symjit as mx  # noqa: E402
from examples.common import gluon_accuracy  # noqa: E402
from symjit import autograd, gluon  # noqa: E402
from symjit.gluon.data.vision import ImageFolderDataset, transforms  # noqa: E402
from symjit.gluon.model_zoo import vision  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)   # what the zoo's pretrained nets expect


def _pattern(kind: int, side: int, rng: np.random.Generator) -> np.ndarray:
    """A ``side`` x ``side`` RGB uint8 image of class ``kind`` on a noisy background."""
    img = rng.integers(0, 90, size=(side, side, 3)).astype(np.int32)
    y, x = np.mgrid[:side, :side]
    cy, cx = rng.integers(side // 3, 2 * side // 3, size=2)
    r = int(rng.integers(side // 6, side // 4))
    if kind == 0:
        mask = (abs(y - cy) < r) & (abs(x - cx) < r)
    elif kind == 1:
        mask = (y - cy) ** 2 + (x - cx) ** 2 < r * r
    else:
        mask = (y // max(side // 8, 1)) % 2 == 0
    img[mask] += rng.integers(40, 80, size=3)
    img[mask, kind] += 120   # each class's shape also has a colour of its own: red, green, blue
    return np.clip(img, 0, 255).astype(np.uint8)


def synthetic_folder(root: str, per_class: int = 48, side: int = 40) -> str:
    """``root/train/<class>/*.png`` and ``root/val/<class>/*.png`` (a third as many): three classes."""
    import cv2

    rng = np.random.default_rng(0)
    for split, count in (("train", per_class), ("val", max(per_class // 3, 1))):
        for kind, name in enumerate(("square", "disc", "stripes")):
            folder = os.path.join(root, split, name)
            os.makedirs(folder, exist_ok=True)
            for i in range(count):
                cv2.imwrite(os.path.join(folder, f"{i:03d}.png"), _pattern(kind, side, rng)[:, :, ::-1])
    return root


def finetune_net(name: str, classes: int, pretrained: bool, ctx: mx.Context) -> gluon.HybridBlock:
    """``name``'s features (pretrained or freshly initialized) under a new ``classes``-way output."""
    base = vision.get_model(name, pretrained=pretrained, ctx=ctx)
    if not pretrained:
        base.initialize(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), ctx=ctx)
    net = vision.get_model(name, classes=classes)
    net.features = base.features
    net.output.initialize(mx.init.Xavier(), ctx=ctx)
    return net


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet18_v1", help="a name of gluon.model_zoo.vision.get_model")
    ap.add_argument("--data", default=None, help="folder of train/ and val/ class folders (default: made up)")
    ap.add_argument("--size", type=int, default=32, help="the side images are cropped/resized to")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batches", type=int, default=0, help="training batches per epoch (0: all)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--pretrained", action="store_true", help="start from the published parameters")
    ap.add_argument("--freeze", action="store_true", help="train only the new output layer")
    ap.add_argument("--imperative", action="store_true", help="do not hybridize")
    ap.add_argument("--save", default=None, help="write the fine-tuned parameters to this file")
    ap.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu")
    args = ap.parse_args()
    ctx = mx.gpu(0) if args.ctx == "gpu" else mx.cpu()
    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="finetune-")
        args.data = synthetic_folder(tmp.name)
        print(f"synthetic image folder: {args.data}")
    mx.random.seed(0)
    np.random.seed(0)
    norm = [transforms.ToTensor(), transforms.Normalize(MEAN, STD)]
    train_tf = transforms.Compose([transforms.RandomResizedCrop(args.size, scale=(0.6, 1.0)),
                                   transforms.RandomFlipLeftRight(), *norm])
    val_tf = transforms.Compose([transforms.Resize(args.size), *norm])
    train_set = ImageFolderDataset(os.path.join(args.data, "train"))
    val_set = ImageFolderDataset(os.path.join(args.data, "val"))
    print(f"classes {train_set.synsets}: {len(train_set)} training, {len(val_set)} validation images")
    train_loader = gluon.data.DataLoader(train_set.transform_first(train_tf), batch_size=args.batch_size,
                                         shuffle=True, last_batch="discard")
    val_loader = gluon.data.DataLoader(val_set.transform_first(val_tf), batch_size=args.batch_size)

    net = finetune_net(args.model, len(train_set.synsets), args.pretrained, ctx)
    if not args.imperative:
        net.hybridize()
    params = net.output.collect_params() if args.freeze else net.collect_params()
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    print(f"val accuracy before fine-tuning {gluon_accuracy(net, val_loader, ctx):.4f}")
    for epoch in range(args.epochs):
        metric, t0, first, batches = mx.metric.Accuracy(), time.perf_counter(), 0.0, 0
        for x, y in train_loader:
            if args.batches and batches >= args.batches:
                break
            x, y = x.as_in_context(ctx), y.as_in_context(ctx)
            with autograd.record():
                out = net(x)
                loss = loss_fn(out, y)
            loss.backward()
            trainer.step(x.shape[0])
            metric.update([y], [out])
            batches += 1
            if batches == 1:   # the first step compiles the training program
                first = time.perf_counter() - t0
        seconds = time.perf_counter() - t0
        rest = (seconds - first) / max(batches - 1, 1)
        print(f"epoch {epoch}: train accuracy {metric.get()[1]:.4f}, val accuracy "
              f"{gluon_accuracy(net, val_loader, ctx):.4f}, {batches} batches in {seconds:.1f} s (first "
              f"{first:.1f} s, then {1000 * rest:.0f} ms/batch)", flush=True)
    if args.save:
        net.save_parameters(args.save)
        print(f"saved {args.save}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
