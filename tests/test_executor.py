"""Executor behaviour: binding forms, grad_req semantics, storage identity, reshape, errors,
fused vs unfused equality."""
from __future__ import annotations

import re

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.config import Config
from symjit.executor import Executor

R = np.random.default_rng(3)


def fc_net(hidden=4):
    return mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc")


def arrays(shapes, dtype="float64"):
    return {n: mx.nd.array(R.uniform(-1, 1, s), dtype=dtype) for n, s in shapes.items()}


FC_SHAPES = {"data": (3, 5), "fc_weight": (4, 5), "fc_bias": (4,)}


def test_bind_list_and_dict_agree():
    args = arrays(FC_SHAPES)
    ex1 = fc_net().bind(mx.cpu(), args)
    ex2 = fc_net().bind(mx.cpu(), [args[n] for n in ["data", "fc_weight", "fc_bias"]])
    want = args["data"].asnumpy() @ args["fc_weight"].asnumpy().T + args["fc_bias"].asnumpy()
    np.testing.assert_allclose(ex1.forward()[0].asnumpy(), want, rtol=1e-12)
    np.testing.assert_allclose(ex2.forward()[0].asnumpy(), want, rtol=1e-12)
    assert list(ex1.output_dict) == ["fc_output"]


def test_user_arrays_are_the_storage():
    args = arrays(FC_SHAPES)
    ex = fc_net().bind(mx.cpu(), args)
    addr = args["data"]._data.ctypes.data
    args["data"][:] = 0.0
    out = ex.forward()[0].asnumpy()
    np.testing.assert_allclose(out, np.broadcast_to(args["fc_bias"].asnumpy(), (3, 4)))
    ex.forward(data=np.ones((3, 5)))
    assert args["data"]._data.ctypes.data == addr
    assert float(args["data"].asnumpy().sum()) == 15.0
    assert ex.outputs[0] is ex.forward()[0]


def _grads(ex, head):
    ex.forward(is_train=True)
    ex.backward(mx.nd.array(head, dtype="float64"))


def test_grad_req_add_accumulates_and_null_untouched():
    args = arrays(FC_SHAPES)
    grads = {n: mx.nd.full(s, 7.0, dtype="float64") for n, s in FC_SHAPES.items()}
    reqs = {"data": "null", "fc_weight": "add", "fc_bias": "write"}
    ex = fc_net().bind(mx.cpu(), args, args_grad=grads, grad_req=reqs)
    head = R.uniform(-1, 1, (3, 4))
    _grads(ex, head)
    _grads(ex, head)
    dw = head.T @ args["data"].asnumpy()
    np.testing.assert_allclose(grads["fc_weight"].asnumpy(), 7.0 + 2 * dw, rtol=1e-12)
    np.testing.assert_allclose(grads["fc_bias"].asnumpy(), head.sum(0), rtol=1e-12)
    np.testing.assert_array_equal(grads["data"].asnumpy(), np.full((3, 5), 7.0))


def test_inference_only_executor_has_no_backward_program():
    ex = fc_net().simple_bind(mx.cpu(), grad_req="null", data=(3, 5))
    assert ex.grad_dict == {}
    ex.forward()
    assert set(ex._programs) == {"infer"}
    assert "backward" not in ex._programs["infer"].program.entries


def test_reshape_shares_params_and_reuses_kernels():
    ex = fc_net().simple_bind(mx.cpu(), data=(3, 5), type_dict={"data": "float64"})
    for a in ex.arg_dict.values():
        a[:] = R.uniform(-1, 1, a.shape)
    ex.forward()
    with pytest.raises(mx.MXNetError, match=r"'data' would grow from \(3,5\) to \(7,5\).*allow_up_sizing"):
        ex.reshape(data=(7, 5))
    ex2 = ex.reshape(data=(7, 5), allow_up_sizing=True)
    assert ex2.arg_dict["fc_weight"] is ex.arg_dict["fc_weight"]
    ex2.arg_dict["data"][:] = R.uniform(-1, 1, (7, 5))
    out = ex2.forward()[0].asnumpy()
    w, bias = ex.arg_dict["fc_weight"].asnumpy(), ex.arg_dict["fc_bias"].asnumpy()
    want = ex2.arg_dict["data"].asnumpy() @ w.T + bias
    np.testing.assert_allclose(out, want, rtol=1e-12)
    mode = ex._mode(False)   # the training program: no op of the net reads the mode
    assert mode == ex2._mode(False) == "train"
    assert ex._programs[mode].program.source == ex2._programs[mode].program.source   # shape-generic


def test_reshape_to_fewer_elements_shares_the_memory():
    ex = fc_net().simple_bind(mx.cpu(), data=(4, 5), grad_req="null")
    ex.arg_dict["data"][:] = 1
    ex.arg_dict["fc_weight"][:] = 1
    ex.arg_dict["fc_bias"][:] = 0
    small = ex.reshape(data=(2, 5))
    np.testing.assert_array_equal(small.forward()[0].asnumpy(), np.full((2, 4), 5.0))
    np.testing.assert_array_equal(ex.outputs[0].asnumpy()[:2], np.full((2, 4), 5.0))  # same memory
    small.arg_dict["data"][:] = 2
    np.testing.assert_array_equal(ex.arg_dict["data"].asnumpy()[:2], np.full((2, 5), 2.0))
    np.testing.assert_array_equal(ex.arg_dict["data"].asnumpy()[2:], np.full((2, 5), 1.0))


def test_backward_before_forward_differentiates_the_inference_function():
    data = mx.sym.Variable("data")
    net = mx.sym.BatchNorm(mx.sym.tile(data, reps=(2, 1)), name="bn", fix_gamma=False) * 3
    ex = net.simple_bind(mx.cpu(), data=(2, 3), type_dict={"data": "float64"})
    ex.arg_dict["data"][:] = np.arange(6.0).reshape(2, 3)
    ex.arg_dict["bn_gamma"][:] = 1
    ex.aux_dict["bn_moving_var"][:] = 4
    ex.backward(mx.nd.ones((4, 3), dtype="float64"))
    # inference BatchNorm: x / sqrt(4 + eps) * gamma; tile sums the two copies' gradients
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), np.full((2, 3), 2 * 3 / np.sqrt(4 + 1e-3)))
    assert ex.aux_dict["bn_moving_var"].asnumpy().tolist() == [4.0] * 3   # aux states untouched


def test_errors_name_argument_and_shapes():
    ex = fc_net().simple_bind(mx.cpu(), data=(3, 5))
    with pytest.raises(mx.MXNetError, match=r"'data'.*\(2,5\).*\(3,5\)"):
        ex.forward(data=np.zeros((2, 5)))
    with pytest.raises(mx.MXNetError, match="unknown argument 'nope'"):
        ex.forward(nope=np.zeros(3))
    with pytest.raises(mx.MXNetError, match="misses"):
        fc_net().bind(mx.cpu(), {"data": mx.nd.zeros((3, 5))})
    # a name the symbol lacks is ignored, as in MXNet, whether it holds an array or None
    nobias = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, no_bias=True, name="fc")
    given = {"data": mx.nd.ones((3, 5)), "fc_weight": mx.nd.ones((4, 5))}
    extra = nobias.bind(mx.cpu(), dict(given, fc_bias=mx.nd.zeros((4,)), other=mx.nd.ones(2)))
    assert extra.arg_dict.keys() == {"data", "fc_weight"}
    np.testing.assert_allclose(extra.forward()[0].asnumpy(), np.full((3, 4), 5.0))
    ex = nobias.bind(mx.cpu(), dict(given, fc_bias=None),
                     args_grad={"data": mx.nd.zeros((3, 5)), "fc_bias": None},
                     grad_req={"data": "write", "fc_weight": "null", "fc_bias": "write"})
    assert ex._grad_req == {"data": "write", "fc_weight": "null"}   # the absent bias is ignored
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), np.full((3, 4), 5.0))
    bad = arrays({"data": (3, 5), "fc_weight": (4, 6), "fc_bias": (4,)})
    with pytest.raises(mx.MXNetError, match=r"FullyConnected 'fc'.*weight.*\(4,6\).*\(4,5\)"):
        fc_net().bind(mx.cpu(), bad)
    with pytest.raises(mx.MXNetError, match="grad_req"):
        fc_net().simple_bind(mx.cpu(), grad_req="sometimes", data=(3, 5))


def _elementwise_net():
    x = mx.sym.Variable("x")
    y = mx.sym.Variable("y")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=6, name="fc"), act_type="tanh")
    z = mx.sym.sigmoid(h * y + 1.5) - h / (y * y + 1.0)
    return mx.sym.exp(z * 0.5)


@pytest.mark.parametrize("req", ["write", "add"])
def test_fused_equals_unfused(req):
    shapes = {"x": (4, 3), "fc_weight": (6, 3), "fc_bias": (6,), "y": (4, 6)}
    base = {n: R.uniform(-1, 1, s) for n, s in shapes.items()}
    head = R.uniform(-1, 1, (4, 6))
    results = []
    for fusion in (True, False):
        args = {n: mx.nd.array(v, dtype="float64") for n, v in base.items()}
        grads = {n: mx.nd.ones(v.shape, dtype="float64") for n, v in base.items()}
        cfg = Config.from_env().replace(fusion=fusion)
        ex = Executor(_elementwise_net(), mx.cpu(), args, grads, req, config=cfg)
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward(mx.nd.array(head, dtype="float64"))
        n_groups = len(ex._programs["train"].groups)
        results.append((out, {n: g.asnumpy() for n, g in grads.items()}, n_groups))
    (o1, g1, k1), (o2, g2, k2) = results
    assert k1 < k2, "fusion should produce fewer kernels"
    np.testing.assert_allclose(o1, o2, rtol=1e-12)
    for n in g1:
        np.testing.assert_allclose(g1[n], g2[n], rtol=1e-10, atol=1e-12, err_msg=n)


def test_copy_params_from_and_monitor():
    ex = fc_net().simple_bind(mx.cpu(), data=(3, 5))
    w = mx.nd.ones((4, 5))
    ex.copy_params_from({"fc_weight": w, "fc_bias": mx.nd.zeros((4,))})
    np.testing.assert_array_equal(ex.arg_dict["fc_weight"].asnumpy(), np.ones((4, 5)))
    with pytest.raises(mx.MXNetError, match="extra"):
        ex.copy_params_from({"extra": w})
    ex.copy_params_from({"extra": w}, allow_extra_params=True)
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name))
    ex.forward(data=np.ones((3, 5)))
    assert "fc_output" in seen


def test_a_reshaped_executor_keeps_the_monitor_callback():
    # the callback installed on an executor is called by the executors its reshape makes, with the
    # new shapes (a Module fed batches of another shape reshapes its executors)
    ex = fc_net().simple_bind(mx.cpu(), data=(3, 5))
    seen = {}
    ex.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.shape), monitor_all=True)
    small = ex.reshape(data=(2, 5))
    small.forward(data=np.ones((2, 5)))
    assert seen["fc_data"] == (2, 5) and seen["fc_output"] == (2, 4)
    ex.set_monitor_callback(None)
    seen.clear()
    ex.reshape(data=(1, 5)).forward(data=np.ones((1, 5)))
    assert not seen


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8"])
def test_an_integer_dtype_a_float_op_cannot_take_is_a_clear_bind_error(dtype):
    with pytest.raises(mx.MXNetError) as err:
        fc_net().simple_bind(mx.cpu(), data=(2, 3), type_dict={"data": dtype})
    msg = str(err.value)
    assert msg == (f"FullyConnected 'fc' (inputs: data={dtype}, weight=?, bias=?): argument 'data' has "
                   f"dtype {dtype}; FullyConnected takes float16, float32 or float64"), msg


@pytest.mark.parametrize("build, inputs, arg", [
    (lambda v: mx.sym.Convolution(v["data"], kernel=(3, 3), num_filter=2, name="n"), {"data": (1, 1, 5, 5)},
     "data"),
    (lambda v: mx.sym.Deconvolution(v["data"], kernel=(2, 2), num_filter=2, name="n"), {"data": (1, 1, 3, 3)},
     "data"),
    (lambda v: mx.sym.Pooling(mx.sym.relu(v["data"]), kernel=(2, 2), name="n"), {"data": (1, 1, 4, 4)},
     "data"),
    (lambda v: mx.sym.dot(v["a"], v["b"], name="n"), {"a": (2, 3), "b": (3, 2)}, "lhs"),
    (lambda v: mx.sym.batch_dot(v["a"], v["b"], name="n"), {"a": (1, 2, 3), "b": (1, 3, 2)}, "lhs"),
    (lambda v: mx.sym.FullyConnected(v["data"], weight=mx.sym.Variable("w", dtype="int32"), num_hidden=2,
                                     name="n"), {"data": (2, 3)}, "weight"),
])
def test_float_ops_name_the_integer_argument_at_bind(build, inputs, arg):
    net = build({n: mx.sym.Variable(n) for n in inputs})
    types = {n: "int32" for n in inputs if arg != "weight"}
    with pytest.raises(mx.MXNetError, match=rf"^\w+ 'n' \(inputs: .*\): argument '{arg}' has dtype int32; "
                                            r"\w+ takes float16, float32 or float64$"):
        net.simple_bind(mx.cpu(), type_dict=types, grad_req="null", **inputs)


@pytest.mark.parametrize("build, ref", [
    (lambda x: mx.sym.mean(mx.sym.tanh(x) * 2.0, axis=1), lambda x: (np.tanh(x) * 2).mean(axis=1)),
    (lambda x: mx.sym.sum(mx.sym.exp(x) - x, axis=(0, 2)), lambda x: (np.exp(x) - x).sum(axis=(0, 2))),
    (lambda x: mx.sym.sum(mx.sym.sigmoid(x), axis=1, keepdims=True),
     lambda x: (1 / (1 + np.exp(-x))).sum(axis=1, keepdims=True)),
])
def test_reduction_epilogue_fused(build, ref):
    x = R.uniform(-1, 1, (3, 4, 5))
    outs = []
    for fusion in (True, False):
        args = {"x": mx.nd.array(x, dtype="float64")}
        cfg = Config.from_env().replace(fusion=fusion)
        ex = Executor(build(mx.sym.Variable("x")), mx.cpu(), args, None, "null", config=cfg)
        outs.append(ex.forward()[0].asnumpy())
        if fusion:
            kernels = [grp for grp in ex._programs["infer"].groups if not grp.view]
            assert len(kernels) == 1, [grp.describe() for grp in kernels]
    np.testing.assert_allclose(outs[0], ref(x), rtol=1e-12)
    np.testing.assert_allclose(outs[1], ref(x), rtol=1e-12)


def _bn_relu_net(conv: bool, fix_gamma: bool):
    x = mx.sym.Variable("data")
    h = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, name="c") if conv else \
        mx.sym.FullyConnected(x, num_hidden=6, name="fc")
    h = mx.sym.Activation(mx.sym.BatchNorm(h, fix_gamma=fix_gamma, name="bn"), act_type="relu", name="r")
    return mx.sym.FullyConnected(h, num_hidden=3, name="out")


@pytest.mark.parametrize("conv", [False, True])
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batchnorm_relu_backward_rewrite_equals_unfused(conv, fix_gamma):
    net = _bn_relu_net(conv, fix_gamma)
    data_shape = (5, 2, 6, 6) if conv else (5, 7)
    arg_s, _, aux_s = net.infer_shape(data=data_shape)
    base = {n: R.uniform(-1, 1, s) for n, s in zip(net.list_arguments(), arg_s)}
    base["bn_beta"] = R.uniform(-0.3, 0.3, base["bn_beta"].shape)   # some relu inputs < 0
    head = R.uniform(-1, 1, (5, 3))
    results = []
    for fusion in (True, False):
        args = {n: mx.nd.array(v, dtype="float64") for n, v in base.items()}
        grads = {n: mx.nd.zeros(v.shape, dtype="float64") for n, v in base.items()}
        aux = {n: mx.nd.array(np.full(s, 1.0 if n.endswith("var") else 0.0), dtype="float64")
               for n, s in zip(net.list_auxiliary_states(), aux_s)}
        cfg = Config.from_env().replace(fusion=fusion)
        ex = Executor(net, mx.cpu(), args, grads, "write", aux, config=cfg)
        ex.forward(is_train=True)
        ex.backward(mx.nd.array(head, dtype="float64"))
        ops = [op.op.name for op in ex._programs["train"].graph.ops]
        assert ("_backward_BatchNorm_relu" in ops) == fusion, ops
        results.append({n: g.asnumpy() for n, g in grads.items()})
    for n in results[0]:
        np.testing.assert_allclose(results[0][n], results[1][n], rtol=1e-10, atol=1e-12, err_msg=n)
    assert np.abs(results[0]["bn_beta"]).max() > 0


def test_convolution_lowering_calls_the_serial_whole_batch_kernels():
    """Training a conv net emits the filter-major forward and the serial backward kernels, each on
    a planned workspace sized by conv2d_cols_shape; none of them in parts."""
    x = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, name="c"), act_type="tanh")
    ex = net.simple_bind(mx.cpu(), data=(2, 3, 6, 6))
    src = ex._programs["train"].program.source
    for kernel in ("conv2d_forward_cnhw", "conv2d_backward_data", "conv2d_backward_weight"):
        assert re.search(rf"\b{kernel}\b", src), kernel
    graph = ex._programs["train"].graph
    ws = [vid for vid, v in graph.values.items() if v.name.endswith("_workspace0")]
    assert len(ws) == 3 and all(len(graph.values[v].shape) == 2 and graph.values[v].shape[0] == 1 for v in ws)
    for vid in ws:   # each kernel gets its (1, length) scratch row as its fourth argument
        assert re.search(rf"conv2d_\w+\((?:v\d+, ){{3}}v{vid}, ", src), vid
    assert "_parts" not in src


def test_group2ctx_on_the_executor_device_binds_and_other_devices_are_a_clear_error():
    """MXNet's model-parallel placement: groups mapped to the executor's device bind as usual;
    a group on another device is refused with the group, its nodes and both contexts named."""
    with mx.AttrScope(ctx_group="dev1"):
        x = mx.sym.Variable("x")
        h = mx.sym.relu(x, name="h")
    with mx.AttrScope(ctx_group="dev2"):
        y = mx.sym.exp(h, name="y")
    ex = y.simple_bind(mx.cpu(), group2ctx={"dev1": mx.cpu(0), "dev2": mx.cpu(1)}, x=(2,))
    ex.arg_dict["x"][:] = mx.nd.array([-1.0, 1.0])
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), np.exp([0.0, 1.0]), rtol=1e-6)
    with pytest.raises(MXNetError, match=r"group2ctx places ctx_group 'dev2' \(nodes y\) on gpu\(1\), "
                                         r"but this executor runs on cpu\(0\)"):
        y.bind(mx.cpu(), {"x": mx.nd.ones((2,))}, group2ctx={"dev1": mx.cpu(), "dev2": mx.gpu(1)})
    with pytest.raises(MXNetError, match="group2ctx must be a dict of ctx_group name to Context"):
        y.simple_bind(mx.cpu(), group2ctx={"dev1": "cpu"}, x=(2,))
    mod = mx.mod.Module(y, data_names=["x"], label_names=None, group2ctxs=[{"dev2": mx.gpu(0)}])
    with pytest.raises(MXNetError, match=r"ctx_group 'dev2' \(nodes y\) on gpu\(0\)"):
        mod.bind(data_shapes=[("x", (2,))], for_training=False)


def test_no_grad_ops_pass_a_zero_gradient():
    """Comparisons and zeros_like inside a differentiated graph: MXNet's gradient through them is
    zero, so x * (x > 0) has gradient (x > 0)."""
    x = mx.sym.Variable("x")
    y = x * (x > 0) + mx.sym.zeros_like(x) * x + mx.sym.floor(x) * 0
    ex = y.simple_bind(mx.cpu(), x=(4,))
    ex.arg_dict["x"][:] = [1.5, -1.0, 2.0, -0.5]
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((4,)))
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), [1.0, 0.0, 1.0, 0.0])


def test_simple_bind_ignores_keywords_that_are_not_shapes():
    # as MXNet, only tuple (or list) values are shapes: take's own parameters passed along are ignored
    net = mx.sym.take(mx.sym.Variable("a"), mx.sym.Variable("indices"), axis=1, mode="clip")
    ex = net.simple_bind(mx.cpu(), a=(2, 3), indices=[4], axis=1, mode="clip")
    assert ex.arg_dict["a"].shape == (2, 3) and ex.outputs[0].shape == (2, 4)


def test_backward_takes_fewer_out_grads_when_the_rest_reach_no_gradient():
    """As MXNet: out_grads may stop early where the later outputs reach no gradient; an output
    that does reach one needs its head gradient, named in the error; out_grads past the last
    output are not read."""
    a, b, w = mx.sym.Variable("a"), mx.sym.Variable("b"), mx.sym.Variable("w")
    net = mx.sym.Group([a * w, b + 1.0])
    args = {"a": mx.nd.ones((3,)) * 2, "b": mx.nd.ones((3,)), "w": mx.nd.ones((3,))}
    ex = net.bind(mx.cpu(), args, args_grad={"w": mx.nd.zeros((3,))},
                  grad_req={"a": "null", "b": "null", "w": "write"})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((3,)) * 5])
    assert ex.grad_dict["w"].asnumpy().tolist() == [10.0] * 3
    ex = net.bind(mx.cpu(), args, args_grad={"b": mx.nd.zeros((3,))},
                  grad_req={"a": "null", "b": "write", "w": "null"})
    ex.forward(is_train=True)
    needs = r"1 out_grads for 2 outputs.*_plusscalar\d+_output.*head gradient"
    with pytest.raises(mx.MXNetError, match=needs):
        ex.backward([mx.nd.ones((3,))])
    ex.backward([mx.nd.ones((3,)), mx.nd.ones((3,)) * 3, mx.nd.ones((3,)) * 7])
    assert ex.grad_dict["b"].asnumpy().tolist() == [3.0] * 3


def test_a_graph_no_op_of_which_reads_the_mode_runs_inference_with_its_training_program():
    """No BatchNorm, Dropout or Custom: an inference pass computes what a training pass does, so
    an executor with gradients runs it with its training program (nothing more to compile) and a
    backward after it needs no second forward."""
    ex = fc_net().simple_bind(mx.cpu(), data=(3, 5), type_dict={"data": "float64"})
    for a in ex.arg_dict.values():
        a[:] = R.uniform(-1, 1, a.shape)
    infer = ex.forward(is_train=False)[0].asnumpy()
    assert set(ex._programs) == {"train"}
    ex.backward(mx.nd.ones(infer.shape, dtype="float64"))
    grad = ex.grad_dict["fc_weight"].asnumpy()
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), infer, rtol=1e-15)
    ex.backward(mx.nd.ones(infer.shape, dtype="float64"))
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), grad, rtol=1e-15)
    assert set(ex._programs) == {"train"}


@pytest.mark.parametrize("layer", [lambda x: mx.sym.Dropout(x, p=0.5),
                                   lambda x: mx.sym.BatchNorm(x, fix_gamma=False),
                                   lambda x: mx.sym.RNN(mx.sym.expand_dims(x, axis=0), mx.sym.var("p"),
                                                        mx.sym.var("s"), state_size=4, num_layers=2,
                                                        mode="rnn_tanh", p=0.5)])
def test_a_graph_with_an_op_that_reads_the_mode_keeps_an_inference_program(layer):
    x = mx.sym.var("x")
    sym = layer(x)
    shapes = {"x": (3, 4)}
    ex = sym.simple_bind(mx.cpu(), **shapes)
    for a in ex.arg_dict.values():
        a[:] = R.uniform(-1, 1, a.shape)
    ex.forward(is_train=False)
    assert ex._mode(False) == "infer" and set(ex._programs) == {"train", "infer"}
