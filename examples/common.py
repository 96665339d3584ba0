"""What the MNIST examples share: their command line and where they find the data."""
from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def example_parser(doc: str, epochs: int, batch_size: int = 100) -> argparse.ArgumentParser:
    """``--epochs``, ``--batches`` (0: all), ``--batch-size``, ``--mnist`` and ``--ctx`` (``cpu`` or
    ``gpu``, MXNet's ``mx.gpu(0)``); add more as needed."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=epochs)
    ap.add_argument("--batches", type=int, default=0, help="training batches per epoch (0: all)")
    ap.add_argument("--batch-size", type=int, default=batch_size)
    ap.add_argument("--mnist", default=None, help="directory of the four MNIST .gz files")
    ap.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu",
                    help="device to train on (gpu: mx.gpu(0), numba.cuda or its simulator)")
    return ap


def example_ctx(args: argparse.Namespace):
    """``mx.cpu()`` or ``mx.gpu(0)`` from ``--ctx``."""
    import symjit as mx
    return mx.gpu(0) if args.ctx == "gpu" else mx.cpu()


def example_mnist(args: argparse.Namespace) -> dict:
    """MNIST from ``--mnist``, else the shared copy beside the repository, else symjit's lookup."""
    from symjit.io import load_mnist  # (imported here: the module's helpers import under MXNet too)
    shared = ROOT.parent / "shared" / "data" / "mnist"
    return load_mnist(args.mnist or (str(shared) if shared.is_dir() else None))


def gluon_accuracy(net, loader, ctx) -> float:
    """The share of ``loader``'s ``(data, label)`` samples whose largest output of the Gluon block
    ``net`` (called in predict mode on ``ctx``) is the label."""
    import symjit as mx
    metric = mx.metric.Accuracy()
    for data, label in loader:
        metric.update([label.as_in_context(ctx)], [net(data.as_in_context(ctx))])
    return metric.get()[1]
