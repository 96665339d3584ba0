"""mx.onnx: the seed MLP, LeNet and a ResNet-18 built with the symbol API export to ONNX, pass
onnx.checker, give symjit's outputs in onnxruntime (when installed), and import back to the same
outputs; an ONNX model made here with onnx.helper imports and matches its source."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from examples.nets import lenet, mlp, resnet  # noqa: E402

R = np.random.default_rng(6)


def random_params(sym, data_shape):
    arg_s, _, aux_s = sym.infer_shape(data=data_shape)
    args = {n: mx.nd.array(R.normal(0, 0.1, s)) for n, s in zip(sym.list_arguments(), arg_s)
            if n not in ("data", "softmax_label")}
    aux = {}
    for n, s in zip(sym.list_auxiliary_states(), aux_s):
        aux[n] = mx.nd.array(R.uniform(0.5, 1.5, s) if n.endswith("var") else R.normal(0, 0.1, s))
    for n in list(args):
        if n.endswith("gamma"):
            args[n] = mx.nd.array(R.uniform(0.5, 1.5, args[n].shape))
    return args, aux


def symjit_forward(sym, args, aux, x):
    ex = sym.simple_bind(mx.cpu(), data=x.shape, grad_req="null")
    for n, v in args.items():
        if n in ex.arg_dict:
            ex.arg_dict[n][:] = v.asnumpy()
    for n, v in aux.items():
        ex.aux_dict[n][:] = v.asnumpy()
    return ex.forward(is_train=False, data=x)[0].asnumpy()


NETS = [("mlp", mlp, (4, 784)), ("lenet", lenet, (2, 1, 28, 28)),
        ("resnet18", lambda: resnet(18, classes=10), (1, 3, 64, 64))]


@pytest.mark.parametrize("name, build, shape", NETS)
def test_export_check_run_and_import_back(tmp_path, name, build, shape):
    sym = build()
    args, aux = random_params(sym, shape)
    x = R.normal(size=shape).astype(np.float32)
    want = symjit_forward(sym, args, aux, x)
    params = {**{f"arg:{k}": v for k, v in args.items()}, **{f"aux:{k}": v for k, v in aux.items()}}
    path = mx.onnx.export_model(sym, params, [shape], np.float32, str(tmp_path / f"{name}.onnx"))
    model = onnx.load(path)
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ["data"]
    meta = mx.onnx.get_model_metadata(path)
    assert meta["input_tensor_data"] == [("data", shape)]
    ort = pytest.importorskip("onnxruntime")
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"data": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    back, arg_params, aux_params = mx.onnx.import_model(path)
    assert set(back.list_auxiliary_states()) == set(aux_params)
    again = symjit_forward(back, arg_params, aux_params, x)
    np.testing.assert_allclose(again, want, rtol=1e-4, atol=1e-5)


def test_import_a_model_made_with_onnx_helper():
    from onnx import TensorProto, helper, numpy_helper
    w = R.normal(0, 0.3, (4, 2, 3, 3)).astype(np.float32)
    b = R.normal(0, 0.1, (4,)).astype(np.float32)
    fw = R.normal(0, 0.3, (16, 8)).astype(np.float32)   # Gemm without transB: (in, out)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("LeakyRelu", ["c"], ["r"], alpha=0.2),
        helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fw"], ["g"]),
        helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.float32(2.0))),
        helper.make_node("Mul", ["g", "two"], ["m"]),
        helper.make_node("Softmax", ["m"], ["y"], axis=1),
    ]
    graph = helper.make_graph(nodes, "made",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
                               numpy_helper.from_array(fw, "fw")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    x = R.normal(size=(2, 2, 8, 8)).astype(np.float32)
    sym, args, aux = mx.onnx.import_model(model)
    ex = sym.simple_bind(mx.cpu(), x=x.shape, grad_req="null")
    for n, v in args.items():
        ex.arg_dict[n][:] = v.asnumpy()
    got = ex.forward(x=x)[0].asnumpy()
    # numpy reference of the same graph
    pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((2, 4, 4, 4), np.float64)
    for i in range(4):
        for j in range(4):
            patch = pad[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
            conv[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w) + b
    act = np.where(conv > 0, conv, 0.2 * conv)
    pool = act.reshape(2, 4, 2, 2, 2, 2).mean(axis=(3, 5))
    logits = 2 * (pool.reshape(2, 16) @ fw)
    e = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_unsupported_operators_are_clear_errors(tmp_path):
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,ij->i")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(MXNetError, match="ONNX operator Einsum"):
        mx.onnx.import_model(helper.make_model(graph))
    sym = mx.sym.topk(mx.sym.Variable("data"), k=1) if hasattr(mx.sym, "topk") else \
        mx.sym.argmax(mx.sym.Variable("data"), axis=1)
    with pytest.raises(MXNetError, match="has no ONNX export"):
        mx.onnx.export_model(sym, {}, [(2, 3)], onnx_file_path=str(tmp_path / "x.onnx"))


def test_export_in_types_one_for_all_or_a_list_per_input(tmp_path):
    onnx = pytest.importorskip("onnx")
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    net = mx.sym.FullyConnected(a + b, num_hidden=2, name="fc")
    params = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    for types, want in ((np.float32, [1, 1]), ([np.float32], None), ([np.float64, np.float32], [11, 1])):
        path = str(tmp_path / "m.onnx")
        if want is None:   # a list must have one type per input
            with pytest.raises(MXNetError, match="in_types has 1 types for the 2 inputs"):
                mx.onnx.export_model(net, params, [(1, 3), (1, 3)], in_types=types, onnx_file_path=path)
            continue
        mx.onnx.export_model(net, params, [(1, 3), (1, 3)], in_types=types, onnx_file_path=path)
        assert [i.type.tensor_type.elem_type for i in onnx.load(path).graph.input] == want
    one = mx.sym.FullyConnected(a, num_hidden=2, name="fc")
    mx.onnx.export_model(one, params, [(1, 3)], in_types=[np.float32],
                         onnx_file_path=str(tmp_path / "o.onnx"))
