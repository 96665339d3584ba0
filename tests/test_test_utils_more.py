"""The rest of mx.test_utils and of mxnet.base's Python helpers that MXNet 1.x programs import:
each helper gives the right answer and fails where it should."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats as ss

import symjit as mx
from symjit import base
from symjit import test_utils as tu
from symjit.base import MXNetError


# -- mxnet.base ------------------------------------------------------------------------------------
def test_base_helpers():
    assert base.py_str(b"conv0_weight") == "conv0_weight" and base.py_str("x") == "x"
    assert base._as_list(3) == [3] and base._as_list((1, 2)) == (1, 2)
    assert isinstance(np.int64(3), base.integer_types) and not isinstance(2.5, base.integer_types)
    assert isinstance(np.float32(1), base.numeric_types) and isinstance("a", base.string_types)
    assert base.mx_real_t is np.float32
    handle = base.NDArrayHandle()          # a ctypes pointer type, as MXNet declares its handles
    assert handle.value is None


def test_data_dir_follows_mxnet_home(monkeypatch):
    monkeypatch.setenv("MXNET_HOME", "/tmp/somewhere")
    assert base.data_dir() == "/tmp/somewhere"
    monkeypatch.delenv("MXNET_HOME")
    assert base.data_dir() == os.path.join(os.path.expanduser("~"), ".mxnet")


def test_symbol_truth_value_is_not_implemented():
    x = mx.sym.Variable("x")
    with pytest.raises(base.NotImplementedForSymbol) as err:
        bool(x > 1)
    assert isinstance(err.value, MXNetError)
    assert str(err.value).startswith("Function __bool__ (namely operator \"bool\")")


# -- star import hands out what MXNet's does -------------------------------------------------------
def test_star_import_names():
    space: dict = {}
    exec("from symjit.test_utils import *", space)
    for name in ("os", "sys", "np", "rnd", "mx", "Context", "array", "np_reduce", "verify_generator",
                 "compare_optimizer", "discard_stderr", "random_uniform_arrays", "is_aarch64_run", "retry"):
        assert name in space, name
    assert space["mx"] is mx and space["rnd"] is np.random and space["array"] is mx.nd.array


# -- reference computations ------------------------------------------------------------------------
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 2), False), ([-1, 0], True)])
def test_np_reduce_matches_numpy(axis, keepdims):
    x = np.random.RandomState(3).uniform(size=(2, 3, 4))
    want = np.sum(x, axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdims)
    got = tu.np_reduce(x, axis, keepdims, np.sum)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want)
    np.testing.assert_array_equal(tu.np_reduce(x, axis, keepdims, np.max),
                                  np.max(x, axis=tuple(axis) if isinstance(axis, list) else axis,
                                         keepdims=keepdims))


def test_random_uniform_arrays_and_sample():
    a, b = tu.random_uniform_arrays((100,), (3, 2), low=2.0, high=3.0, dtype=np.float64)
    assert a.dtype == np.float64 and b.shape == (3, 2) and a.min() >= 2.0 and a.max() < 3.0
    with pytest.raises(TypeError):
        tu.random_uniform_arrays((2,), scale=3)
    picked = tu.random_sample(list(range(10)), 4)
    assert len(set(picked)) == 4 and set(picked) <= set(range(10))
    with pytest.raises(MXNetError):
        tu.random_sample([1, 2], 3)


def test_retry_reraises_the_last_failure():
    calls = []

    @tu.retry(2)
    def always_fails():
        calls.append(1)
        raise AssertionError("wrong")
    with pytest.raises(AssertionError, match="wrong"):
        always_fails()
    assert len(calls) == 2


# -- optimizers ------------------------------------------------------------------------------------
def test_compare_optimizer_passes_for_equal_and_fails_for_different_rules():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
                         mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), (3, 4), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.2),
                             (3, 4), np.float32)
    # sparse storage: the second optimizer gets the sparse arrays, the first their dense copies;
    # lazy SGD and dense SGD part on a row_sparse gradient with weight decay (the rows it lacks)
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1),
                         (6, 4), np.float32, w_stype="row_sparse", g_stype="row_sparse")
    np.random.seed(3)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, wd=0.5, lazy_update=False),
                             mx.optimizer.SGD(learning_rate=0.1, wd=0.5), (6, 4), np.float32,
                             g_stype="row_sparse")
    with pytest.raises(MXNetError, match="'dense'"):
        tu.compare_optimizer(mx.optimizer.SGD(), mx.optimizer.SGD(), (3, 4), np.float32, w_stype="dense")


def test_update_multi_precision_over_lists_equals_one_by_one():
    shapes = [(3, 4), (5,)]
    tu.compare_optimizer(mx.optimizer.Adam(learning_rate=0.1), mx.optimizer.Adam(learning_rate=0.1),
                         shapes, np.float32, ntensors=2)
    opt = mx.optimizer.SGD(learning_rate=0.1)
    w = [mx.nd.ones(s) for s in shapes]
    with pytest.raises(MXNetError, match="different lengths"):
        opt.update_multi_precision([0, 1], w, w[:1], [None, None])


# -- generators ------------------------------------------------------------------------------------
def test_verify_generator_accepts_right_and_rejects_wrong_distributions():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: ss.norm.ppf(q, 0, 1), 5)
    rng = np.random.RandomState(7)
    p_values = tu.verify_generator(lambda n: rng.normal(0, 1, n), buckets, probs, nsamples=20000)
    assert len(p_values) == 5
    with pytest.raises(AssertionError, match="chi-square"):
        tu.verify_generator(lambda n: rng.normal(0.3, 1, n), buckets, probs, nsamples=20000)
    # discrete buckets: the values themselves
    tu.verify_generator(lambda n: rng.randint(0, 3, n), [0, 1, 2], [1 / 3] * 3, nsamples=20000)
    with pytest.raises(AssertionError):
        tu.verify_generator(lambda n: rng.randint(0, 2, n), [0, 1, 2], [1 / 3] * 3, nsamples=20000)


def test_mean_and_var_checks():
    rng = np.random.RandomState(5)
    assert tu.mean_check(lambda n: rng.normal(1.0, 2.0, n), 1.0, 2.0, 50000)
    assert not tu.mean_check(lambda n: rng.normal(1.2, 2.0, n), 1.0, 2.0, 50000)
    assert tu.var_check(lambda n: rng.normal(0.0, 2.0, n), 2.0, 50000)
    assert not tu.var_check(lambda n: rng.normal(0.0, 2.5, n), 2.0, 50000)


# -- streams, platform, numpy semantics ------------------------------------------------------------
def test_discard_stderr_silences_the_descriptor():
    code = ("import os, sys\nfrom symjit.testing_support import discard_stderr\n"
            "with discard_stderr():\n    os.write(2, b'hidden')\n    print('hidden too', file=sys.stderr)\n"
            "os.write(2, b'shown')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert out.stderr == b"shown"


def test_platform_checks_and_use_np():
    assert tu.is_aarch64_run() in (True, False) and tu.has_tvm_ops() is False
    assert tu.is_op_runnable() is True

    @tu.use_np
    class Block:
        pass
    with pytest.raises(MXNetError, match="mx.np"):
        Block()


def test_symbolic_checks_keep_each_arrays_dtype_with_asnumpy():
    x, n = mx.sym.Variable("x"), mx.sym.Variable("n")
    net = mx.sym.SequenceMask(data=x, sequence_length=n, use_sequence_length=True, value=-1.0)
    data = np.arange(6, dtype=np.float64).reshape(3, 2)
    lengths = np.array([1, 3], dtype=np.int32)
    keep = np.arange(3)[:, None] < lengths[None, :]
    out = tu.check_symbolic_forward(net, [data, lengths], [np.where(keep, data, -1.0)], dtype="asnumpy")
    assert out[0].dtype == np.float64                       # not the float32 default
    grads = tu.check_symbolic_backward(net, [data, lengths], [np.ones((3, 2))],
                                       {"x": keep.astype(np.float64)},
                                       grad_req={"x": "write", "n": "null"}, dtype="asnumpy")
    assert grads["x"].dtype == np.float64
    with pytest.raises(AssertionError):
        tu.check_symbolic_forward(net, [data, lengths], [data], dtype="asnumpy")


def test_numeric_gradient_of_many_float32_outputs_is_not_rounding_noise():
    # a float32 sum of 400 projected outputs rounds by more than one element's change: the
    # finite differences must come from the elementwise changes (as MXNet's do)
    data = np.random.RandomState(0).uniform(-1, 1, (400,)).astype(np.float32)
    tu.check_numeric_gradient(mx.sym.sin(mx.sym.Variable("x")), [data], numeric_eps=1e-3, rtol=1e-2,
                              atol=1e-4)
    with pytest.raises(AssertionError):     # still fails for a wrong gradient
        x = mx.sym.Variable("x")
        wrong = mx.sym.BlockGrad(mx.sym.sin(x)) + x * 0.5
        tu.check_numeric_gradient(wrong, [data[:20]], numeric_eps=1e-3, rtol=1e-2, atol=1e-4)


class _SwitchingExecutor:
    """An executor of ``y = 2 x`` whose results carry a small offset once its program has
    switched tiers (after its ``at``-th forward pass), as an interpreted program's float32
    roundings may differ from the compiled one's."""

    def __init__(self, n: int, at: int):
        self.arg_dict = {"x": mx.nd.zeros((n,))}
        self.calls, self.at = 0, at

    def _tier_switches(self) -> int:
        return int(self.calls >= self.at)

    def forward(self, is_train: bool = False) -> list:
        self.calls += 1
        offset = 1e-4 if self.calls > self.at else 0.0
        return [mx.nd.array(2.0 * self.arg_dict["x"].asnumpy() + offset)]


def test_numeric_grad_runs_a_difference_split_by_the_tier_switch_again():
    # the program compiles between the two runs of element 1's difference: that difference is run
    # again on the compiled tier, so no element sees the other tier's rounding
    ex = _SwitchingExecutor(4, at=3)
    grad = tu.numeric_grad(ex, {"x": np.zeros(4, np.float32)}, eps=2.0 ** -9)["x"]
    np.testing.assert_allclose(grad, np.full(4, 2.0), rtol=1e-6)
    assert ex.calls == 10   # 4 pairs and the one run again


def test_numeric_gradient_across_the_interpreted_tiers_end():
    # a program that compiles after its first interpreted pass: the check still agrees closely
    from symjit.config import Config
    from symjit.executor import Executor

    cfg = Config.from_env().replace(interpret=True, interpret_calls=1)
    x = mx.sym.Variable("x")
    data = np.random.RandomState(1).uniform(-1, 1, (6,)).astype(np.float32)
    ex = Executor(mx.sym.tanh(x) * 3, mx.cpu(), {"x": mx.nd.array(data)}, None, "null", config=cfg)
    grad = tu.numeric_grad(ex, {"x": data}, eps=2.0 ** -9)["x"]
    assert ex._tier_switches() == 1
    np.testing.assert_allclose(grad, 3 * (1 - np.tanh(data.astype(np.float64)) ** 2), rtol=1e-3)


def test_check_symbolic_backward_uses_one_out_grad_per_output():
    # a list of head gradients longer than the outputs: the outputs take the first ones
    x = mx.sym.Variable("x")
    data = np.array([1.0, -2.0, 3.0])
    tu.check_symbolic_backward(x * 2, [data], [np.full(3, 0.5), np.ones(7)], [np.ones(3)])
    with pytest.raises(AssertionError):   # the first one is the head gradient used
        tu.check_symbolic_backward(x * 2, [data], [np.ones(3), np.full(3, 0.5)], [np.ones(3)])
    with pytest.raises(MXNetError, match="out_grads"):   # fewer than the outputs stays an error
        tu.check_symbolic_backward(mx.sym.Group([x * 2, x * 3]), [data], [np.ones(3)], [np.ones(3)])
