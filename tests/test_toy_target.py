"""A third code-generation target, defined in this file only and added through the public hooks
(a :class:`~symjit.lower.target.Target` subclass, :func:`~symjit.lower.target.register_target`,
:func:`~symjit.lower.rules.rule`): it compiles and runs an elementwise chain, FullyConnected and a
reduction, forward and backward, to the CPU target's numbers. Nothing in ``symjit`` names it; if
this needed a change there, that change would be a seam to fix.

The toy is the CPU's code generation with another loop order (a loop nest opens its last axis
first, so the first axis is innermost, and no loop runs on threads), and one rule of its own:
FullyConnected as the target-neutral per-element product (each output element a dot product in
the group's loop) instead of the CPU's BLAS call. Every other op keeps the CPU's rules, which a
subclass of a target inherits.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import symjit as mx
from symjit.cli import main
from symjit.compiler.binding import bind_phases, value_arrays
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config
from symjit.lower import get_target, lookup, register_target, rule, target_names
from symjit.lower.accumulate import fc_elements
from symjit.lower.cpu import CPU, CPUTarget
from symjit.ops import get_op


class ToyTarget(CPUTarget):
    """The CPU's kernels with the loop nest reversed (the first axis innermost), all serial."""

    name = "toy"

    def open_loop(self, k, dims: list[str]) -> list[str]:
        idx = [f"i{d}" for d in range(len(dims))]
        for i, n in reversed(list(zip(idx, dims))):
            k.line(f"for {i} in range({n}):")
            k.indent += 1
        k.loop_indents.append(len(dims))
        return idx

    def open_map_loop(self, k, dims: list[str], sizes: tuple[int, ...]) -> list[str]:
        return self.open_loop(k, dims)


rule("FullyConnected", ToyTarget, fc_elements, epilogue=True, gathers=True)


@pytest.fixture
def toy():
    """The toy target, registered for the test (and unregistered after it: other tests list the
    registered targets)."""
    from symjit.lower.target import _TARGETS
    target = register_target(ToyTarget())
    try:
        yield target
    finally:
        del _TARGETS[target.name]


def _net():
    x, w, b = mx.sym.Variable("x"), mx.sym.Variable("w"), mx.sym.Variable("b")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, w, b, num_hidden=5, name="fc"), act_type="relu")
    chain = mx.sym.tanh(h * 2.0 + 1.0) - mx.sym.sigmoid(h) / 3.0
    return mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(chain, axis=1)), mx.sym.BlockGrad(chain)])


SHAPES = {"x": (7, 3, 4), "w": (5, 12), "b": (5,)}


def _run(target, train: bool) -> dict[str, np.ndarray]:
    """Compile the net for ``target`` and run its phases by hand (as the executor binds them):
    its outputs, and in training the gradients of ``w`` and ``b``."""
    rng = np.random.default_rng(3)
    inputs = {n: rng.standard_normal(s).astype(np.float64) for n, s in SHAPES.items()}
    reqs = {"x": "null", "w": "write", "b": "write"} if train else {}
    c = compile_symbol(_net(), SHAPES, {n: np.float64 for n in SHAPES}, reqs, train, Config(cache=False),
                       target=target)
    g = c.graph
    arrays = {vid: np.zeros(v.shape, v.dtype) for vid, v in g.values.items() if v.kind != "tmp"}

    def external(vid, v):
        if v.kind == "arg":
            return inputs[v.ref]
        if v.kind == "head_grad":
            arrays[vid][...] = 1.0
        return arrays[vid]

    array = value_arrays(c, np.empty(c.plan.planned_bytes, np.uint8), external)
    for phase in ("forward", "backward"):
        for seg, payload in bind_phases(c, array).get(phase, []):
            if seg.kind == "calls":
                for fn, args in c.target.prepare_calls(c.module, seg.launches, dict(zip(seg.vids, payload))):
                    fn(*args)
            else:
                c.target.prepare(c.module, seg.name, payload)()
    out = {f"out{i}": array(v) for i, v in enumerate(g.outputs)}
    out.update({f"d{name}": array(v) for name, v in g.grads.items()})
    out["source"] = c.program.source
    return out


def test_the_toy_target_is_found_by_name_and_inherits_the_cpu_rules_but_its_own(toy):
    assert get_target("toy") is toy and "toy" in target_names()
    assert lookup(get_op("FullyConnected"), toy).emit is fc_elements   # its own rule
    assert lookup(get_op("FullyConnected"), CPU).emit is not fc_elements   # the CPU's is untouched
    for op in ("sum", "BatchNorm", "Pooling"):   # the rest: the CPU's
        assert lookup(get_op(op), toy) is lookup(get_op(op), CPU)


@pytest.mark.parametrize("train", [False, True])
def test_the_toy_target_computes_the_cpus_numbers(toy, train):
    mine, cpu = _run(toy, train), _run(CPU, train)
    assert mine["source"] != cpu["source"] and "symjit_gen_toy_" in mine["source"]
    inner_first = re.compile(r"for i1 in range\(.*\):\n\s+for i0 in range\(")   # the toy's loop order
    assert inner_first.search(mine["source"]) and not inner_first.search(cpu["source"])
    assert "gemm" in cpu["source"] and "gemm" not in mine["source"]   # FullyConnected: its own rule
    keys = {k for k in cpu if k != "source"}
    assert keys == {k for k in mine if k != "source"} and (not train or {"dw", "db"} <= keys)
    for key in sorted(keys):
        assert np.abs(cpu[key]).max() > 0, key   # something was computed
        np.testing.assert_allclose(mine[key], cpu[key], rtol=1e-12, atol=1e-12, err_msg=key)


def test_symjit_compile_takes_the_toy_target(toy, tmp_path, capsys):
    path = tmp_path / "net-symbol.json"
    _net().save(str(path))
    shapes = [f"--shape={n}={','.join(map(str, s))}" for n, s in SHAPES.items()]
    assert main(["compile", str(path), *shapes, "--target", "toy", "--grad-req", "null", "--source"]) == 0
    out = capsys.readouterr().out
    assert "for i1 in range(" in out and "Generated by symjit for the toy target" in out
