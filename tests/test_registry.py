"""Walks the op registry: every op has rules, a lowering rule on every target, a gradient rule (or
is declared non-differentiable), a forward case and a gradient case (tests/cases). A composite op
(``OpDef.expand``) is lowered and differentiated through the ops it expands to."""
from __future__ import annotations

import pytest

from symjit.lower import get_target, lookup, target_names
from symjit.ops import all_ops
from symjit.ops.float32 import MODELS, float32_error

from .cases import all_cases

OPS = all_ops()
CASES = all_cases()
FORWARD = {c.op for c in CASES}
BACKWARD = {c.op for c in CASES if c.grad != "none"}


def _internal(op) -> bool:
    """Gradient helpers and compiler rewrites, tested through the public op they serve."""
    return "backward_of" in op.extra or "rewrite_of" in op.extra


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_has_rules(name):
    op = OPS[name]
    assert op.shape is not None, f"{name}: no shape rule"
    assert op.doc, f"{name}: no doc"
    assert lookup(op, get_target("cpu")) is not None or op.expand is not None, \
        f"{name}: no scalar body, no cpu lowering rule and no expansion"


# Ops the CUDA target cannot lower yet (issue "GPU target": every op gets a CUDA rule). The list
# must equal what the rule table says: a new op without a CUDA rule fails here, and an op that
# gains one must leave the list.
CUDA_PENDING: frozenset[str] = frozenset()


@pytest.mark.parametrize("target", target_names())
def test_every_op_has_a_rule_on_every_target(target):
    tgt = get_target(target)
    missing = {name for name, op in OPS.items() if lookup(op, tgt) is None and op.expand is None}
    pending = CUDA_PENDING if target == "cuda" else frozenset()
    assert missing == pending, (f"{target}: ops without a rule that are not listed: "
                                f"{sorted(missing - pending)}; listed ops that now have one: "
                                f"{sorted(pending - missing)}")


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if not _internal(op)))
def test_op_has_gradient_rule(name):
    op = OPS[name]
    assert op.grad is not None or op.expand is not None or op.extra.get("no_grad"), \
        f"{name}: no gradient rule (declare extra={{'no_grad': True}} if it is not differentiable)"


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if not _internal(op)))
def test_op_has_cases(name):
    op = OPS[name]
    assert name in FORWARD, f"{name}: no forward case in tests/cases"
    if (op.grad is not None or op.expand is not None) and not op.extra.get("no_grad"):
        assert name in BACKWARD, f"{name}: has a gradient rule but no gradient case"


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if _internal(op)))
def test_internal_op_backs_a_public_op(name):
    if "rewrite_of" in OPS[name].extra:
        target = OPS[name].extra["rewrite_of"]
        assert target in FORWARD, f"{name}: the op it rewrites, {target}, has no forward case"
        return
    target = OPS[name].extra["backward_of"]
    assert target in OPS, f"{name}: backward_of names unknown op {target!r}"
    assert target in BACKWARD, f"{name}: its forward op {target} has no gradient case"


def _program_ops() -> set[str]:
    """Every op in the fused inference and training programs of the cases (the programs
    tests/test_op_exec.py runs on every target)."""
    import symjit as mx
    from symjit.compiler.passes.autodiff import autodiff
    from symjit.compiler.passes.build import build_forward
    from symjit.compiler.passes.simplify import simplify

    from .opcheck import grad_inputs
    seen: set[str] = set()
    for case in CASES:
        sym = case.build({n: mx.sym.Variable(n) for n in case.inputs})
        names = sym.list_arguments() + sym.list_auxiliary_states()
        shapes = {n: case.inputs[n].shape for n in names}
        dtypes = {n: case.inputs[n].dtype for n in names}
        wrt = grad_inputs(case, sym.list_arguments())
        for train in {case.is_train, bool(wrt)}:
            g = build_forward(sym, shapes, dtypes, train)
            if train and wrt:
                g = autodiff(g, {n: ("write" if n in wrt else "null") for n in sym.list_arguments()})
            seen |= {op.op.name for op in simplify(g, fusion=True).ops}
    return seen


def test_every_internal_op_runs_in_a_case_program():
    """Gradient helpers and rewrites are exercised on every target by some case's program."""
    internal = {name for name, op in OPS.items() if _internal(op)}
    assert internal - _program_ops() == set()


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if not _internal(op)))
def test_op_states_its_float32_error(name):
    """The float32 oracle (``opcheck.check_float32``, run by tests/test_op_exec.py's cases) bounds
    every op by its error model: stated in symjit/ops/float32.py, or derived for elementwise,
    broadcast and injective ops."""
    assert float32_error(OPS[name]) is not None, \
        f"{name}: no float32 error model; state one in symjit/ops/float32.py (MODELS)"


def test_float32_models_name_registered_ops():
    assert set(MODELS) - set(OPS) == set()
