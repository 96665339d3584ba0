"""Cases for the image operators (symjit/ops/image_ops.py): numpy references written here (bilinear
resampling with OpenCV's half-pixel geometry, colorsys's HLS for the hue), checked against MXNet
1.9.1's outputs where MXNet follows its documentation; random augmenters through degenerate factor
ranges (exact) or as "either outcome" checks; gradients of the differentiable ones by finite
differences."""
from __future__ import annotations

import colorsys

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(101)
GRAY = np.array([0.299, 0.587, 0.114])


def img(h=4, w=5, lo=0.0, hi=255.0):
    return R.uniform(lo, hi, (h, w, 3))


def _resize_ref(x, nh, nw):
    """Bilinear with half-pixel centres, coordinates clamped to the image (OpenCV's INTER_LINEAR)."""
    h, w = x.shape[:2]

    def axis(n_out, n_in):
        src = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, src - lo
    y0, y1, fy = axis(nh, h)
    x0, x1, fx = axis(nw, w)
    top = x[y0][:, x0] * (1 - fx)[None, :, None] + x[y0][:, x1] * fx[None, :, None]
    bottom = x[y1][:, x0] * (1 - fx)[None, :, None] + x[y1][:, x1] * fx[None, :, None]
    return top * (1 - fy)[:, None, None] + bottom * fy[:, None, None]


def _hue_ref(x, shift):
    out = np.empty_like(x)
    for i in np.ndindex(x.shape[:2]):
        hh, ll, ss = colorsys.rgb_to_hls(*(x[i] / 255.0))
        out[i] = np.array(colorsys.hls_to_rgb((hh + shift) % 1.0, ll, ss)) * 255.0
    return out


def _lighting_ref(x, alpha):
    eigval = np.array([55.46, 4.794, 1.148])
    eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
    return x + eigvec @ (np.asarray(alpha) * eigval)


def _either(flip):
    """0 when the op's output equals the input or its flip (a random flip's two outcomes)."""
    def build(v):
        out = flip[0](v["x"])
        same = mx.sym.sum(mx.sym.abs(out - v["x"]))
        flipped = mx.sym.sum(mx.sym.abs(out - flip[1](v["x"])))
        return mx.sym.minimum(same, flipped)
    return build


def _gray_mean(x):
    return (x * GRAY).sum(-1).mean()


_x = img()
CASES = [
    Case("_image_to_tensor", lambda v: mx.sym.image.to_tensor(v["x"]), {"x": img()},
         lambda x: (x.transpose(2, 0, 1) / 255.0).astype(np.float32), grad="none"),
    Case("_image_to_tensor", lambda v: mx.sym.image.to_tensor(v["x"]),
         {"x": R.integers(0, 256, (2, 3, 4, 3)).astype(np.uint8)},
         lambda x: (x.transpose(0, 3, 1, 2) / 255.0).astype(np.float32), grad="none", id="batch_uint8"),
    Case("_image_normalize",
         lambda v: mx.sym.image.normalize(v["x"], mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0)),
         {"x": R.uniform(0, 1, (3, 4, 2))},
         lambda x: (x - np.array([0.1, 0.2, 0.3])[:, None, None]) / np.array([0.5, 0.25, 2])[:, None, None]),
    Case("_image_normalize", lambda v: mx.sym.image.normalize(v["x"], mean=0.5, std=2.0),
         {"x": R.uniform(0, 1, (2, 3, 2, 2))}, lambda x: (x - 0.5) / 2.0, id="scalar_batch"),
    Case("_image_flip_left_right", lambda v: mx.sym.image.flip_left_right(v["x"]), {"x": img()},
         lambda x: x[:, ::-1].copy()),
    Case("_image_flip_top_bottom", lambda v: mx.sym.image.flip_top_bottom(v["x"]),
         {"x": R.uniform(0, 1, (2, 3, 4, 3))}, lambda x: x[:, ::-1].copy()),
    Case("_image_random_flip_left_right",
         _either((mx.sym.image.random_flip_left_right, mx.sym.image.flip_left_right)), {"x": img()},
         lambda x: np.zeros(1), grad="none"),
    Case("_image_random_flip_top_bottom",
         _either((mx.sym.image.random_flip_top_bottom, mx.sym.image.flip_top_bottom)), {"x": img()},
         lambda x: np.zeros(1), grad="none"),
    Case("_image_crop", lambda v: mx.sym.image.crop(v["x"], x=1, y=2, width=3, height=2), {"x": img()},
         lambda x: x[2:4, 1:4].copy()),
    Case("_image_resize", lambda v: mx.sym.image.resize(v["x"], size=(7, 3)), {"x": img()},
         lambda x: _resize_ref(x, 3, 7), grad="none"),
    Case("_image_resize", lambda v: mx.sym.image.resize(v["x"], size=3, keep_ratio=True), {"x": img(4, 6)},
         lambda x: _resize_ref(x, 3, 4), grad="none", id="keep_ratio"),
    Case("_image_resize", lambda v: mx.sym.image.resize(v["x"], size=(3, 5)),
         {"x": R.integers(0, 256, (2, 4, 4, 3)).astype(np.uint8)},
         lambda x: np.stack([np.clip(np.round(_resize_ref(i.astype(np.float64), 5, 3)), 0, 255) for i in x])
         .astype(np.uint8), grad="none", id="batch_uint8", atol=1.0),
    Case("_image_random_brightness", lambda v: mx.sym.image.random_brightness(v["x"], 0.6, 0.6),
         {"x": _x.copy()}, lambda x: x * 0.6, grad="none"),
    Case("_image_random_contrast", lambda v: mx.sym.image.random_contrast(v["x"], 1.3, 1.3), {"x": img()},
         lambda x: x * 1.3 + _gray_mean(x) * (1 - 1.3), grad="none"),
    Case("_image_random_saturation", lambda v: mx.sym.image.random_saturation(v["x"], 0.4, 0.4), {"x": img()},
         lambda x: x * 0.4 + (x * GRAY).sum(-1, keepdims=True) * 0.6, grad="none"),
    Case("_image_random_hue", lambda v: mx.sym.image.random_hue(v["x"], 0.2, 0.2), {"x": img()},
         lambda x: _hue_ref(x, 0.2), grad="none", rtol=1e-4, atol=1e-3),
    Case("_image_random_color_jitter", lambda v: mx.sym.image.random_color_jitter(v["x"], 0, 0, 0, 0),
         {"x": img()}, lambda x: x.copy(), grad="none"),
    Case("_image_adjust_lighting", lambda v: mx.sym.image.adjust_lighting(v["x"], alpha=(0.1, 0.2, 0.3)),
         {"x": img()}, lambda x: _lighting_ref(x, (0.1, 0.2, 0.3))),
    Case("_image_random_lighting", lambda v: mx.sym.image.random_lighting(v["x"], alpha_std=0.0),
         {"x": img()}, lambda x: x.copy(), grad="none"),
]
