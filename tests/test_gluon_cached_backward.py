"""A hybridized block's recorded training call keeps its forward pass in its executor, and the
backward pass calls that executor's backward (as MXNet's cached operators do) instead of
computing the block's forward again: gradients as the imperative block's, the running statistics
of BatchNorm updated once per call, the forward's own values used, and the recomputing path kept
where the executor ran again or a higher-order gradient is asked for."""
import numpy as np
import pytest

import symjit as mx
from symjit import autograd, gluon
from symjit.base import MXNetError
from symjit.gluon import nn

RNG = np.random.default_rng(11)


def _x(*shape):
    return mx.nd.array(RNG.standard_normal(shape).astype(np.float32))


def _net():
    net = nn.HybridSequential()
    net.add(nn.Dense(6, activation="relu"), nn.BatchNorm(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def _step(net, x, hybrid):
    net.hybridize(hybrid)
    net.collect_params().zero_grad()
    with autograd.record():
        y = net(x)
        loss = (y * y).sum()
    loss.backward()
    return y, {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()
               if p.grad_req != "null"}


def _stats(net):
    return {k: p.data().asnumpy().copy() for k, p in net.collect_params().items() if "running" in k}


def test_the_recorded_entry_keeps_the_forward_pass_and_gradients_match_the_imperative_block():
    net, x = _net(), _x(4, 5)
    _, g_imp = _step(net, x, False)
    before = _stats(net)
    y, g_hyb = _step(net, x, True)
    entry = y._ag_node[0]
    assert entry.op == "_graph" and entry.saved is not None and entry.saved.valid()
    after = _stats(net)
    # one training call: BatchNorm's running statistics moved once (momentum 0.9) from before
    mean = after[[k for k in after if k.endswith("running_mean")][0]]
    old = before[[k for k in before if k.endswith("running_mean")][0]]
    h = np.maximum(x.asnumpy() @ net[0].weight.data().asnumpy().T + net[0].bias.data().asnumpy(), 0)
    np.testing.assert_allclose(mean, 0.9 * old + 0.1 * h.mean(axis=0), rtol=1e-5, atol=1e-6)
    assert g_imp.keys() == g_hyb.keys()
    for k in g_imp:
        assert np.abs(g_imp[k]).max() > 0, k
        np.testing.assert_allclose(g_hyb[k], g_imp[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_a_block_called_twice_in_one_recording_differentiates_both_calls():
    net, a, b = _net(), _x(3, 5), _x(3, 5)
    net.initialize(mx.init.Xavier(), force_reinit=True)
    grads = {}
    for hybrid in (False, True):
        net.hybridize(hybrid)
        net.collect_params().zero_grad()
        with autograd.record(train_mode=False):      # predict mode: BatchNorm's statistics fixed
            ya = net(a)
        with autograd.record():
            ya = net(a)
            yb = net(b)         # the same executor runs again: the first call's pass is gone
            loss = (ya * yb).sum()
        assert not ya._ag_node[0].saved.valid() if hybrid else True
        loss.backward()
        grads[hybrid] = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()
                         if p.grad_req != "null"}
    for k in grads[False]:
        np.testing.assert_allclose(grads[True][k], grads[False][k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_gradients_of_a_kept_pass_and_inputs_written_since_the_call():
    """The gradients of the call's values; an input written between the call and backward is
    an error, as for imperative calls (the executor's pass holds the old values, the weights
    it is bound to would be the new ones)."""
    dense = nn.Dense(2, in_units=3, use_bias=False)
    dense.initialize(mx.init.One())
    dense.hybridize()
    x = mx.nd.array([[1.0, 2.0, 3.0]])
    x.attach_grad()
    with autograd.record():
        y = dense(x)
        z = (y * y).sum()
    z.backward()
    # dz/dW[i, j] = 2 * y_i * x_j with y = [6, 6]
    np.testing.assert_allclose(dense.weight.grad().asnumpy(), [[12.0, 24.0, 36.0]] * 2)
    np.testing.assert_allclose(x.grad.asnumpy(), [[24.0, 24.0, 24.0]])
    with autograd.record():
        z = (dense(x) ** 2).sum()
    dense.weight.data()[:] = 2.0
    with pytest.raises(MXNetError, match="hybridized block was changed in place"):
        z.backward()


def test_an_output_changed_in_place_before_backward_is_an_error():
    net = _net()
    net.hybridize()
    with autograd.record():
        y = net(_x(2, 5))
    with autograd.record():
        z = (y * 2).sum()
    y[:] = 0
    with pytest.raises(MXNetError, match="hybridized block was changed in place"):
        z.backward()


def test_higher_order_gradients_through_a_hybridized_block_still_recompute():
    dense = nn.Dense(1, in_units=1, use_bias=False)
    dense.initialize(mx.init.Constant(3.0))
    dense.hybridize()
    x = mx.nd.array([[2.0]])
    x.attach_grad()
    with autograd.record():
        y = dense(x)
        z = y * y * y            # (3x)^3 = 27 x^3
        (dx,) = autograd.grad(z, [x], create_graph=True)
    dx.backward()
    np.testing.assert_allclose(dx.asnumpy(), [[27 * 3 * 4.0]])   # 81 x^2
    np.testing.assert_allclose(x.grad.asnumpy(), [[27 * 6 * 2.0]])  # 162 x


def test_a_trainer_step_after_the_kept_backward_trains_like_the_imperative_net():
    losses = {}
    x, label = _x(8, 5), mx.nd.array(RNG.integers(0, 3, 8).astype(np.float32))
    for hybrid in (False, True):
        mx.random.seed(3)
        net = _net()
        net.hybridize(hybrid)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        seen = []
        for _ in range(4):
            with autograd.record():
                loss = loss_fn(net(x), label)
            loss.backward()
            trainer.step(8)
            seen.append(float(loss.mean().asscalar()))
        losses[hybrid] = seen
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-4)
    assert losses[True][-1] < losses[True][0]


def test_a_dropped_block_frees_its_executors_and_their_buffers_at_once():
    """A hybridized block, its recorded outputs and its executors form no reference cycle: once
    the program drops them, reference counting frees the executors' buffers at once, without
    waiting for Python's cycle collector (a loop over big inputs would otherwise hold each
    iteration's buffers until the collector happened to run)."""
    import gc
    import weakref

    x = _x(4, 5)
    x.attach_grad()
    _step(_net(), x, True)   # compiles first: numba keeps the frames a compile ran under (typing
    gc.collect()             # errors' tracebacks), and the arrays on them, for as long as it likes
    gc.disable()
    try:
        net = _net()
        y, _ = _step(net, x, True)
        executors = [weakref.ref(hit[0]) for hit in net._cached.bound.executors.values()]
        buffers = [weakref.ref(a) for e in executors for a in e().arg_arrays + e().grad_arrays
                   if a is not None]
        assert executors and buffers
        del net, y
        assert all(r() is None for r in executors), "an executor outlived its block"
        assert all(r() is None or r() is x for r in buffers), "a buffer outlived its executor"
    finally:
        gc.enable()
