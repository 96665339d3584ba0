"""Binds of one computation share the pipeline's result (``compiler/shared.py``), and a bind whose
compiled functions this process holds already does no compile bookkeeping it does not need."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.compiler import progress as progress_mod
from symjit.compiler import shared, workers
from symjit.compiler.pipeline import Compiled
from symjit.config import Config


def _net(hidden=5):
    x = mx.sym.Variable("data")
    return mx.sym.tanh(mx.sym.FullyConnected(x, num_hidden=hidden, name="fc"), name="act")


def _bind(sym, grad_req="write", seed=0):
    rng = np.random.default_rng(seed)
    x, w, b = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5,))
    args = {"data": mx.nd.array(x), "fc_weight": mx.nd.array(w), "fc_bias": mx.nd.array(b)}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=grad_req)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((3, 5)))
    y = np.tanh(x @ w.T + b)
    return exe, y, grads, ((1 - y * y) @ w)


def _program(exe) -> Compiled:
    return exe._programs["train"]


def test_a_second_bind_of_one_computation_reuses_its_passes_and_computes_its_own_values():
    sym = _net()
    first, y0, _, _ = _bind(sym, seed=1)
    second, y1, grads, dx = _bind(sym, seed=2)
    p0, p1 = _program(first), _program(second)
    assert p0 is not p1 and p0.program is p1.program and p0.graph is p1.graph   # records of their own
    np.testing.assert_allclose(first.outputs[0].asnumpy(), y0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(second.outputs[0].asnumpy(), y1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["data"].asnumpy(), dx, rtol=1e-4, atol=1e-5)


def test_what_changes_the_program_is_part_of_the_key():
    sym = _net()
    base = _program(_bind(sym)[0]).program
    assert _program(_bind(sym, grad_req="add")[0]).program is not base          # gradient requests
    assert _program(_bind(_net(), grad_req="write")[0]).program is base         # an equal symbol
    renamed = mx.sym.tanh(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=5, name="fc"),
                          name="act2")
    assert _program(_bind(renamed)[0]).program is not base                      # another name
    other = mx.sym.tanh(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=5, no_bias=False,
                                              flatten=False, name="fc"), name="act")
    assert shared.symbol_key(other) != shared.symbol_key(sym)                   # another param
    assert shared.symbol_key(_net(hidden=6)) != shared.symbol_key(sym)
    assert shared.symbol_key(sym) == shared.symbol_key(mx.sym.load_json(sym.tojson()))


def test_a_symbol_with_a_custom_op_is_never_shared():
    class Ident(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0])

    @mx.operator.register("shared_programs_ident")
    class IdentProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Ident()

    sym = mx.sym.Custom(mx.sym.Variable("x"), op_type="shared_programs_ident")
    assert shared.symbol_key(sym) is None
    cfg = Config(cache=False)
    a = shared.compile_shared(sym, {"x": (2,)}, {"x": "float32"}, {}, False, cfg, load=False)
    b = shared.compile_shared(sym, {"x": (2,)}, {"x": "float32"}, {}, False, cfg, load=False)
    assert a.program is not b.program


def test_the_table_keeps_the_most_recent_computations(monkeypatch):
    monkeypatch.setattr(shared, "MAX_PROGRAMS", 2)
    shared.clear_shared()
    cfg = Config(cache=False)
    syms = [mx.sym.exp(mx.sym.Variable("x"), name=f"e{i}") for i in range(3)]
    made = [shared.compile_shared(s, {"x": (2,)}, {"x": "float32"}, {}, False, cfg, load=False)
            for s in syms]
    again = shared.compile_shared(syms[0], {"x": (2,)}, {"x": "float32"}, {}, False, cfg, load=False)
    assert again.program is not made[0].program                 # pushed out by the third
    last = shared.compile_shared(syms[2], {"x": (2,)}, {"x": "float32"}, {}, False, cfg, load=False)
    assert last.program is made[2].program


def test_a_bind_holding_every_function_starts_no_ticker(monkeypatch):
    sym = _net(hidden=5)
    _bind(sym)                                # compiles (or loads) everything once
    entered = []
    real = progress_mod.Progress.ticking

    def counting(self):
        entered.append(1)
        return real(self)
    monkeypatch.setattr(progress_mod.Progress, "ticking", counting)
    exe, y, _, _ = _bind(sym, seed=3)
    assert entered == []
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), y, rtol=1e-5, atol=1e-6)


def test_numba_index_is_read_again_only_when_its_file_changes(tmp_path):
    path = tmp_path / "k.nbi"
    loads = []

    class FakeCacheFile:
        _index_path = str(path)

        def _load_index(self):
            loads.append(1)
            return {"key": path.read_bytes()}

    f = FakeCacheFile()
    assert workers._index(f) == {} and loads == []          # no file: an empty index
    path.write_bytes(b"one")
    assert workers._index(f) == {"key": b"one"}
    assert workers._index(f) == {"key": b"one"} and len(loads) == 1
    path.write_bytes(b"second")
    assert workers._index(f) == {"key": b"second"} and len(loads) == 2


@pytest.fixture(autouse=True)
def _fresh_table():
    shared.clear_shared()
    yield
    shared.clear_shared()
