"""Sparse storage in training: Parameter, Trainer, KVStore and the optimizers' lazy update."""
import numpy as np
import pytest

import symjit as mx
from symjit import gluon
from symjit.base import MXNetError

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10


def _rsp_grad(rows, shape=(4, 3), value=1.0):
    dense = np.zeros(shape, np.float32)
    dense[rows] = value
    return mx.nd.array(dense).tostype("row_sparse")


# -- optimizers ----------------------------------------------------------------------------------

def test_sgd_lazy_update_touches_only_the_gradient_rows():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.array(W)
    upd(0, _rsp_grad([1, 3]), w)
    expect = W.copy()
    expect[[1, 3]] -= 0.1 * (1.0 + 0.01 * W[[1, 3]])
    np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-6)
    mom = upd.states[0].asnumpy()
    assert not mom[[0, 2]].any() and mom[[1, 3]].all()


def test_sgd_without_lazy_update_is_the_dense_update():
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.01, lazy_update=False)
    w = mx.nd.array(W)
    mx.optimizer.get_updater(opt)(0, _rsp_grad([1]), w)
    g = np.zeros_like(W)
    g[1] = 1
    np.testing.assert_allclose(w.asnumpy(), W - 0.1 * (g + 0.01 * W), rtol=1e-6)


def test_adam_lazy_update_matches_dense_on_the_rows():
    rows = [0, 2]
    lazy, dense = mx.nd.array(W), mx.nd.array(W[rows])
    mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.01))(0, _rsp_grad(rows, value=0.5), lazy)
    mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.01))(0, mx.nd.full((2, 3), 0.5), dense)
    np.testing.assert_allclose(lazy.asnumpy()[rows], dense.asnumpy(), rtol=1e-6)
    np.testing.assert_array_equal(lazy.asnumpy()[[1, 3]], W[[1, 3]])


@pytest.mark.parametrize("make", [lambda: mx.optimizer.Ftrl(learning_rate=0.1, wd=0.05),
                                  lambda: mx.optimizer.AdaGrad(learning_rate=0.1, wd=0.05)],
                         ids=["ftrl", "adagrad"])
def test_ftrl_and_adagrad_update_a_row_sparse_weight_on_the_gradient_rows_only(make):
    """FTRL and AdaGrad have no ``lazy_update``: a row_sparse weight with a row_sparse gradient
    updates the gradient's rows only (MXNet's sparse kernels), those rows as the dense update does;
    a dense weight takes the dense update (weight decay reaches every row)."""
    rows = [0, 2]
    sparse_w, rows_w = mx.nd.array(W).tostype("row_sparse"), mx.nd.array(W[rows])
    mx.optimizer.get_updater(make())(0, _rsp_grad(rows, value=0.5), sparse_w)
    mx.optimizer.get_updater(make())(0, mx.nd.full((2, 3), 0.5), rows_w)
    got = sparse_w.asnumpy()
    np.testing.assert_allclose(got[rows], rows_w.asnumpy(), rtol=1e-6)
    np.testing.assert_array_equal(got[[1, 3]], W[[1, 3]])
    dense_w = mx.nd.array(W)
    mx.optimizer.get_updater(make())(0, _rsp_grad(rows, value=0.5), dense_w)
    assert not np.allclose(dense_w.asnumpy()[[1, 3]], W[[1, 3]])


def test_row_sparse_weight_keeps_its_storage_type():
    w = mx.nd.array(W).tostype("row_sparse")
    mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=1.0))(0, _rsp_grad([2]), w)
    assert w.stype == "row_sparse"
    expect = W.copy()
    expect[2] -= 1
    np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-6)


def test_direct_update_of_a_row_sparse_weight_and_state():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    w = mx.nd.array(W).tostype("row_sparse")
    state = opt.create_state(0, w)
    opt.update(0, w, _rsp_grad([1, 3]), state)
    expect = W.copy()
    expect[[1, 3]] -= 0.1
    assert w.stype == "row_sparse"
    np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-6)
    np.testing.assert_allclose(state.asnumpy()[[1, 3]], -0.1, rtol=1e-6)
    assert not state.asnumpy()[[0, 2]].any()


@pytest.mark.parametrize("method", ["update", "update_multi_precision"])
def test_direct_update_with_a_row_sparse_gradient_is_lazy(method):
    opt = mx.optimizer.Adam(learning_rate=0.1, wd=0.1)
    w = mx.nd.array(W)
    state = opt.create_state(0, w)
    getattr(opt, method)(0, w, _rsp_grad([2]), state)
    np.testing.assert_array_equal(w.asnumpy()[[0, 1, 3]], W[[0, 1, 3]])
    assert (w.asnumpy()[2] < W[2]).all()
    getattr(opt, method)(0, w, mx.nd.sparse.zeros("row_sparse", W.shape), state)
    assert opt.num_update == 2 and (w.asnumpy()[[0, 1, 3]] == W[[0, 1, 3]]).all()


def test_dense_update_with_row_sparse_states():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, lazy_update=False)
    w = mx.nd.array(W).tostype("row_sparse")
    state = opt.create_state(0, w)
    opt.update(0, w, mx.nd.ones(W.shape), state)
    np.testing.assert_allclose(w.asnumpy(), W - 0.1, rtol=1e-6)
    np.testing.assert_allclose(state.asnumpy(), np.full(W.shape, -0.1), rtol=1e-6)


# -- kvstore -------------------------------------------------------------------------------------

def test_push_of_row_sparse_values_and_row_sparse_pull():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.array(W))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0, momentum=0.5))
    kv.push("w", [_rsp_grad([1]), _rsp_grad([1, 2])])
    outs = [mx.nd.sparse.zeros("row_sparse", W.shape) for _ in range(2)]
    kv.row_sparse_pull("w", out=outs, row_ids=[mx.nd.array([1, 1, 0]), mx.nd.array([3])])
    assert outs[0].indices.asnumpy().tolist() == [0, 1] and outs[1].indices.asnumpy().tolist() == [3]
    expect = W.copy()
    expect[1] -= 2
    expect[2] -= 1
    np.testing.assert_allclose(outs[0].asnumpy()[[0, 1]], expect[[0, 1]], rtol=1e-6)
    np.testing.assert_allclose(outs[1].asnumpy()[3], expect[3], rtol=1e-6)


def test_row_sparse_pull_checks_its_arguments():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.array(W))
    out = mx.nd.sparse.zeros("row_sparse", W.shape)
    with pytest.raises(MXNetError, match=r"row_ids must lie in \[0, 4\)"):
        kv.row_sparse_pull(0, out=out, row_ids=mx.nd.array([7]))
    with pytest.raises(MXNetError, match="out must be a row_sparse array"):
        kv.row_sparse_pull(0, out=mx.nd.zeros(W.shape), row_ids=mx.nd.array([0]))
    with pytest.raises(MXNetError, match="row_ids must hold integers"):
        kv.row_sparse_pull(0, out=out, row_ids=mx.nd.array([1.5]))


# -- gluon -----------------------------------------------------------------------------------------

def test_sparse_parameter_access_rules():
    p = gluon.Parameter("w", shape=(4, 3), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.Constant(2.0), ctx=[mx.cpu(0), mx.cpu(1)])
    assert [g.stype for g in p.list_grad()] == ["row_sparse", "row_sparse"]
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        p.list_data()
    with pytest.raises(RuntimeError, match="no Trainer"):
        p.row_sparse_data(mx.nd.array([0]))
    gluon.Trainer([p], "sgd")
    rows = p.row_sparse_data(mx.nd.array([3, 1], ctx=mx.cpu(1)))
    assert rows.context == mx.cpu(1) and rows.indices.asnumpy().tolist() == [1, 3]
    assert (rows.data.asnumpy() == 2).all()
    assert p.var().attr("__storage_type__") == "1"
    with pytest.raises(RuntimeError, match="only one Trainer"):
        gluon.Trainer([p], "sgd")
    dense = gluon.Parameter("d", shape=(2,))
    dense.initialize()
    with pytest.raises(RuntimeError, match="use data"):
        dense.row_sparse_data(mx.nd.array([0]))


def test_sparse_parameter_saves_every_row(tmp_path):
    params = gluon.ParameterDict("net_")
    params.get("w", shape=(4, 3), stype="row_sparse", init=mx.init.Constant(5.0))
    params.initialize()
    gluon.Trainer(params, "sgd")
    path = str(tmp_path / "p.params")
    params.save(path)
    saved = mx.nd.load(path)["net_w"]
    assert saved.stype == "row_sparse" and (saved.asnumpy() == 5).all()
    dense = gluon.ParameterDict("net_")
    dense.get("w", shape=(4, 3))
    dense.load(path)
    assert dense.get("w").data().stype == "default" and (dense.get("w").data().asnumpy() == 5).all()


def test_sparse_weights_need_update_on_kvstore():
    p = gluon.Parameter("w", shape=(4, 3), stype="row_sparse")
    p.initialize()
    trainer = gluon.Trainer([p], "sgd", update_on_kvstore=False)
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        trainer._init_kvstore()


def test_embedding_sparse_grad_trains_only_the_used_rows():
    net = gluon.nn.Embedding(5, 2, sparse_grad=True)
    net.initialize(mx.init.One())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5, "wd": 0.1})
    with mx.autograd.record():
        y = net(mx.nd.array([1, 3, 3]))
    y.backward()
    grad = net.weight.grad()
    assert grad.stype == "row_sparse" and grad.indices.asnumpy().tolist() == [1, 3]
    trainer.step(1)
    w = net.weight.data().asnumpy()
    np.testing.assert_allclose(w[[0, 2, 4]], 1.0)                   # lazy: no weight decay there
    np.testing.assert_allclose(w[1], 1 - 0.5 * (1 + 0.1), rtol=1e-6)
    np.testing.assert_allclose(w[3], 1 - 0.5 * (2 + 0.1), rtol=1e-6)


def test_two_contexts_sum_row_sparse_gradients():
    p = gluon.Parameter("w", shape=(4, 1), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init="zeros", ctx=[mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 0.1})
    rows = mx.nd.array([0, 2])
    with mx.autograd.record():
        for w in p.list_row_sparse_data(rows):
            (mx.nd.take(w, rows) * 2).backward()      # a gradient in rows 0 and 2 only
    trainer.step(1)
    assert trainer._update_on_kvstore is True
    got = p.row_sparse_data(mx.nd.arange(0, 4)).asnumpy().ravel()
    np.testing.assert_allclose(got, [-0.4, 0, -0.4, 0], rtol=1e-6)


def test_symbol_block_refuses_sparse_variables():
    out = mx.sym.dot(mx.sym.var("data"), mx.sym.var("weight", stype="row_sparse"))
    with pytest.raises(AssertionError, match="storage type"):
        gluon.SymbolBlock(out, mx.sym.var("data"))


@pytest.mark.gpu
def test_sparse_arrays_and_a_sparse_gradient_step_on_a_gpu_match_the_cpu():
    dense = np.zeros((5, 3), np.float32)
    dense[1], dense[3] = [1, 2, 3], [4, 5, 6]

    def run(ctx):
        rsp = mx.nd.array(dense, ctx=ctx).tostype("row_sparse")
        csr = mx.nd.array(dense, ctx=ctx).tostype("csr")
        results = [mx.nd.sparse.dot(csr, mx.nd.ones((3, 4), ctx=ctx)), rsp * 2,
                   mx.nd.sparse.retain(rsp, mx.nd.array([3], ctx=ctx)), csr.T]
        net = gluon.nn.Embedding(5, 2, sparse_grad=True)
        net.initialize(mx.init.One(), ctx=ctx)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5, "wd": 0.1})
        with mx.autograd.record():
            y = net(mx.nd.array([1, 3, 3], ctx=ctx))
        y.backward()
        results.append(net.weight.grad(ctx))
        trainer.step(1)
        return results + [net.weight.data(ctx)]

    cpu, gpu = run(mx.cpu()), run(mx.gpu(0))
    for c, g in zip(cpu, gpu):
        assert g.context == mx.gpu(0) and g.stype == c.stype
        np.testing.assert_allclose(g.asnumpy(), c.asnumpy(), rtol=1e-6)
    assert [a.stype for a in cpu] == ["default", "row_sparse", "row_sparse", "default",   # csr.T: dense
                                      "row_sparse", "default"]
