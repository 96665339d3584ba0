"""``contrib.fft`` / ``contrib.ifft`` (1-D discrete Fourier transforms along the last axis) and
``contrib.count_sketch``, which MXNet 1.9.1 runs on GPUs only; here they are composites (products
with cosine/sine and hashing matrices built in the graph), so they run and differentiate on every
target.

* ``fft``: real (..., d) -> (..., 2d), ``[re0, im0, re1, im1, ...]`` of ``X_k = sum_n x_n
  exp(-2 pi i k n / d)``.
* ``ifft``: interleaved (..., 2d) -> (..., d), the real part of ``sum_k X_k exp(2 pi i k n / d)``,
  unnormalised (cuFFT's convention, as MXNet: ``ifft(fft(x)) = d * x``).
* ``count_sketch(data, h, s, out_dim)``: ``out[:, h[i]] += s[i] * data[:, i]`` for (N, d) data and
  (1, d) hash and sign rows; the gradient reaches data only.

``compute_size`` and ``processing_batch_size`` (MXNet's sub-batch sizes) are accepted and have no
effect.

>>> import symjit as mx
>>> (mx.nd.contrib.fft(mx.nd.array([[1.0, 0.0, 0.0, 0.0]])).asnumpy() + 0.0).tolist()   # + 0.0: no -0.0
[[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]]
"""
from __future__ import annotations

import math

from .registry import OpDef, Param, RuleError, register
from .rules import need_float, shape_str

__all__: list[str] = []

_COMPUTE = Param("compute_size", "int", 128, doc="ignored (MXNet's sub-batch size)")


def _fft_shape(inverse: bool):
    def shape(p: dict, ins: list, aux: list):
        data = ins[0]
        if data is None:
            return [None], [None], []
        if len(data) not in (2, 4):
            raise RuleError(f"data must be (N, d) or (N1, N2, N3, d), got {shape_str(data)}")
        d = data[-1]
        if inverse and d % 2:
            raise RuleError(f"ifft takes interleaved (real, imaginary) pairs: the last axis ({d}) must be "
                            "even")
        return [data], [tuple(data[:-1]) + ((d // 2) if inverse else (2 * d),)], []
    return shape


def _float(p: dict, ins: list, aux: list):
    if ins[0] is not None:
        need_float(ins[0], "data")
    return list(ins), [ins[0]], []


def _basis(b, d: int, dtype: str) -> tuple[int, int]:
    """(cos, sin) of 2 pi k n / d as (d, d) matrices, the products k n reduced mod d first."""
    k = b.add1("_arange", start=0.0, stop=float(d), dtype=dtype)
    prod = b.add1("broadcast_mul", b.add1("Reshape", k, shape=(d, 1)), b.add1("Reshape", k, shape=(1, d)))
    angle = b.add1("_mul_scalar", b.add1("_mod_scalar", prod, scalar=float(d)), scalar=2 * math.pi / d)
    return b.add1("cos", angle), b.add1("sin", angle)


def _fft(b, ins, p):
    x = ins[0]
    shape = b.g.values[x].shape
    d, dt = shape[-1], b.g.values[x].dtype.name
    flat = b.add1("Reshape", x, shape=(-1, d))
    cos, sin = _basis(b, d, dt)
    re = b.add1("dot", flat, cos)
    im = b.add1("negative", b.add1("dot", flat, sin))
    pairs = b.add1("stack", re, im, axis=2, num_args=2)
    return [b.add1("Reshape", pairs, shape=tuple(shape[:-1]) + (2 * d,))]


def _ifft(b, ins, p):
    x = ins[0]
    shape = b.g.values[x].shape
    d, dt = shape[-1] // 2, b.g.values[x].dtype.name
    pairs = b.add1("Reshape", x, shape=(-1, d, 2))
    re, im = b.add("SliceChannel", [pairs], num_outputs=2, axis=2, squeeze_axis=True)
    cos, sin = _basis(b, d, dt)
    out = b.add1("elemwise_sub", b.add1("dot", re, cos), b.add1("dot", im, sin))
    return [b.add1("Reshape", out, shape=tuple(shape[:-1]) + (d,))]


register(OpDef(name="_contrib_fft", hint="fft", params=(_COMPUTE,), shape=_fft_shape(False), dtype=_float,
               expand=_fft, extra={"family": "signal"},
               doc="The discrete Fourier transform of the last axis, (real, imaginary) interleaved."))
register(OpDef(name="_contrib_ifft", hint="ifft", params=(_COMPUTE,), shape=_fft_shape(True), dtype=_float,
               expand=_ifft, extra={"family": "signal"},
               doc="The real part of the unnormalised inverse transform of interleaved (real, imaginary) "
                   "pairs."))


def _sketch_shape(p: dict, ins: list, aux: list):
    data, h, s = ins
    if data is None:
        return list(ins), [None], []
    if len(data) != 2:
        raise RuleError(f"data must be (N, d), got {shape_str(data)}")
    want = (1, data[1])
    for given, arg in ((h, "h"), (s, "s")):
        if given is not None and tuple(given) != want:
            raise RuleError(f"{arg} must be {shape_str(want)} for data {shape_str(data)}, "
                            f"got {shape_str(given)}")
    return [data, want, want], [(data[0], p["out_dim"])], []


def _sketch(b, ins, p):
    data, h, s = ins
    d = b.g.values[data].shape[1]
    dt = b.g.values[data].dtype.name
    index = b.add1("Reshape", b.add1("BlockGrad", h), shape=(d,))
    hot = b.add1("one_hot", index, depth=p["out_dim"], dtype=dt)
    signs = b.add1("Reshape", b.add1("BlockGrad", s), shape=(d, 1))
    return [b.add1("dot", data, b.add1("broadcast_mul", hot, signs))]


register(OpDef(
    name="_contrib_count_sketch", hint="count_sketch", arguments=("data", "h", "s"),
    params=(Param("out_dim", "int", check=lambda v: v > 0, check_msg="> 0", doc="the sketch's width"),
            Param("processing_batch_size", "int", 32, doc="ignored (MXNet's sub-batch size)")),
    shape=_sketch_shape, dtype=lambda p, ins, aux: ([ins[0], None, None] if ins[0] is None else
                                                     [ins[0], ins[1], ins[2]], [ins[0]], []),
    expand=_sketch, extra={"family": "signal"},
    doc="Count sketch of each row of data: out[:, h[i]] += s[i] * data[:, i].",
))
