"""One random-number path: ``mx.random.<dist>``, ``mx.nd.random.<dist>``, ``mx.nd.random_<dist>``
and a bound ``mx.sym.random.<dist>`` draw the same numbers after the same ``mx.random.seed``; the
``random`` namespaces are made from the registry's sampler records; on a GPU a seeded call draws
what the same CPU call draws."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import symjit as mx
from symjit.ops import random_ops, registry
from symjit.ops.random_ops import distributions

# distribution -> (mx.random's parameters, the op's own: mx.nd.random_<dist>'s)
CALLS = {
    "uniform": ({"low": -2.0, "high": 3.0}, {"low": -2.0, "high": 3.0}),
    "normal": ({"loc": 1.0, "scale": 0.5}, {"loc": 1.0, "scale": 0.5}),
    "exponential": ({"scale": 0.5}, {"lam": 2.0}),
    "gamma": ({"alpha": 2.5, "beta": 0.7}, {"alpha": 2.5, "beta": 0.7}),
    "poisson": ({"lam": 4.0}, {"lam": 4.0}),
    "negative_binomial": ({"k": 3, "p": 0.4}, {"k": 3, "p": 0.4}),
    "generalized_negative_binomial": ({"mu": 2.0, "alpha": 0.3}, {"mu": 2.0, "alpha": 0.3}),
    "randint": ({"low": -5, "high": 9}, {"low": -5, "high": 9}),
}


def _forms(dist: str, shape: tuple, dtype: str | None, ctx) -> list[np.ndarray]:
    """The same draw asked for in each call form, each after ``mx.random.seed(21)``."""
    front, own = CALLS[dist]
    kw = {"shape": shape, "ctx": ctx} if dtype is None else {"shape": shape, "ctx": ctx, "dtype": dtype}
    out = []
    for fn, params in ((getattr(mx.random, dist), front), (getattr(mx.nd.random, dist), front),
                       (getattr(mx.nd, f"random_{dist}"), own)):
        mx.random.seed(21)
        out.append(fn(**params, **kw).asnumpy())
    sym = getattr(mx.sym.random, dist)(**front, shape=shape, **({} if dtype is None else {"dtype": dtype}))
    ex = sym.simple_bind(ctx)
    mx.random.seed(21)
    out.append(ex.forward()[0].asnumpy())
    into = mx.nd.zeros(shape, ctx=ctx, dtype=out[0].dtype)
    mx.random.seed(21)
    assert getattr(mx.random, dist)(**front, out=into) is into
    out.append(into.asnumpy())
    return out


@pytest.mark.parametrize("dist", sorted(CALLS))
def test_one_seed_gives_the_same_numbers_on_every_call_form(dist):
    forms = _forms(dist, (4, 5), None, mx.cpu())
    assert forms[0].shape == (4, 5) and forms[0].dtype == (np.int32 if dist == "randint" else np.float32)
    for other in forms[1:]:
        np.testing.assert_array_equal(other, forms[0])
    assert len(np.unique(forms[0])) > 1
    mx.random.seed(21)
    first = getattr(mx.random, dist)(**CALLS[dist][0], shape=(4, 5)).asnumpy()
    again = getattr(mx.random, dist)(**CALLS[dist][0], shape=(4, 5)).asnumpy()
    np.testing.assert_array_equal(first, forms[0])
    assert not np.array_equal(first, again)   # each call draws anew


def test_float64_draws_and_one_element_parameter_arrays_agree():
    forms = _forms("normal", (3, 2, 2), "float64", mx.cpu())
    assert forms[0].dtype == np.float64
    for other in forms[1:]:
        np.testing.assert_array_equal(other, forms[0])
    # numbers draw what the per-element sampler draws from one-element parameter arrays
    mx.random.seed(8)
    s = mx.nd.sample_gamma(mx.nd.array([2.5], dtype="float64"), mx.nd.array([0.7], dtype="float64"),
                           shape=(6,), dtype="float32").asnumpy()
    mx.random.seed(8)
    np.testing.assert_array_equal(mx.random.gamma(2.5, 0.7, shape=(6,)).asnumpy(), s[0])


def test_one_compiled_call_serves_every_parameter_value():
    from symjit import imperative
    mx.random.uniform(-1.0, 1.0, shape=(3, 4))
    before = imperative.cached_calls()
    for scale in (0.5, 2.0, 0.1):
        x = mx.random.uniform(-scale, scale, shape=(3, 4)).asnumpy()
        assert x.min() >= -scale and x.max() < scale
    assert imperative.cached_calls() == before   # parameters are data: no new compiled call


def test_namespaces_are_the_registry_records():
    records = distributions()
    assert {"uniform", "gamma_like", "randint", "generalized_negative_binomial"} <= set(records)
    for name, op in records.items():
        front = [n for n, _ in op.extra["front"]]
        for space in (mx.random, mx.nd.random, mx.sym.random):
            fn = getattr(space, name)
            params = list(inspect.signature(fn).parameters)
            lead = ["data"] if name.endswith("_like") else []
            assert params[:len(lead) + len(front)] == lead + front, (space.__name__, name, params)
            assert name in space.__all__
        for alias in op.aliases:   # mx.nd.random_<dist> (and mx.nd.uniform, mx.nd.normal)
            assert list(inspect.signature(getattr(mx.nd, alias)).parameters)[:len(front)] == \
                op.extra["params"]
    assert mx.nd.random is mx.random


def test_a_new_sampler_record_gets_its_functions_and_lowering():
    """A record registered later (a twin of uniform) is a function of each namespace and lowers
    on every target, with no list to extend; it draws what uniform draws."""
    from symjit.lower import random as lower_random
    from symjit.lower import rules
    spec = (("low", 0.0, "lower bound"), ("high", 1.0, "upper bound"))
    names = random_ops.register_sampler("twin_test", random_ops.sample_uniform, spec, "float32", "twin")
    try:
        assert sorted(lower_random.register_rules()) == sorted(names)
        nd_fns, sym_fns = mx.random.distribution_functions(), mx.sym.random.distribution_functions()
        assert {"twin_test", "twin_test_like"} <= set(nd_fns) & set(sym_fns)
        assert "random_twin_test" in mx.random.op_functions()
        mx.random.seed(4)
        twin = nd_fns["twin_test"](-1.0, 2.0, shape=(7,)).asnumpy()
        mx.random.seed(4)
        np.testing.assert_array_equal(twin, mx.random.uniform(-1.0, 2.0, shape=(7,)).asnumpy())
        node = sym_fns["twin_test"](high=4.0, shape=(2,))
        assert node.tojson().count('"_random_twin_test"') == 1 and node.infer_shape()[1] == [(2,)]
    finally:
        for n in names:
            registry._REGISTRY.pop(n, None)
            rules._RULES.pop((n, rules.ANY), None)
        registry._ALIASES.pop("random_twin_test", None)


def test_seed_takes_a_device_or_all():
    mx.random.seed(6, ctx=mx.cpu())
    a = mx.random.normal(shape=(5,)).asnumpy()
    mx.random.seed(6)
    np.testing.assert_array_equal(mx.random.normal(shape=(5,)).asnumpy(), a)
    with pytest.raises(mx.base.ParamError, match="random.seed: ctx must be 'all' or a device context"):
        mx.random.seed(6, ctx="tpu")


def test_bad_parameters_are_clear_errors():
    cases = [
        (mx.base.ParamError, "random.gamma: parameter 'alpha': -1.0 is invalid, expected > 0",
         lambda: mx.random.gamma(-1.0, 1.0)),
        (mx.base.ParamError, "random.uniform: need low <= high, got low=2.0, high=1.0",
         lambda: mx.random.uniform(2.0, 1.0)),
        (mx.base.ParamError, "random.exponential: parameter 'scale': 0.0 is invalid, expected > 0",
         lambda: mx.random.exponential(0.0)),
        (mx.base.ParamError, "random_exponential: parameter 'lam': 0.0 is invalid, expected > 0",
         lambda: mx.nd.random_exponential(0.0)),
        (mx.base.ParamError, "random.normal: unknown argument", lambda: mx.random.normal(0, 1, sigma=2)),
        (mx.base.ShapeError, r"random.normal: out has shape \(2,\), the draw shape \(3,\)",
         lambda: mx.random.normal(shape=(3,), out=mx.nd.zeros((2,)))),
        (mx.base.DTypeError, "random.randint: the parameters must be numbers",
         lambda: mx.random.randint(mx.nd.zeros((2,)), mx.nd.ones((2,)))),
        (mx.base.DTypeError, "random.poisson: parameter 'lam' must be a number or an NDArray",
         lambda: mx.random.poisson("3")),
        (mx.MXNetError, r"random.gamma: with Symbol parameters .*\['beta'\]",
         lambda: mx.sym.random.gamma(mx.sym.Variable("a"), 1.0)),
    ]
    for error, message, call in cases:
        with pytest.raises(error, match=message):
            call()


@pytest.mark.gpu
@pytest.mark.parametrize("dist", ["uniform", "normal", "randint"])
def test_a_seeded_gpu_call_draws_what_the_cpu_call_draws(dist):
    cpu = _forms(dist, (3, 4), None, mx.cpu())
    gpu = _forms(dist, (3, 4), None, mx.gpu(0))
    for form in gpu:
        np.testing.assert_allclose(form, cpu[0], rtol=1e-6, atol=1e-6)
    if dist != "normal":   # no transcendental function: equal bit for bit
        np.testing.assert_array_equal(gpu[0], cpu[0])
    mx.random.seed(2)
    on = mx.nd.random_uniform(shape=(3,), ctx=mx.gpu(0))
    assert on.context == mx.gpu(0)
