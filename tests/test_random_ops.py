"""The registered samplers (symjit/ops/random_ops.py): their moments against the distributions'
(on the CPU with many draws, on the CUDA simulator with few and looser bounds), seeded
reproducibility, fresh draws per call, and clear errors."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx

# (distribution, params, mean, variance)
MOMENTS = [
    ("uniform", {"low": -1.0, "high": 3.0}, 1.0, 16.0 / 12),
    ("normal", {"loc": 1.0, "scale": 2.0}, 1.0, 4.0),
    ("exponential", {"scale": 0.5}, 0.5, 0.25),
    ("gamma", {"alpha": 0.5, "beta": 2.0}, 1.0, 2.0),
    ("gamma", {"alpha": 3.0, "beta": 2.0}, 6.0, 12.0),
    ("poisson", {"lam": 3.0}, 3.0, 3.0),
    ("poisson", {"lam": 30.0}, 30.0, 30.0),
    ("negative_binomial", {"k": 3, "p": 0.4}, 4.5, 11.25),
    ("generalized_negative_binomial", {"mu": 2.0, "alpha": 0.5}, 2.0, 4.0),
    ("randint", {"low": -3, "high": 5}, 0.5, (8 * 8 - 1) / 12),
]


def _draws(dist, params, n, ctx):
    dtype = None if dist == "randint" else "float64"
    sym = getattr(mx.sym.random, dist)(shape=(n,), dtype=dtype, **params)
    return sym.simple_bind(ctx).forward()[0].asnumpy().astype(np.float64)


def _check_moments(x, mean, var, sigmas):
    n = x.size
    assert abs(x.mean() - mean) < sigmas * np.sqrt(var / n) + 1e-12, (x.mean(), mean)
    # the sample variance's standard error, for a heavy-tailed bound: sqrt(2 / n) * var * 3
    assert abs(x.var() - var) < sigmas * var * np.sqrt(2.0 / n) * 3, (x.var(), var)


@pytest.mark.parametrize("dist, params, mean, var", MOMENTS,
                         ids=[f"{d}-{i}" for i, (d, *_) in enumerate(MOMENTS)])
def test_moments_on_the_cpu(dist, params, mean, var):
    mx.random.seed(11)
    _check_moments(_draws(dist, params, 40000, mx.cpu()), mean, var, 6)


def test_supports():
    mx.random.seed(5)
    u = _draws("uniform", {"low": 2.0, "high": 3.0}, 5000, mx.cpu())
    assert u.min() >= 2.0 and u.max() < 3.0
    r = _draws("randint", {"low": -2, "high": 2}, 5000, mx.cpu())
    assert set(np.unique(r)) == {-2, -1, 0, 1}
    for dist, params in (("poisson", {"lam": 0.5}), ("poisson", {"lam": 50.0}),
                         ("negative_binomial", {"k": 2, "p": 0.3})):
        x = _draws(dist, params, 2000, mx.cpu())
        assert (x >= 0).all() and (x == np.floor(x)).all(), dist


def test_seeded_draws_repeat_and_each_call_draws_anew():
    sym = mx.sym.random.normal(shape=(6,)) + mx.sym.random.uniform_like(mx.sym.Variable("x"))
    ex = sym.simple_bind(mx.cpu(), x=(6,))
    mx.random.seed(42)
    a = ex.forward()[0].asnumpy()
    b = ex.forward()[0].asnumpy()
    mx.random.seed(42)
    assert (ex.forward()[0].asnumpy() == a).all() and not (a == b).all()
    mx.random.seed(42)
    first = mx.nd.random.gamma(2.0, 1.0, shape=(5,)).asnumpy()
    mx.random.seed(42)
    assert (mx.nd.random.gamma(2.0, 1.0, shape=(5,)).asnumpy() == first).all()


def test_a_symbolic_draw_without_shape_takes_the_shape_the_graph_gives():
    """``mx.sym.random.normal()`` (no shape) added to ``x`` draws ``x``'s shape, as in MXNet; alone,
    binding it names its output. A Symbol keyword argument to a draw (an operator without inputs)
    is dropped, as MXNet's composition drops it; ``mx.nd.random.normal()`` draws one number."""
    x = mx.sym.Variable("x")
    draw = mx.sym.random.normal(loc=10.0, scale=0.5, name="draw", data=mx.sym.ones((5, 3)))
    assert draw.list_arguments() == [] and draw.infer_shape_partial()[1] == [()]
    y = draw + x
    assert y.infer_shape(x=(40, 30))[1] == [(40, 30)]
    ex = y.simple_bind(mx.cpu(), x=(40, 30))
    got = ex.forward()[0].asnumpy()
    assert got.shape == (40, 30) and abs(got.mean() - 10.0) < 0.1 and abs(got.std() - 0.5) < 0.05
    with pytest.raises(mx.MXNetError, match=r"outputs \['draw_output'\]"):
        draw.simple_bind(mx.cpu())
    with pytest.raises(mx.MXNetError, match="unknown input 'data2'"):     # an op with inputs: an error
        mx.sym.random.normal_like(mx.sym.Variable("a"), data2=x)
    assert mx.nd.random.normal().shape == (1,)


def test_mixed_number_and_array_parameters_are_a_clear_error():
    with pytest.raises(mx.MXNetError, match=r"random.uniform: with Symbol parameters .*\['high'\]"):
        mx.sym.random.uniform(mx.sym.Variable("lo"), 1.0)
    with pytest.raises(mx.MXNetError, match=r"random.gamma: with NDArray parameters .*\['beta'\]"):
        mx.nd.random.gamma(mx.nd.ones((2,)), 1.0)


# (dist, parameter arrays (one distribution per row), the rows' means and variances)
PER_ELEMENT = [
    ("uniform", ([-1.0, 2.0], [3.0, 2.5]), [1.0, 2.25], [16 / 12, 0.25 / 12]),
    ("normal", ([1.0, -5.0], [2.0, 0.5]), [1.0, -5.0], [4.0, 0.25]),
    ("gamma", ([0.5, 3.0], [2.0, 1.0]), [1.0, 3.0], [2.0, 3.0]),
    ("exponential", ([2.0, 0.5],), [0.5, 2.0], [0.25, 4.0]),
    ("poisson", ([3.0, 30.0],), [3.0, 30.0], [3.0, 30.0]),
    ("negative_binomial", ([3.0, 1.0], [0.4, 0.5]), [4.5, 1.0], [11.25, 2.0]),
    ("generalized_negative_binomial", ([2.0, 5.0], [0.5, 0.1]), [2.0, 5.0], [4.0, 7.5]),
]


@pytest.mark.parametrize("dist, params, means, variances", PER_ELEMENT, ids=[d for d, *_ in PER_ELEMENT])
def test_per_element_samplers(dist, params, means, variances):
    """sample_<dist> (and mx.nd.random.<dist> with NDArray parameters): each row has its own moments."""
    mx.random.seed(13)
    arrays = [mx.nd.array(p, dtype="float64") for p in params]
    x = getattr(mx.nd, f"sample_{dist}")(*arrays, shape=(20000,)).asnumpy()
    assert x.shape == (2, 20000) and x.dtype == np.float64
    for row, mean, var in zip(x, means, variances):
        _check_moments(row, mean, var, 6)
    sym = getattr(mx.sym, f"sample_{dist}")(*[mx.sym.Variable(f"p{i}") for i in range(len(params))],
                                             shape=(2, 3), dtype="float32")
    shapes = {f"p{i}": (4,) for i in range(len(params))}
    assert sym.infer_shape(**shapes)[1] == [(4, 2, 3)]


def test_multinomial_frequencies_log_probabilities_and_gradient():
    mx.random.seed(17)
    probs = np.array([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])
    draws, logp = mx.nd.random.multinomial(mx.nd.array(probs, dtype="float64"), shape=(20000,), get_prob=True)
    d = draws.asnumpy()
    assert draws.dtype == np.int32 and d.shape == (2, 20000)
    for row, p in zip(d, probs):
        freq = np.bincount(row, minlength=3) / row.size
        assert np.abs(freq - p).max() < 6 * np.sqrt(0.25 / row.size), (freq, p)
    np.testing.assert_allclose(logp.asnumpy(), np.log(probs[np.arange(2)[:, None], d]))
    # d sum(log p(draws)) / d probs = count of each category / its probability
    data = mx.sym.Variable("data")
    out = mx.sym.random.multinomial(data, shape=(50,), get_prob=True)
    ex = mx.sym.Group([mx.sym.BlockGrad(out[0]), mx.sym.MakeLoss(mx.sym.sum(out[1]))]).bind(
        mx.cpu(), {"data": mx.nd.array(probs, dtype="float64")}, args_grad={"data": mx.nd.zeros((2, 3),
                                                                                       dtype="float64")})
    drawn = ex.forward(is_train=True)[0].asnumpy()
    ex.backward()
    counts = np.stack([np.bincount(r, minlength=3) for r in drawn])
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), np.where(counts > 0, counts / np.where(
        probs > 0, probs, 1.0), 0.0))


def _score_gradient(probs, drawn, scale):
    """scale times each category's draw count over its probability (0 where never drawn)."""
    counts = np.stack([np.bincount(r, minlength=probs.shape[-1]) for r in drawn.reshape(len(probs), -1)])
    return np.where(counts > 0, scale * counts / np.where(probs > 0, probs, 1.0), 0.0)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float16", "float32", "float64"])
def test_recorded_multinomial_log_probabilities_reach_data(dtype):
    mx.random.seed(23)
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]])
    x = mx.nd.array(probs)
    x.attach_grad()
    with mx.autograd.record():          # training mode: the draw is recorded once, not redrawn
        drawn, logp = mx.nd.random.multinomial(x, shape=(4, 30), get_prob=True, dtype=dtype)
        (logp * 3).backward()
    d = drawn.asnumpy().astype(np.int64)
    assert drawn.dtype == np.dtype(dtype) and d.shape == (2, 4, 30)
    np.testing.assert_allclose(logp.asnumpy(), np.log(probs[np.arange(2)[:, None, None], d]), rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), _score_gradient(probs, d, 3.0), rtol=1e-5)


def test_recorded_multinomial_recomputed_backward_reads_the_same_draws():
    mx.random.seed(29)
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    x = mx.nd.array(probs)
    x.attach_grad()
    with mx.autograd.record():
        drawn, logp = mx.nd.random.multinomial(x, shape=200, get_prob=True)
        # a higher-order request recomputes the forward pass from the leaves
        g = mx.autograd.grad(logp, [x], create_graph=True, retain_graph=True)[0]
    logp.backward()
    want = _score_gradient(probs[None], drawn.asnumpy(), 1.0)[0]
    np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5)


def test_recorded_multinomial_writes_out_arrays():
    x = mx.nd.array([[0.5, 0.5], [0.9, 0.1]])
    x.attach_grad()
    idx, lp = mx.nd.zeros((2, 5), dtype="int32"), mx.nd.zeros((2, 5))
    with mx.autograd.record():
        got = mx.nd.random.multinomial(x, shape=5, get_prob=True, out=[idx, lp])
    assert got[0] is idx and got[1] is lp
    lp.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), _score_gradient(x.asnumpy(), idx.asnumpy(), 1.0), rtol=1e-5)
    with mx.autograd.record(), pytest.raises(mx.MXNetError, match="makes 2 outputs"):
        mx.nd.random.multinomial(x, get_prob=True, out=idx)


def test_multinomial_of_one_distribution_without_shape_draws_one_index():
    out = mx.nd.random.multinomial(mx.nd.array([0.0, 1.0]))
    assert out.shape == (1,) and out.asnumpy().tolist() == [1]
    x = mx.sym.var("x")
    assert mx.sym.random.multinomial(x).infer_shape(x=(3,))[1] == [(1,)]
    ex = mx.sym.MakeLoss(mx.sym.random.multinomial(x, get_prob=True)[1]).bind(
        mx.cpu(), {"x": mx.nd.array([0.0, 1.0])}, args_grad={"x": mx.nd.zeros(2)})
    ex.forward(is_train=True)
    ex.backward()
    assert ex.grad_dict["x"].asnumpy().tolist() == [0.0, 1.0]


@pytest.mark.parametrize("dtype, categories", [("uint8", 257), ("float16", 2050)])
def test_multinomial_refuses_more_categories_than_its_dtype_counts(dtype, categories):
    data = mx.nd.ones((categories,)) / categories
    with pytest.raises(mx.MXNetError, match=f"{categories} categories .* dtype {dtype}"):
        mx.nd.random.multinomial(data, dtype=dtype)
    with pytest.raises(mx.MXNetError, match=f"{categories} categories"):
        mx.sym.random.multinomial(mx.sym.var("p"), dtype=dtype).infer_shape(p=(3, categories))
    assert mx.nd.random.multinomial(data[:categories - 1], dtype=dtype).shape == (1,)


def test_shuffle_permutes_rows():
    mx.random.seed(19)
    x = np.arange(24.0).reshape(8, 3)
    a = mx.nd.random.shuffle(mx.nd.array(x)).asnumpy()
    b = mx.nd.random.shuffle(mx.nd.array(x)).asnumpy()
    assert sorted(map(tuple, a)) == sorted(map(tuple, x)) and not (a == x).all() and not (a == b).all()
    mx.random.seed(19)
    np.testing.assert_array_equal(mx.nd.shuffle(mx.nd.array(x)).asnumpy(), a)


@pytest.mark.gpu
@pytest.mark.parametrize("dist, params, mean, var", MOMENTS[:6], ids=[d for d, *_ in MOMENTS[:6]])
def test_moments_on_the_cuda_target(dist, params, mean, var):
    mx.random.seed(3)
    x = _draws(dist, params, 512, mx.gpu(0))
    _check_moments(x, mean, var, 8)
    mx.random.seed(3)
    assert (_draws(dist, params, 512, mx.gpu(0)) == x).all()


def test_negative_seeds_repeat_and_differ():
    draws = []
    for seed in (-5, -5, 5, -(1 << 31)):
        mx.random.seed(seed)
        draws.append(mx.random.uniform(shape=(4,)).asnumpy())
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2]) and not np.array_equal(draws[0], draws[3])
