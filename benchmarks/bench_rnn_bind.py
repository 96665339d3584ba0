"""Binding a long ``RNN``: what MXNet's ``test_lstm_dropout`` does (``RNN`` over ``T`` steps, 5
layers, 800 units, batch 20, dropout between layers, ``simple_bind`` with gradients, one training
forward pass), each case in a new process with an empty kernel cache (``--warm``: the cache the
cold run left).

Prints per case: seconds of the bind, of the first and of a second forward pass, the process's
wall time and peak memory (RSS), and the training program's arena (planned bytes of its
temporaries).

    python benchmarks/bench_rnn_bind.py [--steps 30,100,300] [--modes lstm,gru] [--layers 5]
                                        [--hidden 800] [--warm]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def one(steps: int, mode: str, layers: int, hidden: int) -> dict:
    """Bind and run one case in this process."""
    import symjit as mx
    x, params, state = mx.sym.var("x"), mx.sym.var("params"), mx.sym.var("state")
    cell = {"state_cell": mx.sym.var("state_cell")} if mode == "lstm" else {}
    rnn = mx.sym.RNN(data=x, parameters=params, state=state, state_size=hidden, num_layers=layers,
                     mode=mode, p=0.5, state_outputs=True, name="rnn", **cell)
    start = time.perf_counter()
    ex = rnn.simple_bind(ctx=mx.cpu(), x=(steps, 20, hidden))
    bound = time.perf_counter()
    ex.forward(is_train=True)[0].wait_to_read()
    first = time.perf_counter()
    ex.forward(is_train=True)[0].wait_to_read()
    second = time.perf_counter()
    return {"bind_s": bound - start, "first_forward_s": first - bound, "second_forward_s": second - first,
            "arena_bytes": ex.planned_bytes}


def run_case(steps: int, mode: str, layers: int, hidden: int, cache: str) -> dict:
    """One case in a new process with ``cache`` as its kernel cache."""
    env = dict(os.environ, SYMJIT_CACHE_DIR=cache)
    code = (f"import json, resource, sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
            f"import bench_rnn_bind as b; r = b.one({steps}, {mode!r}, {layers}, {hidden}); "
            "r['rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024; print(json.dumps(r))")
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - start
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default="30,100,300", help="sequence lengths, comma-separated")
    ap.add_argument("--modes", default="lstm,gru", help="RNN modes, comma-separated")
    ap.add_argument("--layers", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=800)
    ap.add_argument("--warm", action="store_true", help="also run each case again on the cache it left")
    args = ap.parse_args()
    print(f"{'mode':5s} {'T':>4s} {'cache':5s} {'bind s':>7s} {'fwd1 s':>7s} {'fwd2 s':>7s} "
          f"{'process s':>9s} {'RSS MB':>7s} {'arena MB':>8s}")
    for mode in args.modes.split(","):
        for steps in (int(s) for s in args.steps.split(",")):
            with tempfile.TemporaryDirectory() as cache:
                for kind in ("cold", "warm") if args.warm else ("cold",):
                    r = run_case(steps, mode, args.layers, args.hidden, cache)
                    print(f"{mode:5s} {steps:4d} {kind:5s} {r['bind_s']:7.1f} {r['first_forward_s']:7.2f} "
                          f"{r['second_forward_s']:7.2f} {r['process_s']:9.1f} {r['rss_mb']:7.0f} "
                          f"{r['arena_bytes'] / 2**20:8.0f}", flush=True)


if __name__ == "__main__":
    main()
