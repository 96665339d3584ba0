"""Make RecordIO image sets, as MXNet's ``tools/im2rec.py`` does (a subset of its options).

    python examples/im2rec.py --list PREFIX ROOT           # PREFIX.lst from ROOT/<class>/<image>
    python examples/im2rec.py PREFIX ROOT [--quality 95] [--encoding .jpg] [--resize N]
                                                           # PREFIX.rec + PREFIX.idx from PREFIX.lst
    python examples/im2rec.py --mnist DIR PREFIX [--split train|test] [--limit N]
                                                           # MNIST's images as PNG records

A ``.lst`` line is ``index<TAB>label<TAB>relative/path``; classes are numbered in sorted folder
order. Each record is ``IRHeader(0, label, index, 0)`` followed by the encoded image (BGR in,
as OpenCV's images are), so MXNet's ``ImageRecordIter`` reads these files as well.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402

EXTS = (".jpg", ".jpeg", ".png", ".bmp")


def make_list(prefix: str, root: str) -> int:
    """Write ``prefix.lst`` for the images under ``root/<class>/``; the number of images."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    lines = []
    for label, cls in enumerate(classes):
        for name in sorted(os.listdir(os.path.join(root, cls))):
            if name.lower().endswith(EXTS):
                lines.append(f"{len(lines)}\t{label}\t{cls}/{name}\n")
    Path(f"{prefix}.lst").write_text("".join(lines))
    return len(lines)


def pack_list(prefix: str, root: str, quality: int = 95, encoding: str = ".jpg", resize: int = 0) -> int:
    """Pack the images of ``prefix.lst`` into ``prefix.rec``/``prefix.idx``; the record count."""
    rec = mx.recordio.MXIndexedRecordIO(f"{prefix}.idx", f"{prefix}.rec", "w")
    count = 0
    for line in Path(f"{prefix}.lst").read_text().splitlines():
        index, *labels, rel = line.split("\t")
        img = mx.image.imread(os.path.join(root, rel), to_rgb=False).asnumpy()   # BGR
        if resize:
            img = mx.image.resize_short(img, resize).asnumpy()
        label = float(labels[0]) if len(labels) == 1 else [float(v) for v in labels]
        header = mx.recordio.IRHeader(0, label, int(index), 0)
        rec.write_idx(int(index), mx.recordio.pack_img(header, img, quality, encoding))
        count += 1
    rec.close()
    return count


def pack_mnist(directory: str, prefix: str, split: str = "train", limit: int | None = None) -> int:
    """MNIST's ``split`` images (gray) as PNG records in ``prefix.rec``/``prefix.idx``."""
    data = mx.io.load_mnist(directory, raw=True, download=False)
    images, labels = data[f"{split}_data"][:limit, 0], data[f"{split}_label"][:limit]
    rec = mx.recordio.MXIndexedRecordIO(f"{prefix}.idx", f"{prefix}.rec", "w")
    for i, (img, label) in enumerate(zip(images, labels)):
        header = mx.recordio.IRHeader(0, float(label), i, 0)
        rec.write_idx(i, mx.recordio.pack_img(header, np.ascontiguousarray(img), img_fmt=".png"))
    rec.close()
    return len(images)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefix")
    ap.add_argument("root", nargs="?")
    ap.add_argument("--list", action="store_true", help="make PREFIX.lst from ROOT's class folders")
    ap.add_argument("--mnist", metavar="DIR", help="pack MNIST from DIR instead of a list")
    ap.add_argument("--split", default="train", choices=("train", "test"))
    ap.add_argument("--limit", type=int)
    ap.add_argument("--quality", type=int, default=95)
    ap.add_argument("--encoding", default=".jpg", choices=(".jpg", ".png"))
    ap.add_argument("--resize", type=int, default=0)
    args = ap.parse_args()
    if args.mnist:
        print(f"{pack_mnist(args.mnist, args.prefix, args.split, args.limit)} records in {args.prefix}.rec")
    elif args.list:
        print(f"{make_list(args.prefix, args.root)} images listed in {args.prefix}.lst")
    else:
        n = pack_list(args.prefix, args.root, args.quality, args.encoding, args.resize)
        print(f"{n} records in {args.prefix}.rec")


if __name__ == "__main__":
    main()
