"""How far each operator's float32 results may lie from its float64 results: the error model of
the float32-against-float64 oracle (``tests/opcheck.py``, ``check_float32``).

A model (:class:`Float32Error`) bounds ``max |y32 - y64| / max |y64|`` of every output and every
gradient, on the same (float32-representable) inputs, by ``ulps * eps * terms``: ``eps`` is
float32's machine epsilon (2^-23), ``terms`` the length of the longest sum the op or its gradient
computes, which ``terms(params, input shapes)`` works out per node (1 where it is not given). A
rounding error of a few ulps per element, times the number of terms a sum adds up, is the
worst-case growth of a float32 sum (blocked and float64-accumulated sums stay well inside it).

Where the bound comes from, once (:func:`float32_error`):

* an op listed in :data:`MODELS` (by its record's name) has that model;
* an internal op (a compiler rewrite or a gradient helper) has the model of the op it serves;
* an elementwise, broadcast or injective op that is not a composite (arithmetic on each element,
  data movement, and gradients that sum a broadcast axis in float64) gets :data:`ELEMENTWISE`:
  8 ulps, no sum;
* any other op has none, which ``tests/test_registry.py`` reports: a reduction, GEMM,
  convolution, normalisation, loss, composite or other opaque op states its model here.

Ops whose float32 results are unstable by nature state a looser bound and why (``why``).

>>> m = MODELS["sum"]
>>> m.terms({"axis": (1,), "keepdims": False, "exclude": False}, [(4, 25)])
25
>>> round(m.bound({"axis": (1,), "keepdims": False, "exclude": False}, [(4, 25)]) / EPS)
200
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from .registry import Kind, OpDef, get_op

__all__ = ["EPS", "Float32Error", "ELEMENTWISE", "MODELS", "float32_error"]

EPS = float(np.finfo(np.float32).eps)
"""float32's machine epsilon, 2^-23."""

Shapes = Sequence[Sequence[int]]


@dataclasses.dataclass(frozen=True)
class Float32Error:
    """``max |y32 - y64| <= ulps * EPS * terms(params, input shapes) * max |y64|`` per output and
    gradient; ``why`` says why an op states more ulps than its sums explain."""

    ulps: float = 8.0
    terms: Callable[[dict, Shapes], int] | None = None
    why: str = ""
    eps = EPS

    def count(self, params: dict, shapes: Shapes) -> int:
        """The terms of the longest sum (at least 1)."""
        return 1 if self.terms is None or not shapes else max(1, int(self.terms(params, shapes)))

    def bound(self, params: dict, shapes: Shapes) -> float:
        """The bound on ``max |y32 - y64| / max |y64|`` for one node."""
        return self.ulps * EPS * self.count(params, shapes)

    def __str__(self) -> str:
        sums = "" if self.terms is None else f" x the terms of its longest sum ({self.terms.__name__})"
        return f"{self.ulps:g} float32 epsilons{sums}" + (f"; {self.why}" if self.why else "")


ELEMENTWISE = Float32Error(8.0)
"""The derived model of elementwise, broadcast and injective ops: 8 ulps of the largest value."""


# ---------------------------------------------------------------------------------------------
# The terms of an op's longest sum, from its params and input shapes.

def _size(shape: Sequence[int]) -> int:
    return int(math.prod(shape))


def largest_input(p: dict, shapes: Shapes) -> int:
    """Every element of the largest input (an upper bound of any sum over one input)."""
    return max(_size(s) for s in shapes)


def reduced(p: dict, shapes: Shapes) -> int:
    """The elements a reduction adds per output (``axis``, ``exclude``), or each output's
    gradient sums over the reduced axes' complement for the broadcast back (at most the input)."""
    shape = shapes[0]
    axis = p.get("axis")
    if axis is None:
        return _size(shape)
    axes = {a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)} if shape else set()
    if p.get("exclude"):
        axes = set(range(len(shape))) - axes
    return int(math.prod(shape[a] for a in axes)) if axes else 1


def along_axis(p: dict, shapes: Shapes) -> int:
    """The length of the ``axis`` param's axis (softmax and its kind; default the last)."""
    shape = shapes[0]
    axis = p.get("axis", -1)
    return shape[(axis if axis is not None else -1) % len(shape)] if shape else 1


def gemm(p: dict, shapes: Shapes) -> int:
    """The longest of a product's sums: its inner dimension (forward), and the outer ones its
    gradients sum over (the largest dimension of either operand)."""
    return max(max(s) for s in shapes[:2] if s)


def conv(p: dict, shapes: Shapes) -> int:
    """A convolution's longest sum: channels per group x window (forward and data gradient), or
    images x output positions (the weight gradient): at most the data's size per channel group
    plus a window."""
    data, weight = shapes[0], shapes[1]
    window = _size(weight[1:])
    return max(window * max(1, weight[0] // max(1, p.get("num_group", 1))), _size(data) // max(1, data[1]))


def batch(p: dict, shapes: Shapes) -> int:
    """Per-channel statistics and their gradients: every element of one channel of the data
    (axis 1, or ``axis``), and the channel's own length for per-sample norms."""
    shape = shapes[0]
    axis = p.get("axis", 1) % len(shape)
    return max(_size(shape) // max(1, shape[axis]), shape[axis])


# ---------------------------------------------------------------------------------------------
# The stated models.

_SUMS = Float32Error(8.0, largest_input)
MODELS: dict[str, Float32Error] = {}


def _state(model: Float32Error, names: str) -> None:
    for name in names.split():
        MODELS[name] = model


_state(Float32Error(8.0, reduced), "sum mean prod nansum nanprod max min norm argmax argmin")
_state(Float32Error(8.0, along_axis), "softmax log_softmax softmin SoftmaxActivation")
_state(Float32Error(8.0, gemm), "dot batch_dot FullyConnected _linalg_gemm _linalg_gemm2")
_state(Float32Error(8.0, conv), "Convolution Deconvolution")
_state(Float32Error(8.0, batch), "BatchNorm BatchNorm_v1 LayerNorm InstanceNorm GroupNorm moments "
       "_contrib_BatchNormWithReLU _contrib_SyncBatchNorm L2Normalization LRN")
_state(Float32Error(8.0, conv), "Convolution_v1 _contrib_DeformableConvolution "
       "_contrib_ModulatedDeformableConvolution")
_state(Float32Error(8.0, gemm), "khatri_rao _linalg_syrk _linalg_trmm _contrib_interleaved_matmul_encdec_qk "
       "_contrib_interleaved_matmul_encdec_valatt _contrib_interleaved_matmul_selfatt_qk "
       "_contrib_interleaved_matmul_selfatt_valatt")
# Sums over windows, boxes, classes or time steps, gathers and copies, losses, the optimizers'
# updates and the image ops: bounded by every element of their largest input.
_state(_SUMS, """
    Pooling Pooling_v1 UpSampling Correlation ROIPooling _contrib_ROIAlign _contrib_RROIAlign
    _contrib_PSROIPooling _contrib_DeformablePSROIPooling GridGenerator SpatialTransformer
    SoftmaxOutput softmax_cross_entropy SVMOutput LinearRegressionOutput LogisticRegressionOutput
    MAERegressionOutput IdentityAttachKLSparseReg CTCLoss _contrib_hawkesll RNN _foreach _cond _while_loop
    _rnn_param_concat
    Custom Dropout LeakyReLU Crop reshape_like slice_like _identity_with_attr_like_rhs _split_v2
    depth_to_space space_to_depth batch_take choose_element_0index argmax_channel argsort sort topk
    add_n amp_cast amp_multicast all_finite multi_all_finite multi_sum_sq reset_arrays _histogram
    _shuffle _sample_multinomial _contrib_count_sketch _contrib_div_sqrt_dim _contrib_allclose
    _contrib_backward_gradientmultiplier _contrib_box_iou _contrib_box_nms _contrib_box_encode
    _contrib_box_decode _contrib_bipartite_matching _contrib_MultiBoxPrior _contrib_MultiBoxTarget
    _contrib_MultiBoxDetection _contrib_Proposal _contrib_MultiProposal
    _image_adjust_lighting _image_crop _image_flip_left_right _image_flip_top_bottom _image_normalize
    _image_random_brightness _image_random_color_jitter _image_random_contrast
    _image_random_flip_left_right _image_random_flip_top_bottom _image_random_hue
    _image_random_lighting _image_random_saturation _image_resize _image_to_tensor
    _linalg_extractdiag _linalg_extracttrian _linalg_makediag _linalg_maketrian _linalg_sumlogdiag
    _random_pdf_dirichlet _random_pdf_exponential _random_pdf_gamma _random_pdf_uniform
    _random_pdf_normal _random_pdf_poisson _random_pdf_negative_binomial
    _random_pdf_generalized_negative_binomial
    sgd_update sgd_mom_update mp_sgd_update mp_sgd_mom_update nag_mom_update mp_nag_mom_update
    signsgd_update signum_update adam_update _adamw_update _mp_adamw_update _multi_adamw_update
    _multi_mp_adamw_update rmsprop_update rmspropalex_update ftml_update ftrl_update
    lamb_update_phase1 lamb_update_phase2 mp_lamb_update_phase1 mp_lamb_update_phase2 multi_lars
    multi_sgd_update multi_sgd_mom_update multi_mp_sgd_update multi_mp_sgd_mom_update
    preloaded_multi_sgd_update preloaded_multi_sgd_mom_update preloaded_multi_mp_sgd_update
    preloaded_multi_mp_sgd_mom_update _contrib_group_adagrad_update _contrib_fft _contrib_ifft
""")
# Factorisations, solves and spectra: float32's error grows with the matrix's condition number
# as well as with its size, which the cases' well-conditioned matrices keep small.
_state(Float32Error(64.0, largest_input, why="a factorisation's error grows with the matrix's "
                    "condition number too"),
       "_linalg_potrf _linalg_potri _linalg_trsm _linalg_inverse _linalg_det _linalg_slogdet "
       "_linalg_gelqf _linalg_syevd")


def float32_error(op: OpDef) -> Float32Error | None:
    """The op's float32 error model: stated (:data:`MODELS`), derived for elementwise, broadcast
    and injective ops (:data:`ELEMENTWISE`), or None (not stated: a test failure)."""
    stated = MODELS.get(op.name)
    if stated is not None:
        return stated
    served = op.extra.get("rewrite_of") or op.extra.get("backward_of")
    if served is not None:   # a rewrite or a gradient helper: the model of the op it serves
        return float32_error(get_op(served))
    if op.expand is None and op.kind in (Kind.ELEMWISE, Kind.BROADCAST, Kind.INJECTIVE):
        return ELEMENTWISE
    return None
