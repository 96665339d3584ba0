"""mx.gluon's Parameter, ParameterDict, Block, HybridBlock and SymbolBlock: naming, deferred
initialization, hybridized calls against imperative ones (outputs and gradients), saving and
loading in MXNet's formats, export/imports."""
import os

import numpy as np
import pytest

import symjit as mx
from symjit import autograd, gluon
from symjit.gluon import nn

RNG = np.random.default_rng(7)


def _x(*shape):
    return mx.nd.array(RNG.standard_normal(shape).astype(np.float32))


class _Mlp(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.hidden = nn.Dense(4, activation="tanh")
            self.out = nn.Dense(2)
            self.scale = self.params.get("scale", shape=(2,), init=mx.init.Constant(0.5))

    def hybrid_forward(self, F, x, scale):
        return F.broadcast_mul(self.out(self.hidden(x)), scale.reshape((1, 2)))


def _grads(net, x, hybrid):
    net.hybridize(hybrid)
    net.collect_params().zero_grad()
    with autograd.record():
        y = net(x)
        loss = (y * y).sum()
    loss.backward()
    return y.asnumpy(), {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()}


def test_import_forms_and_namespace():
    import importlib
    assert mx.gluon is gluon and gluon.nn is nn
    assert importlib.import_module("symjit.gluon.nn") is nn
    assert gluon.Block is gluon.block.Block and nn.HybridBlock is gluon.HybridBlock
    assert gluon.model_zoo is importlib.import_module("symjit.gluon.model_zoo")
    assert gluon.contrib.nn is importlib.import_module("symjit.gluon.contrib.nn")


def test_prefixes_and_parameter_names():
    net = _Mlp(prefix="mlp_")
    assert net.prefix == "mlp_" and net.name == "mlp"
    assert net.hidden.prefix == "mlp_dense0_" and net.out.prefix == "mlp_dense1_"
    assert list(net.collect_params().keys()) == [
        "mlp_scale", "mlp_dense0_weight", "mlp_dense0_bias", "mlp_dense1_weight", "mlp_dense1_bias"]
    assert list(net.params.keys()) == ["mlp_scale"]
    assert sorted(net.collect_params(".*weight").keys()) == ["mlp_dense0_weight", "mlp_dense1_weight"]
    assert sorted(net.collect_params("mlp_dense1_.*|.*scale").keys()) == [
        "mlp_dense1_bias", "mlp_dense1_weight", "mlp_scale"]
    assert sorted(net._collect_params_with_prefix()) == [
        "hidden.bias", "hidden.weight", "out.bias", "out.weight", "scale"]


def test_deferred_initialization_infers_shapes():
    net = _Mlp()
    net.initialize()
    w = net.hidden.weight
    assert w.shape == (4, 0)
    with pytest.raises(gluon.DeferredInitializationError):
        w.data()
    net(_x(3, 5))
    assert w.shape == (4, 5) and w.data().shape == (4, 5)
    np.testing.assert_allclose(net.scale.data().asnumpy(), [0.5, 0.5])
    np.testing.assert_allclose(net.hidden.bias.data().asnumpy(), 0.0)   # 'zeros' bias initializer
    with pytest.raises(RuntimeError, match="has not been initialized"):
        nn.Dense(2, in_units=3).weight.data()


def test_hybridized_equals_imperative_forward_and_gradients():
    net = _Mlp()
    net.initialize(mx.init.Xavier())
    x = _x(3, 5)
    y_imp, g_imp = _grads(net, x, False)
    compiles = autograd.compiles()
    y_hyb, g_hyb = _grads(net, x, True)
    assert isinstance(net._cached.op, autograd.GraphOp)     # the recorded entry is the traced graph
    np.testing.assert_allclose(y_hyb, y_imp, rtol=1e-5, atol=1e-6)
    assert g_imp.keys() == g_hyb.keys()
    for k in g_imp:
        assert np.abs(g_imp[k]).max() > 0, k
        np.testing.assert_allclose(g_hyb[k], g_imp[k], rtol=1e-4, atol=1e-6, err_msg=k)
    _grads(net, x, True)                                      # the same recording: no new program
    assert autograd.compiles() == compiles + 1


def test_hybridized_gradients_match_the_symbolic_executor():
    net = nn.HybridSequential(prefix="s_")
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4, activation="relu"), nn.Dense(2, in_units=3))
    net.initialize(mx.init.Normal(0.5))
    net.hybridize()
    x, head = _x(2, 4), _x(2, 2)
    with autograd.record():
        y = net(x)
    y.backward(head)
    data = mx.sym.var("data")
    sym = mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(
        data, num_hidden=3, name="s_dense0"), act_type="relu"), num_hidden=2, name="s_dense1")
    params = net.collect_params()
    args = {"data": x, **{n: p.data() for n, p in params.items()}}
    grads = {k: mx.nd.zeros(a.shape) for k, a in args.items()}
    exe = sym.bind(mx.cpu(), {k: a.copy() for k, a in args.items()}, args_grad=grads)
    out = exe.forward(is_train=True)[0]
    exe.backward(head)
    np.testing.assert_allclose(y.asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)
    for name, p in params.items():
        np.testing.assert_allclose(p.grad().asnumpy(), grads[name].asnumpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)


def test_grad_req_add_accumulates_and_null_has_no_grad():
    d = nn.Dense(2, in_units=3)
    d.initialize()
    d.weight.grad_req = "add"
    d.bias.grad_req = "null"
    d.hybridize()
    x = _x(1, 3)
    for _ in range(2):
        with autograd.record():
            y = d(x)
        y.backward()
    np.testing.assert_allclose(d.weight.grad().asnumpy(), 2 * np.tile(x.asnumpy(), (2, 1)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        d.bias.grad()


def test_save_and_load_parameters_round_trip(tmp_path):
    net = _Mlp()
    net.initialize()
    x = _x(2, 5)
    y = net(x).asnumpy()
    f = str(tmp_path / "net.params")
    net.save_parameters(f)
    assert sorted(mx.nd.load(f)) == ["hidden.bias", "hidden.weight", "out.bias", "out.weight", "scale"]
    other = _Mlp()
    other.load_parameters(f)
    np.testing.assert_allclose(other(x).asnumpy(), y, rtol=1e-6)
    seq = nn.HybridSequential()
    with seq.name_scope():
        seq.add(nn.Dense(3, in_units=2), nn.Dense(1, in_units=3))
    seq.initialize()
    f2 = str(tmp_path / "seq.params")
    seq.save_parameters(f2)
    assert sorted(mx.nd.load(f2)) == ["0.bias", "0.weight", "1.bias", "1.weight"]
    small = nn.HybridSequential()
    with small.name_scope():
        small.add(nn.Dense(3, in_units=2))
    with pytest.raises(ValueError, match="is not present"):
        small.load_parameters(f2)
    small.load_parameters(f2, ignore_extra=True)
    np.testing.assert_array_equal(small[0].weight.data().asnumpy(), seq[0].weight.data().asnumpy())
    with pytest.raises(AssertionError, match="missing"):
        seq.load_parameters(str(tmp_path / "net.params"), ignore_extra=True)


def test_load_parameters_casts_dtype(tmp_path):
    d = nn.Dense(2, in_units=2)
    d.initialize()
    f = str(tmp_path / "d.params")
    d.save_parameters(f)
    e = nn.Dense(2, in_units=2, dtype="float64")
    with pytest.raises(AssertionError, match="dtype"):
        e.load_parameters(f)
    e.load_parameters(f, cast_dtype=True)
    assert e.weight.data().dtype == np.float64
    e2 = nn.Dense(2, in_units=2, dtype="float64")
    e2.load_parameters(f, cast_dtype=True, dtype_source="saved")
    assert e2.weight.data().dtype == np.float32


def test_parameter_dict_save_load_and_setattr(tmp_path):
    pd = gluon.ParameterDict("net_")
    w = pd.get("weight", shape=(2, 3), init=mx.init.One())
    assert pd.get("weight") is w
    with pytest.raises(AssertionError):
        pd.get("weight", shape=(3, 3))
    pd.initialize()
    f = str(tmp_path / "pd.params")
    pd.save(f, strip_prefix="net_")
    assert list(mx.nd.load(f)) == ["weight"]
    other = gluon.ParameterDict("net_")
    other.get("weight", shape=(2, 0), allow_deferred_init=True)
    other.load(f, restore_prefix="net_")
    np.testing.assert_array_equal(other["net_weight"].data().asnumpy(), np.ones((2, 3)))
    pd.setattr("grad_req", "null")
    assert w.grad_req == "null"
    pd.setattr("lr_mult", 0.5)
    assert w.lr_mult == 0.5


def test_parameter_contexts_cast_and_set_data():
    p = gluon.Parameter("w", shape=(2,))
    p.initialize(init=mx.init.Zero(), ctx=[mx.cpu(0), mx.cpu(1)])
    assert p.list_ctx() == [mx.cpu(0), mx.cpu(1)] and len(p.list_data()) == 2
    p.set_data(mx.nd.array([1.0, 2.0]))
    assert all(d.asnumpy().tolist() == [1.0, 2.0] for d in p.list_data())
    with pytest.raises(RuntimeError, match="not initialized on context"):
        p.data(mx.cpu(2))
    p.reset_ctx(mx.cpu(2))
    assert p.data(mx.cpu(2)).asnumpy().tolist() == [1.0, 2.0]
    p.cast("float64")
    assert p.data().dtype == np.float64 and p.grad().dtype == np.float64
    var = gluon.Parameter("v", shape=(3, 4), lr_mult=2.0, init=mx.init.One()).var()
    assert var.name == "v" and var.attr("__shape__") == "(3, 4)" and var.attr("__lr_mult__") == "2.0"
    c = gluon.Constant("c", [[1.0, 2.0]])
    c.initialize()
    assert c.grad_req == "null" and c.data().asnumpy().tolist() == [[1.0, 2.0]]


def test_export_then_imports_gives_the_same_outputs(tmp_path):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, activation="relu"), nn.BatchNorm(), nn.Dense(2))
    net.initialize()
    x = _x(4, 5)
    with pytest.raises(RuntimeError, match="hybridize"):
        net.export(str(tmp_path / "net"))
    net.hybridize()
    y = net(x).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / "net"), epoch=3)
    assert os.path.basename(params_file) == "net-0003.params"
    names = sorted(mx.nd.load(params_file))
    prefix = net.prefix
    assert f"arg:{prefix}dense0_weight" in names and f"aux:{prefix}batchnorm0_running_mean" in names
    assert all(n.startswith(("arg:", "aux:")) for n in names)
    block = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(block(x).asnumpy(), y, rtol=1e-5, atol=1e-6)
    sym, args, aux = mx.model.load_checkpoint(str(tmp_path / "net"), 3)
    assert set(args) | set(aux) == {n[4:] for n in names}


def test_symbol_block_trains_and_composes():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    block = gluon.SymbolBlock(out, data)
    block.initialize(mx.init.One())
    x = _x(3, 4)
    with autograd.record():
        y = block(x)
    y.backward()
    np.testing.assert_allclose(block.params["fc_weight"].grad().asnumpy(),
                               np.tile(x.asnumpy().sum(0), (2, 1)), rtol=1e-5)
    composed = block(mx.sym.var("z"))
    assert composed.list_arguments() == ["z", "fc_weight", "fc_bias"]


def test_hooks_apply_cast_and_repr():
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(2, in_units=3), nn.Activation("relu"))
    net.initialize()
    seen = []
    h1 = net.register_forward_pre_hook(lambda b, inp: seen.append(("pre", len(inp))))
    h2 = net.register_forward_hook(lambda b, inp, out: seen.append(("post", out.shape)))
    net(_x(1, 3))
    h1.detach()
    h2.detach()
    net(_x(1, 3))
    assert seen == [("pre", 1), ("post", (1, 2))]
    names = []
    net.apply(lambda b: names.append(type(b).__name__))
    assert names == ["Dense", "Activation", "Sequential"]
    net.cast("float64")
    assert net[0].weight.data().dtype == np.float64
    assert "Dense(3 -> 2, linear)" in repr(net) and len(net) == 2
    with pytest.raises(ValueError, match="HybridSequential"):
        nn.HybridSequential().add(nn.Sequential())


def test_hybridized_batchnorm_updates_running_statistics():
    bn = nn.BatchNorm(in_channels=2, momentum=0.5)
    bn.initialize()
    bn.hybridize()
    x = mx.nd.array(np.arange(8, dtype=np.float32).reshape(2, 2, 2))
    with autograd.record():
        y = bn(x)
    y.backward()
    mean = x.asnumpy().transpose(1, 0, 2).reshape(2, -1).mean(1)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.5 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn(x).asnumpy(),                        # predict mode: running stats
                               (x.asnumpy() - 0.5 * mean[None, :, None])
                               / np.sqrt(bn.running_var.data().asnumpy()[None, :, None] + 1e-5),
                               rtol=1e-4, atol=1e-5)


def test_trainer_sgd_step_and_stale_gradients(tmp_path):
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.Normal(0.5))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    x = _x(4, 3)
    w0 = net.weight.data().asnumpy().copy()
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    g = net.weight.grad().asnumpy().copy()
    trainer.step(4)
    np.testing.assert_allclose(net.weight.data().asnumpy(), w0 - 0.1 * g / 4, rtol=1e-5, atol=1e-7)
    with pytest.raises(UserWarning, match="has not been updated by backward"):
        trainer.step(4)
    trainer.step(4, ignore_stale_grad=True)                # skips: the weights stay
    np.testing.assert_allclose(net.weight.data().asnumpy(), w0 - 0.1 * g / 4, rtol=1e-5, atol=1e-7)
    trainer.set_learning_rate(0.05)
    assert trainer.learning_rate == 0.05
    f = str(tmp_path / "trainer.states")
    trainer.save_states(f)
    other = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    other.load_states(f)
    assert other.learning_rate == 0.05


def test_trainer_sums_gradients_over_contexts():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = nn.Dense(1, in_units=2, use_bias=False)
    net.initialize(mx.init.One(), ctx=ctxs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    parts = [mx.nd.array([[1.0, 2.0]], ctx=ctxs[0]), mx.nd.array([[3.0, 5.0]], ctx=ctxs[1])]
    with autograd.record():
        losses = [net(p) for p in parts]
    for loss in losses:
        loss.backward()
    trainer.step(2)
    for d in net.weight.list_data():
        np.testing.assert_allclose(d.asnumpy(), [[1.0 - 4.0 / 2, 1.0 - 7.0 / 2]])


def test_none_inputs_and_mixed_inputs():
    class Pick(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b=None):
            return a if b is None else a + b

    blk = Pick()
    blk.hybridize()
    one = mx.nd.ones((2,))
    assert blk(one).asnumpy().tolist() == [1.0, 1.0]
    assert blk(one, None).asnumpy().tolist() == [1.0, 1.0]    # a trailing None: the same trace
    with pytest.raises(ValueError, match="structure"):
        blk(one, one)
    with pytest.raises(ValueError, match="None"):
        Pick()(None, None)
    with pytest.raises(ValueError, match="all NDArrays or all Symbols"):
        Pick()(one, mx.sym.var("b"))
    with pytest.raises(ValueError, match=r"hybridized block's inputs must be NDArrays .*\['int'\]"):
        blk(one, 2)
    assert Pick()(one, 2).asnumpy().tolist() == [3.0, 3.0]      # imperative: numbers passed on
    assert Pick()([one, one][0], [2][0]).asnumpy().tolist() == [3.0, 3.0]
    assert Pick()(mx.sym.var("a"), 2).list_arguments() == ["a"]


class _Wrap(gluon.HybridBlock):
    """A block around a layer made elsewhere (shared between wrappers made in turn)."""

    def __init__(self, inner, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.inner = inner

    def hybrid_forward(self, F, x):
        return self.inner(x)


def test_child_does_not_keep_its_parent_alive():
    import gc
    import weakref
    inner = nn.Dense(2, in_units=3)
    inner.initialize()
    x = _x(4, 3)
    refs = []
    for hybrid in (False, True):
        outer = _Wrap(inner)
        if hybrid:
            outer.hybridize()
        x.attach_grad()
        with autograd.record():
            y = outer(x)
        y.backward()
        refs.append(weakref.ref(outer))
        del outer, y
    gc.collect()
    # a wrapper left behind would keep its bound graph (input copies, gradients) in memory
    assert [r() for r in refs] == [None, None]


def test_name_scope_reentered_restores_the_enclosing_scope():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        with net.name_scope():
            first = nn.Dense(1)
        second = nn.Dense(1)
    outside = nn.Dense(1)
    assert first.prefix.startswith("net_") and second.prefix.startswith("net_")
    assert not outside.prefix.startswith("net_")
