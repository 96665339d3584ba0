"""The oracle for executing operators: numpy references and central finite differences.

Each op family has a case table (``tests/cases/<family>.py``) listing :class:`Case` records:
how to build a symbol, the input arrays, a numpy reference of the forward, and how to check the
gradient. ``tests/test_op_exec.py`` runs every case through bind/forward/backward (compiled
kernels) on every target (the CPU, and CUDA on a GPU or numba's simulator), with fusion on and
off; ``tests/test_registry.py`` fails on any registered op that has no case, no gradient rule or no
lowering.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

import symjit as mx
from symjit.config import Config


@dataclasses.dataclass
class Case:
    """One executable check of an operator.

    ``build(vars) -> Symbol`` receives a dict of ``mx.sym.Variable`` by input name.
    ``inputs`` maps input names (arguments, and aux states) to arrays (float64 unless an input
    must be integral-valued, e.g. labels or indices, which are given as floats of integral value).
    ``ref(**inputs) -> array or list of arrays`` is the numpy forward reference.
    ``grad``: "numeric" (finite differences of sum(out * head_grad)), "none" (the op has no
    gradient to check, e.g. comparisons), or a function ``(inputs, outputs, head_grads) ->
    {name: expected gradient}`` for loss heads whose gradient is defined, not derived.
    ``wrt`` restricts which inputs get gradients (default: all float inputs not in ``no_grad``).
    ``is_train`` runs forward in training mode (BatchNorm batch statistics, Dropout masks).
    ``after(**inputs) -> {name: array}``: the values inputs the op changes in place (an optimizer
    update's states) must hold after one forward.
    """

    op: str
    build: Callable[[dict], Any]
    inputs: dict[str, np.ndarray]
    ref: Callable[..., Any]
    grad: Any = "numeric"
    no_grad: tuple[str, ...] = ()
    is_train: bool = False
    rtol: float = 1e-5
    atol: float = 1e-6
    grad_rtol: float = 1e-4
    grad_atol: float = 1e-6
    id: str = ""
    after: Callable[..., dict] | None = None

    def __str__(self) -> str:
        return f"{self.op}-{self.id}" if self.id else self.op


def bind_case(case: Case, fusion: bool = True, grad_req: str = "write", ctx: Any = None,
              program_calls: int | None = None, interpret: bool = False):
    """Bind the case's symbol on its inputs (copied), float64 unless given otherwise, on ``ctx``
    (default the CPU; ``mx.gpu(0)`` compiles for the CUDA target); ``program_calls`` overrides the
    environment's ``Config.program_calls``. The op cases test the compiled kernels: small programs
    compile at once unless ``interpret`` (:mod:`symjit.compiler.tier`)."""
    ctx = ctx or mx.cpu()
    sym = case.build({n: mx.sym.Variable(n) for n in case.inputs})
    arg_names = sym.list_arguments()
    aux_names = sym.list_auxiliary_states()
    args = {n: mx.nd.array(case.inputs[n], ctx=ctx, dtype=case.inputs[n].dtype) for n in arg_names}
    aux = {n: mx.nd.array(case.inputs[n], ctx=ctx, dtype=case.inputs[n].dtype) for n in aux_names}
    wrt = grad_inputs(case, arg_names)
    reqs = {n: (grad_req if n in wrt else "null") for n in arg_names}
    grads = {n: mx.nd.zeros(args[n].shape, ctx=ctx, dtype=args[n].dtype) for n in wrt}
    cfg = Config.from_env().replace(fusion=fusion, interpret=interpret)
    if program_calls is not None:
        cfg = cfg.replace(program_calls=program_calls)
    from symjit.executor import Executor
    ex = Executor(sym, ctx, args, grads, reqs, aux or None, config=cfg)
    return ex, sym, wrt


def grad_inputs(case: Case, arg_names: list[str]) -> list[str]:
    if case.grad == "none":
        return []
    return [n for n in arg_names if n not in case.no_grad and case.inputs[n].dtype.kind == "f"]


def as_list(x: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in x] if isinstance(x, (list, tuple)) else [np.asarray(x)]


def head_grads_for(outputs: list[np.ndarray], seed: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, o.shape).astype(o.dtype) for o in outputs]


def numeric_grad(ex, name: str, head: list[np.ndarray], is_train: bool, eps: float = 1e-6) -> np.ndarray:
    """Central differences of sum(out * head) wrt argument ``name`` (perturbed in place)."""
    arr = ex.arg_dict[name]
    base = arr.asnumpy()
    flat = base.reshape(-1)
    out = np.zeros(flat.shape, dtype=np.float64)
    for i in range(flat.size):
        for sign in (1.0, -1.0):
            pert = flat.copy()
            pert[i] += sign * eps
            arr[:] = pert.reshape(base.shape)
            outs = ex.forward(is_train=is_train)
            val = sum(float(np.sum(o.asnumpy() * h)) for o, h in zip(outs, head))
            out[i] += sign * val
        out[i] /= 2 * eps
    arr[:] = base
    return out.reshape(base.shape)


def check_forward(case: Case, fusion: bool = True, ctx: Any = None, float32: tuple[bool, ...] = ()) -> None:
    """The case's outputs (and the inputs an update changes) against its numpy reference; then its
    float32 program on ``ctx`` with each fusion of ``float32`` against this program
    (:func:`check_float32`)."""
    ex, _, _ = bind_case(case, fusion, ctx=ctx)
    outs = [o.asnumpy() for o in ex.forward(is_train=case.is_train)]
    want = as_list(case.ref(**{k: v.copy() for k, v in case.inputs.items()}))
    assert len(outs) == len(want), f"{case}: {len(outs)} outputs, reference has {len(want)}"
    for i, (got, exp) in enumerate(zip(outs, want)):
        assert got.shape == exp.shape, f"{case}: output {i} shape {got.shape}, expected {exp.shape}"
        np.testing.assert_allclose(got, exp, rtol=case.rtol, atol=case.atol, err_msg=f"{case} output {i}")
    if case.after is not None:
        arrays = {**ex.arg_dict, **ex.aux_dict}
        for name, exp in case.after(**{k: v.copy() for k, v in case.inputs.items()}).items():
            np.testing.assert_allclose(arrays[name].asnumpy(), exp, rtol=case.rtol, atol=case.atol,
                                       err_msg=f"{case}: {name} after the update")
    for f in float32:
        check_float32(case, f, ctx, reference=ex)


def check_backward(case: Case, fusion: bool = True, float32: tuple[bool, ...] = ()) -> None:
    """The case's gradients (its CPU program with ``fusion``) against finite differences or its
    defined gradient; then its float32 CPU program with each fusion of ``float32`` against this
    program (:func:`check_float32`)."""
    if case.grad == "none":
        return
    ex, sym, wrt = bind_case(case, fusion)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    head = head_grads_for(outs)
    ex.backward([mx.nd.array(h, dtype=h.dtype) for h in head])
    got = {n: ex.grad_dict[n].asnumpy() for n in wrt}
    for again in (2, 3):   # more backward calls after one forward rewrite the same gradients
        ex.backward([mx.nd.array(h, dtype=h.dtype) for h in head])
        for n in wrt:
            np.testing.assert_allclose(ex.grad_dict[n].asnumpy(), got[n], rtol=1e-6, atol=1e-12,
                                       err_msg=f"{case}: gradient of {n}, backward call {again} "
                                               f"after one forward (grad_req='write')")
    if callable(case.grad):
        want = case.grad({k: v.copy() for k, v in case.inputs.items()}, outs, head)
    else:
        want = {n: numeric_grad(ex, n, head, True) for n in wrt}
    for n in wrt:
        if n in want:
            np.testing.assert_allclose(got[n], want[n], rtol=case.grad_rtol, atol=case.grad_atol,
                                       err_msg=f"{case}: gradient of {n}")
    for f in float32:
        check_float32(case, f, reference=ex)


def check_backward_like_cpu(case: Case, fusion: bool, ctx: Any, float32: tuple[bool, ...] = ()) -> None:
    """The gradients of the case's training program on ``ctx`` with ``fusion`` equal those of the
    fused CPU program (which :func:`check_backward` holds to finite differences), for the same head
    gradients. The program checked accumulates (``grad_req='add'``, from zero) over three backward
    calls after one forward (two on CUDA), which must give that many times the reference. The
    fused CPU program, an oracle here, calls its kernels from the host (``program_calls=0``), as
    CI's bulk of op cases compiles it, so a later run of the unfused cases with program functions
    (CI's -O3 run) loads it from the cache. Then the float32 program on ``ctx`` with each fusion of
    ``float32`` against the fused CPU program (:func:`check_float32`)."""
    if case.grad == "none":
        return
    ref, _, wrt = bind_case(case, True, program_calls=0)
    outs = [o.asnumpy() for o in ref.forward(is_train=True)]
    head = head_grads_for(outs)
    ref.backward([mx.nd.array(h, dtype=h.dtype) for h in head])
    ex, _, _ = bind_case(case, fusion, grad_req="add", ctx=ctx)
    got = [o.asnumpy() for o in ex.forward(is_train=True)]
    for i, (g, w) in enumerate(zip(got, outs)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7, err_msg=f"{case}: training output {i}")
    for calls in ((1, 2, 3) if ctx.device_type == "cpu" else (1, 2)):   # numba's simulator is slow
        ex.backward([mx.nd.array(h, ctx=ctx, dtype=h.dtype) for h in head])
        for n in wrt:
            np.testing.assert_allclose(
                ex.grad_dict[n].asnumpy(), calls * ref.grad_dict[n].asnumpy(), rtol=1e-5,
                atol=1e-7 * calls, err_msg=f"{case}: gradient of {n} ({ctx}, fusion={fusion}) after "
                                           f"{calls} backward call(s), grad_req='add'")
    for f in float32:
        check_float32(case, f, ctx, reference=ref)


def _float32_build(case: Case) -> Callable[[dict], Any]:
    """The case's ``build`` with each dtype param that names float64 (``Embedding(dtype=
    'float64')``) naming float32."""
    def build(variables: dict) -> Any:
        sym = case.build(variables)
        for node in sym._topo():
            for param in () if node.is_variable else node.op.params:
                if param.kind == "dtype" and node.params.get(param.name) == "float64":
                    node.params[param.name] = "float32"
        return sym
    return build


def _rounded(case: Case, dtype) -> Case:
    """The case with its float64 inputs rounded to float32 and stored as ``dtype`` (integral inputs,
    of an int dtype or of integral value, stay integral; an input its op types float64 whatever
    the data, an update's scalars, stays as it is), built by :func:`_float32_build` for float32."""
    build32 = _float32_build(case)
    sym = build32({n: mx.sym.Variable(n) for n in case.inputs})
    args, _, aux = sym.infer_type_partial()
    fixed = {n for n, t in zip(sym.list_arguments() + sym.list_auxiliary_states(), args + aux)
             if t is not None and np.dtype(t) == np.float64}
    inputs = {n: (v.astype(np.float32).astype(dtype) if v.dtype == np.float64 and n not in fixed else v)
              for n, v in case.inputs.items()}
    return dataclasses.replace(case, inputs=inputs, build=build32 if dtype == np.float32 else case.build)


def _node_shapes(case: Case) -> list[tuple[dict, list]]:
    """``(params, input shapes)`` of each node of the case's op in its symbol."""
    sym = case.build({n: mx.sym.Variable(n) for n in case.inputs})
    names = sym.list_arguments() + sym.list_auxiliary_states()
    internals = sym.get_internals()
    arg_shapes, out_shapes, aux_shapes = internals.infer_shape(**{n: case.inputs[n].shape for n in names})
    shapes = dict(zip(internals.list_outputs(), out_shapes))
    shapes.update(zip(internals.list_arguments(), arg_shapes))
    shapes.update(zip(internals.list_auxiliary_states(), aux_shapes))
    from symjit.ops import get_op
    want = get_op(case.op)
    found = []
    for node in sym._topo():
        if node.op is want:
            ins = [shapes.get(src.name if src.is_variable else src.output_name(i)) for src, i in node.inputs]
            found.append((node.params, [tuple(s) for s in ins if s is not None]))
    return found


def _run(ex: Any, case: Case, wrt: list[str]) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """Outputs and gradients of one forward of ``ex`` (training mode where the case has gradients)
    and one backward with head gradients drawn like :func:`head_grads_for` (rounded to float32),
    the random ops seeded alike."""
    mx.random.seed(11)
    results = ex.forward(is_train=case.is_train or bool(wrt))
    outs = [o.asnumpy() for o in results]
    grads: dict[str, np.ndarray] = {}
    if wrt:
        head = [h.astype(np.float32).astype(o.dtype) for h, o in zip(head_grads_for(outs), outs)]
        ex.backward([mx.nd.array(h, ctx=r.context, dtype=h.dtype) for h, r in zip(head, results)])
        grads = {n: ex.grad_dict[n].asnumpy() for n in wrt}
    return outs, grads


def _float64_run(case: Case, fusion: bool, ctx: Any, reference: Any) -> tuple[list, dict, list]:
    """:func:`_run` of the case's float64 program on its float32-rounded inputs: ``reference``'s
    (an executor :func:`bind_case` bound for ``case`` with ``grad_req='write'``, on any device and
    with any fusion, its arguments and aux states overwritten with the rounded inputs) or, without
    one, a new binding on ``ctx`` with ``fusion``."""
    rounded = _rounded(case, np.float64)
    if reference is None:
        ex, _, wrt = bind_case(rounded, fusion, ctx=ctx)
    else:
        ex, wrt = reference, grad_inputs(case, list(reference.arg_dict))
        arrays = {**ex.arg_dict, **ex.aux_dict}
        for name, value in rounded.inputs.items():
            if name in arrays:
                arrays[name][:] = value
    return (*_run(ex, rounded, wrt), wrt)


def float32_errors(case: Case, fusion: bool = True, ctx: Any = None,
                   reference: Any = None) -> list[tuple[str, float]]:
    """``(what, error)`` of every float output and gradient of the case's float32 program on ``ctx``
    with ``fusion`` against its float64 run on the same (float32-rounded) inputs (``reference``'s,
    see :func:`_float64_run`), the error as ``max |y32 - y64| / max |y64|`` over the finite
    elements; non-float outputs, and which elements are not finite, must match."""
    ctx = ctx or mx.cpu()
    o64, g64, wrt = _float64_run(case, fusion, ctx, reference)
    ex32, _, _ = bind_case(_rounded(case, np.float32), fusion, ctx=ctx)
    o32, g32 = _run(ex32, case, wrt)
    pairs = [(f"output {i}", a, b) for i, (a, b) in enumerate(zip(o32, o64))]
    pairs += [(f"gradient of {n}", g32[n], g64[n]) for n in wrt]
    errors = []
    for what, got, ref in pairs:
        assert got.shape == ref.shape, f"{case}: {what}: shape {got.shape} in float32, {ref.shape} in float64"
        if ref.dtype.kind != "f" or got.dtype.kind != "f":
            np.testing.assert_array_equal(got, ref, err_msg=f"{case}: {what} (not a float)")
            continue
        got, ref = got.astype(np.float64), ref.astype(np.float64)
        finite, where = np.isfinite(ref), f"{case}: {what}: non-finite elements"
        np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=where)
        np.testing.assert_array_equal(got[~finite], ref[~finite], err_msg=where)
        scale = np.abs(ref[finite]).max(initial=0.0)
        diff = np.abs(got[finite] - ref[finite]).max(initial=0.0)
        errors.append((what, diff / scale if scale > 0 else (0.0 if diff == 0 else np.inf)))
    return errors


def check_float32(case: Case, fusion: bool = True, ctx: Any = None, reference: Any = None) -> None:
    """The case's float32 outputs and gradients (its program on ``ctx`` with ``fusion``) within its
    op's float32 bound (:func:`symjit.ops.float32.float32_error`) of its float64 run on the same
    inputs (``reference``'s, an executor of the case already bound: see :func:`_float64_run`)."""
    from symjit.ops import get_op
    from symjit.ops.float32 import float32_error
    model = float32_error(get_op(case.op))
    assert model is not None, f"{case.op}: no float32 error model (symjit/ops/float32.py)"
    nodes = _node_shapes(case)
    bound = max((model.bound(p, shapes) for p, shapes in nodes), default=model.bound({}, []))
    for what, err in float32_errors(case, fusion, ctx, reference):
        assert err <= bound, (f"{case}: {what} differs from float64 by {err:.3g} of its largest value "
                              f"({err / model.eps:.1f} float32 epsilons), bound {bound:.3g} ({model})")
