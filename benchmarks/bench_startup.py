"""A new process to its first finished training step of the tutorial MLP (784-128-64-10, batch
100, `simple_bind`, `Uniform` init, SGD with momentum through `get_updater`, `Accuracy`), symjit
with a warm kernel cache against MXNet 1.9.1 (when its interpreter is given), in one run.

Each round starts a new interpreter per framework running the same program text (`import symjit as
mx` or `import mxnet as mx`) and times the whole process from the outside: interpreter start,
imports, bind, one forward/backward/update step, the metric, exit. A first symjit run fills the
kernel cache and builds the program's and the update kernels' ahead-of-time modules
(`SYMJIT_AOT=sync`; not counted). symjit runs twice per round: as a user's process runs by default
(the ahead-of-time modules found: no numba) and with `SYMJIT_AOT=off` (numba loads the cached
kernels). Prints the median and best of the rounds and the ratios.

`--default-path N` instead runs the program, with a second bind at batch 50 and its forward and
backward added, N times in a row from an empty cache with the default settings (`SYMJIT_AOT`
unset), as a user's runs go: the first compiles, the second notes the ahead-of-time modules, the
third builds them at its bind, later ones load them. Prints each run's whole process.

    python benchmarks/bench_startup.py [--rounds 7] [--mxnet-python /path/to/mxnet-venv/bin/python]
    python benchmarks/bench_startup.py --default-path 6
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import numpy as np
import {module} as mx
data = mx.sym.Variable('data')
net = mx.sym.FullyConnected(data, num_hidden=128, name='fc1')
net = mx.sym.Activation(net, act_type='relu', name='relu1')
net = mx.sym.FullyConnected(net, num_hidden=64, name='fc2')
net = mx.sym.Activation(net, act_type='relu', name='relu2')
net = mx.sym.FullyConnected(net, num_hidden=10, name='fc3')
net = mx.sym.SoftmaxOutput(net, name='softmax')
rng = np.random.default_rng(0)
x = rng.random((1000, 784), dtype=np.float32)
y = rng.integers(0, 10, 1000).astype(np.float32)
it = mx.io.NDArrayIter(x, y, batch_size=100, shuffle=True, label_name='softmax_label')
ex = net.simple_bind(mx.cpu(), data=(100, 784))
init = mx.init.Uniform(0.07)
params = [n for n in net.list_arguments() if n not in ('data', 'softmax_label')]
for n in params:
    init(mx.init.InitDesc(n), ex.arg_dict[n])
updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.01))
metric = mx.metric.Accuracy()
batch = next(iter(it))
ex.arg_dict['data'][:] = batch.data[0]
ex.arg_dict['softmax_label'][:] = batch.label[0]
ex.forward(is_train=True)
ex.backward()
for i, n in enumerate(params):
    updater(i, ex.grad_dict[n], ex.arg_dict[n])
metric.update(batch.label, ex.outputs)
ex.arg_dict['fc1_weight'].asnumpy()
print(metric.get()[1])
"""


SECOND_BATCH = """
ex2 = net.simple_bind(mx.cpu(), data=(50, 784))
ex2.forward(is_train=True)
ex2.backward()
ex2.outputs[0].asnumpy()
"""


def run(python: str, module: str, env: dict, program: str = PROGRAM) -> float:
    start = time.perf_counter()
    subprocess.run([python, "-c", program.format(module=module)], env=env, check=True,
                   capture_output=True, text=True)
    return time.perf_counter() - start


def default_path(runs: int) -> None:
    """The program's runs in a row on one new cache, default settings."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYMJIT_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        env.pop("SYMJIT_AOT", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for i in range(runs):
            seconds = run(sys.executable, "symjit", env, PROGRAM + SECOND_BATCH)
            built = len(list(Path(cache, "aot").glob("symjit_aot_*.so")))
            print(f"run {i + 1}: whole process {seconds:.2f} s ({built} ahead-of-time modules in the cache "
                  "after it)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--mxnet-python", default=None, help="an interpreter with MXNet 1.9.1")
    ap.add_argument("--default-path", type=int, default=0, metavar="N",
                    help="N runs in a row from an empty cache with the default settings")
    args = ap.parse_args()
    if args.default_path:
        default_path(args.default_path)
        return
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYMJIT_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        peers = {"symjit": (sys.executable, "symjit", {"SYMJIT_AOT": "auto"}),
                 "symjit (numba cache)": (sys.executable, "symjit", {"SYMJIT_AOT": "off"})}
        if args.mxnet_python:
            peers["mxnet"] = (args.mxnet_python, "mxnet", {})
        runs: dict[str, list[float]] = {who: [] for who in peers}
        run(sys.executable, "symjit", dict(env, SYMJIT_AOT="sync"))   # kernels and ahead-of-time modules
        for python, module, extra in peers.values():   # warm the .pyc files
            run(python, module, dict(env, **extra))
        for _ in range(args.rounds):   # interleaved, so a slow spell of the machine hits all
            for who, (python, module, extra) in peers.items():
                runs[who].append(run(python, module, dict(env, **extra)))
    for who, times in runs.items():
        print(f"{who}: process to first finished step, median {statistics.median(times):.3f} s, "
              f"best {min(times):.3f} s ({args.rounds} rounds)")
    if "mxnet" in runs:
        for who in ("symjit", "symjit (numba cache)"):
            print(f"{who} / mxnet: {statistics.median(runs[who]) / statistics.median(runs['mxnet']):.2f}x "
                  "(median over median; lower is faster)")


if __name__ == "__main__":
    main()
