"""mx.metric against numpy references written here and hand-computed values."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symjit as mx
from symjit.base import MXNetError, ParamError, ShapeError


def _nd(x) -> mx.nd.NDArray:
    return mx.nd.array(np.asarray(x, dtype=np.float32))


# -- base class ----------------------------------------------------------------------------------

def test_get_is_nan_before_update_and_after_reset() -> None:
    m = mx.metric.Accuracy()
    name, value = m.get()
    assert name == "accuracy" and math.isnan(value)
    m.update([_nd([1])], [_nd([[0.2, 0.8]])])
    assert m.get() == ("accuracy", 1.0)
    m.reset()
    assert m.num_inst == 0 and m.sum_metric == 0.0
    assert math.isnan(m.get()[1])


def test_get_name_value_and_str() -> None:
    m = mx.metric.MSE()
    m.update([np.array([1.0, 3.0])], [np.array([2.0, 3.0])])
    assert m.get_name_value() == [("mse", 0.5)]
    assert "mse" in str(m)


def test_reset_local_keeps_global() -> None:
    m = mx.metric.Accuracy()
    m.update([_nd([0, 1])], [_nd([[0.9, 0.1], [0.8, 0.2]])])  # 1 of 2
    m.reset_local()
    m.update([_nd([1])], [_nd([[0.1, 0.9]])])  # 1 of 1
    assert m.get() == ("accuracy", 1.0)
    assert m.get_global() == ("accuracy", 2 / 3)


def test_update_dict_selects_names() -> None:
    m = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": _nd([1, 0]), "other": _nd([5, 5])},
                  {"aux": _nd([[1.0, 0.0]]), "out": _nd([[0.0, 1.0], [0.0, 1.0]])})
    assert m.get() == ("accuracy", 0.5)


def test_base_update_not_implemented() -> None:
    with pytest.raises(NotImplementedError):
        mx.metric.EvalMetric("x").update([], [])


# -- Accuracy ------------------------------------------------------------------------------------

def test_accuracy_argmax_accumulates_over_batches() -> None:
    m = mx.metric.create("acc")
    m.update([_nd([0, 1, 2])], [_nd([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8], [0.0, 0.1, 0.9]])])  # 2/3
    m.update(_nd([1]), _nd([[0.7, 0.3, 0.0]]))  # single arrays are wrapped: 0/1
    assert m.num_inst == 4 and m.sum_metric == 2
    assert m.get() == ("accuracy", 0.5)


def test_accuracy_same_shape_truncates_to_int() -> None:
    m = mx.metric.Accuracy()
    # same shape: cast to int32 (1.7 -> 1, 1.2 -> 1, 2.9 -> 2), as MXNet 1.x (rounding would give 1/3)
    m.update([np.array([1, 1, 2])], [np.array([1.7, 1.2, 2.9])])
    assert m.get()[1] == 1.0


def test_accuracy_axis() -> None:
    m = mx.metric.Accuracy(axis=0)
    pred = np.array([[0.9, 0.1], [0.1, 0.9], [0.0, 0.0]])  # classes along axis 0: argmax -> [0, 1]
    m.update([np.array([0, 0])], [pred])
    assert m.get() == ("accuracy", 0.5)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_accuracy_matches_numpy(n: int, c: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pred = rng.random((n, c)).astype(np.float32)
    label = rng.integers(0, c, n)
    m = mx.metric.Accuracy()
    m.update([_nd(label)], [_nd(pred)])
    want = np.mean(np.argmax(pred, axis=1) == label)
    assert m.get()[1] == pytest.approx(want)


def test_accuracy_shape_mismatch_names_metric_and_shapes() -> None:
    m = mx.metric.Accuracy()
    with pytest.raises(ShapeError, match=r"Accuracy.*\(3,\).*\(2,4\)"):
        m.update([np.zeros(3)], [np.zeros((2, 4))])
    with pytest.raises(ShapeError, match="Accuracy.*2 label arrays but 1 prediction"):
        m.update([np.zeros(2), np.zeros(2)], [np.zeros((2, 2))])
    with pytest.raises(MXNetError, match="Accuracy: axis 3"):
        mx.metric.Accuracy(axis=3).update([np.zeros(2)], [np.zeros((2, 2))])


def test_check_label_shapes() -> None:
    labels, preds = mx.metric.check_label_shapes(_nd([1]), _nd([2]), wrap=True)
    assert isinstance(labels, list) and isinstance(preds, list)
    with pytest.raises(ValueError, match=r"\(2,3\).*\(3,2\)"):
        mx.metric.check_label_shapes(np.zeros((2, 3)), np.zeros((3, 2)), shape=True)


# -- TopKAccuracy ----------------------------------------------------------------------------------

def test_top_k_hand_computed() -> None:
    m = mx.metric.create("top_k_accuracy", top_k=2)
    assert m.name == "top_k_accuracy_2"
    pred = np.array([[0.1, 0.5, 0.4],   # top2 {1, 2}: label 2 hit
                     [0.2, 0.3, 0.5],   # top2 {1, 2}: label 0 miss
                     [0.6, 0.3, 0.1]])  # top2 {0, 1}: label 1 hit
    m.update([np.array([2, 0, 1])], [pred])
    assert m.get()[1] == pytest.approx(2 / 3)


def test_top_k_matches_numpy_and_clips_k() -> None:
    rng = np.random.default_rng(3)
    pred = rng.random((50, 7))
    label = rng.integers(0, 7, 50)
    m = mx.metric.TopKAccuracy(top_k=3)
    m.update([_nd(label)], [pred])
    ranks = np.argsort(-pred, axis=1)[:, :3]
    want = np.mean([label[i] in ranks[i] for i in range(50)])
    assert m.get()[1] == pytest.approx(want)
    big = mx.metric.TopKAccuracy(top_k=10)  # more than the 7 classes: every sample counts
    big.update([label], [pred])
    assert big.get()[1] == 1.0


def test_top_k_errors() -> None:
    with pytest.raises(ParamError, match="top_k"):
        mx.metric.TopKAccuracy(top_k=0)
    with pytest.raises(ShapeError, match=r"TopKAccuracy.*\(4,\).*\(3,5\)"):
        mx.metric.TopKAccuracy(2).update([np.zeros(4)], [np.zeros((3, 5))])


# -- CrossEntropy / NLL --------------------------------------------------------------------------

def test_cross_entropy_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(8, 4))
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    label = rng.integers(0, 4, 8)
    m = mx.metric.create("ce")
    m.update([_nd(label)], [_nd(prob)])
    want = np.mean(-np.log(prob[np.arange(8), label] + 1e-12))
    assert m.get()[0] == "cross-entropy"
    assert m.get()[1] == pytest.approx(want, rel=1e-5)
    nll = mx.metric.create("nll_loss")
    nll.update([_nd(label)], [_nd(prob)])
    assert nll.get()[1] == pytest.approx(want, rel=1e-5)


def test_cross_entropy_eps_and_bad_labels() -> None:
    m = mx.metric.CrossEntropy(eps=0.5)
    m.update([np.array([1])], [np.array([[1.0, 0.0]])])
    assert m.get()[1] == pytest.approx(-math.log(0.5))
    with pytest.raises(MXNetError, match=r"CrossEntropy: labels must be integer class indices in \[0, 2\)"):
        m.update([np.array([2])], [np.array([[0.5, 0.5]])])
    with pytest.raises(ShapeError, match=r"CrossEntropy.*\(3,\).*\(2,2\)"):
        m.update([np.array([0, 1, 1])], [np.ones((2, 2))])


# -- regression: MSE / MAE / RMSE ------------------------------------------------------------------

def test_regression_metrics_average_per_batch() -> None:
    batches = [(np.array([1.0, 2.0]), np.array([2.0, 4.0])),        # errors 1, 2
               (np.array([0.0, 0.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0, 5.0]))]  # errors 1, 1, 1, 5
    mse, mae, rmse = (mx.metric.create(n) for n in ("mse", "mae", "rmse"))
    for label, pred in batches:
        for m in (mse, mae, rmse):
            m.update([_nd(label)], [_nd(pred)])
    # hand-computed: MSE per batch 2.5 and 7.0; MAE 1.5 and 2.0; RMSE sqrt of the MSEs
    assert mse.get() == ("mse", pytest.approx((2.5 + 7.0) / 2))
    assert mae.get() == ("mae", pytest.approx((1.5 + 2.0) / 2))
    assert rmse.get() == ("rmse", pytest.approx((math.sqrt(2.5) + math.sqrt(7.0)) / 2))
    assert mse.num_inst == 2


def test_regression_column_vs_flat_shapes_and_mismatch() -> None:
    m = mx.metric.MSE()
    m.update([np.array([1.0, 2.0, 3.0])], [np.array([[1.0], [2.0], [5.0]])])  # (3,) vs (3, 1)
    assert m.get()[1] == pytest.approx(4 / 3)
    with pytest.raises(ShapeError, match=r"MSE: shape of labels \(3,\) does not match shape of "
                                         r"predictions \(3,2\)"):
        m.update([np.zeros(3)], [np.zeros((3, 2))])
    with pytest.raises(ShapeError, match="MAE"):
        mx.metric.MAE().update([np.zeros(2)], [np.zeros(3)])


def test_pearson_per_batch() -> None:
    m = mx.metric.create("pearsonr")
    a, b = np.array([1.0, 2.0, 3.0, 5.0]), np.array([2.0, 1.0, 4.0, 4.0])
    m.update([a], [b])
    m.update([a], [-a])
    am, bm = a - a.mean(), b - b.mean()
    r = (am * bm).sum() / np.sqrt((am ** 2).sum() * (bm ** 2).sum())
    assert m.get()[1] == pytest.approx((r - 1.0) / 2)


# -- F1 ----------------------------------------------------------------------------------------------

def _scores(classes: list[int]) -> np.ndarray:
    return np.array([[0.2, 0.8] if c == 1 else [0.8, 0.2] for c in classes])


def test_f1_macro_and_micro_hand_computed() -> None:
    b1 = (np.array([1, 1, 0, 0]), _scores([1, 0, 1, 0]))  # tp1 fp1 fn1: F1 = 0.5
    b2 = (np.array([1, 1, 1, 0]), _scores([1, 1, 1, 1]))  # tp3 fp1 fn0: P .75 R 1: F1 = 6/7
    macro, micro = mx.metric.create("f1"), mx.metric.F1(average="micro")
    for label, pred in (b1, b2):
        macro.update([label], [pred])
        micro.update([label], [pred])
    assert macro.get() == ("f1", pytest.approx((0.5 + 6 / 7) / 2))
    # micro: tp4 fp2 fn1: P 2/3, R 4/5
    p, r = 2 / 3, 4 / 5
    assert micro.get()[1] == pytest.approx(2 * p * r / (p + r))
    micro.reset()
    assert math.isnan(micro.get()[1])
    micro.update([b1[0]], [b1[1]])
    assert micro.get()[1] == pytest.approx(0.5)


@pytest.mark.parametrize("name", ["f1", "mcc"])
def test_binary_macro_scores_one_update_call_as_one_batch(name) -> None:
    b1 = (np.array([1, 1, 0, 0]), _scores([1, 0, 1, 0]))
    b2 = (np.array([1, 0]), _scores([1, 0]))
    together, one_by_one = mx.metric.create(name), mx.metric.create(name)
    together.update([b1[0], b2[0]], [b1[1], b2[1]])          # two pairs, one call: one batch
    assert together.num_inst == 1
    both = mx.metric.create(name, average="micro")
    both.update([np.concatenate([b1[0], b2[0]])], [np.concatenate([b1[1], b2[1]])])
    assert together.get()[1] == pytest.approx(both.get()[1])
    one_by_one.update([b1[0]], [b1[1]])
    one_by_one.update([b2[0]], [b2[1]])
    assert one_by_one.num_inst == 2 and one_by_one.get()[1] != pytest.approx(together.get()[1])


@pytest.mark.parametrize("name", ["f1", "mcc"])
@pytest.mark.parametrize("average", ["macro", "micro"])
def test_binary_reset_local_keeps_the_global_counts(name, average) -> None:
    rng = np.random.default_rng(5)
    batches = [(rng.integers(0, 2, 12), rng.random((12, 2))) for _ in range(4)]
    local, plain = mx.metric.create(name, average=average), mx.metric.create(name, average=average)
    for label, pred in batches:
        local.update([label], [pred])
        local.reset_local()
        plain.update([label], [pred])
    assert local.get_global() == plain.get()
    assert math.isnan(local.get()[1])
    local.update([batches[0][0]], [batches[0][1]])
    fresh = mx.metric.create(name, average=average)
    fresh.update([batches[0][0]], [batches[0][1]])
    assert local.get() == fresh.get()


def test_f1_no_positive_predictions_is_zero_and_errors() -> None:
    m = mx.metric.F1()
    m.update([np.array([1, 0])], [_scores([0, 0])])
    assert m.get()[1] == 0.0
    with pytest.raises(MXNetError, match="F1: only binary"):
        m.update([np.array([0, 1, 2])], [np.ones((3, 2))])
    with pytest.raises(ShapeError, match=r"F1.*\(3,3\)"):
        m.update([np.array([0, 1, 1])], [np.ones((3, 3))])
    with pytest.raises(ParamError, match="average"):
        mx.metric.F1(average="weighted")


# -- Perplexity ------------------------------------------------------------------------------------

def test_perplexity_with_ignore_label() -> None:
    m = mx.metric.create("perplexity", ignore_label=0)
    label = np.array([1, 0, 2, 2])
    pred = np.array([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4], [0.1, 0.1, 0.8], [0.2, 0.6, 0.2]])
    m.update([_nd(label)], [_nd(pred)])
    want = math.exp(-(math.log(0.5) + math.log(0.8) + math.log(0.2)) / 3)
    assert m.get() == ("perplexity", pytest.approx(want, rel=1e-5))
    assert m.num_inst == 3


def test_perplexity_3d_axis_and_errors() -> None:
    rng = np.random.default_rng(1)
    pred = rng.random((2, 5, 3))  # classes on axis 1
    pred /= pred.sum(axis=1, keepdims=True)
    label = rng.integers(0, 5, (2, 3))
    m = mx.metric.Perplexity(ignore_label=None, axis=1)
    m.update([label], [pred])
    picked = np.take_along_axis(pred, label[:, None, :], axis=1)
    assert m.get()[1] == pytest.approx(math.exp(-np.log(picked).mean()))
    with pytest.raises(ShapeError, match="Perplexity"):
        m.update([np.zeros(4)], [np.ones((3, 5))])


def test_perplexity_labels_outside_the_classes_read_the_nearest_class() -> None:
    pred = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    m = mx.metric.Perplexity(ignore_label=None)
    m.update([np.array([3.0, -1.0])], [pred])   # clipped to class 2 and class 0, as MXNet's pick
    assert m.get()[1] == pytest.approx(math.exp(-(math.log(0.7) + math.log(0.5)) / 2))


# -- Loss ------------------------------------------------------------------------------------------

def test_loss_metric_averages_outputs() -> None:
    m = mx.metric.create("loss")
    m.update(None, [_nd([1.0, 2.0]), _nd([[3.0, 6.0]])])
    assert m.get() == ("loss", 3.0)


# -- Composite / create / custom --------------------------------------------------------------------

def test_composite_lists_and_add() -> None:
    m = mx.metric.create(["acc", "ce"])
    assert isinstance(m, mx.metric.CompositeEvalMetric)
    m.add(mx.metric.TopKAccuracy(top_k=2))
    label, pred = np.array([1, 0]), np.array([[0.25, 0.75], [0.5, 0.5]])
    m.update([label], [pred])
    names, values = m.get()
    assert names == ["accuracy", "cross-entropy", "top_k_accuracy_2"]
    # argmax of row 2 is 0 (first max): both correct
    assert values[0] == 1.0
    assert values[1] == pytest.approx(-(math.log(0.75) + math.log(0.5)) / 2)
    assert values[2] == 1.0
    assert m.get_metric(1).name == "cross-entropy"
    assert m.get_name_value()[0] == ("accuracy", 1.0)
    m.reset()
    assert all(math.isnan(v) for v in m.get()[1])
    with pytest.raises(ParamError, match="index 5"):
        m.get_metric(5)


def test_composite_mse_uses_flattened_pairs() -> None:
    m = mx.metric.CompositeEvalMetric([mx.metric.MSE(), mx.metric.MAE()])
    m.update([np.array([0.0, 2.0])], [np.array([1.0, 0.0])])
    assert m.get() == (["mse", "mae"], [pytest.approx(2.5), pytest.approx(1.5)])


@pytest.mark.parametrize("name, cls", [
    ("acc", mx.metric.Accuracy), ("accuracy", mx.metric.Accuracy), ("ce", mx.metric.CrossEntropy),
    ("mse", mx.metric.MSE), ("mae", mx.metric.MAE), ("rmse", mx.metric.RMSE), ("f1", mx.metric.F1),
    ("top_k_accuracy", mx.metric.TopKAccuracy), ("loss", mx.metric.Loss), ("ACC", mx.metric.Accuracy),
])
def test_create_by_name(name: str, cls: type) -> None:
    assert type(mx.metric.create(name)) is cls


def test_create_errors_and_passthrough() -> None:
    m = mx.metric.MSE()
    assert mx.metric.create(m) is m
    with pytest.raises(ParamError, match="unknown metric 'nope'"):
        mx.metric.create("nope")
    with pytest.raises(ParamError, match="int"):
        mx.metric.create(3)


def test_custom_metric_value_and_tuple() -> None:
    def hits(label, pred):
        assert isinstance(label, np.ndarray) and isinstance(pred, np.ndarray)
        return int((label == pred).sum()), label.size

    m = mx.metric.create(hits)
    assert m.name == "hits"
    m.update([_nd([1, 2, 3])], [_nd([1, 0, 3])])
    m.update([_nd([4])], [_nd([0])])
    assert (m.sum_metric, m.num_inst) == (2, 4)
    lam = mx.metric.CustomMetric(lambda label, pred: 0.25)
    assert lam.name == "custom(<lambda>)"
    lam.update([np.zeros(1), np.zeros(1)], [np.zeros(1), np.zeros(1)])
    assert lam.get()[1] == 0.25 and lam.num_inst == 2


def test_np_helper_and_extra_outputs() -> None:
    def max_err(label, pred):
        return float(np.abs(label - pred).max())

    m = mx.metric.np(max_err)
    assert m.name == "max_err"
    m.update([np.array([1.0, 2.0])], [np.array([1.0, 4.5])])
    assert m.get() == ("max_err", 2.5)
    with pytest.raises(ShapeError):
        m.update([np.zeros(1)], [np.zeros(1), np.zeros(1)])
    extra = mx.metric.np(max_err, name="me", allow_extra_outputs=True)
    extra.update([np.array([0.0])], [np.array([3.0]), np.array([100.0])])  # extra output ignored
    assert extra.get() == ("me", 3.0)


def test_mcc_matches_mxnet_documented_example():
    fp, tn, fn, tp = 1000, 1, 1, 10000
    preds = [mx.nd.array([[.3, .7]] * fp + [[.7, .3]] * tn + [[.7, .3]] * fn + [[.3, .7]] * tp)]
    labels = [mx.nd.array([0.] * (fp + tn) + [1.] * (fn + tp))]
    f1, mcc = mx.metric.F1(), mx.metric.MCC()
    f1.update(labels, preds)
    mcc.update(labels, preds)
    assert f1.get()[1] == pytest.approx(0.95233560306652054)
    assert mcc.get()[1] == pytest.approx(0.01917751877733392)
    assert mx.metric.create("mcc").name == "mcc"


def test_mcc_macro_and_micro_and_reference():
    rng = np.random.default_rng(3)
    batches = [(rng.integers(0, 2, 50), rng.random((50, 2))) for _ in range(3)]

    def ref(label, pred):
        g = pred.argmax(1)
        tp, tn = np.sum((g == 1) & (label == 1)), np.sum((g == 0) & (label == 0))
        fp, fn = np.sum((g == 1) & (label == 0)), np.sum((g == 0) & (label == 1))
        return (tp * tn - fp * fn) / np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))

    macro, micro = mx.metric.MCC(), mx.metric.MCC(average="micro")
    for label, pred in batches:
        macro.update([label], [pred])
        micro.update([label], [pred])
    assert macro.get()[1] == pytest.approx(np.mean([ref(lb, p) for lb, p in batches]))
    all_l, all_p = np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])
    assert micro.get()[1] == pytest.approx(ref(all_l, all_p))
    assert micro.get_global()[1] == pytest.approx(ref(all_l, all_p))
    micro.reset_local()
    assert np.isnan(micro.get()[1]) and micro.get_global()[1] == pytest.approx(ref(all_l, all_p))
    with pytest.raises(MXNetError, match="MCC: only binary"):
        mx.metric.MCC().update([np.array([2, 0])], [np.array([[0.1, 0.9], [0.5, 0.5]])])


def test_pcc_matches_mxnet_documented_example_and_multiclass_reference():
    fp, tn, fn, tp = 1000, 1, 1, 10000                     # two classes: the MCC example's value
    pcc = mx.metric.PCC()
    pcc.update([mx.nd.array([0.] * (fp + tn) + [1.] * (fn + tp))],
               [mx.nd.array([[.3, .7]] * fp + [[.7, .3]] * tn + [[.7, .3]] * fn + [[.3, .7]] * tp)])
    assert pcc.get() == ("pcc", pytest.approx(0.01917751877733392))
    constant = mx.metric.PCC()                              # every prediction one class: undefined
    constant.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
    assert np.isnan(constant.get()[1])
    rng = np.random.default_rng(4)
    label, pred = rng.integers(0, 4, 200), rng.random((200, 4))
    guess = pred.argmax(1)
    pcc = mx.metric.create("pcc")
    pcc.update([label[:100]], [pred[:100]])
    pcc.update([label[100:]], [guess[100:]])              # class indices work too
    c = np.zeros((4, 4))
    np.add.at(c, (guess, label), 1)
    n, x, y = c.sum(), c.sum(1), c.sum(0)
    want = (np.trace(c) * n - x @ y) / np.sqrt((n * n - x @ x) * (n * n - y @ y))
    assert pcc.get()[1] == pytest.approx(want)
    two = mx.metric.PCC()
    two.update([label % 2], [(guess % 2)])
    micro = mx.metric.MCC(average="micro")
    micro.update([label % 2], [np.eye(2)[guess % 2]])
    assert two.get()[1] == pytest.approx(micro.get()[1])
    assert np.isnan(mx.metric.PCC().get()[1])
