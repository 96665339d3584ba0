"""ImageRecordIter throughput: images/s on a JPEG ``.rec`` at 224x224 with the standard
augmentation (resize 256, random crop, mirror, mean/std), for several thread counts.

    python benchmarks/bench_image.py [--images 512] [--threads 1,2] [--peer-python PATH]

The file is made here (synthetic smooth 256x340 photos-like images, JPEG quality 95, written with
MXNet's record layout). ``--peer-python`` runs the same measurement with MXNet 1.9.1's
``mx.io.ImageRecordIter`` in that interpreter (a venv with mxnet), on the same file.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ARGS = dict(data_shape=(3, 224, 224), batch_size=32, resize=256, rand_crop=True, rand_mirror=True,
            mean_r=123.68, mean_g=116.28, mean_b=103.53, std_r=58.395, std_g=57.12, std_b=57.375)

MEASURE = """
import json, sys, time
import {module} as mx
path, threads, args = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
args['data_shape'] = tuple(args['data_shape'])
it = mx.io.ImageRecordIter(path_imgrec=path, preprocess_threads=threads, **args)
for b in it:
    pass
it.reset()
t0, n = time.perf_counter(), 0
for b in it:
    n += b.data[0].shape[0] - (b.pad or 0)
print(json.dumps({{'images_per_s': n / (time.perf_counter() - t0)}}))
"""


def make_rec(path: str, n: int) -> None:
    import cv2

    import symjit as mx
    rng = np.random.default_rng(0)
    base = cv2.GaussianBlur(rng.integers(0, 256, (256, 340, 3), dtype=np.uint8), (9, 9), 4)
    w = mx.recordio.MXRecordIO(path, "w")
    for i in range(n):
        img = np.roll(base, 7 * i, axis=1)
        w.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i % 10), i, 0), img, quality=95))
    w.close()


def measure(python: str, module: str, path: str, threads: int) -> float:
    out = subprocess.run([python, "-c", MEASURE.format(module=module), path, str(threads), json.dumps(ARGS)],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])["images_per_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--peer-python", help="an interpreter with MXNet 1.9.1")
    args = ap.parse_args()
    path = str(Path(tempfile.mkdtemp()) / "bench.rec")
    make_rec(path, args.images)
    print("| iterator | preprocess_threads | images/s |\n|---|---|---|")
    for t in (int(x) for x in args.threads.split(",")):
        print(f"| symjit | {t} | {measure(sys.executable, 'symjit', path, t):.0f} |")
        if args.peer_python:
            print(f"| MXNet 1.9.1 | {t} | {measure(args.peer_python, 'mxnet', path, t):.0f} |")


if __name__ == "__main__":
    main()
