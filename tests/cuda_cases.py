"""Run op cases through the CUDA target on numba's simulator (run as a script, with
``NUMBA_ENABLE_CUDASIM=1`` set before numba is imported; ``tests/test_cuda_ops.py`` does that).

For every case of ``tests/cases`` whose forward program the CUDA target can lower, the forward
program runs on host arrays (the simulator accepts them) laid out as the executor lays them out
(arguments, aux states, outputs, and temporaries in one arena from the memory plan), and its
outputs are compared with the numpy reference (the case's dtypes and tolerances, as on the CPU).
Where the target lowers the whole training program too, forward + backward run with the same head
gradients as the CPU test and the gradients are compared with the CPU executor's. Then a training
step of the tutorial MLP and of LeNet (small images) is compared with the CPU the same way.
A case whose compilation reports an op variant the target has no lowering for (take's
``mode='raise'``) is listed apart. Prints one JSON line:
``{"ran": [...], "backward": [...], "failed": {case id: message}, "unlowered": {case id: message}}``.
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


def run_program(compiled, arrays: dict[str, np.ndarray], head: list[np.ndarray] | None = None):
    """Call the compiled forward program on ``arrays`` (by argument/aux name), then, with ``head``
    (one head gradient per output), the backward program; return (outputs, gradients by name)."""
    g, plan = compiled.graph, compiled.plan
    arena = np.zeros(max(plan.planned_bytes, 1), np.uint8)
    outs = [np.zeros(g.values[v].shape, g.values[v].dtype) for v in g.outputs]
    grads = {name: np.zeros(g.values[v].shape, g.values[v].dtype) for name, v in g.grads.items()}
    heads = {v: head[i] for i, v in g.head_grads.items()} if head is not None else {}

    def array(vid: int) -> np.ndarray:
        v = g.values[vid]
        if v.kind in ("arg", "aux"):
            return arrays[v.ref]
        if v.kind == "out":
            return outs[g.outputs.index(vid)]
        if v.kind == "grad":
            return grads[v.ref]
        if v.kind == "head_grad":
            return heads[vid]
        if vid not in plan.offsets:
            return array(plan.aliases[vid]).reshape(v.shape)
        off = plan.offsets[vid]
        return arena[off:off + v.nbytes].view(v.dtype).reshape(v.shape)

    env = {"ctx": _cpu()}   # host calls (Custom ops) see the host arrays the simulator runs on
    for phase in ("forward", "backward") if head is not None else ("forward",):
        for seg in compiled.program.segments[phase]:
            arrays_of = [array(v) for v in seg.vids]
            if seg.kind == "host":
                n_in = len(seg.node.inputs)
                seg.node.op.extra["host"](seg.node, arrays_of[:n_in], arrays_of[n_in:], seg.reqs, env)()
            else:
                getattr(compiled.module, seg.name)(*arrays_of)
    return outs, grads


def _cpu():
    import symjit as mx
    return mx.cpu()


def _program(case, train: bool):
    """The case's compiled CUDA program: inference, or training with gradients of ``wrt``."""
    from .opcheck import grad_inputs
    sym = case.build({n: _var(n) for n in case.inputs})
    names = sym.list_arguments() + sym.list_auxiliary_states()
    wrt = grad_inputs(case, sym.list_arguments()) if train else []
    reqs = {n: ("write" if n in wrt else "null") for n in sym.list_arguments()} if wrt else {}
    return compile_symbol(sym, {n: case.inputs[n].shape for n in names},
                          {n: case.inputs[n].dtype for n in names}, reqs, train or case.is_train,
                          Config.from_env(), target="cuda")


def lowered_on_cuda(case, train: bool = False) -> bool:
    """True when every op of the case's program (inference, or forward + backward) has a CUDA rule
    (the passes before code generation, so an op variant a rule rejects still counts as lowered and
    is reported when it compiles)."""
    from symjit.compiler.passes.autodiff import autodiff
    from symjit.compiler.passes.build import build_forward
    from symjit.compiler.passes.simplify import simplify

    from .opcheck import grad_inputs
    sym = case.build({n: _var(n) for n in case.inputs})
    names = sym.list_arguments() + sym.list_auxiliary_states()
    g = build_forward(sym, {n: case.inputs[n].shape for n in names},
                      {n: case.inputs[n].dtype for n in names}, train or case.is_train)
    if train:
        wrt = grad_inputs(case, sym.list_arguments())
        g = autodiff(g, {n: ("write" if n in wrt else "null") for n in sym.list_arguments()})
    g = simplify(g, fusion=True)
    return all(lookup(get_op(op.op.name), "cuda") is not None for op in g.ops)


def _var(name: str):
    import symjit as mx
    return mx.sym.Variable(name)


def check_case(case) -> str | None:
    """None when the CUDA forward matches the reference, else a message."""
    compiled = _program(case, False)
    got, _ = run_program(compiled, {n: a.copy() for n, a in case.inputs.items()})
    want = as_list(case.ref(**{n: case.inputs[n] for n in case.inputs}))
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != np.shape(w):
            return f"output {i}: shape {g.shape}, expected {np.shape(w)}"
        if not np.allclose(g.astype(np.float64), w, rtol=case.rtol, atol=case.atol, equal_nan=True):
            err = float(np.nanmax(np.abs(g.astype(np.float64) - w)))
            return f"output {i}: max abs error {err}"
    return None


EXERCISED: set[str] = set()   # ops of the training programs that ran on CUDA


def check_gradients(case) -> str | None:
    """None when the CUDA training program's gradients match the CPU executor's (same head
    gradients, fused CPU program as the oracle), else a message."""
    import symjit as mx

    from .opcheck import bind_case, head_grads_for
    ex, _, wrt = bind_case(case)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    head = head_grads_for(outs)
    ex.backward([mx.nd.array(h, dtype=h.dtype) for h in head])
    compiled = _program(case, True)
    EXERCISED.update(op.op.name for op in compiled.graph.ops)
    _, grads = run_program(compiled, {n: a.copy() for n, a in case.inputs.items()}, head)
    for n in wrt:
        want = ex.grad_dict[n].asnumpy()
        if not np.allclose(grads[n], want, rtol=1e-5, atol=1e-7, equal_nan=True):
            return f"gradient of {n}: max abs error {float(np.nanmax(np.abs(grads[n] - want)))}"
    return None


def check_net(sym, data_shape: tuple, seed: int = 0) -> str | None:
    """A training step (forward in training mode + backward) of a whole network, the CUDA program
    on the simulator against the CPU executor: outputs and every parameter gradient."""
    import symjit as mx
    rng = np.random.default_rng(seed)
    arg_shapes, _, _ = sym.infer_shape(data=data_shape)
    names = sym.list_arguments()
    arrays = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32) for n, s in zip(names, arg_shapes)}
    label = next(n for n in names if n.endswith("label"))
    arrays[label] = rng.integers(0, 10, arrays[label].shape).astype(np.float32)
    ex = sym.simple_bind(mx.cpu(), **{n: a.shape for n, a in arrays.items()})
    for n, a in arrays.items():
        ex.arg_dict[n][:] = a
    want = ex.forward(is_train=True)[0].asnumpy()
    ex.backward()
    reqs = {n: ("null" if n in ("data", label) else "write") for n in names}
    compiled = compile_symbol(sym, {n: a.shape for n, a in arrays.items()},
                              {n: a.dtype for n, a in arrays.items()}, reqs, True, Config.from_env(),
                              target="cuda")
    outs, grads = run_program(compiled, arrays, head=[])
    if not np.allclose(outs[0], want, rtol=1e-4, atol=1e-6):
        return f"output: max abs error {float(np.abs(outs[0] - want).max())}"
    for n, g in grads.items():
        ref = ex.grad_dict[n].asnumpy()
        if not np.allclose(g, ref, rtol=1e-3, atol=1e-5):
            return f"gradient of {n}: max abs error {float(np.abs(g - ref).max())}"
    return None


def main() -> None:
    from symjit.base import MXNetError
    ran, failed, unlowered = [], {}, {}
    cases = all_cases()
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
    backward = []   # cases whose whole training program the CUDA target lowers
    for case in cases:
        if case.grad == "none" or str(case) in unlowered or not lowered_on_cuda(case, train=True):
            continue
        backward.append(str(case))
        try:
            msg = check_gradients(case)
        except Exception as exc:  # noqa: BLE001 - reported per case
            msg = f"{type(exc).__name__}: {exc}"
        if msg is not None:
            failed[f"{case} (backward)"] = msg
    from examples.nets import lenet, mlp
    nets = {"mlp": (mlp(), (4, 20)), "lenet": (lenet(), (1, 1, 16, 16))}
    for name, (sym, shape) in nets.items():
        try:
            msg = check_net(sym, shape)
        except Exception as exc:  # noqa: BLE001 - reported per net
            msg = f"{type(exc).__name__}: {exc}"
        if msg is not None:
            failed[f"net {name}"] = msg
    print(json.dumps({"ran": ran, "backward": backward, "failed": failed, "unlowered": unlowered,
                      "exercised": sorted(EXERCISED), "nets": sorted(nets)}))
    sys.stdout.flush()


if __name__ == "__main__":
    # the simulator hands the GIL between its thread-per-CUDA-thread at every poll and barrier:
    # a short switch interval makes that several times faster (a test-harness setting)
    sys.setswitchinterval(1e-3)
    main()
