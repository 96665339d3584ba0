"""The FeedForward and Module MNIST examples run on a few batches and learn something."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> str:
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("script", ["train_mlp_feedforward.py", "train_mlp_module.py"])
def test_training_example_short(script):
    out = run(f"examples/{script}", "--epochs", "1", "--batches", "150")
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy > 0.8, out[-2000:]
    assert "Epoch[0] Train-accuracy=" in out and "Epoch[0] Validation-accuracy=" in out
    assert "Speed:" in out and "Time cost=" in out


def test_deconvolution_autoencoder_learns():
    """examples/deconv_autoencoder.py: strided Convolutions down, Deconvolutions up; a few hundred
    MNIST batches cut the test reconstruction error several times (0.23 -> ~0.01 measured)."""
    out = run("examples/deconv_autoencoder.py", "--epochs", "1", "--batches", "300")
    before = float(re.search(r"test MSE before training ([0-9.]+)", out).group(1))
    after = float(re.search(r"test MSE after 1 epoch\(s\) ([0-9.]+)", out).group(1))
    assert after < 0.03 and after < before / 5, out[-2000:]


def test_fused_and_unfused_agree_on_the_new_ops_net():
    """A net of the new operator families (Pad, Deconvolution, GroupNorm, LRN, UpSampling,
    SequenceMask, add_n, L2Normalization): forward and backward equal with fusion on and off."""
    import numpy as np

    import symjit as mx
    x = mx.sym.Variable("data")
    h = mx.sym.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 1, 1))
    h = mx.sym.Convolution(h, kernel=(3, 3), stride=(2, 2), num_filter=4, name="c1")
    h = mx.sym.GroupNorm(h, num_groups=2, name="gn")
    h = mx.sym.LRN(mx.sym.relu(h), nsize=3)
    h = mx.sym.Deconvolution(h, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=2, no_bias=False,
                             name="d1")
    up = mx.sym.UpSampling(h, scale=2, sample_type="nearest")
    seq = mx.sym.SequenceMask(mx.sym.Reshape(up, shape=(2, -1)), mx.sym.Variable("len"),
                              use_sequence_length=True, axis=1)
    out = mx.sym.add_n(mx.sym.L2Normalization(seq), seq, seq)
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(out)))
    arg_shapes, _, _ = loss.infer_shape(data=(2, 3, 6, 6), len=(2,))
    state = np.random.default_rng(1)
    values = {n: np.array([100.0, 60.0]) if n == "len" else state.uniform(0.5, 1.5, s)
              for n, s in zip(loss.list_arguments(), arg_shapes)}
    _fused_and_unfused_agree(loss, values, ("len",))


def _fused_and_unfused_agree(loss, values: dict, no_grad: tuple = ()) -> None:
    """Forward + backward of ``loss`` in float64 with kernel fusion on and off: equal gradients,
    and fusion merged groups."""
    import numpy as np

    import symjit as mx
    from symjit.config import Config
    from symjit.executor import Executor
    names = loss.list_arguments()
    results, kernels = [], []
    for fusion in (True, False):
        args = {n: mx.nd.array(v, dtype=np.float64) for n, v in values.items()}
        grads = {n: mx.nd.zeros(v.shape, dtype=np.float64) for n, v in values.items() if n not in no_grad}
        reqs = {n: "null" if n in no_grad else "write" for n in names}
        ex = Executor(loss, mx.cpu(), args, grads, reqs, config=Config.from_env().replace(fusion=fusion))
        ex.forward(is_train=True)
        ex.backward()
        results.append({n: g.asnumpy() for n, g in grads.items()})
        kernels.append(len(ex._programs["train"].program.kernel_of))
    assert kernels[0] < kernels[1], kernels   # fusion did merge groups
    for n in results[0]:
        assert np.abs(results[0][n]).max() > 0, n
        np.testing.assert_allclose(results[0][n], results[1][n], rtol=1e-10, atol=1e-12, err_msg=n)


def test_lstm_language_model_step_with_the_rnn_op():
    """An LSTM language-model step on the RNN operator (Embedding, a 2-layer bidirectional LSTM
    with dropout between layers off, FullyConnected, SoftmaxOutput) binds, runs forward and backward
    and gives the same gradients with fusion on and off."""
    import numpy as np

    import symjit as mx
    T, N, V, E, H = 4, 3, 7, 5, 4
    data, label = mx.sym.Variable("data"), mx.sym.Variable("softmax_label")
    emb = mx.sym.transpose(mx.sym.Embedding(data, input_dim=V, output_dim=E, dtype="float64",
                                                     name="embed"), axes=(1, 0, 2))
    rnn = mx.sym.RNN(emb, mx.sym.Variable("lstm_parameters"), mx.sym.Variable("state"),
                     mx.sym.Variable("state_cell"), state_size=H, num_layers=2, bidirectional=True,
                     mode="lstm", name="lstm")
    pred = mx.sym.FullyConnected(mx.sym.Reshape(mx.sym.transpose(rnn, axes=(1, 0, 2)), shape=(-1, 2 * H)),
                                 num_hidden=V, name="pred")
    loss = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax")
    shapes = dict(data=(N, T), softmax_label=(N, T), state=(4, N, H), state_cell=(4, N, H))
    arg_shapes, _, _ = loss.infer_shape(**shapes)
    state = np.random.default_rng(2)
    values = {n: state.integers(0, V, s).astype(np.float64) if n in ("data", "softmax_label")
              else state.uniform(-0.5, 0.5, s) for n, s in zip(loss.list_arguments(), arg_shapes)}
    _fused_and_unfused_agree(loss, values, ("data", "softmax_label"))


def _ssd_head(num_classes: int = 2):
    """A two-scale SSD-style head: anchors from MultiBoxPrior on each feature map, class and box
    predictions from 3x3 convolutions, MultiBoxTarget for the training targets, SoftmaxOutput on
    the classes (ignoring unmined anchors), a masked smooth-L1 box loss, and MultiBoxDetection on
    the predictions (its gradient is blocked)."""
    import symjit as mx
    data, label = mx.sym.Variable("data"), mx.sym.Variable("label")
    f1 = mx.sym.Activation(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c1"),
                           act_type="relu")
    f2 = mx.sym.Pooling(f1, kernel=(2, 2), stride=(2, 2), pool_type="max")
    anchors, cls_preds, loc_preds = [], [], []
    for i, (feat, sizes) in enumerate(((f1, (0.2, 0.3)), (f2, (0.5, 0.7)))):
        boxes = len(sizes) + 1                                       # ratios (1, 2)
        anchors.append(mx.sym.Reshape(mx.sym.contrib.MultiBoxPrior(feat, sizes=sizes, ratios=(1, 2)),
                                      shape=(1, -1)))
        cls = mx.sym.Convolution(feat, kernel=(3, 3), pad=(1, 1), num_filter=boxes * (num_classes + 1),
                                 name=f"cls{i}")
        cls_preds.append(mx.sym.Reshape(mx.sym.transpose(cls, axes=(0, 2, 3, 1)),
                                        shape=(0, -1, num_classes + 1)))
        loc = mx.sym.Convolution(feat, kernel=(3, 3), pad=(1, 1), num_filter=boxes * 4, name=f"loc{i}")
        loc_preds.append(mx.sym.Flatten(mx.sym.transpose(loc, axes=(0, 2, 3, 1))))
    anchor = mx.sym.Reshape(mx.sym.Concat(*anchors, dim=1), shape=(1, -1, 4))
    cls_pred = mx.sym.transpose(mx.sym.Concat(*cls_preds, dim=1), axes=(0, 2, 1))   # (N, classes + 1, A)
    loc_pred = mx.sym.Concat(*loc_preds, dim=1)
    loc_t, loc_m, cls_t = mx.sym.contrib.MultiBoxTarget(anchor, label, cls_pred, negative_mining_ratio=3,
                                                        minimum_negative_samples=4)
    cls_prob = mx.sym.SoftmaxOutput(cls_pred, cls_t, ignore_label=-1, use_ignore=True, multi_output=True,
                                    normalization="valid", name="cls_prob")
    loc_loss = mx.sym.MakeLoss(mx.sym.smooth_l1(loc_m * (loc_pred - loc_t), scalar=1.0),
                               normalization="valid", name="loc_loss")
    det = mx.sym.contrib.MultiBoxDetection(mx.sym.BlockGrad(cls_prob), mx.sym.BlockGrad(loc_pred), anchor,
                                           threshold=0.05)
    return mx.sym.Group([cls_prob, loc_loss, mx.sym.BlockGrad(cls_t), det])


def test_ssd_head_trains_and_fusion_agrees():
    """The SSD-style head binds, runs forward and backward with the same outputs and gradients with
    fusion on and off, and a few SGD steps lower its box loss."""
    import numpy as np

    import symjit as mx
    from symjit.config import Config
    from symjit.executor import Executor
    net = _ssd_head()
    shapes = dict(data=(2, 3, 8, 8), label=(2, 2, 5))
    arg_shapes, out_shapes, _ = net.infer_shape(**shapes)
    names = net.list_arguments()
    state = np.random.default_rng(5)
    values = {n: state.normal(0, 0.3, s) for n, s in zip(names, arg_shapes)}
    values["label"] = np.array([[[0, 0.1, 0.1, 0.45, 0.5], [1, 0.5, 0.4, 0.9, 0.95]],
                                [[1, 0.2, 0.3, 0.7, 0.8], [-1, 0, 0, 0, 0]]])
    assert out_shapes[3] == (2, out_shapes[2][1], 6)
    runs = []
    for fusion in (True, False):
        args = {n: mx.nd.array(v, dtype=np.float64) for n, v in values.items()}
        grads = {n: mx.nd.zeros(v.shape, dtype=np.float64) for n, v in values.items() if n != "label"}
        reqs = {n: "null" if n == "label" else "write" for n in names}
        ex = Executor(net, mx.cpu(), args, grads, reqs, config=Config.from_env().replace(fusion=fusion))
        outs = [o.asnumpy() for o in ex.forward(is_train=True)]
        ex.backward()
        runs.append((outs, {n: g.asnumpy() for n, g in grads.items()}, ex))
    (o1, g1, ex), (o2, g2, _) = runs
    for a, b in zip(o1, o2):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for n in g1:
        assert np.abs(g1[n]).max() > 0, n
        np.testing.assert_allclose(g1[n], g2[n], rtol=1e-10, atol=1e-12, err_msg=n)
    cls_t, det = o1[2], o1[3]
    assert (cls_t > 0).sum() >= 3 and (cls_t == 0).sum() > 0 and (cls_t == -1).sum() > 0
    assert set(np.unique(det[..., 0])) <= {-1.0, 0.0, 1.0}
    losses = []
    for _ in range(15):
        outs = ex.forward(is_train=True)
        losses.append(float(outs[1].asnumpy().sum()))
        ex.backward()
        for n, g in ex.grad_dict.items():
            ex.arg_dict[n][:] = ex.arg_dict[n].asnumpy() - 0.2 * g.asnumpy()
    assert losses[-1] < 0.2 * losses[0], losses    # measured: 25.1 -> 1.27
