"""Run op cases through the CUDA target on numba's simulator (run as a script, with
``NUMBA_ENABLE_CUDASIM=1`` set before numba is imported; ``tests/test_cuda_ops.py`` does that).

For every case of ``tests/cases`` whose forward program the CUDA target can lower, the forward
program runs on host arrays (the simulator accepts them) laid out as the executor lays them out
(arguments, aux states, outputs, and temporaries in one arena from the memory plan), and its
outputs are compared with the numpy reference (the case's dtypes and tolerances, as on the CPU).
A case whose compilation reports an op variant the target has no lowering for (take's
``mode='raise'``) is listed apart. Prints one JSON line:
``{"ran": [case ids], "failed": {case id: message}, "unlowered": {case id: message}}``.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config
from symjit.lower import lookup
from symjit.ops import get_op

from .cases import all_cases
from .opcheck import as_list


def run_forward(compiled, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Call the compiled forward program on ``arrays`` (by argument/aux name); return the outputs."""
    g, plan = compiled.graph, compiled.plan
    arena = np.zeros(max(plan.planned_bytes, 1), np.uint8)
    outs = [np.zeros(g.values[v].shape, g.values[v].dtype) for v in g.outputs]

    def array(vid: int) -> np.ndarray:
        v = g.values[vid]
        if v.kind in ("arg", "aux"):
            return arrays[v.ref]
        if v.kind == "out":
            return outs[g.outputs.index(vid)]
        if vid not in plan.offsets:
            return array(plan.aliases[vid]).reshape(v.shape)
        off = plan.offsets[vid]
        return arena[off:off + v.nbytes].view(v.dtype).reshape(v.shape)

    name, vids = compiled.program.entries["forward"]
    getattr(compiled.module, name)(*[array(v) for v in vids])
    return outs


def lowered_on_cuda(case) -> bool:
    """True when every op of the case's inference program has a CUDA rule."""
    from symjit.compiler.passes.build import build_forward
    sym = case.build({n: _var(n) for n in case.inputs})
    names = sym.list_arguments() + sym.list_auxiliary_states()
    g = build_forward(sym, {n: case.inputs[n].shape for n in names},
                      {n: case.inputs[n].dtype for n in names}, case.is_train)
    return all(lookup(get_op(op.op.name), "cuda") is not None for op in g.ops)


def _var(name: str):
    import symjit as mx
    return mx.sym.Variable(name)


def check_case(case) -> str | None:
    """None when the CUDA forward matches the reference, else a message."""
    sym = case.build({n: _var(n) for n in case.inputs})
    names = sym.list_arguments() + sym.list_auxiliary_states()
    arrays = {n: case.inputs[n] for n in names}
    compiled = compile_symbol(sym, {n: a.shape for n, a in arrays.items()},
                              {n: a.dtype for n, a in arrays.items()}, {}, case.is_train,
                              Config.from_env(), target="cuda")
    got = run_forward(compiled, {n: a.copy() for n, a in arrays.items()})
    want = as_list(case.ref(**{n: case.inputs[n] for n in case.inputs}))
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != np.shape(w):
            return f"output {i}: shape {g.shape}, expected {np.shape(w)}"
        if not np.allclose(g.astype(np.float64), w, rtol=case.rtol, atol=case.atol, equal_nan=True):
            err = float(np.nanmax(np.abs(g.astype(np.float64) - w)))
            return f"output {i}: max abs error {err}"
    return None


def main() -> None:
    from symjit.base import MXNetError
    ran, failed, unlowered = [], {}, {}
    cases = [c for c in all_cases() if not c.is_train]   # training-mode randomness is CPU-only so far
    for case in cases:
        if not lowered_on_cuda(case):
            continue
        try:
            msg = check_case(case)
        except MXNetError as exc:
            if "no cuda lowering" in str(exc):
                unlowered[str(case)] = str(exc)
                continue
            msg = f"MXNetError: {exc}"
        except Exception as exc:  # noqa: BLE001 - reported per case
            msg = f"{type(exc).__name__}: {exc}"
        ran.append(str(case))
        if msg is not None:
            failed[str(case)] = msg
    print(json.dumps({"ran": ran, "failed": failed, "unlowered": unlowered}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
