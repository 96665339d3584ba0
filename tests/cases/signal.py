"""Cases for contrib fft, ifft and count_sketch (symjit/ops/signal.py) against numpy's FFT and a
direct scatter; gradients by finite differences (count_sketch's through data only)."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(103)


def _interleave(z):
    return np.stack([z.real, z.imag], axis=-1).reshape(z.shape[:-1] + (2 * z.shape[-1],))


def _sketch(data, h, s, out_dim):
    out = np.zeros((data.shape[0], out_dim))
    for i, (j, sign) in enumerate(zip(h[0].astype(int), s[0])):
        out[:, j] += sign * data[:, i]
    return out


CASES = [
    Case("_contrib_fft", lambda v: mx.sym.contrib.fft(v["x"]), {"x": R.normal(size=(3, 8))},
         lambda x: _interleave(np.fft.fft(x))),
    Case("_contrib_fft", lambda v: mx.sym.contrib.fft(v["x"]), {"x": R.normal(size=(2, 1, 2, 5))},
         lambda x: _interleave(np.fft.fft(x)), id="4d_odd"),
    Case("_contrib_ifft", lambda v: mx.sym.contrib.ifft(v["x"]), {"x": R.normal(size=(3, 12))},
         lambda x: np.fft.ifft(x[..., 0::2] + 1j * x[..., 1::2]).real * 6),
    Case("_contrib_count_sketch", lambda v: mx.sym.contrib.count_sketch(v["data"], v["h"], v["s"], out_dim=5),
         {"data": R.normal(size=(2, 6)), "h": np.array([[0.0, 3, 4, 3, 1, 0]]),
          "s": np.array([[1.0, -1, 1, 1, -1, 1]])},
         lambda data, h, s: _sketch(data, h, s, 5), no_grad=("h", "s")),
]
