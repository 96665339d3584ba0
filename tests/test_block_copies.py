"""Concat, stack and SliceChannel on the CPU as block copies (symjit.kernels.cpu.copy_axis): one
building-block call per input or output, numpy's results for every rank, axis and number of
arrays, nothing compiled per form, and the same copies in a small program's interpreted passes."""
from __future__ import annotations

import re

import numpy as np
import pytest
from numba.core import types
from symjit.kernels.cpu import copy_axis

import symjit as mx
from symjit.config import Config
from symjit.executor import Executor

ARGS = ["a", "b", "c", "d"]


def _bind(sym, values: dict, cfg: Config | None = None) -> Executor:
    args = {n: mx.nd.array(v, dtype=v.dtype) for n, v in values.items()}
    grads = {n: mx.nd.zeros(v.shape, dtype=v.dtype) for n, v in values.items()}
    return Executor(sym, mx.cpu(), args, grads, "write", config=cfg)


def _compiled(**changes) -> Config:
    return Config.from_env().replace(**{"interpret": False, **changes})


def _blocks(ex: Executor, phase: str = "forward") -> set[str]:
    """The functions of copy_axis a phase of the executor's program calls; every call of that
    phase must be one (no kernel generated for it)."""
    prog = ex._programs["train"].program
    imported = {alias: (module, name) for module, name, alias in
                re.findall(r"^from (\S+) import (\w+) as (\w+)$", prog.module_source, re.M)}
    called = {imported[fn] for seg in prog.segments[phase] for fn, *_ in seg.launches}
    assert {module for module, _ in called} == {"symjit.kernels.cpu.copy_axis"}, called
    return {name for _, name in called}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_concat_matches_numpy_on_every_axis_and_rank(dtype):
    rng = np.random.default_rng(1)
    for rank in (1, 2, 3, 4):
        for axis in range(-rank, rank):
            n = int(rng.integers(1, 5))
            base = rng.integers(1, 4, size=rank)
            values = {}
            for name in ARGS[:n]:
                shape = base.copy()
                shape[axis] = rng.integers(1, 4)
                values[name] = (rng.uniform(-5, 5, tuple(shape)) * 3).astype(dtype)
            sym = mx.sym.Concat(*[mx.sym.Variable(k) for k in values], dim=axis, num_args=n)
            ex = _bind(sym, values, _compiled())
            got = ex.forward(is_train=True)[0].asnumpy()
            np.testing.assert_array_equal(got, np.concatenate(list(values.values()), axis=axis))
            if dtype != "int32":   # the gradient: the head's runs
                head = rng.uniform(-1, 1, got.shape).astype(dtype)
                ex.backward(mx.nd.array(head, dtype=dtype))
                ends = np.cumsum([v.shape[axis] for v in values.values()])[:-1]
                for k, part in zip(values, np.split(head, ends, axis=axis)):
                    np.testing.assert_array_equal(ex.grad_dict[k].asnumpy(), part)
            assert _blocks(ex) == {"into_axis"}


def test_stack_and_split_match_numpy_with_their_gradients():
    rng = np.random.default_rng(2)
    for rank in (1, 2, 3):
        for axis in range(-rank - 1, rank + 1):
            shape = tuple(int(d) for d in rng.integers(1, 4, size=rank))
            values = {k: rng.standard_normal(shape) for k in ARGS[:3]}
            sym = mx.sym.stack(*[mx.sym.Variable(k) for k in values], axis=axis, num_args=3)
            ex = _bind(sym, values, _compiled())
            out = ex.forward(is_train=True)[0].asnumpy()
            np.testing.assert_array_equal(out, np.stack(list(values.values()), axis=axis))
            assert _blocks(ex) == {"into_axis"}
            head = rng.standard_normal(out.shape)
            ex.backward(mx.nd.array(head, dtype=head.dtype))
            for i, k in enumerate(values):    # stack's gradient splits the head back
                np.testing.assert_array_equal(ex.grad_dict[k].asnumpy(), np.take(head, i, axis=axis))
    for squeeze, parts in ((False, 3), (True, 6)):
        x = rng.standard_normal((2, 6, 3))
        split = mx.sym.SliceChannel(mx.sym.Variable("a"), num_outputs=parts, axis=1, squeeze_axis=squeeze)
        ex = _bind(mx.sym.Group(list(split)), {"a": x}, _compiled())
        outs = [o.asnumpy() for o in ex.forward(is_train=True)]
        for got, want in zip(outs, np.split(x, parts, axis=1)):
            np.testing.assert_array_equal(got, want.squeeze(1) if squeeze else want)
        assert _blocks(ex) == {"from_axis"}
        ex.backward([mx.nd.array(np.full(o.shape, i + 1.0), dtype=np.float64) for i, o in enumerate(outs)])
        want = np.repeat(np.arange(1.0, parts + 1), 6 // parts)[None, :, None] * np.ones_like(x)
        np.testing.assert_array_equal(ex.grad_dict["a"].asnumpy(), want)


def test_the_program_calls_one_building_block_for_any_number_of_inputs():
    """Concats of 2, 3 and 5 inputs (what an unrolled RNN makes) call the same compiled function:
    numba holds one signature per pair of ranks and dtype, not one kernel per number of inputs."""
    rng = np.random.default_rng(3)
    for n in (2, 3, 5):
        values = {f"x{i}": rng.standard_normal((4, 2, 3)).astype(np.float32) for i in range(n)}
        sym = mx.sym.Concat(*[mx.sym.Variable(k) for k in values], dim=1, num_args=n)
        ex = _bind(sym, values, _compiled())
        ex.forward(is_train=True)
        assert _blocks(ex) == {"into_axis"}
    three_d = types.Array(types.float32, 3, "C")
    assert [s[:2] for s in copy_axis.into_axis.signatures].count((three_d, three_d)) == 1


def test_a_small_program_runs_its_block_copies_interpreted():
    """A small program with a Concat runs its first passes interpreted (the block copies as their
    Python functions), with the compiled program's results."""
    rng = np.random.default_rng(4)
    values = {"a": rng.standard_normal((3, 2)), "b": rng.standard_normal((3, 4))}
    sym = mx.sym.tanh(mx.sym.Concat(mx.sym.Variable("a"), mx.sym.exp(mx.sym.Variable("b")), dim=1))
    cfg = Config.from_env().replace(interpret=True, interpret_calls=None)
    ex = _bind(sym, values, cfg)
    got = ex.forward(is_train=True)[0].asnumpy()
    assert ex._tier.active("train") and ex._programs["train"].module is None   # nothing compiled
    ref = _bind(sym, values, _compiled()).forward(is_train=True)[0].asnumpy()
    np.testing.assert_array_max_ulp(got, ref, maxulp=1)
    np.testing.assert_allclose(got, np.tanh(np.concatenate([values["a"], np.exp(values["b"])], 1)),
                               rtol=1e-12)
