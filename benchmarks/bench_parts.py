"""Loops split into parts on symjit's thread pool against numba's ``prange``: compile time and speed.

One map loop (a BatchNorm + relu epilogue over an NCHW array, as the compiler writes one) in three
forms, each compiled in this process: ``prange`` (``parallel=True``, how generated loops ran on
two cores before), parts (the serial kernel with ``part, parts`` arguments run by
:class:`symjit.parts.PartsCall`, how they run now) and serial. Prints each form's compile time
(numba's compiler warm: a throwaway kernel compiles first), then per loop size the median
microseconds of a call, back to back and with a pause of ``--gap`` ms of the caller's own work
between calls (the workers' idle wait: numba's OpenMP threads and symjit's spin ~0.4 ms, then
sleep). The forms take turns within each size.

    python benchmarks/bench_parts.py [--sizes 131072,524288,2097152] [--calls 400] [--gap 0,0.2,2]
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import symjit  # noqa: F401  (symjit's thread settings: OMP_WAIT_POLICY, GOMP_SPINCOUNT)
from symjit.parts import PartsCall
from symjit.threads import parts_for_thread

BODY = """
def KERNEL(x, mean, invstd, out{extra}):
    c_, hw = x.shape[1], x.shape[2] * x.shape[3]
    n = x.shape[0] * c_
{head}
        nn, c = t // c_, t % c_
        m, s = mean[c], invstd[c]
        xf, of = x[nn, c].reshape(-1), out[nn, c].reshape(-1)
        for i in range(hw):
            of[i] = max((xf[i] - m) * s, np.float32(0.0))
"""
HEADS = {
    "prange": ("", "    for t in numba.prange(n):"),
    "parts": (", part, parts", "    for t in range(part * n // parts, (part + 1) * n // parts):"),
    "serial": ("", "    for t in range(n):"),
}


def build(form: str):
    """The loop in ``form`` (:data:`HEADS`), compiled; returns (a callable, seconds to compile)."""
    extra, head = HEADS[form]
    scope = {"numba": numba, "np": np}
    exec(BODY.format(extra=extra, head=head), scope)   # noqa: S102  (this script's own source)
    fn = numba.njit(nogil=True, error_model="numpy", parallel=form == "prange")(scope["KERNEL"])
    x = np.ones((1, 1, 1, 1), np.float32)
    v = np.ones(1, np.float32)
    start = time.perf_counter()
    fn.compile((numba.typeof(x), numba.typeof(v), numba.typeof(v), numba.typeof(x))
               + ((numba.int64, numba.int64) if form == "parts" else ()))
    seconds = time.perf_counter() - start
    if form == "parts":
        call = PartsCall(fn)
        return (lambda *a: call(*a, 0, 1)), seconds
    return fn, seconds


def median_us(fn, args: tuple, calls: int, gap: float) -> float:
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
        end = time.perf_counter() + gap
        while time.perf_counter() < end:   # the caller's own work between two loops
            pass
    return float(np.median(times)) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="131072,524288,2097152", help="elements of the loop")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--gap", default="0,0.2,2", help="ms of the caller's work between calls")
    args = ap.parse_args()
    build("serial")   # numba's compiler warm before the timed compiles
    forms = {f: build(f) for f in HEADS}
    print("compile: " + ", ".join(f"{f} {s:.2f} s" for f, (_, s) in forms.items()))
    print(f"parts: {parts_for_thread()}, numba threads: {numba.get_num_threads()}")
    rng = np.random.default_rng(0)
    for size in (int(s) for s in args.sizes.split(",")):
        c = 64
        x = rng.standard_normal((max(1, size // (c * 32 * 32)), c, 32, 32)).astype(np.float32)
        mean, invstd = rng.standard_normal(c).astype(np.float32), rng.random(c).astype(np.float32) + 0.5
        outs = {f: np.empty_like(x) for f in forms}
        for gap in (float(g) / 1e3 for g in args.gap.split(",")):
            got: dict[str, list[float]] = {f: [] for f in forms}
            for _ in range(3):   # the forms take turns
                for f, (fn, _) in forms.items():
                    got[f].append(median_us(fn, (x, mean, invstd, outs[f]), args.calls // 3, gap))
            line = ", ".join(f"{f} {min(v):.1f}" for f, v in got.items())
            print(f"{x.size} elements, gap {gap * 1e3:g} ms: {line} us")
        for f in forms:
            assert np.array_equal(outs[f], outs["serial"]), f


if __name__ == "__main__":
    main()
