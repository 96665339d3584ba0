"""Model-zoo inference beside the tools a user would pick instead, in one run on one machine: ResNet-18
v1, ResNet-50 v1, MobileNet v2 1.0 and SqueezeNet 1.1 at 224 x 224 and Inception v3 at 299 x 299,
random weights, batch 2 and 32, median warm forward time (ms); with ``--train``, the median time of
a training step instead (forward and backward in training mode, BatchNorm on batch statistics, a
softmax cross-entropy head: symjit's ``SoftmaxOutput``, PyTorch's ``cross_entropy``, Gluon's
``SoftmaxCrossEntropyLoss`` under ``autograd.record``; no parameter update). With ``--rounds N`` the
frameworks take turns N times and each keeps its best round (the machine's speed swings between
runs).

symjit runs the nets built with its symbol API (``examples/nets.py``, the Gluon model zoo's
shapes) with this interpreter; PyTorch (twins written here with ``torch.nn``: torchvision is not
needed; ``torch.no_grad`` for inference) with ``--peer-python``, eager and as ``torch.compile`` of
the model; MXNet 1.9.1 (its Gluon model zoo, hybridized, oneDNN) with ``--mxnet-python`` (its own
venv, numpy < 1.24), as installed and with ``OMP_NUM_THREADS=2`` (``--mxnet-threads``: the
settings to run, ``default`` for as installed; on our 2-core machines MXNet's wheel runs one
thread per operator, and two threads are faster on convolution nets). Each framework and setting
runs each (net, batch) in a process of its own, one after the other (in one process, symjit's
SqueezeNet ran 1.5-1.8x slower after MobileNet's batch-32 bind than alone); a peer that is not
installed is skipped. Peers are never a dependency of symjit or its tests.

    python benchmarks/bench_zoo.py [--nets resnet18,mobilenet_v2] [--batches 2,32] [--runs 10] [--rounds 2]
        [--train] [--peer-python /path/to/torch-venv/bin/python] [--no-torch-compile]
        [--mxnet-python /path/to/mxnet-venv/bin/python] [--mxnet-threads default,2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# The timed processes bind programs from a warm cache; with SYMJIT_AOT=background each would start
# an ahead-of-time builder when it exits, which would load the machine during the next measurement.
if os.environ.setdefault("SYMJIT_AOT", "off") == "background":
    os.environ["SYMJIT_AOT"] = "off"
NETS = ("resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "inception_v3")
MXNET_NAMES = {"resnet18": "resnet18_v1", "resnet50": "resnet50_v1", "mobilenet_v2": "mobilenetv2_1.0",
               "squeezenet1_1": "squeezenet1.1", "inception_v3": "inceptionv3"}
SIZE = {"inception_v3": 299}   # the image side of each net (224 unless given)


def median_ms(run, runs: int) -> float:
    """Median of ``runs`` timed calls of ``run()`` after two warm-up calls, in ms."""
    run()
    run()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def symjit_worker(nets: list[str], batches: list[int], runs: int, train: bool) -> dict:
    sys.path.insert(0, str(ROOT))
    import symjit as mx
    from examples import nets as zoo
    build = {"resnet18": lambda: zoo.resnet(18), "resnet50": lambda: zoo.resnet(50),
             "mobilenet_v2": zoo.mobilenet_v2, "squeezenet1_1": zoo.squeezenet1_1,
             "inception_v3": zoo.inception_v3}
    out = {}
    for name in nets:
        sym = build[name]()
        side = SIZE.get(name, 224)
        for batch in batches:
            reqs = {n: ("write" if train and n not in ("data", "softmax_label") else "null")
                    for n in sym.list_arguments()}
            ex = sym.simple_bind(mx.cpu(), data=(batch, 3, side, side), grad_req=reqs)
            mx.random.seed(0)
            init = mx.init.Xavier(magnitude=2.0)
            for n, arr in ex.arg_dict.items():
                if n not in ("data", "softmax_label"):
                    init(mx.init.InitDesc(n), arr)
            for n, arr in ex.aux_dict.items():
                arr[:] = 1.0 if n.endswith("var") else 0.0
            ex.arg_dict["data"][:] = np.random.default_rng(0).random((batch, 3, side, side), np.float32)
            ex.arg_dict["softmax_label"][:] = np.arange(batch) % 1000

            def run(ex=ex):
                ex.forward(is_train=train)
                if train:
                    ex.backward()
                    for g in ex.grad_arrays:
                        if g is not None:
                            g.wait_to_read()
                ex.outputs[0].wait_to_read()
            out[f"{name}/{batch}"] = median_ms(run, runs)
    return out


def torch_compile_worker(nets: list[str], batches: list[int], runs: int, train: bool) -> dict:
    """The PyTorch twins as ``torch.compile`` of the model (compiled in the warm-up calls)."""
    return torch_worker(nets, batches, runs, train, compiled=True)


def torch_worker(nets: list[str], batches: list[int], runs: int, train: bool,
                 compiled: bool = False) -> dict:
    import torch
    from torch import nn

    def conv_bn(c_in, c_out, k, s=1, groups=1, act=nn.ReLU, bias=False):
        layers = [nn.Conv2d(c_in, c_out, k, s, k // 2, groups=groups, bias=bias), nn.BatchNorm2d(c_out)]
        return nn.Sequential(*layers, act()) if act else nn.Sequential(*layers)

    class Basic(nn.Module):
        def __init__(self, c_in, c, s, bottleneck):
            super().__init__()
            out = c * 4 if bottleneck else c
            if bottleneck:   # Gluon's BottleneckV1: the stride and a bias on the 1x1 convolutions
                body = [conv_bn(c_in, c, 1, s, bias=True), conv_bn(c, c, 3),
                        conv_bn(c, out, 1, act=None, bias=True)]
            else:
                body = [conv_bn(c_in, c, 3, s), conv_bn(c, c, 3, act=None)]
            self.body = nn.Sequential(*body)
            self.down = conv_bn(c_in, out, 1, s, act=None) if s != 1 or c_in != out else nn.Identity()

        def forward(self, x):
            return torch.relu(self.body(x) + self.down(x))

    def resnet(layers):
        depth = {18: (2, 2, 2, 2), 50: (3, 4, 6, 3)}[layers]
        bottleneck, mods, c_in = layers >= 50, [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)], 64
        for stage, blocks in enumerate(depth):
            c = 64 * 2 ** stage
            for b in range(blocks):
                mods.append(Basic(c_in, c, 2 if stage > 0 and b == 0 else 1, bottleneck))
                c_in = c * 4 if bottleneck else c
        return nn.Sequential(*mods, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, 1000))

    class Inverted(nn.Module):
        def __init__(self, c_in, c, t, s):
            super().__init__()
            mid = c_in * t
            body = [conv_bn(c_in, mid, 1, act=nn.ReLU6),   # Gluon's: also where t is 1
                    conv_bn(mid, mid, 3, s, groups=mid, act=nn.ReLU6), conv_bn(mid, c, 1, act=None)]
            self.body, self.res = nn.Sequential(*body), s == 1 and c_in == c

        def forward(self, x):
            return x + self.body(x) if self.res else self.body(x)

    def mobilenet_v2():
        mods, c_in = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)], 32
        for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                           (6, 160, 3, 2), (6, 320, 1, 1)):
            for b in range(n):
                mods.append(Inverted(c_in, c, t, s if b == 0 else 1))
                c_in = c
        return nn.Sequential(*mods, conv_bn(c_in, 1280, 1, act=nn.ReLU6), nn.AdaptiveAvgPool2d(1),
                             nn.Conv2d(1280, 1000, 1, bias=False), nn.Flatten())

    class Fire(nn.Module):
        def __init__(self, c_in, s, e):
            super().__init__()
            self.s = nn.Sequential(nn.Conv2d(c_in, s, 1), nn.ReLU())
            self.e1 = nn.Sequential(nn.Conv2d(s, e, 1), nn.ReLU())
            self.e3 = nn.Sequential(nn.Conv2d(s, e, 3, padding=1), nn.ReLU())

        def forward(self, x):
            x = self.s(x)
            return torch.cat([self.e1(x), self.e3(x)], 1)

    def squeezenet1_1():
        pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)   # noqa: E731
        return nn.Sequential(nn.Conv2d(3, 64, 3, 2), nn.ReLU(), pool(), Fire(64, 16, 64), Fire(128, 16, 64),
                             pool(), Fire(128, 32, 128), Fire(256, 32, 128), pool(), Fire(256, 48, 192),
                             Fire(384, 48, 192), Fire(384, 64, 256), Fire(512, 64, 256), nn.Dropout(0.5),
                             nn.Conv2d(512, 1000, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())

    def conv(c_in, c_out, k=1, s=1, p=0):   # Inception's conv + BatchNorm (eps 0.001) + relu
        return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, p, bias=False), nn.BatchNorm2d(c_out, eps=1e-3),
                             nn.ReLU())

    def avg_branch(c_in, c_out):
        return nn.Sequential(nn.AvgPool2d(3, 1, 1), conv(c_in, c_out))

    class Cat(nn.Module):
        def __init__(self, *branches):
            super().__init__()
            self.branches = nn.ModuleList(branches)

        def forward(self, x):
            return torch.cat([b(x) for b in self.branches], 1)

    class Split(nn.Module):   # Inception E's 1x3 and 3x1 halves of one branch
        def __init__(self, stem, c_in):
            super().__init__()
            self.stem = stem
            self.a, self.b = conv(c_in, 384, (1, 3), p=(0, 1)), conv(c_in, 384, (3, 1), p=(1, 0))

        def forward(self, x):
            x = self.stem(x)
            return torch.cat([self.a(x), self.b(x)], 1)

    def inception_v3():
        seq = nn.Sequential
        k17, p17, k71, p71 = (1, 7), (0, 3), (7, 1), (3, 0)
        mods = [conv(3, 32, 3, 2), conv(32, 32, 3), conv(32, 64, 3, p=1), nn.MaxPool2d(3, 2), conv(64, 80),
                conv(80, 192, 3), nn.MaxPool2d(3, 2)]
        c = 192
        for pf in (32, 64, 64):
            mods.append(Cat(conv(c, 64), seq(conv(c, 48), conv(48, 64, 5, p=2)),
                            seq(conv(c, 64), conv(64, 96, 3, p=1), conv(96, 96, 3, p=1)), avg_branch(c, pf)))
            c = 224 + pf
        mods.append(Cat(conv(c, 384, 3, 2), seq(conv(c, 64), conv(64, 96, 3, p=1), conv(96, 96, 3, 2)),
                        nn.MaxPool2d(3, 2)))
        c = 768
        for c7 in (128, 160, 160, 192):
            b7 = seq(conv(c, c7), conv(c7, c7, k17, p=p17), conv(c7, 192, k71, p=p71))
            mods.append(Cat(conv(c, 192), b7,
                            seq(conv(c, c7), conv(c7, c7, k71, p=p71), conv(c7, c7, k17, p=p17),
                                conv(c7, c7, k71, p=p71), conv(c7, 192, k17, p=p17)), avg_branch(c, 192)))
        mods.append(Cat(seq(conv(c, 192), conv(192, 320, 3, 2)),
                        seq(conv(c, 192), conv(192, 192, k17, p=p17), conv(192, 192, k71, p=p71),
                            conv(192, 192, 3, 2)), nn.MaxPool2d(3, 2)))
        c = 1280
        for _ in range(2):
            mods.append(Cat(conv(c, 320), Split(conv(c, 384), 384),
                            Split(seq(conv(c, 448), conv(448, 384, 3, p=1)), 384), avg_branch(c, 192)))
            c = 2048
        return nn.Sequential(*mods, nn.AvgPool2d(8), nn.Dropout(0.5), nn.Flatten(), nn.Linear(2048, 1000))

    build = {"resnet18": lambda: resnet(18), "resnet50": lambda: resnet(50), "mobilenet_v2": mobilenet_v2,
             "squeezenet1_1": squeezenet1_1, "inception_v3": inception_v3}
    out = {}
    torch.manual_seed(0)
    for name in nets:
        model = build[name]().train(train)
        if compiled:
            model = torch.compile(model)
        side = SIZE.get(name, 224)
        for batch in batches:
            x, y = torch.rand(batch, 3, side, side), torch.arange(batch) % 1000

            def run(model=model, x=x, y=y):
                if train:
                    model.zero_grad(set_to_none=True)
                    torch.nn.functional.cross_entropy(model(x), y).backward()
                    return
                with torch.no_grad():
                    model(x)
            out[f"{name}/{batch}"] = median_ms(run, runs)
    return out


def mxnet_worker(nets: list[str], batches: list[int], runs: int, train: bool) -> dict:
    import mxnet
    from mxnet import autograd, gluon
    from mxnet.gluon.model_zoo import vision
    out = {}
    for name in nets:
        for batch in batches:
            model = vision.get_model(MXNET_NAMES[name])
            model.initialize(mxnet.init.Xavier(magnitude=2.0))
            model.hybridize(static_alloc=True, static_shape=True)
            side = SIZE.get(name, 224)
            x = mxnet.nd.random.uniform(shape=(batch, 3, side, side))
            y = mxnet.nd.arange(batch) % 1000
            loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

            def run(model=model, x=x, y=y, loss_fn=loss_fn):
                if not train:
                    model(x).wait_to_read()
                    return
                with autograd.record():
                    loss = loss_fn(model(x), y)
                loss.backward()
                for p in model.collect_params().values():
                    if p.grad_req != "null":
                        p.grad().wait_to_read()
            out[f"{name}/{batch}"] = median_ms(run, runs)
    return out


WORKERS = {"symjit": symjit_worker, "torch": torch_worker, "torch.compile": torch_compile_worker,
           "mxnet": mxnet_worker}


def settings(a: argparse.Namespace) -> list[tuple[str, str, str, dict | None]]:
    """(label, worker, interpreter, environment) of every framework setting to time."""
    out = [("symjit", "symjit", sys.executable, None)]
    if a.peer_python:
        out.append(("torch", "torch", a.peer_python, None))
        if a.torch_compile:
            out.append(("torch.compile", "torch.compile", a.peer_python, None))
    if a.mxnet_python:
        for threads in a.mxnet_threads.split(","):
            if threads == "default":
                out.append(("mxnet", "mxnet", a.mxnet_python, None))
            else:
                out.append((f"mxnet OMP_NUM_THREADS={int(threads)}", "mxnet", a.mxnet_python,
                            dict(os.environ, OMP_NUM_THREADS=str(int(threads)))))
    return out


def run_worker(python: str, who: str, nets: list[str], batches: list[int], runs: int,
               train: bool, env: dict | None = None) -> dict | None:
    args = [python, __file__, "--worker", who, "--nets", ",".join(nets),
            "--batches", ",".join(map(str, batches)), "--runs", str(runs)] + (["--train"] if train else [])
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(f"{who}: skipped ({proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'})",
              file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--batches", default="2,32")
    ap.add_argument("--runs", type=int, default=10, help="timed forwards per (net, batch)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the frameworks one after the other this many times; the best round counts")
    ap.add_argument("--peer-python", default=None, help="an interpreter with PyTorch")
    ap.add_argument("--mxnet-python", default=None, help="an interpreter with MXNet 1.9.1")
    ap.add_argument("--train", action="store_true",
                    help="time a training step (forward and backward, softmax cross-entropy head) instead")
    ap.add_argument("--mxnet-threads", default="default,2",
                    help="MXNet's settings, comma-separated: 'default' (as installed: one thread per "
                         "operator on our 2-core machines) or an OMP_NUM_THREADS count")
    ap.add_argument("--no-torch-compile", dest="torch_compile", action="store_false",
                    help="time PyTorch eager only")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    nets, batches = a.nets.split(","), [int(b) for b in a.batches.split(",")]
    unknown = sorted(set(nets) - set(NETS))
    if unknown:
        ap.error(f"unknown nets {unknown}; choose from {list(NETS)}")
    if a.worker:
        print(json.dumps(WORKERS[a.worker](nets, batches, a.runs, a.train)))
        return
    runs = settings(a)
    results: dict[str, dict | None] = {}
    for _ in range(a.rounds):     # the frameworks alternate; each key keeps its best round
        for name in nets:
            for batch in batches:   # a process per (net, batch): an earlier big bind slowed later ones
                for label, who, python, env in runs:
                    if results.get(label, {}) is not None:
                        got = run_worker(python, who, [name], [batch], a.runs, a.train, env)
                        best = results.get(label) or {}
                        results[label] = None if got is None else {
                            **best, **{k: min(v, best.get(k, v)) for k, v in got.items()}}
    if not results.get("symjit"):
        sys.exit("bench_zoo: the symjit worker failed")
    peers = [label for label, *_ in runs[1:] if results.get(label)]
    print(f"| net | batch | symjit (ms) | {' | '.join(f'{p} (ms)' for p in peers)} | symjit vs best peer |")
    print("|---|---|---|" + "---|" * len(peers) + "---|")
    for key in results["symjit"]:
        name, batch = key.split("/")
        mine = results["symjit"][key]
        others = [results[p][key] for p in peers]
        ratio = "-"
        if others:
            best = min(range(len(peers)), key=lambda i: others[i])
            ratio = f"{others[best] / mine:.2f}x ({peers[best]})"
        print(f"| {name} | {batch} | {mine:.1f} | {' | '.join(f'{v:.1f}' for v in others)} | {ratio} |")


if __name__ == "__main__":
    main()
