"""mx.operator: CustomOp/CustomOpProp/register, NumpyOp, host calls between compiled segments.

References are numpy written here, or the equivalent network of built-in ops."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.compiler.pipeline import compile_symbol
from symjit.config import default_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from examples.numpy_softmax import NumpySoftmax  # noqa: E402

R = np.random.default_rng(5)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class ScaledSigmoid(mx.operator.CustomOp):
    def __init__(self, scale):
        self.scale = scale
        self.calls = []

    def forward(self, is_train, req, in_data, out_data, aux):
        self.calls.append(("forward", is_train, list(req)))
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], self.scale * _sigmoid(x))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.calls.append(("backward", list(req)))
        s = out_data[0].asnumpy() / self.scale
        self.assign(in_grad[0], req[0], out_grad[0].asnumpy() * self.scale * s * (1 - s))


CREATED: list[ScaledSigmoid] = []


@mx.operator.register("test_scaled_sigmoid")
class ScaledSigmoidProp(mx.operator.CustomOpProp):
    def __init__(self, scale="1"):
        super().__init__(need_top_grad=True)
        self.scale = float(scale)

    def create_operator(self, ctx, shapes, dtypes):
        CREATED.append(ScaledSigmoid(self.scale))
        return CREATED[-1]


def _bind(net, shapes, seed=0, grad_req="write"):
    ex = net.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
    rng = np.random.default_rng(seed)
    for arr in ex.arg_dict.values():
        arr[:] = rng.uniform(-1, 1, arr.shape)
    return ex


def test_forward_backward_against_numpy():
    x = R.uniform(-2, 2, (3, 4)).astype(np.float32)
    head = R.uniform(-1, 1, (3, 4)).astype(np.float32)
    y = mx.sym.Custom(data=mx.sym.Variable("x"), op_type="test_scaled_sigmoid", scale=2.5, name="ss")
    assert y.list_arguments() == ["x"] and y.list_outputs() == ["ss_output"]
    assert y.attr("scale") == "2.5"
    ex = y.bind(mx.cpu(), {"x": mx.nd.array(x)}, args_grad={"x": mx.nd.zeros((3, 4))})
    out = ex.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, 2.5 * _sigmoid(x), rtol=1e-6)
    ex.backward(mx.nd.array(head))
    s = _sigmoid(x)
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), head * 2.5 * s * (1 - s), rtol=1e-5)
    op = CREATED[-1]
    assert op.calls == [("forward", True, ["write"]), ("backward", ["write"])]


def _mlp(custom: bool):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc1")
    if custom:
        net = mx.sym.Custom(net, op_type="test_scaled_sigmoid", scale="3", name="act")
    else:
        net = mx.sym.Activation(net, act_type="sigmoid", name="act") * 3.0
    return mx.sym.FullyConnected(net, num_hidden=4, name="fc2")


def test_network_matches_builtin_graph():
    shapes = {"data": (5, 7)}
    ex_c, ex_b = _bind(_mlp(True), shapes), _bind(_mlp(False), shapes)
    head = mx.nd.array(R.uniform(-1, 1, (5, 4)))
    for is_train in (False, True):
        out_c = ex_c.forward(is_train=is_train)[0].asnumpy()
        out_b = ex_b.forward(is_train=is_train)[0].asnumpy()
        np.testing.assert_allclose(out_c, out_b, rtol=1e-5, atol=1e-6)
    ex_c.backward(head)
    ex_b.backward(head)
    for name in ex_b.grad_dict:
        np.testing.assert_allclose(ex_c.grad_dict[name].asnumpy(), ex_b.grad_dict[name].asnumpy(),
                                   rtol=1e-4, atol=1e-6, err_msg=name)


def test_grad_req_add_accumulates():
    ex = _bind(_mlp(True), {"data": (2, 3)}, grad_req="add")
    head = mx.nd.ones((2, 4))
    ex.forward(is_train=True)
    ex.backward(head)
    once = ex.grad_dict["fc1_weight"].asnumpy().copy()
    ex.forward(is_train=True)
    ex.backward(head)
    np.testing.assert_allclose(ex.grad_dict["fc1_weight"].asnumpy(), 2 * once, rtol=1e-5)


def test_fused_groups_around_custom_op_stay_fused():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Custom(net, op_type="test_scaled_sigmoid", name="act")
    net = mx.sym.FullyConnected(net, num_hidden=4, name="fc2")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh2")
    shapes = {"data": (3, 5), "fc1_weight": (6, 5), "fc1_bias": (6,), "fc2_weight": (4, 6), "fc2_bias": (4,)}
    dtypes = {n: np.float32 for n in shapes}
    c = compile_symbol(net, shapes, dtypes, {}, False, default_config().replace(fusion=True), load=False)
    groups = [[op.name for op in grp.ops] for grp in c.groups]
    assert groups == [["fc1", "relu1"], ["act"], ["fc2", "tanh2"]]
    segs = c.program.segments["forward"]   # a group's lone kernel is called from the host
    assert [(s.kind, len(s.launches)) for s in segs] == [("calls", 1), ("host", 0), ("calls", 1)]
    assert c.program.entries == {}   # no single compiled function for a phase split at a host op


def test_graph_without_custom_ops_keeps_one_compiled_call():
    net = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3), act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=2)   # two kernels a phase: one program function
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(2, 4))[0]))
    c = compile_symbol(net, shapes, {n: np.float32 for n in shapes}, {n: "write" for n in shapes}, True,
                       default_config(), load=False)
    for phase in ("forward", "backward"):
        assert [(s.kind, s.name) for s in c.program.segments[phase]] == [("njit", phase)]
        assert c.program.entries[phase][0] == phase


# --- the NumpyOp softmax from MXNet's tutorial (examples/numpy_softmax.py) ---------------------


def _head(numpy_op: bool):
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=5, name="fc2")
    if numpy_op:
        return NumpySoftmax()(data=net, name="softmax")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def test_numpy_softmax_matches_softmax_output():
    mine, ref = _head(True), _head(False)
    assert mine.list_arguments() == ref.list_arguments()   # softmax_label created automatically
    shapes = {"data": (6, 10)}
    ex_m = _bind(mine, shapes, grad_req={n: "write" for n in mine.list_arguments() if n != "softmax_label"})
    ex_r = _bind(ref, shapes, grad_req={n: "write" for n in ref.list_arguments() if n != "softmax_label"})
    label = np.array([0, 4, 2, 1, 3, 4], dtype=np.float32)
    for ex in (ex_m, ex_r):
        ex.arg_dict["softmax_label"][:] = label
    lr = 0.1
    for _ in range(3):   # a few SGD steps keep both nets identical
        outs = [ex.forward(is_train=True)[0].asnumpy() for ex in (ex_m, ex_r)]
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-7)
        for ex in (ex_m, ex_r):
            ex.backward()
        for name in ex_r.grad_dict:
            g_m, g_r = ex_m.grad_dict[name].asnumpy(), ex_r.grad_dict[name].asnumpy()
            np.testing.assert_allclose(g_m, g_r, rtol=1e-4, atol=1e-6, err_msg=name)
            for ex in (ex_m, ex_r):
                ex.arg_dict[name][:] -= lr * ex.grad_dict[name]
    # the gradient itself against numpy: softmax(z) - onehot(label) at the logits, summed over
    # the batch for fc2's bias
    prob = ex_m.forward(is_train=True)[0].asnumpy()
    ex_m.backward()
    onehot = np.eye(5, dtype=np.float32)[label.astype(int)]
    np.testing.assert_allclose(ex_m.grad_dict["fc2_bias"].asnumpy(), (prob - onehot).sum(axis=0),
                               rtol=1e-5, atol=1e-6)


def test_the_numpy_op_base_class_copies_forward_and_gives_a_gradient_of_ones():
    """NumpyOp itself, not subclassed, is MXNet's default operator: its output is its input, and
    its input's gradient is ones whatever the head gradient."""
    sym = mx.operator.NumpyOp().get_symbol(mx.sym.Variable("X"), name="plain")
    assert sym.list_arguments() == ["X"] and sym.list_outputs() == ["plain_output"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    dx = mx.nd.zeros((2, 3))
    ex = sym.bind(mx.cpu(), args=[mx.nd.array(x)], args_grad={"X": dx})
    np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), x)
    ex.backward(mx.nd.array(np.full((2, 3), 7.0)))
    np.testing.assert_array_equal(dx.asnumpy(), np.ones((2, 3)))


class ConstLoss(mx.operator.CustomOp):
    """out = x; backward writes a fixed gradient (2*x) whatever out_grad holds."""

    seen: list = []

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        ConstLoss.seen.append(out_grad[0].asnumpy().copy())
        self.assign(in_grad[0], req[0], 2 * in_data[0].asnumpy())


@mx.operator.register("test_const_loss")
class ConstLossProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def create_operator(self, ctx, shapes, dtypes):
        return ConstLoss()


def test_need_top_grad_false_ignores_head_gradient():
    x = np.array([[1.0, -2.0, 3.0]], dtype=np.float32)
    y = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_const_loss")
    ex = y.bind(mx.cpu(), {"x": mx.nd.array(x)}, args_grad={"x": mx.nd.zeros((1, 3))})
    ex.forward(is_train=True)
    ex.backward(mx.nd.array([[5.0, 5.0, 5.0]]))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 2 * x)
    np.testing.assert_array_equal(ConstLoss.seen[-1], np.zeros((1, 3)))   # no top gradient given


def test_unused_input_gradient_gets_req_null():
    seen = []

    class Op(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[1])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            seen.append(list(req))
            self.assign(in_grad[0], req[0], out_grad[0] * in_data[1])
            self.assign(in_grad[1], req[1], out_grad[0] * in_data[0])

    @mx.operator.register("test_mul_req")
    class Prop(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["a", "b"]

        def create_operator(self, ctx, shapes, dtypes):
            return Op()

    y = mx.sym.Custom(op_type="test_mul_req", name="m")
    assert y.list_arguments() == ["m_a", "m_b"]
    a, b = np.array([1.0, 2.0], np.float32), np.array([3.0, -4.0], np.float32)
    ex = y.bind(mx.cpu(), {"m_a": mx.nd.array(a), "m_b": mx.nd.array(b)},
                args_grad={"m_a": mx.nd.zeros((2,))}, grad_req={"m_a": "write", "m_b": "null"})
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((2,)))
    assert seen == [["write", "null"]]
    np.testing.assert_allclose(ex.grad_dict["m_a"].asnumpy(), b)


def test_aux_state_is_updated_in_place():
    class Counting(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0])
            if is_train:
                aux[0][:] = aux[0] + 1

    @mx.operator.register("test_counting")
    class Prop(mx.operator.CustomOpProp):
        def list_auxiliary_states(self):
            return ["count"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], [(1,)]

        def create_operator(self, ctx, shapes, dtypes):
            return Counting()

    y = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_counting", name="c")
    assert y.list_auxiliary_states() == ["c_count"]
    count = mx.nd.zeros((1,))
    ex = y.bind(mx.cpu(), {"x": mx.nd.ones((2,))}, args_grad=None, grad_req="null", aux_states=[count])
    ex.forward(is_train=True)
    ex.forward(is_train=True)
    ex.forward(is_train=False)
    assert count.asnumpy().tolist() == [2.0]


def test_json_round_trip_keeps_op_type_and_params():
    y = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_scaled_sigmoid", scale=4, name="ss")
    back = mx.sym.load_json(y.tojson())
    assert back.attr("op_type") == "test_scaled_sigmoid" and back.attr("scale") == "4"
    ex = back.bind(mx.cpu(), {"x": mx.nd.zeros((2,))}, grad_req="null")
    assert ex.forward()[0].asnumpy().tolist() == [2.0, 2.0]


# --- errors -----------------------------------------------------------------------------------
def test_unregistered_op_type():
    with pytest.raises(MXNetError, match="op_type 'no_such_op' is not registered"):
        mx.sym.Custom(mx.sym.Variable("x"), op_type="no_such_op")
    with pytest.raises(MXNetError, match="op_type"):
        mx.sym.Custom(mx.sym.Variable("x"))


def test_wrong_shapes_from_infer_shape():
    @mx.operator.register("test_bad_shape")
    class Prop(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return [(in_shape[0][0], in_shape[0][1] + 1)], [in_shape[0]], []

    y = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_bad_shape", name="bad")
    with pytest.raises(MXNetError, match=r"Custom 'bad'.*argument 'data' has shape \(2,3\).*\(2,4\)"):
        y.infer_shape(x=(2, 3))

    @mx.operator.register("test_bad_count")
    class Prop2(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0], in_shape[0]], []

    y = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_bad_count", name="bad2")
    with pytest.raises(MXNetError, match="Custom 'bad2'.*infer_shape.*returned 2 outputs, the op has 1"):
        y.infer_shape(x=(2, 3))


def test_exception_in_forward_names_the_op():
    class Boom(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise RuntimeError("kaboom")

    @mx.operator.register("test_boom")
    class Prop(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Boom()

    y = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_boom", name="boomer")
    ex = y.bind(mx.cpu(), {"x": mx.nd.ones((2,))}, grad_req="null")
    want = "op_type='test_boom'.*'boomer': forward raised RuntimeError: kaboom"
    with pytest.raises(MXNetError, match=want):
        ex.forward()


def test_wrong_output_shape_written_in_forward():
    class Wrong(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], np.ones((5,)))

    @mx.operator.register("test_wrong_write")
    class Prop(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Wrong()

    ex = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_wrong_write", name="w").bind(
        mx.cpu(), {"x": mx.nd.ones((2,))}, grad_req="null")
    with pytest.raises(MXNetError, match=r"'w': forward raised .*shape \(5,\)"):
        ex.forward()


def test_bad_prop_kwargs_and_register_checks():
    with pytest.raises(MXNetError, match="test_scaled_sigmoid.*unexpected keyword"):
        mx.sym.Custom(mx.sym.Variable("x"), op_type="test_scaled_sigmoid", nope=1)
    with pytest.raises(MXNetError, match="CustomOpProp subclass"):
        mx.operator.register("test_not_a_prop")(object)
    assert "test_scaled_sigmoid" in mx.operator.get_all_registered_operators()


def test_numpy_softmax_example_trains():
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "examples/numpy_softmax.py", "--epochs", "1", "--batches", "100"],
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "softmax_label" in proc.stdout
    assert float(proc.stdout.split("validation accuracy ")[1].split(",")[0]) > 0.8, proc.stdout


def test_nd_custom_runs_the_operator_imperatively():
    x = R.uniform(-2, 2, (3, 4)).astype(np.float32)
    out = mx.nd.Custom(mx.nd.array(x), op_type="test_scaled_sigmoid", scale=2.0)
    np.testing.assert_allclose(out.asnumpy(), 2.0 * _sigmoid(x), rtol=1e-6)
    assert CREATED[-1].calls == [("forward", False, ["write"])]
    dest = mx.nd.zeros((3, 4))
    assert mx.nd.Custom(mx.nd.array(x), op_type="test_scaled_sigmoid", out=dest) is dest
    np.testing.assert_allclose(dest.asnumpy(), _sigmoid(x), rtol=1e-6)
    with pytest.raises(mx.MXNetError, match="not registered"):
        mx.nd.Custom(mx.nd.array(x), op_type="no_such_custom_op")
    with pytest.raises(mx.MXNetError, match="2 inputs given"):
        mx.nd.Custom(mx.nd.array(x), mx.nd.array(x), op_type="test_scaled_sigmoid")


def test_nd_custom_recorded_by_autograd_differentiates_through_its_backward():
    """``mx.nd.Custom`` under ``autograd.record()``: the forward runs at the call in training mode,
    the call is recorded, and ``backward`` reaches the input through the op's own ``backward``;
    called on arrays no variable reaches, nothing is recorded."""
    x = R.uniform(-2, 2, (3, 4)).astype(np.float32)
    head = R.uniform(-1, 1, (3, 4)).astype(np.float32)
    xa = mx.nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(xa, op_type="test_scaled_sigmoid", scale=3.0) * mx.nd.array(head)
    assert CREATED[-1].calls[0] == ("forward", True, ["write"])
    y.backward()
    s = _sigmoid(x)
    np.testing.assert_allclose(xa.grad.asnumpy(), head * 3.0 * s * (1 - s), rtol=1e-5, atol=1e-6)
    assert any(c[0] == "backward" for op in CREATED for c in op.calls)
    with mx.autograd.record():
        z = mx.nd.Custom(mx.nd.array(x), op_type="test_scaled_sigmoid")
    with pytest.raises(mx.MXNetError, match="not computed from a variable"):
        z.backward()


def test_profiled_custom_op_names_the_calls_its_python_code_makes(tmp_path):
    """Profiled, a recorded Custom op's Python code is ``<op_type>::pure_python`` (its backward
    ``_backward_<op_type>::pure_python``), and an array it makes with ``mx.nd.zeros`` inside is
    MXNet's ``_zeros`` operator, named after it: ``<op_type>::_zeros``."""
    import json

    class Zeros(ScaledSigmoid):
        def forward(self, is_train, req, in_data, out_data, aux):
            mx.nd.zeros((10, 10))
            super().forward(is_train, req, in_data, out_data, aux)

    @mx.operator.register("test_profiled_sigmoid")
    class ZerosProp(ScaledSigmoidProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Zeros(self.scale)

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(tmp_path / "p.json"))
    mx.profiler.set_state("run")
    try:
        mx.profiler.dumps(reset=True)
        xa = mx.nd.array([0.0, 1.0])
        xa.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Custom(xa, op_type="test_profiled_sigmoid")
        y.backward()
        names = set(json.loads(mx.profiler.dumps(format="json"))["Time"]["Custom Operator"])
    finally:
        mx.profiler.set_state("stop")
    assert {"test_profiled_sigmoid::pure_python", "_backward_test_profiled_sigmoid::pure_python",
            "test_profiled_sigmoid::_zeros"} <= names


def test_get_operator_arguments_lists_inputs_then_parameters():
    act = mx.operator.get_operator_arguments("Activation")
    assert isinstance(act, mx.operator.OperatorArguments)
    assert act.narg == 2 and act.names == ["data", "act_type"]
    assert act.types[0] == "NDArray-or-Symbol"
    assert act.types[1] == "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"
    fc = mx.operator.get_operator_arguments("FullyConnected")
    assert fc.names[:4] == ["data", "weight", "bias", "num_hidden"]
    assert fc.types[fc.names.index("no_bias")] == "boolean, optional, default=False"
    drop = mx.operator.get_operator_arguments("Dropout")
    assert drop.types[drop.names.index("p")] == "float, optional, default=0.5"
    with pytest.raises(mx.MXNetError, match="no operator named 'Activaton'"):
        mx.operator.get_operator_arguments("Activaton")


class LazySquare(mx.operator.CustomOp):
    """out = x * x and dx = 2 * x * dout, written from NDArray arithmetic (queued by the lazy
    engine) through assign, plus an aux state set to ones."""

    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = 1
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@mx.operator.register("test_lazy_square")
class LazySquareProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ["aux"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return LazySquare()


def test_kernels_after_a_custom_op_see_what_its_queued_arithmetic_wrote():
    """A Custom op's forward and backward that write their results from NDArray arithmetic
    (which the lazy engine queues) are done when the compiled kernels after them read the
    buffers: forward, backward and finite differences agree with numpy."""
    from symjit.test_utils import check_numeric_gradient
    sq = mx.sym.Custom(mx.sym.Variable("data"), mx.sym.Variable("aux"), op_type="test_lazy_square",
                       name="sq")
    net = mx.sym.sum(sq * 3 + 1)
    x = np.random.default_rng(2).uniform(-1, 1, (4, 5)).astype(np.float32)
    aux = mx.nd.zeros((4, 5))
    dx = mx.nd.zeros((4, 5))
    ex = net.bind(mx.cpu(), args={"data": mx.nd.array(x)}, args_grad={"data": dx}, aux_states={"aux": aux})
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), [(3 * x * x + 1).sum()], rtol=1e-5)
    ex.backward()
    np.testing.assert_allclose(dx.asnumpy(), 6 * x, rtol=1e-5)
    assert (aux.asnumpy() == 1).all()
    check_numeric_gradient(sq * 3, [x], [np.zeros((4, 5), np.float32)])
