"""Every case of every op family, through compiled kernels on every target (the CPU, and CUDA on
numba's simulator or a GPU), fused and unfused: the forward against its numpy reference; the
gradients of the fused CPU program against central finite differences in float64, and every other
(target, fusion) program's gradients against those (see tests/opcheck.py).

On CUDA run every case of the ops with a CUDA lowering of their own, and the first case of each
other op (their other cases share the target-neutral lowering the CPU runs them through; CI
compiles every case's CUDA kernels to PTX). The default tier runs each op's first case fused on the
CPU, and each family's first case fused and unfused on the CPU and fused on CUDA; the rest of the
matrix is marked ``exhaustive`` (``--exhaustive``, which CI gives). The float32 oracle runs inside
these tests (:func:`float32_fusions`, ``tests/test_op_float32.py``)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config
from symjit.ops.registry import Kind, get_op

from .cases import cases_by_family
from .opcheck import check_backward, check_backward_like_cpu, check_forward

FAMILIES = cases_by_family()
CASES = [case for cases in FAMILIES.values() for case in cases]
FIRST_OF_FAMILY = {id(cases[0]) for cases in FAMILIES.values() if cases}
# each op's first case, and its first case with a gradient to check
FIRST_OF_OP = {id(case) for cases in (CASES, [c for c in CASES if c.grad != "none"])
               for case in {c.op: c for c in reversed(cases)}.values()}
CONTEXTS = {"cpu": mx.cpu(), "cuda": mx.gpu(0)}


def _cuda_lowering_of_its_own(op_name: str) -> bool:
    """Whether the op has a lowering rule registered for the CUDA target itself (rather than the
    target-neutral rules and loop generator that its CPU cases test too)."""
    from symjit.lower import get_target, lookup
    cuda = get_target("cuda")
    found = lookup(get_op(op_name), cuda)
    return found is not None and getattr(found, "target", None) is type(cuda)


# the cases run on CUDA: every case of an op with a CUDA lowering of its own, the first case of
# every other op and of every family (every case's CUDA kernels are compiled to PTX by CI)
CUDA_OWN = {id(c) for c in CASES if _cuda_lowering_of_its_own(c.op)}
ON_CUDA = FIRST_OF_OP | FIRST_OF_FAMILY | CUDA_OWN
TARGETS = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def fusion_is_moot(case, target: str) -> bool:
    """The case is one node of an opaque op whose inference program on ``target`` is the same code
    with fusion on and off (generated, not compiled, to find out): its forward runs fused only."""
    op = get_op(case.op)
    if op.expand is not None or op.kind != Kind.OPAQUE:
        return False
    sym = case.build({n: mx.sym.Variable(n) for n in case.inputs})
    if sum(not node.is_variable for node in sym._topo()) != 1:
        return False
    names = sym.list_arguments() + sym.list_auxiliary_states()
    shapes = {n: case.inputs[n].shape for n in names}
    dtypes = {n: case.inputs[n].dtype for n in names}
    try:
        cfgs = [Config.from_env().replace(fusion=f) for f in (True, False)]
        sources = {compile_symbol(sym, shapes, dtypes, {}, case.is_train, cfg, target=target,
                                  load=False).program.module_source for cfg in cfgs}
    except MXNetError:
        return False
    return len(sources) == 1


def _variants(cases: list, forward: bool = False) -> list:
    """(case, target, fusion) to run: every case fused and unfused on the CPU; fused on CUDA the
    cases of :data:`ON_CUDA` (every case of an op the CUDA target lowers its own way, each other
    op's first case: the rest share the CPU's target-neutral lowering), and each family's first
    case unfused on CUDA too (every case's CUDA kernels are compiled to PTX by CI); a composite op
    (``expand``: the ops it expands to have cases of their own on every target) is not run unfused
    on CUDA, and a forward whose fusion is moot
    (:func:`fusion_is_moot`) not unfused, which keeps CI in bounds. Each op's first case with a
    gradient is marked ``o3`` in its unfused CPU backward: CI compiles those at LLVM's -O3 through
    program functions (the compiler's defaults)."""
    out = []
    for case in cases:
        composite = get_op(case.op).expand is not None
        for target in ("cpu", "cuda") if id(case) in ON_CUDA else ("cpu",):
            for fusion in (True, False):
                if not fusion and ((target == "cuda" and (composite or id(case) not in FIRST_OF_FAMILY))
                                   or (forward and fusion_is_moot(case, target))):
                    continue
                marks = [pytest.mark.gpu] if target == "cuda" else []
                if not forward and not fusion and target == "cpu" and id(case) in FIRST_OF_OP:
                    marks.append(pytest.mark.o3)
                if not ((id(case) in FIRST_OF_FAMILY and (target == "cpu" or fusion))
                        or (id(case) in FIRST_OF_OP and target == "cpu" and fusion)):
                    marks.append(pytest.mark.exhaustive)
                out.append(pytest.param(case, target, fusion, marks=marks,
                                        id=f"{case}-{target}-{'fused' if fusion else 'unfused'}"))
    return out


FORWARD_VARIANTS = _variants(CASES, forward=True)
BACKWARD_VARIANTS = _variants([c for c in CASES if c.grad != "none"])


@pytest.fixture(autouse=True)
def _kernels_called_from_the_host(monkeypatch):
    """The op cases call their programs' kernels one by one (``SYMJIT_PROGRAM_CALLS=0``) unless the
    run sets it: the kernels are the same, and compiling a program function around them would
    double a small program's compile time. Program functions are tested by the other tests (and CI
    runs a part of the op cases with them)."""
    if "SYMJIT_PROGRAM_CALLS" not in os.environ:
        monkeypatch.setenv("SYMJIT_PROGRAM_CALLS", "0")


def float32_fusions(case, target: str, fusion: bool, exhaustive: bool) -> tuple[bool, ...]:
    """The float32 programs (their fusion) the variant (case, target, fusion) checks against a
    float64 program it has bound (``opcheck.check_float32``): the test that already binds the
    case's training program (its inference program when it has no gradient) runs it again on the
    rounded inputs, so each check adds only a float32 program. With ``exhaustive``: each op's and
    each family's first case, fused and unfused on the CPU (the other cases of an op run the same
    scalar bodies and building blocks in other forms; the oracle over every case doubled the
    op-case phase of CI), both from the fused CPU variant, which keeps them out of the unfused
    variants CI compiles again at -O3. On CUDA, each variant of a case of an op with a CUDA
    lowering of its own, and of each family's first case (the other ops' CUDA kernels come from
    the target-neutral lowering, whose float32 arithmetic the CPU checks). The default tier checks
    each family's first case so."""
    first = id(case) in FIRST_OF_FAMILY
    if not (exhaustive or first):
        return ()
    if target == "cpu":
        return (True, False) if fusion and (first or id(case) in FIRST_OF_OP) else ()
    return (fusion,) if first or id(case) in CUDA_OWN else ()


@pytest.mark.parametrize("case, target, fusion", FORWARD_VARIANTS)
def test_forward(case, target, fusion, request):
    float32 = () if case.grad != "none" else float32_fusions(
        case, target, fusion, request.config.getoption("--exhaustive"))
    check_forward(case, fusion, CONTEXTS[target], float32=float32)


@pytest.mark.parametrize("case, target, fusion", BACKWARD_VARIANTS)
def test_backward(case, target, fusion, request):
    float32 = float32_fusions(case, target, fusion, request.config.getoption("--exhaustive"))
    if target == "cpu" and fusion:
        check_backward(case, float32=float32)
    else:
        check_backward_like_cpu(case, fusion, CONTEXTS[target], float32=float32)


BAD_DATA = [  # (symbol, inputs, words of the error): data checks stop the program on every target
    (lambda: mx.sym.take(mx.sym.Variable("a"), mx.sym.Variable("i"), mode="raise", name="tk"),
     {"a": np.ones((4, 2)), "i": np.array([1.0, 4.0])}, ["take 'tk'", "indices", "[0, 4)"]),
    (lambda: mx.sym.softmax(mx.sym.Variable("x"), mx.sym.Variable("n"), use_length=True, name="sm"),
     {"x": np.ones((2, 3)), "n": np.array([1, 5], np.int32)}, ["softmax 'sm'", "length"]),
    (lambda: mx.sym.gather_nd(mx.sym.Variable("a"), mx.sym.Variable("i"), name="gn"),
     {"a": np.ones((2, 3)), "i": np.array([[0.0, 1.0], [-1.0, 3.0]])},
     ["IndexError", "gather_nd 'gn'", "[-3, 3)"]),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("build, inputs, words", BAD_DATA)
def test_bad_data_is_a_clear_error(build, inputs, words, target):
    ctx = CONTEXTS[target]
    ex = build().bind(ctx, {n: mx.nd.array(v, ctx=ctx, dtype=v.dtype) for n, v in inputs.items()},
                      grad_req="null")
    with pytest.raises(MXNetError) as err:
        ex.forward()[0].asnumpy()
    assert all(w in str(err.value) for w in words), str(err.value)
    assert isinstance(err.value, IndexError) == ("IndexError" in words)   # MXNet's type, from the message
    for name, v in inputs.items():   # fixed data runs: the check's flag does not stick
        if v.dtype.kind in "iu" or name == "i":
            ex.arg_dict[name][:] = np.minimum(v, 1)
    ex.forward()[0].asnumpy()


def test_default_tier_runs_every_op_and_every_family_on_every_target():
    """Without ``--exhaustive``, each op still runs fused on the CPU (forward, and backward where it
    has a gradient), and each family fused on both targets and unfused on the CPU."""
    def default(params):
        return [p.values for p in params if not any(m.name == "exhaustive" for m in p.marks)]
    forward, backward = default(FORWARD_VARIANTS), default(BACKWARD_VARIANTS)
    assert {c.op for c, t, f in forward if t == "cpu" and f} == {c.op for c in CASES}
    assert ({c.op for c, t, f in backward if t == "cpu" and f}
            == {c.op for c in CASES if c.grad != "none"})
    for cases in FAMILIES.values():
        ran = {(t, f) for c, t, f in forward + backward if c is cases[0]}
        assert {("cpu", True), ("cuda", True)} <= ran, cases[0]
        assert ("cpu", False) in ran or fusion_is_moot(cases[0], "cpu"), cases[0]
