"""3-D ``Convolution`` as a sum of 2-D ones: the kernels have no 3-D loop nest, so a node whose
kernel has three entries expands (``OpDef.extra['expand_if']``, see :meth:`OpDef.expansion`) to

    out[:, :, z] = sum over t of conv2d(padded_data[:, :, z * stride_d + t * dilate_d], weight[:, :, t])

with every output depth ``z`` of a tap ``t`` in one 2-D convolution over ``N * out_depth`` images:
the depth slice (strided), a transpose and a reshape put the depth beside the batch. Height and
width keep their stride, dilation, padding and groups in the 2-D convolutions; the depth padding
is zeros concatenated on both sides. Gradients and lowerings are those of the ops it expands to.

>>> import numpy as np, symjit as mx
>>> y = mx.sym.Convolution(mx.sym.Variable('x'), num_filter=1, kernel=(2, 2, 2), no_bias=True, name='c')
>>> ex = y.simple_bind(mx.cpu(), x=(1, 1, 2, 3, 3))
>>> ex.arg_dict['c_weight'][:] = 1.0
>>> ex.forward(x=np.ones((1, 1, 2, 3, 3)))[0].asnumpy().ravel().tolist()
[8.0, 8.0, 8.0, 8.0]
"""
from __future__ import annotations

from .rules import window_out_len, window_params

__all__ = ["is_3d", "conv3d_expand"]


def is_3d(p: dict) -> bool:
    """Whether a Convolution's params ask for the 3-D expansion."""
    return len(p["kernel"]) == 3


def _depth_padded(b, data: int, pad: int) -> int:
    if not pad:
        return data
    n, c, _, h, w = b.g.values[data].shape
    zeros = b.add1("_zeros", shape=(n, c, pad, h, w), dtype=b.g.values[data].dtype.name)
    return b.add1("Concat", zeros, data, zeros, num_args=3, dim=2)


def conv3d_expand(b, ins: list[int], p: dict) -> list[int]:
    """The 2-D convolutions, sums, reshapes and transposes of one 3-D Convolution node."""
    data, weight = ins[0], ins[1]
    n, c, d, h, w = b.g.values[data].shape
    f, kd, kh, kw = p["num_filter"], *p["kernel"]
    stride, dilate, pad = window_params(p, 3)
    od = window_out_len(d, kd, stride[0], dilate[0], pad[0], False)
    x = _depth_padded(b, data, pad[0])
    conv2d = dict(kernel=(kh, kw), stride=stride[1:], dilate=dilate[1:], pad=pad[1:], num_filter=f,
                  num_group=p["num_group"], no_bias=True)
    taps = []
    for t in range(kd):
        start = t * dilate[0]
        stop = start + (od - 1) * stride[0] + 1
        part = b.add1("slice", x, begin=(None, None, start), end=(None, None, stop),
                      step=(None, None, stride[0]))
        images = b.add1("Reshape", b.add1("transpose", part, axes=(0, 2, 1, 3, 4)), shape=(n * od, c, h, w))
        tap = b.add1("Reshape", b.add1("slice_axis", weight, axis=2, begin=t, end=t + 1),
                     shape=(f, c // p["num_group"], kh, kw))
        taps.append(b.add1("Convolution", images, tap, **conv2d))
    total = taps[0] if kd == 1 else b.add1("add_n", *taps, num_args=kd)
    oh, ow = b.g.values[total].shape[2:]
    out = b.add1("transpose", b.add1("Reshape", total, shape=(n, od, f, oh, ow)), axes=(0, 2, 1, 3, 4))
    if not p["no_bias"]:
        out = b.add1("broadcast_add", out, b.add1("Reshape", ins[2], shape=(1, f, 1, 1, 1)))
    return [out]
