"""Block and HybridBlock calls beyond forward: a model's structure saved and loaded with its
parameters (Block.save/load), op hooks on hybridized blocks, the one-context rule of hybridized
calls, the warning for blocks held in plain containers, summary's refusal of hybridized blocks,
parameter sharing with equal initializers, and the storage-type checks of Parameter."""
import json
import warnings

import numpy as np
import pytest

import symjit as mx
from symjit import gluon
from symjit.base import MXNetError
from symjit.gluon import nn

RNG = np.random.default_rng(3)


class _Chain(gluon.Block):
    """Children keyed by their own names, so two chains made one after the other differ in keys."""

    def add(self, block):
        self._children[f"{block.name}_{len(self._children)}"] = block

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x


def _chain():
    inner = _Chain()
    inner.add(nn.Dense(5, activation="relu"))
    outer = _Chain()
    outer.add(inner)
    outer.add(nn.Dense(3))
    return outer


def test_save_then_load_restores_names_hybridization_and_parameters(tmp_path):
    net = _chain()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(RNG.standard_normal((2, 4)).astype(np.float32))
    want = net(x).asnumpy()
    prefix = str(tmp_path / "chain")
    net.save(prefix)
    saved = json.load(open(prefix + "-model.json"))
    top = saved["_chain0"]
    assert top["orig_name"] == net.name and "hybridized" not in top     # a plain Block
    # depth-first positions: the inner chain 1, its Dense 2 and that Dense's activation 3, then 4
    assert sorted(k for k in top if k[-1].isdigit()) == ["_chain1", "dense4"]
    assert top["_chain1"]["dense2"]["hybridized"] is True and "activation3" in top["_chain1"]["dense2"]
    assert "FullyConnected" in top["dense4"]["symbol"] and top["children"] == {
        b.name: k for k, b in net._children.items()}
    other = _chain()                      # new names: its children's keys differ from the saved ones
    assert list(other._children) != list(net._children)
    other.load(prefix)
    assert list(other._children) == list(net._children) and other.name == net.name
    assert all(b._active for b in other._children.values() if isinstance(b, gluon.HybridBlock))
    np.testing.assert_allclose(other(x).asnumpy(), want, rtol=1e-6)
    with pytest.raises(MXNetError, match="no block"):
        nn.Dense(3).load(prefix)


def test_op_hook_sees_each_operator_of_a_hybridized_call():
    net = nn.HybridSequential(prefix="m_")
    with net.name_scope():
        net.add(nn.Dense(2), nn.Activation("relu"))
    net.initialize()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.shape)))
    net(mx.nd.ones((3, 4)))
    assert seen == [("m_dense0_fwd_output", "FullyConnected", (3, 2)),
                    ("m_relu0_fwd_output", "Activation", (3, 2))]
    seen.clear()
    net.register_op_hook(lambda name, op, arr: seen.append((name, op)), monitor_all=True)
    net(mx.nd.ones((3, 4)))
    assert seen[:4] == [("m_dense0_fwd_data", "FullyConnected"), ("m_dense0_fwd_weight", "FullyConnected"),
                        ("m_dense0_fwd_bias", "FullyConnected"), ("m_dense0_fwd_output", "FullyConnected")]


def test_hybridized_call_needs_one_context():
    class Add(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a + b
    block = Add()
    block.hybridize()
    with pytest.raises(ValueError, match="one context"):
        block(mx.nd.ones((2,), ctx=mx.cpu(1)), mx.nd.ones((2,), ctx=mx.cpu(2)))
    out = block(mx.nd.ones((2,), ctx=mx.cpu_pinned(0)), mx.nd.ones((2,), ctx=mx.cpu(0)))
    assert out.asnumpy().tolist() == [2.0, 2.0]
    assert Add()(mx.nd.ones((2,), ctx=mx.cpu(1)), mx.nd.ones((2,), ctx=mx.cpu(1))).shape == (2,)


def test_blocks_in_plain_containers_are_warned_about():
    class Listed(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Dense(2), nn.Dense(3)]
            self.table = {"a": {"b": [nn.Dense(4)]}}
            self.kept = nn.Sequential()
            self.info = {"n": 3, "tags": ["x"]}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Listed().collect_params()
    named = sorted(str(w.message).split("'")[1] for w in caught)
    assert named == ["layers", "table"]


def test_summary_refuses_a_hybridized_block(capsys):
    net = nn.HybridSequential()
    net.add(nn.Dense(2))
    net.initialize()
    net.summary(mx.nd.ones((1, 3)))
    assert "Dense-1" in capsys.readouterr().out
    net[0].hybridize()
    with pytest.raises(AssertionError, match="hybridized"):
        net.summary(mx.nd.ones((1, 3)))


def test_shared_parameter_accepts_an_equal_initializer():
    class Holder(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.w = self.params.get("w", shape=(1,), init=mx.init.Constant(-2.0))

    first = Holder()
    second = Holder(params=first.collect_params())
    assert second.w is first.w and Holder().w.init == first.w.init
    assert mx.init.Constant(1.0) != mx.init.Constant(2.0) and mx.init.Zero() != mx.init.One()
    assert len({mx.init.Zero(), mx.init.Zero()}) == 2          # hashed by identity
    with pytest.raises(AssertionError, match="init"):
        first.params.get("w", init=mx.init.Constant(3.0))


def test_parameter_storage_types():
    with pytest.raises(AssertionError, match="stype"):
        gluon.Parameter("w", shape=(2,), stype="dense")
    with pytest.raises(AssertionError, match="grad_stype"):
        gluon.Parameter("w", shape=(2,), grad_stype="sparse")
    p = gluon.Parameter("w", shape=(2, 2), stype="row_sparse")
    p.initialize()
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        p.data()


def test_symbol_block_parameters_take_the_inputs_declared_dtype(tmp_path):
    data = mx.sym.var("data", dtype="float64")
    out = mx.sym.BatchNorm(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="bn")
    block = gluon.SymbolBlock(out, data)
    params = block.collect_params()
    assert {np.dtype(p.dtype).name for p in params.values()} == {"float64"}
    plain = gluon.SymbolBlock(out, mx.sym.var("data"))
    assert {np.dtype(p.dtype).name for p in plain.collect_params().values()} == {"float32"}
    params.initialize()
    got = block(mx.nd.ones((2, 4), dtype="float64"))
    assert got.dtype == np.float64 and got.shape == (2, 3)
