"""Smaller parts of MXNet 1.x's classic API: NDArray shape methods with ``inplace``, ``mx.nd._internal``,
``abs()`` of a symbol, ``Symbol.infer_type_partial``, metrics made from configs, Pearson's
micro average, ``mx.optimizer.contrib.GroupAdaGrad`` and FTML's default learning rate."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symjit as mx
from symjit.base import ParamError, ShapeError

# -- NDArray.flatten / squeeze / expand_dims with inplace -------------------------------------------

@pytest.mark.parametrize("call, want", [
    (lambda a: a.flatten(inplace=True), (2, 3)),
    (lambda a: a.squeeze(inplace=True), (2, 3)),
    (lambda a: a.squeeze(axis=1, inplace=True), (2, 3)),
    (lambda a: a.expand_dims(axis=0, inplace=True), (1, 2, 1, 3)),
    (lambda a: a.expand_dims(-1, inplace=True), (2, 1, 3, 1)),
])
def test_inplace_shape_methods_return_views(call, want):
    a = mx.nd.array(np.arange(6.0).reshape(2, 1, 3))
    view = call(a)
    assert view.shape == want
    a[0] = -1.0                       # a write through the original shows in the view
    assert (view.asnumpy().reshape(2, 3)[0] == -1.0).all()


def test_shape_methods_without_inplace_copy():
    a = mx.nd.ones((1, 4))
    copies = [a.flatten(), a.squeeze(), a.expand_dims(axis=1)]
    a[:] = 5.0
    assert [c.shape for c in copies] == [(1, 4), (4,), (1, 1, 4)]
    assert all((c.asnumpy() == 1.0).all() for c in copies)


def test_inplace_squeeze_of_all_ones_keeps_one_axis_and_checks_axes():
    assert mx.nd.ones((1, 1, 1)).squeeze(inplace=True).shape == (1,)
    with pytest.raises(ShapeError, match=r"squeeze.*axis 1.*\(1,4\)"):
        mx.nd.ones((1, 4)).squeeze(axis=1, inplace=True)


# -- mx.nd._internal ------------------------------------------------------------------------------

def test_internal_slice_assign_in_place_and_into_a_copy():
    x = mx.nd.ones((2, 3, 4))
    out = mx.nd._internal._crop_assign(x, mx.nd.zeros((2, 1, 3)), begin=(0, 1, 0), end=(2, 2, 3), out=x)
    assert out is x
    want = np.ones((2, 3, 4))
    want[:, 1:2, 0:3] = 0
    np.testing.assert_array_equal(x.asnumpy(), want)
    y = mx.nd.zeros((4,))
    fresh = mx.nd._internal._slice_assign_scalar(y, scalar=3, begin=(1,), end=(4,), step=(2,))
    assert fresh.asnumpy().tolist() == [0, 3, 0, 3] and y.asnumpy().tolist() == [0, 0, 0, 0]


def test_internal_slice_assign_checks_the_region_shape():
    with pytest.raises(ShapeError, match=r"rhs has shape \(2,2\).*\(1,3\)"):
        mx.nd._internal._slice_assign(mx.nd.ones((2, 3)), mx.nd.ones((2, 2)), begin=(0, 0), end=(1, 3))


def test_internal_has_the_underscore_operators():
    assert mx.nd._internal._plus_scalar(mx.nd.ones((2,)), scalar=2).asnumpy().tolist() == [3.0, 3.0]
    import symjit.ndarray._internal as internal  # importable by name too
    assert internal is mx.nd._internal


def test_internal_unique_zipfian_draws_distinct_classes():
    mx.random.seed(7)
    classes, trials = mx.nd._internal._sample_unique_zipfian(1000, shape=(3, 200))
    assert classes.shape == (3, 200) and trials.shape == (3,)
    assert classes.dtype == np.int64 and trials.dtype == np.int64
    for row, n in zip(classes.asnumpy(), trials.asnumpy()):
        assert len(set(row.tolist())) == 200 and row.min() >= 0 and row.max() < 1000
        assert n >= 200
    # log-uniform: the small classes come first far more often than the large ones
    assert (classes.asnumpy() < 100).sum() > (classes.asnumpy() >= 900).sum()
    with pytest.raises(ParamError, match="num_sampled"):
        mx.nd._internal._sample_unique_zipfian(10, shape=(1, 11))


# -- Symbol: abs() and infer_type_partial ---------------------------------------------------------

def test_abs_of_a_symbol_is_the_abs_operator():
    x = mx.sym.var("x")
    y = abs(x)
    assert json.loads(y.tojson())["nodes"][-1]["op"] == "abs"
    ex = y.bind(mx.cpu(), {"x": mx.nd.array([-2.0, 3.0])})
    assert ex.forward()[0].asnumpy().tolist() == [2.0, 3.0]


def test_infer_type_partial_leaves_unknown_types_none():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(mx.sym.Cast(data, dtype="float64"), num_hidden=3, name="fc")
    args, outs, aux = fc.infer_type_partial()
    assert args == [None, np.float64, np.float64] and outs == [np.float64] and aux == []
    assert fc.infer_type() == (None, None, None)
    assert fc.infer_type_partial(data="float32")[0] == [np.float32, np.float64, np.float64]


def test_executor_debug_str_ends_with_the_planned_megabytes():
    x = mx.sym.var("x")
    y = x
    for _ in range(4):
        y = y * y
    train = y.simple_bind(mx.cpu(), x=(256, 1024))            # keeps 4 MiB temporaries for backward
    infer = y.simple_bind(mx.cpu(), x=(256, 1024), grad_req="null")
    mb = [int(e.debug_str().splitlines()[-1].split()[1]) for e in (train, infer)]
    assert train.debug_str().splitlines()[-1] == f"Total {mb[0]} MB allocated"
    assert mb[0] >= 3 and mb[1] < mb[0]


# -- metrics ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("metric, kwargs", [
    ("acc", {"axis": 0}), ("f1", {}), ("perplexity", {"ignore_label": -1}),
    ("pearsonr", {"average": "micro"}), (["acc", "mse"], {})])
def test_metric_config_round_trips_through_json(metric, kwargs):
    m = mx.metric.create(metric, **kwargs)
    text = json.dumps(m.get_config())
    again = mx.metric.create(text)
    assert type(again) is type(m) and again.get_config() == m.get_config()
    assert mx.metric.create(m.get_config()).get_config() == m.get_config()   # the dict as well


def test_metric_create_rejects_bad_configs():
    with pytest.raises(ParamError, match="'metric' entry"):
        mx.metric.create('{"name": "x"}')
    with pytest.raises(ParamError, match="not a metric name nor valid JSON"):
        mx.metric.create("{not json")
    with pytest.raises(ParamError, match="no further arguments"):
        mx.metric.create('{"metric": "acc"}', axis=1)


def test_pearson_micro_pools_all_values_and_macro_averages_batches():
    a_l, a_p = np.array([1.0, 0.0, 0.0, 1.0]), np.array([0.2, 0.1, 0.4, 0.9])
    b_l, b_p = np.array([3.0, 1.0, 2.0]), np.array([2.5, 0.0, 1.0])
    micro, macro = mx.metric.PearsonCorrelation(average="micro"), mx.metric.PearsonCorrelation()
    assert np.isnan(micro.get()[1]) and np.isnan(macro.get()[1])
    for m in (micro, macro):
        m.update([mx.nd.array(a_l)], [mx.nd.array(a_p)])
        m.update([mx.nd.array(b_l)], [mx.nd.array(b_p)])
    pooled = np.corrcoef(np.concatenate([a_p, b_p]), np.concatenate([a_l, b_l]))[0, 1]
    per_batch = (np.corrcoef(a_p, a_l)[0, 1] + np.corrcoef(b_p, b_l)[0, 1]) / 2
    assert micro.get()[1] == pytest.approx(pooled, rel=1e-6)
    assert macro.get()[1] == pytest.approx(per_batch, rel=1e-6)
    micro.reset_local()
    assert np.isnan(micro.get()[1]) and micro.get_global()[1] == pytest.approx(pooled, rel=1e-6)
    with pytest.raises(ParamError, match="average"):
        mx.metric.PearsonCorrelation(average="weighted")


# -- optimizers ---------------------------------------------------------------------------------------

def test_group_adagrad_one_rate_per_row():
    opt = mx.optimizer.contrib.GroupAdaGrad(learning_rate=0.5, eps=1e-6, clip_gradient=2.5, rescale_grad=2.0)
    assert isinstance(mx.optimizer.create("groupadagrad"), mx.optimizer.contrib.GroupAdaGrad)
    w = mx.nd.array([[1.0, 1.0], [0.0, 0.0]])
    g = np.array([[1.0, 0.5], [-2.0, 0.0]])
    hist = opt.create_state(0, w)
    assert hist.shape == (2, 1)
    opt.update(0, w, mx.nd.array(g), hist)
    gc = np.clip(g * 2.0, -2.5, 2.5)
    want_hist = (gc ** 2).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(hist.asnumpy(), want_hist, rtol=1e-6)
    want_w = np.array([[1.0, 1.0], [0.0, 0.0]]) - 0.5 * gc / np.sqrt(want_hist + 1e-6)
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-5)
    with pytest.raises(ParamError, match="weight decay"):
        mx.optimizer.contrib.GroupAdaGrad(wd=0.1).update(0, w, mx.nd.array(g), hist)
    with pytest.raises(ShapeError, match="2-D"):
        opt.create_state(0, mx.nd.ones((3,)))


def test_ftml_learning_rate_defaults_to_the_optimizers():
    assert mx.optimizer.FTML().lr == mx.optimizer.SGD().lr == 0.01


# -- Module ---------------------------------------------------------------------------------------------

def test_set_params_missing_is_a_runtime_error_before_extras_are_checked():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind(data_shapes=[("data", (1, 3))], grad_req="add")
    assert mod._grad_req == "add"
    w = mx.nd.ones((2, 3))
    with pytest.raises(RuntimeError, match=r"\['fc_bias'\].*allow_missing"):
        mod.set_params({"fc_weight": w, "other": w}, {})
    with pytest.raises(ValueError, match="other"):
        mod.set_params({"fc_weight": w, "other": w}, {}, allow_missing=True)
    mod.set_params({"fc_weight": w}, {}, allow_missing=True)
    assert mod.get_params()[0]["fc_weight"].asnumpy().tolist() == w.asnumpy().tolist()


# -- NDArray odds and ends ------------------------------------------------------------------------------

@pytest.mark.parametrize("key, shape", [
    ((slice(None), slice(1, 3)), (4, 5)), ((slice(1, 3),), (4, 5)), ((slice(None, None, -1),), (3,)),
    ((slice(0, 1), slice(None, None, 2)), (2, 6)), ((2, slice(None)), (4, 5)), ((slice(3, 3),), (4, 2)),
    ((slice(None), slice(None), slice(0, 1)), (3, 1, 4)),
])
def test_basic_slice_contiguity_matches_numpy(key, shape):
    want = np.zeros(shape)[key].flags.c_contiguous
    assert mx.nd.NDArray._basic_indexing_slice_is_contiguous(key, shape) == want


def test_one_element_array_assigned_to_one_element():
    b = mx.nd.zeros((2,))
    b[1] = np.array([2.5], dtype=np.float32)
    assert b.asnumpy().tolist() == [0.0, 2.5]


def test_setstate_takes_mxnets_pickled_array_bytes():
    raw = mx.nd.save_tobuffer([mx.nd.array([[1, 2]], dtype="int32")])[24:-8]
    a = mx.nd.zeros((5,))
    a.__setstate__({"handle": bytearray(raw)})
    assert a.dtype == np.int32 and a.asnumpy().tolist() == [[1, 2]]


def test_moveaxis_rejects_repeated_axes():
    x = mx.nd.zeros((1, 2, 3))
    for src, dst in (([0, 0], [0, 1]), ([0, 1], [2, 2])):
        with pytest.raises(ValueError, match="repeats an axis"):
            mx.nd.moveaxis(x, src, dst)
    assert mx.nd.moveaxis(x, [0, 2], [2, 0]).shape == (3, 2, 1)


def test_l1_norm_over_two_axes_sums_absolute_values():
    x = np.arange(-12.0, 12.0).reshape(2, 3, 4)
    got = mx.nd.norm(mx.nd.array(x), ord=1, axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(got.asnumpy(), np.abs(x).sum(axis=(0, 2), keepdims=True))


def test_broadcast_like_refuses_empty_axes():
    with pytest.raises(ParamError, match="empty axes"):
        mx.nd.broadcast_like(mx.nd.ones((1,)), mx.nd.ones((3,)), lhs_axes=(), rhs_axes=())


def test_cpu_shared_is_a_host_context():
    ctx = mx.Context("cpu_shared", 0)
    a = mx.nd.ones((2,), ctx=ctx)
    assert a.context == ctx and ctx.device_typeid == 5 and (a * 3).context == ctx
    assert (a * 3).asnumpy().tolist() == [3.0, 3.0]


def test_bucketing_sym_gen_names_restart_per_bucket():
    def sym_gen(n):
        net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=n)
        return net, ("data",), None
    mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=1)        # advance the global counter
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=2)
    assert mod.symbol.list_arguments()[1] == "fullyconnected0_weight"


def test_module_states_are_set_and_read_per_device():
    net = mx.sym.var("data") * mx.sym.var("h")
    mod = mx.mod.Module(net, label_names=None, state_names=["h"], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (4, 3))], for_training=False)
    mod.init_params()
    mod.set_states(value=2.0)
    batch = mx.io.DataBatch(data=[mx.nd.ones((4, 3))], label=[])
    mod.forward(batch)
    assert mod.get_outputs()[0].asnumpy().tolist() == [[2.0] * 3] * 4
    halves = mod.get_states(merge_multi_context=False)
    assert [len(h) for h in halves] == [2] and halves[0][0].shape == (2, 3)
    mod.set_states(states=[[mx.nd.full((2, 3), 5.0), mx.nd.full((2, 3), 7.0)]])
    mod.forward(batch)
    assert mod.get_outputs()[0].asnumpy()[:, 0].tolist() == [5.0, 5.0, 7.0, 7.0]
    assert mod.get_states()[0].shape == (4, 3)
    assert mod._total_exec_bytes >= 0
    with pytest.raises(ParamError, match="exactly one"):
        mod.set_states()


def test_base_module_fit_drives_a_subclasss_methods():
    calls = []

    class Counting(mx.mod.BaseModule):
        def bind(self, *a, **k): calls.append("bind")
        def init_params(self, *a, **k): calls.append("init_params")
        def init_optimizer(self, *a, **k): calls.append("init_optimizer")
        def forward(self, batch, is_train=None): calls.append(("forward", batch.data[0].shape[0], is_train))
        def backward(self, out_grads=None): calls.append("backward")
        def update(self): calls.append("update")
        def update_metric(self, metric, labels, pre_sliced=False): calls.append("metric")
        def get_params(self): return {}, {}

    it = mx.io.NDArrayIter(np.zeros((4, 2)), np.zeros((4,)), batch_size=2)
    Counting().fit(it, num_epoch=1)
    assert calls == ["bind", "init_params", "init_optimizer"] + [("forward", 2, True), "backward", "update",
                                                                 "metric"] * 2
    with pytest.raises(NotImplementedError, match="BaseModule.forward"):
        mx.mod.BaseModule().forward(None)
    assert issubclass(mx.mod.Module, mx.mod.BaseModule)


def test_buckets_share_parameter_gradients_so_add_accumulates():
    def sym_gen(n):
        w = mx.sym.var("w", shape=(1,), init=mx.init.One())
        return mx.sym.make_loss(mx.sym.sum(mx.sym.broadcast_mul(mx.sym.var("data"), w))), ("data",), None

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    mod.bind(data_shapes=[("data", (4,))], grad_req="add")
    mod.init_params()
    for key in (4, 3, 4):
        mod.forward_backward(mx.io.DataBatch([mx.nd.ones((key,))], None, bucket_key=key,
                                             provide_data=[mx.io.DataDesc("data", (key,))]))
    assert mod._curr_module._exec_group.grad_arrays[0][0].asnumpy().tolist() == [11.0]   # 4 + 3 + 4


def test_dlpack_methods_of_ndarray():
    x = mx.nd.array([1.0, 2.0])
    shared = mx.nd.from_dlpack(x.to_dlpack_for_write())
    shared[0] = 9.0
    assert x.asnumpy().tolist() == [9.0, 2.0]
    assert mx.nd.from_dlpack(x.to_dlpack_for_read()).asnumpy().tolist() == [9.0, 2.0]
