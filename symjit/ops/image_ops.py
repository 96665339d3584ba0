"""The image operators of ``mx.sym.image`` / ``mx.nd.image`` (registered as ``_image_<name>``), for
(H, W, C) images, and (N, H, W, C) batches where MXNet takes them: composites of registered ops, so
they run on every target. The random ones draw from the seeded generator (``mx.random.seed``), one
draw per call, as MXNet does (it takes single images only for them).

* ``to_tensor``: (H, W, C) -> (C, H, W) float32 in [0, 1] (/ 255); ``normalize``: per channel
  ``(x - mean) / std`` of a (C, H, W) / (N, C, H, W) tensor (one value or one per channel).
* ``flip_left_right`` / ``flip_top_bottom`` and their ``random_`` forms (probability 0.5).
* ``resize(size, keep_ratio, interp)``: bilinear (``interp=1``; OpenCV's half-pixel geometry)
  to ``size`` = (width, height), or a square, or the shorter edge with ``keep_ratio``; uint8
  images are rounded back to uint8. ``crop(x, y, width, height)``.
* ``random_brightness`` (x * a), ``random_contrast`` (blend with the image's mean gray),
  ``random_saturation`` (blend with each pixel's gray), gray = 0.299 R + 0.587 G + 0.114 B, ``a``
  uniform in [min_factor, max_factor]; ``random_hue`` shifts each pixel's HLS hue by a turns
  (a * 360 degrees), as MXNet does; ``random_color_jitter`` applies brightness, contrast,
  saturation and hue in that order with factors in [1 - v, 1 + v] (hue in [-v, v]), each when its
  v > 0.
* ``adjust_lighting(alpha)`` adds AlexNet's PCA lighting noise ``eigvec @ (alpha * eigval)`` to
  the channels; ``random_lighting(alpha_std)`` draws alpha ~ N(0, alpha_std).

Resampling, casting and the random augmenters pass no gradient back; normalize, the flips, crop
and adjust_lighting do. Where MXNet 1.9.1's CPU build differs from this documented behaviour,
symjit follows the documentation: its ``flip_left_right`` zeroes the middle column of odd-width images and its
``random_saturation`` does not blend with the gray value (see docs/architecture.md).

>>> import numpy as np, symjit as mx
>>> img = mx.nd.array(np.arange(12, dtype=np.float32).reshape(2, 2, 3))
>>> mx.nd.image.to_tensor(img).shape, mx.nd.image.flip_left_right(img)[0, 0].asnumpy().tolist()
((3, 2, 2), [3.0, 4.0, 5.0])
"""
from __future__ import annotations

import numpy as np

from ..jitext import jitable
from .registry import Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_float, shape_str

__all__: list[str] = []

GRAY = (0.299, 0.587, 0.114)
# AlexNet's PCA of ImageNet's RGB pixels
EIGVAL = np.array([55.46, 4.794, 1.148])
EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


def _register(name: str, expand, shape, doc: str, params: tuple = (), dtype=None,
              differentiable: bool = True) -> None:
    """An image composite; a non-differentiable one (casts, resampling, random augmentation) blocks
    the gradient of its input, so it passes none back (``no_grad``)."""
    extra = {"family": "image"}
    if not differentiable:
        extra["no_grad"] = True
        inner = expand

        def expand(b, ins, p):
            return inner(b, [b.add1("BlockGrad", ins[0])] + list(ins[1:]), p)
    register(OpDef(name=f"_image_{name}", params=params, shape=shape, dtype=dtype, expand=expand,
                   hint=name, doc=doc, extra=extra))


def _float_image(p: dict, ins: list, aux: list):
    """The colour operators compute in the image's float dtype."""
    if ins[0] is not None:
        need_float(ins[0], "data")
    return list(ins), [ins[0]], []


def _hwc(p: dict, ins: list, aux: list, ranks: tuple = (3, 4)):
    data = ins[0]
    if data is None:
        return [None], [None], []
    if len(data) not in ranks:
        raise RuleError(f"data must be an image (H, W, C){' or a batch (N, H, W, C)' if 4 in ranks else ''}, "
                        f"got {shape_str(data)}")
    return [data], [data], []


def _single(p: dict, ins: list, aux: list):
    return _hwc(p, ins, aux, (3,))


def _shape_of(b, v: int) -> tuple:
    return b.g.values[v].shape


def _dt(b, v: int) -> str:
    return b.g.values[v].dtype.name


def _const(b, values, like: int, shape: tuple) -> int:
    """A constant array of ``values`` with ``shape`` (built from _full pieces)."""
    values = [float(v) for v in np.asarray(values).ravel()]
    dt = _dt(b, like) if b.g.values[like].dtype.kind == "f" else "float32"
    pieces = [b.add1("_full", shape=(1,), value=v, dtype=dt) for v in values]
    flat = pieces[0] if len(pieces) == 1 else b.add1("Concat", *pieces, dim=0, num_args=len(pieces))
    return b.add1("Reshape", flat, shape=shape)


def _channel_shape(b, x: int, channel_axis: int) -> tuple:
    nd = len(_shape_of(b, x))
    ax = channel_axis % nd
    return tuple(_shape_of(b, x)[ax] if i == ax else 1 for i in range(nd))


# --- to_tensor, normalize --------------------------------------------------------------------
def _to_tensor_shape(p: dict, ins: list, aux: list):
    new_ins, outs, _ = _hwc(p, ins, aux)
    if outs[0] is None:
        return new_ins, outs, []
    s = outs[0]
    return new_ins, [s[:-3] + (s[-1], s[-3], s[-2])], []


def _to_tensor(b, ins, p):
    x = ins[0]
    nd = len(_shape_of(b, x))
    axes = (2, 0, 1) if nd == 3 else (0, 3, 1, 2)
    f = b.add1("Cast", x, dtype="float32") if _dt(b, x) != "float32" else x
    return [b.add1("_div_scalar", b.add1("transpose", f, axes=axes), scalar=255.0)]


_register("to_tensor", _to_tensor, _to_tensor_shape,
          "(H, W, C) image(s) with values in [0, 255] as (C, H, W) float32 tensors in [0, 1].",
          dtype=lambda p, ins, aux: (list(ins), [np.dtype("float32")], []), differentiable=False)


def _normalize_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    if len(data) not in (3, 4):
        raise RuleError(f"data must be (C, H, W) or (N, C, H, W), got {shape_str(data)}")
    c = data[-3]
    for name in ("mean", "std"):
        if len(p[name]) not in (1,) and len(p[name]) < c:
            raise RuleError(f"{name} has {len(p[name])} values for {c} channels")
    return [data], [data], []


def _normalize(b, ins, p):
    x = ins[0]
    c = _shape_of(b, x)[-3]
    shape = _channel_shape(b, x, -3)

    def per_channel(values):
        vals = list(values) * c if len(values) == 1 else list(values)[:c]
        return _const(b, vals, x, shape)
    if any(s == 0 for s in p["std"]):
        raise ParamError(f"_image_normalize: std must not be 0, got {p['std']}")
    centred = b.add1("broadcast_sub", x, per_channel(p["mean"]))
    return [b.add1("broadcast_div", centred, per_channel(p["std"]))]


_register("normalize", _normalize, _normalize_shape,
          "Per channel (x - mean) / std of (C, H, W) or (N, C, H, W) tensors.",
          params=(Param("mean", "floats", (0.0, 0.0, 0.0, 0.0), doc="channel means (or one value)"),
                  Param("std", "floats", (1.0, 1.0, 1.0, 1.0), doc="channel standard deviations (or one)")))


# --- flips -----------------------------------------------------------------------------------
def _flip(axis: int):
    return lambda b, ins, p: [b.add1("reverse", ins[0], axis=axis % len(_shape_of(b, ins[0])))]


def _coin(b, like: int) -> int:
    """1 with probability 0.5 (one draw), shaped to broadcast over ``like``."""
    u = b.add1("_random_uniform", shape=(1,) * len(_shape_of(b, like)), dtype="float32")
    return b.add1("_lesser_scalar", u, scalar=0.5)


def _random_flip(axis: int):
    def expand(b, ins, p):
        x = ins[0]
        flipped = b.add1("reverse", x, axis=axis % len(_shape_of(b, x)))
        # a select, which copies either image exactly (x + take * (flipped - x) rounds in float32)
        return [b.add1("where", b.add1("broadcast_like", _coin(b, x), x), flipped, x)]
    return expand


for _name, _axis in (("left_right", -2), ("top_bottom", -3)):
    _register(f"flip_{_name}", _flip(_axis), _hwc, f"The image(s) flipped {_name.replace('_', '-')}.")
    _register(f"random_flip_{_name}", _random_flip(_axis), _hwc,
              f"The image(s) flipped {_name.replace('_', '-')} with probability 0.5 (one draw per call).",
              differentiable=False)


# --- resize, crop ----------------------------------------------------------------------------
def resized_size(p: dict, h: int, w: int) -> tuple[int, int]:
    """(height, width) after ``resize``."""
    size = tuple(p["size"])
    if len(size) == 2:
        return size[1], size[0]
    if len(size) != 1:
        raise RuleError(f"size must be (width, height) or one number, got {size}")
    s = size[0]
    if not p["keep_ratio"]:
        return s, s
    if h <= w:
        return s, int(w * s / h)
    return int(h * s / w), s


def _resize_shape(p: dict, ins: list, aux: list):
    new_ins, outs, _ = _hwc(p, ins, aux)
    if outs[0] is None:
        return new_ins, outs, []
    if p["interp"] != 1:
        raise RuleError(f"interp={p['interp']} is not supported (symjit resizes bilinearly, interp=1)")
    d = outs[0]
    nh, nw = resized_size(p, d[-3], d[-2])
    if nh <= 0 or nw <= 0:
        raise RuleError(f"the output size ({nw} x {nh}) must be positive")
    return new_ins, [d[:-3] + (nh, nw, d[-1])], []


def _resize(b, ins, p):
    x = ins[0]
    s = _shape_of(b, x)
    nh, nw = resized_size(p, s[-3], s[-2])
    single = len(s) == 3
    f = b.add1("Cast", x, dtype="float32") if b.g.values[x].dtype.kind != "f" else x
    nchw = b.add1("transpose", b.add1("expand_dims", f, axis=0) if single else f, axes=(0, 3, 1, 2))
    out = b.add1("_contrib_BilinearResize2D", nchw, height=nh, width=nw, align_corners=False)
    out = b.add1("transpose", out, axes=(0, 2, 3, 1))
    if single:
        out = b.add1("Reshape", out, shape=(nh, nw, s[-1]))
    if b.g.values[x].dtype.kind != "f":
        out = b.add1("Cast", b.add1("clip", b.add1("round", out), a_min=0.0, a_max=255.0), dtype=_dt(b, x))
    return [out]


_register("resize", _resize, _resize_shape,
          "Image(s) resized bilinearly to size = (width, height), a square, or the shorter edge "
          "(keep_ratio).",
          params=(Param("size", "shape", (), doc="(width, height) or one size"),
                  Param("keep_ratio", "bool", False, doc="one size is the shorter edge's"),
                  Param("interp", "int", 1, doc="interpolation: 1 (bilinear) only")), differentiable=False)


def _crop_shape(p: dict, ins: list, aux: list):
    new_ins, outs, _ = _hwc(p, ins, aux)
    if outs[0] is None:
        return new_ins, outs, []
    d = outs[0]
    if not (0 <= p["x"] and p["x"] + p["width"] <= d[-2] and 0 <= p["y"] and p["y"] + p["height"] <= d[-3]) \
            or p["width"] <= 0 or p["height"] <= 0:
        raise RuleError(f"the crop ({p['x']}, {p['y']}, {p['width']} x {p['height']}) is not inside the "
                        f"{d[-2]} x {d[-3]} image")
    return new_ins, [d[:-3] + (p["height"], p["width"], d[-1])], []


def _crop(b, ins, p):
    x = ins[0]
    nd = len(_shape_of(b, x))
    y = b.add1("slice_axis", x, axis=nd - 3, begin=p["y"], end=p["y"] + p["height"])
    return [b.add1("slice_axis", y, axis=nd - 2, begin=p["x"], end=p["x"] + p["width"])]


_register("crop", _crop, _crop_shape, "The width x height window of the image(s) at (x, y).",
          params=tuple(Param(n, "int", doc=d) for n, d in (("x", "left"), ("y", "top"), ("width", "width"),
                                                           ("height", "height"))))


# --- colour ----------------------------------------------------------------------------------
def _factor(b, x: int, low: float, high: float) -> int:
    """One uniform draw in [low, high], shaped to broadcast over ``x``."""
    return b.add1("_random_uniform", low=low, high=high, shape=(1,) * len(_shape_of(b, x)), dtype=_dt(b, x))


def _gray(b, x: int) -> int:
    """Each pixel's gray value, (H, W, 1)."""
    return b.add1("sum", b.add1("broadcast_mul", x, _const(b, GRAY, x, (1, 1, 3))), axis=(2,), keepdims=True)


def _brightness(b, x, a):
    return b.add1("broadcast_mul", x, a)


def _contrast(b, x, a):
    return b.add1("broadcast_add", b.add1("broadcast_mul", x, a),
                  b.add1("broadcast_mul", b.add1("mean", _gray(b, x), axis=(0, 1), keepdims=True),
                         b.add1("_rminus_scalar", a, scalar=1.0)))


def _saturation(b, x, a):
    return b.add1("broadcast_add", b.add1("broadcast_mul", x, a),
                  b.add1("broadcast_mul", _gray(b, x), b.add1("_rminus_scalar", a, scalar=1.0)))


def _hue(b, x, a):
    """The hue (HLS, of the pixels / 255) shifted by a turns (the internal _image_adjust_hue)."""
    return b.add1("_image_adjust_hue", x, b.add1("Reshape", a, shape=(1,)))


@jitable
def _hls_channel(m1, m2, hue):
    hue = hue % 1.0
    if hue < 1.0 / 6.0:
        return m1 + (m2 - m1) * hue * 6.0
    if hue < 0.5:
        return m2
    if hue < 2.0 / 3.0:
        return m1 + (m2 - m1) * (2.0 / 3.0 - hue) * 6.0
    return m1


def hue_shift_pixel(x, out, q, shift):
    """Pixel ``q`` of the (pixels, 3) ``x`` into ``out`` with its HLS hue shifted by ``shift``
    turns (RGB scaled to [0, 1] by 255 for the conversion)."""
    r = x[q, 0] / 255.0
    g = x[q, 1] / 255.0
    bl = x[q, 2] / 255.0
    hi = max(r, g, bl)
    lo = min(r, g, bl)
    light = (hi + lo) * 0.5
    if hi == lo:
        out[q, 0] = x[q, 0]
        out[q, 1] = x[q, 1]
        out[q, 2] = x[q, 2]
        return
    span = hi - lo
    sat = span / (hi + lo) if light <= 0.5 else span / (2.0 - hi - lo)
    rc = (hi - r) / span
    gc = (hi - g) / span
    bc = (hi - bl) / span
    if r == hi:
        hue = bc - gc
    elif g == hi:
        hue = 2.0 + rc - bc
    else:
        hue = 4.0 + gc - rc
    hue = (hue / 6.0) % 1.0 + shift
    m2 = light * (1.0 + sat) if light <= 0.5 else light + sat - light * sat
    m1 = 2.0 * light - m2
    out[q, 0] = _hls_channel(m1, m2, hue + 1.0 / 3.0) * 255.0
    out[q, 1] = _hls_channel(m1, m2, hue) * 255.0
    out[q, 2] = _hls_channel(m1, m2, hue - 1.0 / 3.0) * 255.0


def _adjust_hue_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None, (1,)], [None], []
    if len(data) != 3 or data[-1] != 3:
        raise RuleError(f"data must be an RGB image (H, W, 3), got {shape_str(data)}")
    return [data, (1,)], [data], []


register(OpDef(
    name="_image_adjust_hue", arguments=("data", "alpha"), shape=_adjust_hue_shape,
    dtype=lambda p, ins, aux: ([ins[0], ins[0]], [ins[0]], []), kind=Kind.OPAQUE,
    doc="Internal: an RGB image with its HLS hue shifted by alpha turns (random_hue, color_jitter).",
    extra={"family": "image", "no_grad": True, "rewrite_of": "_image_random_hue"},
))


_FACTOR_PARAMS = (Param("min_factor", "float", doc="smallest factor"),
                  Param("max_factor", "float", doc="largest factor"))
for _name, _fn, _what in (("brightness", _brightness, "x * a"),
                          ("contrast", _contrast, "blended with its mean gray: x * a + gray * (1 - a)"),
                          ("saturation", _saturation, "blended with each pixel's gray: x * a + g * (1 - a)"),
                          ("hue", _hue, "with each pixel's HLS hue shifted by a turns")):
    _register(f"random_{_name}",
              lambda b, ins, p, f=_fn: [f(b, ins[0], _factor(b, ins[0], p["min_factor"], p["max_factor"]))],
              _single, f"The image {_what}, a uniform in [min_factor, max_factor] (one draw per call).",
              params=_FACTOR_PARAMS, dtype=_float_image, differentiable=False)


def _jitter(b, ins, p):
    x = ins[0]
    for name, fn in (("brightness", _brightness), ("contrast", _contrast), ("saturation", _saturation)):
        v = p[name]
        if v > 0:
            x = fn(b, x, _factor(b, x, max(0.0, 1.0 - v), 1.0 + v))
    if p["hue"] > 0:
        x = _hue(b, x, _factor(b, x, -p["hue"], p["hue"]))
    return [x if x != ins[0] else b.add1("_copy", x)]


_register("random_color_jitter", _jitter, _single,
          "Brightness, contrast, saturation and hue jitter in that order (factors in [1 - v, 1 + v], hue in "
          "[-v, v]; v = 0 skips one).",
          params=tuple(Param(n, "float", doc=f"how much {n} varies") for n in
                       ("brightness", "contrast", "saturation", "hue")), dtype=_float_image,
          differentiable=False)


def _lighting(b, x: int, alphas: list[int]) -> int:
    """x + eigvec @ (alpha * eigval) per channel; ``alphas`` are 3 arrays (1,)."""
    deltas = []
    for i in range(3):
        acc = None
        for j in range(3):
            term = b.add1("_mul_scalar", alphas[j], scalar=float(EIGVEC[i, j] * EIGVAL[j]))
            acc = term if acc is None else b.add1("elemwise_add", acc, term)
        deltas.append(acc)
    delta = b.add1("Reshape", b.add1("Concat", *deltas, dim=0, num_args=3), shape=(1, 1, 3))
    return b.add1("broadcast_add", x, delta)


def _adjust_lighting(b, ins, p):
    if len(p["alpha"]) != 3:
        raise ParamError(f"_image_adjust_lighting: alpha takes 3 values (R, G, B), got {p['alpha']}")
    x = ins[0]
    alphas = [b.add1("_full", shape=(1,), value=float(a), dtype=_dt(b, x)) for a in p["alpha"]]
    return [_lighting(b, x, alphas)]


def _random_lighting(b, ins, p):
    x = ins[0]
    alpha = b.add1("_random_normal", loc=0.0, scale=p["alpha_std"], shape=(3,), dtype=_dt(b, x))
    return [_lighting(b, x, b.add("SliceChannel", [alpha], num_outputs=3, axis=0))]


_register("adjust_lighting", _adjust_lighting, _single,
          "The image plus AlexNet's PCA lighting noise for the given alphas (R, G, B).",
          params=(Param("alpha", "floats", doc="the lighting alphas"),), dtype=_float_image)
_register("random_lighting", _random_lighting, _single,
          "The image plus AlexNet's PCA lighting noise, alphas ~ N(0, alpha_std).",
          params=(Param("alpha_std", "float", 0.05, doc="standard deviation of the alphas"),),
          dtype=_float_image, differentiable=False)
