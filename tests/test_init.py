"""Tests of mx.init: name dispatch, the __init__ override, each initializer's distribution and
scale (references computed here with numpy / by hand), dumps/create and error messages."""
import json
import math

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError


def filled(init, name, shape, dtype="float32"):
    arr = mx.nd.full(shape, -123.0, dtype=dtype)
    init(name, arr)
    return arr.asnumpy()


# -- InitDesc and dispatch ---------------------------------------------------------------------
def test_initdesc_is_str_with_attrs():
    d = mx.init.InitDesc("fc1_weight", attrs={"lr_mult": "2"})
    assert isinstance(d, str) and d == "fc1_weight" and d.endswith("weight")
    assert d.attrs == {"lr_mult": "2"} and d.global_init is None
    assert mx.init.InitDesc("x").attrs == {}
    assert mx.initializer is mx.init


@pytest.mark.parametrize("as_desc", [False, True])
@pytest.mark.parametrize("name,expected", [
    ("fc1_weight", 7.0), ("fc1_bias", 0.0), ("bn_gamma", 1.0), ("bn_beta", 0.0),
    ("bn_moving_mean", 0.0), ("bn_moving_var", 1.0), ("bn_running_mean", 0.0),
    ("bn_running_var", 1.0), ("bn_moving_inv_var", 0.0), ("q_min", 0.0), ("q_max", 1.0),
])
def test_suffix_dispatch(name, expected, as_desc):
    key = mx.init.InitDesc(name) if as_desc else name
    out = filled(mx.init.Constant(7.0), key, (2, 3))
    np.testing.assert_array_equal(out, np.full((2, 3), expected, np.float32))


@pytest.mark.parametrize("as_desc", [False, True])
def test_unknown_suffix_names_the_parameter(as_desc):
    key = mx.init.InitDesc("data_label") if as_desc else "data_label"
    with pytest.raises(MXNetError, match="data_label") as err:
        mx.init.Uniform()(key, mx.nd.zeros((2,)))
    assert isinstance(err.value, ValueError)
    assert "Uniform" in str(err.value)


def test_init_attr_overrides_name_rule():
    init = mx.init.Constant(5.0)
    one = mx.init.InitDesc("fc_weight", attrs={"__init__": '["one", {}]'})
    np.testing.assert_array_equal(filled(init, one, (3,)), np.ones(3, np.float32))
    # a bias name with an __init__ attribute uses that initializer's weight rule
    const = mx.init.InitDesc("fc_bias", attrs={"__init__": mx.init.Constant(2.5).dumps()})
    np.testing.assert_array_equal(filled(init, const, (2,)), np.full(2, 2.5, np.float32))
    # a bare registered name works too
    zero = mx.init.InitDesc("anything", attrs={"__init__": "zero"})
    np.testing.assert_array_equal(filled(init, zero, (2,)), np.zeros(2, np.float32))


def test_global_init_is_recorded():
    init = mx.init.One()
    d = mx.init.InitDesc("w_weight")
    init(d, mx.nd.zeros((1,)))
    assert d.global_init is init


def test_variable_init_attr_and_batchnorm_aux_states():
    w = mx.sym.Variable("w", init=mx.init.Constant(4.0))
    net = mx.sym.BatchNorm(mx.sym.FullyConnected(w, num_hidden=2, name="fc"), name="bn")
    attrs = net.attr_dict()
    init = mx.init.Uniform()
    arrays = {}
    for name in ["w", "bn_moving_mean", "bn_moving_var"]:
        arrays[name] = filled(init, mx.init.InitDesc(name, attrs.get(name, {})), (2,))
    np.testing.assert_array_equal(arrays["w"], [4.0, 4.0])
    np.testing.assert_array_equal(arrays["bn_moving_mean"], [0.0, 0.0])
    np.testing.assert_array_equal(arrays["bn_moving_var"], [1.0, 1.0])


def test_bad_arguments_to_call():
    with pytest.raises(MXNetError, match="NDArray"):
        mx.init.One()("w_weight", np.zeros(3))
    with pytest.raises(MXNetError, match="str"):
        mx.init.One()(3, mx.nd.zeros((3,)))
    with pytest.raises(MXNetError, match="does not define _init_weight"):
        mx.init.Initializer()("w_weight", mx.nd.zeros((3,)))


# -- random initializers -----------------------------------------------------------------------
def test_uniform_range_and_moments():
    mx.random.seed(0)
    out = filled(mx.init.Uniform(0.2), "w_weight", (200, 100))
    assert out.dtype == np.float32
    assert out.min() >= -0.2 and out.max() <= 0.2
    assert out.min() < -0.19 and out.max() > 0.19
    assert abs(out.mean()) < 0.005
    assert out.std() == pytest.approx(0.2 / math.sqrt(3), rel=0.02)


def test_normal_moments():
    mx.random.seed(1)
    out = filled(mx.init.Normal(0.5), "w_weight", (200, 100))
    assert abs(out.mean()) < 0.02
    assert out.std() == pytest.approx(0.5, rel=0.02)


def test_seed_makes_initialization_reproducible():
    init = mx.init.Xavier()
    mx.random.seed(42)
    a = filled(init, "w_weight", (5, 4))
    mx.random.seed(42)
    b = filled(init, "w_weight", (5, 4))
    mx.random.seed(43)
    c = filled(init, "w_weight", (5, 4))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_random_fill_keeps_dtype(dtype):
    arr = mx.nd.zeros((4, 5), dtype=dtype)
    mx.init.Xavier()("w_weight", arr)
    assert arr.dtype == np.dtype(dtype).type
    assert np.abs(arr.asnumpy()).max() <= math.sqrt(3 / 4.5) + 1e-3


# shape (64, 32, 3, 3): fan_in = 32*9 = 288, fan_out = 64*9 = 576, avg = 432
@pytest.mark.parametrize("factor_type,factor", [("avg", 432.0), ("in", 288.0), ("out", 576.0)])
def test_xavier_uniform_scale(factor_type, factor):
    mx.random.seed(2)
    out = filled(mx.init.Xavier("uniform", factor_type, 3), "conv_weight", (64, 32, 3, 3))
    scale = math.sqrt(3 / factor)
    assert np.abs(out).max() <= scale * (1 + 1e-6)
    assert np.abs(out).max() > 0.99 * scale
    assert out.std() == pytest.approx(scale / math.sqrt(3), rel=0.02)


# shape (20000, 10): fan_in = 10, fan_out = 20000, avg = 10005
@pytest.mark.parametrize("factor_type,factor", [("avg", 10005.0), ("in", 10.0), ("out", 20000.0)])
def test_xavier_gaussian_scale(factor_type, factor):
    mx.random.seed(3)
    out = filled(mx.init.Xavier("gaussian", factor_type, 2.0), "fc_weight", (20000, 10))
    assert abs(out.mean()) < 0.02 * math.sqrt(2.0 / factor)
    assert out.std() == pytest.approx(math.sqrt(2.0 / factor), rel=0.02)


def test_xavier_rejects_vectors_and_bad_params():
    with pytest.raises(MXNetError, match=r"fc_weight.*\(5,\)"):
        mx.init.Xavier()("fc_weight", mx.nd.zeros((5,)))
    with pytest.raises(MXNetError, match="rnd_type"):
        mx.init.Xavier(rnd_type="triangle")
    with pytest.raises(MXNetError, match="factor_type"):
        mx.init.Xavier(factor_type="sum")


def test_msraprelu_is_gaussian_with_he_magnitude():
    mx.random.seed(4)
    out = filled(mx.init.MSRAPrelu("in", slope=0.5), "conv_weight", (4000, 8, 2, 2))
    fan_in = 8 * 4
    assert out.std() == pytest.approx(math.sqrt(2 / (1 + 0.25) / fan_in), rel=0.02)
    assert json.loads(mx.init.MSRAPrelu().dumps()) == ["msraprelu", {"factor_type": "avg", "slope": 0.25}]


def test_orthogonal_rows_and_columns():
    mx.random.seed(5)
    wide = filled(mx.init.Orthogonal(scale=2.0), "w_weight", (3, 2, 4)).reshape(3, 8)
    np.testing.assert_allclose(wide @ wide.T, 4.0 * np.eye(3), atol=1e-4)
    tall = filled(mx.init.Orthogonal(scale=1.0, rand_type="normal"), "w_weight", (6, 2))
    np.testing.assert_allclose(tall.T @ tall, np.eye(2), atol=1e-5)


# -- deterministic initializers ------------------------------------------------------------------
def test_zero_one_constant():
    np.testing.assert_array_equal(filled(mx.init.Zero(), "w_weight", (2, 2)), np.zeros((2, 2)))
    np.testing.assert_array_equal(filled(mx.init.One(), "w_weight", (2, 2)), np.ones((2, 2)))
    row = mx.nd.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(filled(mx.init.Constant(row), "w_weight", (2, 3)),
                                  [[1, 2, 3], [1, 2, 3]])
    with pytest.raises(MXNetError, match=r"w_weight.*\(2,2\)"):
        filled(mx.init.Constant(row), "w_weight", (2, 2))


def test_bilinear_matches_reference():
    shape = (2, 1, 4, 3)
    ref = np.zeros(int(np.prod(shape)))
    f = math.ceil(shape[3] / 2)
    c = (2 * f - 1 - f % 2) / (2 * f)
    for i in range(ref.size):
        x, y = i % shape[3], (i // shape[3]) % shape[2]
        ref[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    np.testing.assert_allclose(filled(mx.init.Bilinear(), "up_weight", shape), ref.reshape(shape))
    # names starting with 'upsampling' get bilinear kernels from any initializer
    np.testing.assert_allclose(filled(mx.init.Zero(), "upsampling0_weight", shape), ref.reshape(shape))
    with pytest.raises(MXNetError, match="4-D"):
        filled(mx.init.Bilinear(), "up_weight", (3, 3))


def test_lstm_bias_through_init_attr():
    desc = mx.init.InitDesc("lstm_i2h_bias", attrs={"__init__": mx.init.LSTMBias(2.0).dumps()})
    np.testing.assert_array_equal(filled(mx.init.Uniform(), desc, (12,)), [0] * 3 + [2] * 3 + [0] * 6)


# -- Mixed and Load ------------------------------------------------------------------------------
def test_mixed_first_match_wins_and_no_match_errors():
    init = mx.init.Mixed([".*conv.*", "fc", ".*"], [mx.init.Constant(3), mx.init.Constant(4), mx.init.One()])
    assert filled(init, "conv1_weight", (1,))[0] == 3
    assert filled(init, "fc1_weight", (1,))[0] == 4
    assert filled(init, "myfc_weight", (1,))[0] == 1  # re.match anchors at the start
    assert filled(init, "fc1_bias", (1,))[0] == 0
    with pytest.raises(MXNetError, match="out_weight"):
        filled(mx.init.Mixed(["conv"], [mx.init.One()]), "out_weight", (1,))
    with pytest.raises(MXNetError, match="patterns"):
        mx.init.Mixed(["a", "b"], [mx.init.One()])


def test_load_from_dict_and_file(tmp_path):
    params = {"arg:fc_weight": mx.nd.array([[1.0, 2.0]]), "aux:bn_moving_var": mx.nd.array([3.0])}
    path = str(tmp_path / "p.params")
    mx.nd.save(path, params)
    for source in (params, path):
        init = mx.init.Load(source, default_init=mx.init.Constant(9))
        np.testing.assert_array_equal(filled(init, "fc_weight", (1, 2)), [[1, 2]])
        np.testing.assert_array_equal(filled(init, "bn_moving_var", (1,)), [3])
        np.testing.assert_array_equal(filled(init, "other_weight", (2,)), [9, 9])
    with pytest.raises(MXNetError, match="other_weight"):
        filled(mx.init.Load(params), "other_weight", (2,))
    with pytest.raises(MXNetError, match=r"fc_weight.*\(2,1\).*\(1,2\)"):
        filled(mx.init.Load(params), "fc_weight", (2, 1))


# -- dumps / create / register -------------------------------------------------------------------
@pytest.mark.parametrize("init,expected", [
    (mx.init.Xavier(), ["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]),
    (mx.init.Uniform(0.1), ["uniform", {"scale": 0.1}]),
    (mx.init.Normal(), ["normal", {"sigma": 0.01}]),
    (mx.init.Zero(), ["zero", {}]),
    (mx.init.One(), ["one", {}]),
    (mx.init.Constant(2), ["constant", {"value": 2}]),
    (mx.init.Constant(np.array([1.0, 2.0])), ["constant", {"value": [1.0, 2.0]}]),
])
def test_dumps_and_create_round_trip(init, expected):
    assert json.loads(init.dumps()) == expected
    again = mx.init.create(init.dumps())
    assert type(again) is type(init) and again.dumps() == init.dumps()


def test_create_by_name_alias_and_instance():
    assert type(mx.init.create("xavier", magnitude=2)).__name__ == "Xavier"
    assert mx.init.create("XAVIER", magnitude=2).magnitude == 2
    assert type(mx.init.create("zeros")) is mx.init.Zero
    assert type(mx.init.create("ones")) is mx.init.One
    inst = mx.init.Normal()
    assert mx.init.create(inst) is inst
    with pytest.raises(MXNetError, match="nosuch"):
        mx.init.create("nosuch")
    with pytest.raises(MXNetError, match="xavier"):
        mx.init.create("xavier", bogus=1)
    with pytest.raises(MXNetError, match="parse"):
        mx.init.create('["xavier", {')
    with pytest.raises(MXNetError, match="name"):
        mx.init.create('["xavier"]')


def test_register_custom_initializer():
    @mx.init.register
    class HalfTest(mx.init.Initializer):
        def __init__(self, k=0.5):
            super().__init__(k=k)
            self.k = k

        def _init_weight(self, name, arr):
            arr[:] = self.k

    assert json.loads(HalfTest().dumps()) == ["halftest", {"k": 0.5}]
    np.testing.assert_array_equal(filled(mx.init.create("halftest", k=0.25), "w_weight", (2,)), [0.25] * 2)
    desc = mx.init.InitDesc("w", attrs={"__init__": HalfTest(0.75).dumps()})
    np.testing.assert_array_equal(filled(mx.init.Zero(), desc, (2,)), [0.75] * 2)
    with pytest.raises(MXNetError, match="Initializer subclass"):
        mx.init.register(dict)


def test_prelu_gamma_starts_at_a_quarter_unless_its_variable_says_otherwise():
    data = mx.sym.Variable("data")
    for gamma, want in ((None, 0.25), (mx.sym.Variable("gamma", init=mx.init.One()), 1.0)):
        kw = {} if gamma is None else {"gamma": gamma}
        mod = mx.mod.Module(mx.sym.LeakyReLU(data=data, act_type="prelu", **kw), label_names=None)
        mod.bind(data_shapes=[("data", (4, 3))])
        mod.init_params(initializer=mx.init.Uniform(5.0))
        (got,) = mod.get_params()[0].values()
        assert (got.asnumpy() == want).all()


def test_constant_dumps_leaves_its_kwargs_as_written():
    for value in (mx.nd.ones((2, 3)), np.full((2,), 0.5), 7):
        init = mx.init.Constant(value)
        text = init.dumps()
        assert text == json.dumps(["constant", init._kwargs])
        assert json.loads(text)[1]["value"] == (value.asnumpy().tolist() if isinstance(value, mx.nd.NDArray)
                                                else np.asarray(value).tolist())
