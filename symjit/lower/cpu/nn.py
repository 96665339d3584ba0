"""CPU lowerings of the neural-network layers (records in :mod:`symjit.ops.nn`).

Convolution and Pooling run the 2-D NCHW kernels of :mod:`symjit.kernels.cpu.conv` and
:mod:`symjit.kernels.cpu.pool`; a 1-D (NCW) layer is the same kernel on an ``(N, C, 1, W)`` view
with a ``(1, k)`` window. Geometry is emitted as ``np.int64`` constants so that one compiled
kernel serves every geometry (plain literals would make Numba specialise on their values).
Convolution runs im2col + one GEMM per pass and group; its forward kernel leaves the result
filter-major and the epilogue loop does the NCHW transpose together with bias and activation. The
forward's im2col + GEMM runs as a kernel of its own before the epilogue's (``KernelWriter.prior``),
one kernel for every layer of its kind, so numba compiles the building block once per net instead
of once per distinct epilogue. A depthwise forward (one group per channel, MobileNet's) or a 1x1
one over big images runs a direct kernel instead; a wide enough 3x3 layer at stride 1 runs
Winograd's F(2x2, 3x3) (:mod:`symjit.kernels.cpu.conv_winograd`) for its forward and gradients,
each direction chosen by :func:`~symjit.kernels.cpu.conv_shapes.prefers_winograd`.
FullyConnected is one GEMM into its output, with ``acc + bias`` as the epilogue: BLAS's
(``gemm_nt``), or in a net with convolutions (``threaded.place_gemms``) the register tile on
numba's threads (:mod:`symjit.kernels.cpu.gemm_tiles`) where its shape allows.
"""
from __future__ import annotations

import math

from ...ops.deconv import conv_view
from ...ops.nn import dropout_active
from ...ops.rules import window_params
from ..emit import call, elem_index, view2d
from ..rules import rule
from . import CPUTarget
from .threaded import threaded


def _as4d(k, arr: str) -> str:
    """``arr`` itself when 4-D, else an ``(N, C, 1, W)`` view of a 3-D array."""
    if len(k.info[arr].shape) == 4:
        return arr
    name = k.tmp("v")
    k.line(f"{name} = {arr}.reshape({arr}.shape[0], {arr}.shape[1], 1, {arr}.shape[2])")
    return name


def _geometry(p: dict, nd: int) -> tuple[tuple, tuple, tuple]:
    """The 2-D ``(stride, pad, dilate)`` tuples; a 1-D window gets a leading unit axis."""
    stride, dilate, pad = window_params(p, nd)
    if nd == 1:
        stride, dilate, pad = (1, *stride), (1, *dilate), (0, *pad)
    return tuple(stride), tuple(pad), tuple(dilate)


# ---------------------------------------------------------------------------------------------
# Convolution


def _emit_conv(k, kind: str, args: list[str], p: dict) -> str:
    """Emit one convolution kernel call on its planned scratch (``k.workspace[0]``, sized by
    :func:`_conv_workspace`); return the name of its result (forward).

    ``args`` are the kernel's 4-D array arguments. im2col's kernels are serial; the tile kernels
    (``*_vec``, ``*_small``) and Winograd's run in parts on the host's threads (``*_parts``, whose
    calls the kernel writer gives the part arguments: :mod:`symjit.parts`).
    """
    mod, name = "symjit.kernels.cpu.conv", f"conv2d_{kind}"
    if kind.endswith("_winograd"):   # transforms in parts
        mod, name = "symjit.kernels.cpu.conv_winograd", f"conv2d_{kind}_parts"
    elif kind.endswith(("_vec", "_vec_flat")):   # tiles in parts
        mod, name = "symjit.kernels.cpu.conv_vec", f"conv2d_{kind}_parts"
    elif kind.endswith("_small"):   # images in parts
        mod, name = "symjit.kernels.cpu.conv_small", f"conv2d_{kind}_parts"
    stride, pad, dilate = (k.const(s) for s in _geometry(p, len(p["kernel"])))
    groups = k.const(p["num_group"])
    res = k.tmp("y")   # only the forward_cnhw kernel returns an array
    k.call(mod, name, [*args, k.workspace[0], stride, pad, dilate, groups],
           res if kind == "forward_cnhw" else None)
    return res


def _shape4d(shape: tuple) -> tuple:
    return tuple(shape) if len(shape) == 4 else (shape[0], shape[1], 1, shape[2])


def _whole_batch(x_shape: tuple, w_shape: tuple, out_shape: tuple, groups: int) -> bool:
    """Whether a forward convolution's im2col holds the whole batch in one block (the block size
    is chosen per shape: :func:`~symjit.kernels.cpu.conv.conv2d_block_elems`)."""
    from symjit.kernels.cpu.conv_shapes import conv2d_block_elems, conv2d_images_per_block
    shapes = [_shape4d(s) for s in (x_shape, w_shape, out_shape)]
    limit = conv2d_block_elems(shapes[1], groups)
    return conv2d_images_per_block(*shapes, limit) == shapes[0][0]


def _winograd(x_shape: tuple, w_shape: tuple, out_shape: tuple, p: dict, gradient: bool = False) -> bool:
    """Whether the convolution's forward (or its gradients) runs Winograd's F(2x2, 3x3)
    (:func:`~symjit.kernels.cpu.conv_shapes.prefers_winograd`)."""
    from symjit.kernels.cpu.conv_shapes import prefers_winograd
    stride, pad, dilate = _geometry(p, len(p["kernel"]))
    return prefers_winograd(*(_shape4d(s) for s in (x_shape, w_shape, out_shape)), stride, pad, dilate,
                            p["num_group"], gradient)


def _vec(x_shape: tuple, w_shape: tuple, out_shape: tuple, p: dict, dtype,
         gradient: bool | str = False) -> bool:
    """Whether the convolution's forward (or a gradient) runs the tile kernel of
    :mod:`symjit.kernels.cpu.conv_vec` (:func:`~symjit.kernels.cpu.conv_shapes.prefers_vec`)."""
    from symjit.kernels.cpu.conv_shapes import prefers_vec
    stride, pad, dilate = _geometry(p, len(p["kernel"]))
    return prefers_vec(*(_shape4d(s) for s in (x_shape, w_shape, out_shape)), stride, pad, dilate,
                       p["num_group"], dtype, gradient)


def _small_rows(x_shape: tuple, w_shape: tuple, out_shape: tuple, p: dict, dtype) -> bool:
    """Whether a strided forward with big images' columns runs in chunks of output rows
    (:func:`~symjit.kernels.cpu.conv_small_rules.prefers_small_rows`)."""
    from symjit.kernels.cpu.conv_small_rules import prefers_small_rows
    return _by_stride(prefers_small_rows, x_shape, w_shape, out_shape, p, dtype)


def _small_wide(x_shape: tuple, w_shape: tuple, out_shape: tuple, p: dict, dtype) -> bool:
    """Whether a stride-1 forward that neither the tiles nor Winograd took runs the small-plane
    kernel (:func:`~symjit.kernels.cpu.conv_small_rules.prefers_small_wide`)."""
    from symjit.kernels.cpu.conv_small_rules import prefers_small_wide
    return _by_stride(prefers_small_wide, x_shape, w_shape, out_shape, p, dtype)


def _by_stride(prefers, x_shape: tuple, w_shape: tuple, out_shape: tuple, p: dict, dtype) -> bool:
    """A ``conv_shapes`` rule of the 4-D shapes, the stride, the groups and the dtype."""
    stride = _geometry(p, len(p["kernel"]))[0]
    return prefers(*(_shape4d(s) for s in (x_shape, w_shape, out_shape)), stride, p["num_group"], dtype)


def _vec_flat(k, x_shape: tuple, w_shape: tuple, out_shape: tuple, p: dict) -> tuple | None:
    """Where a tile forward's result lies in its scratch when the whole batch is one block
    (``conv_vec.conv2d_forward_vec_flat_parts``): ``(start, positions per filter, padded rows
    per image, padded row length)``; None when the planned scratch takes the batch in several
    blocks (the kernel then writes the output NCHW itself)."""
    from symjit.kernels.cpu.conv_shapes import vec_images_per_block, vec_layout, vec_packed_scratch
    n, c, h, wd = x_shape
    f, _, kh, kw = w_shape
    ph, pw = _geometry(p, len(p["kernel"]))[1]
    length = k.info[k.workspace[0]].shape[1] - vec_packed_scratch(c, f, kh * kw)   # (at its end)
    if vec_images_per_block(length, n, c, f, h, wd, kh, kw, ph, pw, 1, 1) < n:
        return None
    cs, os, _ = vec_layout(n, c, f, h, wd, kh, kw, ph, pw, 1, 1)
    return c * cs, os, h + ph, wd + pw


def _small(x_shape: tuple, w_shape: tuple, out_shape: tuple, p: dict, dtype,
           gradient: bool | str = False) -> bool:
    """Whether the convolution's forward (or a gradient) runs the small-plane kernels of
    :mod:`symjit.kernels.cpu.conv_small` (:func:`~symjit.kernels.cpu.conv_small_rules.prefers_small`)."""
    from symjit.kernels.cpu.conv_small_rules import prefers_small
    stride = _geometry(p, len(p["kernel"]))[0]
    return prefers_small(*(_shape4d(s) for s in (x_shape, w_shape, out_shape)), stride, p["num_group"],
                         dtype, gradient)


def _forward_kind(x_shape: tuple, w_shape: tuple, out_shape: tuple, p: dict, dtype) -> str:
    """How a convolution's forward runs, decided once per shape for both its workspace rule and its
    lowering: ``'depthwise'`` or ``'1x1'`` (a direct kernel of
    :mod:`symjit.kernels.cpu.conv_direct`, no scratch), ``'pointwise'`` (float32 1x1 at stride 1,
    register tiles of :mod:`symjit.kernels.cpu.conv_pointwise` on numba's threads, no scratch),
    ``'forward_small'`` (float32 over small planes or strided, per-image im2col and register tiles
    of :mod:`symjit.kernels.cpu.conv_small`, written NCHW), ``'forward_vec'`` (float32 at stride 1
    over big planes, SIMD tiles of :mod:`symjit.kernels.cpu.conv_vec`, written NCHW),
    ``'forward_winograd'`` (3x3 at stride 1 by :mod:`symjit.kernels.cpu.conv_winograd`, written
    NCHW), ``'forward_cnhw'`` (im2col + GEMM of the whole batch in one block, the result left
    filter-major) or ``'forward'`` (blocks of images, written NCHW)."""
    from symjit.kernels.cpu.conv_shapes import is_depthwise, is_pointwise
    from symjit.kernels.cpu.conv_small_rules import prefers_pointwise_tiles
    x4, w4 = _shape4d(x_shape), _shape4d(w_shape)
    if is_depthwise(x4, w4, p["num_group"]):
        return "depthwise"
    stride, pad, dilate = _geometry(p, len(p["kernel"]))
    if prefers_pointwise_tiles(x4, w4, stride, pad, dilate, p["num_group"], dtype):
        return "pointwise"
    if is_pointwise(x4, w4, stride, pad):
        return "1x1"
    if _small_rows(x_shape, w_shape, out_shape, p, dtype):
        return "forward_rows_small"
    if _small(x_shape, w_shape, out_shape, p, dtype):
        return "forward_small"
    if _vec(x_shape, w_shape, out_shape, p, dtype):
        return "forward_vec"
    if _winograd(x_shape, w_shape, out_shape, p):
        return "forward_winograd"
    if _small_wide(x_shape, w_shape, out_shape, p, dtype):
        return "forward_small"
    return "forward_cnhw" if _whole_batch(x_shape, w_shape, out_shape, p["num_group"]) else "forward"


def _gradient_kind(kind: str, x_shape: tuple, w_shape: tuple, dout_shape: tuple, p: dict, dtype) -> str:
    """A gradient's kernel: ``kind`` (``'backward_data'`` or ``'backward_weight'``, im2col's), or
    its small-plane, tile or Winograd twin where that measured faster."""
    if _small(x_shape, w_shape, dout_shape, p, dtype, "weight" if kind == "backward_weight" else True):
        return f"{kind}_small"
    if kind == "backward_weight" and _small_rows(x_shape, w_shape, dout_shape, p, dtype):
        return "backward_weight_rows_small"
    if _vec(x_shape, w_shape, dout_shape, p, dtype, True if kind == "backward_data" else "weight"):
        return f"{kind}_vec"
    return f"{kind}_winograd" if _winograd(x_shape, w_shape, dout_shape, p, True) else kind


# Where a gradient node keeps its data-like, weight-like and output-gradient arrays (see
# _conv_workspace): _backward_Convolution_data (ograd, data, weight) -> ddata,
# _backward_Convolution_weight (ograd, data, weight) -> dweight.
_GRADIENT_ARRAYS = {"backward_data": ((1, 0), (0, 2), (0, 0)), "backward_weight": ((0, 1), (1, 0), (0, 0))}


def _gradient_workspace(kind: str):
    """The workspace rule of a gradient node, for the kernel :func:`_gradient_kind` picks."""
    def workspace(node, ins, outs):
        x, w, dout = ([(ins, outs)[side][i] for side, i in _GRADIENT_ARRAYS[kind]])
        picked = _gradient_kind(kind, x.shape, w.shape, dout.shape, node.params, x.dtype)
        return _conv_workspace(picked, *_GRADIENT_ARRAYS[kind])(node, ins, outs)
    return workspace


def _conv_forward_workspace(node, ins, outs):
    """The forward's scratch (:func:`_forward_kind`): none for a direct kernel, else the im2col
    block of :func:`~symjit.kernels.cpu.conv.conv2d_forward` or ``conv2d_forward_cnhw``, or the
    Winograd transforms' (``conv_shapes.winograd_length``)."""
    kind = _forward_kind(ins[0].shape, ins[1].shape, outs[0].shape, node.params, ins[0].dtype)
    if kind in ("depthwise", "1x1", "pointwise"):
        return []
    return _conv_workspace(kind, (0, 0), (0, 1), (1, 0))(node, ins, outs)


def _conv_workspace(kind: str, data: tuple[int, int], weight: tuple[int, int], out: tuple[int, int]):
    """The workspace rule of a convolution kernel: one ``cols`` row whose length is
    :func:`~symjit.kernels.cpu.conv.conv2d_cols_shape` of the 4-D shapes (whole-batch im2col while
    it fits in :data:`~symjit.kernels.cpu.conv.CONV_SCRATCH_MAX` elements, else blocks of images).
    ``data``/``weight``/``out`` name where the data-like, weight-like and output-like arrays are:
    ``(0, i)`` the node's input ``i``, ``(1, i)`` its output ``i``."""
    def workspace(node, ins, outs):
        from symjit.kernels.cpu.conv_shapes import conv2d_block_elems, conv2d_cols_shape
        pick = [(ins, outs)[side][i] for side, i in (data, weight, out)]
        shapes = [_shape4d(v.shape) for v in pick]
        groups = node.params["num_group"]
        limit = conv2d_block_elems(shapes[1], groups, kind, shapes[0], shapes[2])
        return [(conv2d_cols_shape(kind, *shapes, groups, limit), pick[0].dtype)]
    return workspace


def _prior_conv(k, kind: str, args: list[str], p: dict) -> str:
    """A forward convolution's im2col + GEMM as a kernel of its own, run before the group's kernel
    (``KernelWriter.prior``): every layer of one kind shares that kernel, so it is compiled once
    per net, where inside each fused epilogue's kernel numba linked and re-optimised it anew
    (1.5-2 s per distinct conv + epilogue kernel). The group's kernel then reads the result: the
    output written NCHW (``'forward'``), or the filter-major ``y`` (``'forward_cnhw'``), which that
    kernel always leaves at the start of its scratch row; the returned name is that view. That
    kernel is only the building block's call with its own arguments (``KernelWriter.direct``), so
    the program calls the building block itself: no kernel is compiled for it at all. A 1-D
    convolution (its arrays reshaped inside the kernel) keeps the call in the group's kernel."""
    ws = k.workspace[0]

    def emit(pk) -> None:
        pk.workspace = [ws]
        _emit_conv(pk, kind, args, p)
    if not _as_prior(k, args, emit, also=[ws]):
        return _emit_conv(k, kind, args, p)
    y = k.tmp("y")
    if kind == "forward_cnhw":
        out = args[2]
        dims = [f"{out}.shape[{d}]" for d in (1, 0, 2, 3)]
        k.line(f"{y} = {ws}[0, :{' * '.join(dims)}].reshape({', '.join(dims)})")
    return y


def _prior_direct(k, name: str, arrays: list[str], consts: list,
                  module: str = "symjit.kernels.cpu.conv_direct") -> None:
    """A direct convolution of :mod:`symjit.kernels.cpu.conv_direct` (or of another ``module``'s
    kernel that needs no scratch; it writes the output NCHW), run as a kernel of its own before
    the group's (``KernelWriter.prior``), which is that building block itself
    (``KernelWriter.direct``): none is compiled for it, and no epilogue kernel links it. A 1-D
    convolution (its arrays reshaped inside the kernel) keeps the call in the group's kernel."""
    def emit(pk) -> None:
        pk.call(module, name, [*arrays, *(pk.const(c) for c in consts)])
    if not _as_prior(k, arrays, emit):
        emit(k)


def _as_prior(k, arrays: list[str], emit, also: tuple | list = ()) -> bool:
    """Queue ``emit`` as a kernel of its own over ``arrays`` and ``also`` (its workspace), run
    before the group's (``KernelWriter.prior``), and say True; or say False when one of ``arrays``
    is not a program array but a view the group's kernel reshapes (a 1-D convolution's)."""
    if not all(a in k.info for a in arrays):
        return False
    k.prior.append(([*arrays, *also], emit))
    return True


def conv_lower(k, node, ins, outs):
    """Convolution. A depthwise one (one group per input channel) or a 1x1 one at stride 1 over
    big enough images runs a direct kernel of :mod:`symjit.kernels.cpu.conv_direct`, which writes
    the output NCHW; the epilogue reads it back in place. Otherwise, when the whole batch fits in
    one im2col block, the kernel leaves ``y`` filter-major ``(F, N, OH, OW)`` and the element
    expression reads it transposed and adds
    ``bias[f]``, so the NCHW copy, the bias and any fused elementwise consumers run in the one
    epilogue loop over the output (channel axis 1). Otherwise the kernel writes the output NCHW
    block by block (a bounded scratch, no whole-batch filter-major copy) and the epilogue reads it
    back in place."""
    x, w, out = _as4d(k, ins[0]), _as4d(k, ins[1]), _as4d(k, outs[0])
    bias = None if node.params["no_bias"] else ins[2]
    shapes = [k.info[v].shape for v in (ins[0], ins[1], outs[0])]
    groups = node.params["num_group"]
    kind = _forward_kind(*shapes, node.params, k.info[ins[0]].dtype)
    if kind == "depthwise":   # in parts over big outputs (MobileNet's)
        _prior_direct(k, "conv2d_forward_depthwise" + threaded(k, outs[0]), [x, w, out],
                      _geometry(node.params, len(node.params["kernel"])))
    elif kind == "1x1":
        _prior_direct(k, "conv2d_forward_1x1", [x, w, out], [groups])
    elif kind == "pointwise":   # in parts
        _prior_direct(k, "conv2d_forward_pointwise_parts", [x, w, out], [groups],
                      "symjit.kernels.cpu.conv_pointwise")
    elif kind == "forward_vec" and len(shapes[2]) == 4 and _vec_flat(k, *shapes, node.params):
        base, os, rows, wr = (k.const(v) for v in _vec_flat(k, *shapes, node.params))
        _prior_conv(k, "forward_vec_flat", [x, w, out], node.params)
        ws = k.workspace[0]

        def flat(idx: list[str]) -> str:
            val = f"{ws}[0, {base} + {idx[1]} * {os} + ({idx[0]} * {rows} + {idx[2]}) * {wr} + {idx[3]}]"
            return val if bias is None else f"{val} + {bias}[{idx[1]}]"
        return flat
    elif kind in ("forward", "forward_winograd", "forward_vec", "forward_small", "forward_rows_small"):
        _prior_conv(k, kind, [x, w, out], node.params)
    else:
        y = _prior_conv(k, "forward_cnhw", [x, w, out], node.params)

        def expr(idx: list[str]) -> str:
            rest = f"{idx[2]}, {idx[3]}" if len(idx) == 4 else f"0, {idx[2]}"   # 1-D: (N, C, 1, W)
            val = f"{y}[{idx[1]}, {idx[0]}, {rest}]"
            return val if bias is None else f"{val} + {bias}[{idx[1]}]"
        return expr

    def in_place(idx: list[str]) -> str:
        val = f"{outs[0]}[{', '.join(idx)}]"
        return val if bias is None else f"{val} + {bias}[{idx[1]}]"
    return in_place


def conv_data_lower(k, node, ins, outs):
    """``_backward_Convolution_data(ograd, data, weight) -> ddata``."""
    dout, w, dx = _as4d(k, ins[0]), _as4d(k, ins[2]), _as4d(k, outs[0])
    kind = _gradient_kind("backward_data", *(k.info[v].shape for v in (outs[0], ins[2], ins[0])),
                          node.params, k.info[outs[0]].dtype)
    _emit_conv(k, kind, [dout, w, dx], node.params)


def deconv_lower(k, node, ins, outs):
    """``Deconvolution(data, weight[, bias])``: the data gradient of the convolution it is the
    adjoint of (:func:`symjit.ops.deconv.conv_view`), then ``+ bias[c]`` in place."""
    x, w, y = _as4d(k, ins[0]), _as4d(k, ins[1]), _as4d(k, outs[0])
    _emit_conv(k, "backward_data", [x, w, y], conv_view(node, k.info[ins[0]].shape).params)
    if not node.params["no_bias"]:
        idx = [k.tmp("i") for _ in range(4)]
        for d, i in enumerate(idx):
            k.line(f"for {i} in range({y}.shape[{d}]):")
            k.indent += 1
        k.line(f"{y}[{', '.join(idx)}] += {ins[2]}[{idx[1]}]")
        k.indent -= 4


def conv_weight_lower(k, node, ins, outs):
    """``_backward_Convolution_weight(ograd, data, weight) -> dweight``."""
    dout, x, dw = _as4d(k, ins[0]), _as4d(k, ins[1]), _as4d(k, outs[0])
    kind = _gradient_kind("backward_weight", *(k.info[v].shape for v in (ins[1], outs[0], ins[0])),
                          node.params, k.info[ins[1]].dtype)
    _emit_conv(k, kind, [dout, x, dw], node.params)


def conv_bias_lower(k, node, ins, outs):
    """``_backward_Convolution_bias(ograd) -> dbias``: the sum over every axis but 1."""
    call(k, "conv_bias", "conv_bias_grad" + threaded(k, ins[0]), _as4d(k, ins[0]), outs[0])


# ---------------------------------------------------------------------------------------------
# Pooling


def _pool_geometry(k, p: dict, x4: str) -> tuple[str, str, str]:
    if p["global_pool"]:
        return (f"({x4}.shape[2], {x4}.shape[3])", k.const((1, 1)), k.const((0, 0)))
    kern = p["kernel"]
    stride, _, pad = window_params(p, len(kern))
    if len(kern) == 1:
        kern, stride, pad = (1, *kern), (1, *stride), (0, *pad)
    return k.const(kern), k.const(stride), k.const(pad)


def _include_pad(p: dict) -> str:
    cip = p["count_include_pad"]
    return f"np.bool_({cip is None or bool(cip)})"


def _flat_loop(k, arrays: list[str], body: str) -> None:
    """``for i in range(size): body`` over flat views of same-size ``arrays`` (``{0}``... in body)."""
    flats = [k.tmp("f") for _ in arrays]
    for f, a in zip(flats, arrays):
        k.line(f"{f} = {a}.reshape(-1)")
    i = k.tmp("i")
    k.line(f"for {i} in range({flats[0]}.size):")
    k.line("    " + body.format(*[f"{f}[{i}]" for f in flats]))


def _lp_forward(k, p: dict, x: str, out: str, geo: tuple[str, str, str]) -> None:
    """Lp pooling: ``root_p(sum of x**p)`` with a sign-preserving root (odd p; as cbrt for p=3);
    ``x**p`` goes to the workspace."""
    pv = p["p_value"]
    xp = k.tmp("xp")
    k.line(f"{xp} = {k.workspace[0]}.reshape({x}.shape)")
    _flat_loop(k, [xp, x], f"{{0}} = {{1}} ** np.int64({pv})")
    call(k, "pool", "sum_pool2d_forward", xp, out, *geo)
    if pv != 1:
        _flat_loop(k, [out], f"{{0}} = math.copysign(abs({{0}}) ** (1.0 / {pv}), {{0}})")


def _lp_backward(k, p: dict, arrays: tuple[str, str, str, str], geo: tuple[str, str, str]) -> None:
    """``dx = sum_pool_backward(dout * |y|**(1-p)) * x**(p-1)`` (0 where y == 0 and p > 1); the
    scaled head gradient goes to the workspace."""
    dout, x, y, dx = arrays
    pv = p["p_value"]
    if pv == 1:
        call(k, "pool", "sum_pool2d_backward", dout, dx, *geo)
        return
    t = k.tmp("t")
    k.line(f"{t} = {k.workspace[0]}.reshape({dout}.shape)")
    _flat_loop(k, [t, dout, y], f"{{0}} = 0.0 if {{2}} == 0 else {{1}} * abs({{2}}) ** np.int64({1 - pv})")
    call(k, "pool", "sum_pool2d_backward", t, dx, *geo)
    _flat_loop(k, [dx, x], f"{{0}} *= {{1}} ** np.int64({pv - 1})")


def pool_lower(k, node, ins, outs):
    """max/avg/sum/lp pooling on 4-D views (global pooling: the window is the whole input)."""
    p = node.params
    kind = p["pool_type"]
    x, out = _as4d(k, ins[0]), _as4d(k, outs[0])
    geo = _pool_geometry(k, p, x)
    if kind == "lp":
        _lp_forward(k, p, x, out, geo)
        return
    extra = [_include_pad(p)] if kind == "avg" else []
    name = f"{kind}_pool2d_forward" + (threaded(k, ins[0]) if kind in ("max", "avg") else "")
    call(k, "pool", name, x, out, *geo, *extra)


def pool_backward_lower(k, node, ins, outs):
    """``_backward_Pooling(ograd, data[, output]) -> ddata`` (max recomputes each window's
    argmax; lp also reads the forward output)."""
    p = node.params
    kind = p["pool_type"]
    dout, x, dx = _as4d(k, ins[0]), _as4d(k, ins[1]), _as4d(k, outs[0])
    geo = _pool_geometry(k, p, x)
    if kind == "max":
        call(k, "pool", "max_pool2d_backward" + threaded(k, ins[1]), x, dout, dx, *geo)
    elif kind == "avg":
        call(k, "pool", "avg_pool2d_backward" + threaded(k, ins[1]), dout, dx, *geo, _include_pad(p))
    elif kind == "sum":
        call(k, "pool", "sum_pool2d_backward", dout, dx, *geo)
    else:
        _lp_backward(k, p, (dout, x, _as4d(k, ins[2]), dx), geo)


# ---------------------------------------------------------------------------------------------
# Embedding


def embed_lower(k, node, ins, outs):
    """Row lookup on flat views: indices ``(M,)``, weight ``(V, D)``, out ``(M, D)``."""
    (data, w), out = ins, outs[0]
    idx, o2 = k.tmp("idx"), k.tmp("o")
    k.line(f"{idx} = {data}.reshape(-1)")
    k.line(f"{o2} = {out}.reshape(-1, {out}.shape[-1])")
    call(k, "embed", "embedding_forward", idx, w, o2)


def embed_backward_lower(k, node, ins, outs):
    """``_backward_Embedding(ograd, data) -> dweight``: zero, then scatter-add rows."""
    dout, data = ins
    idx, d2 = k.tmp("idx"), k.tmp("d")
    k.line(f"{idx} = {data}.reshape(-1)")
    k.line(f"{d2} = {dout}.reshape(-1, {dout}.shape[-1])")
    call(k, "embed", "embedding_backward", idx, d2, outs[0], "False")


# ---------------------------------------------------------------------------------------------
# Dropout


def dropout_lower(k, node, ins, outs):
    """Fill the mask (random in training or mode='always', ones otherwise); the epilogue
    multiplies (or copies) each element."""
    x, out, mask = ins[0], outs[0], outs[1]
    flat = k.tmp("m")
    if dropout_active(node):
        call(k, "random", "dropout_mask", mask, f"np.float64({float(node.params['p'])!r})", "np.int64(-1)")
    else:
        k.line(f"{flat} = {mask}.reshape(-1)")
        k.line(f"{flat}[:] = 1")
    mshape, oshape = k.info[mask].shape, k.info[out].shape

    def expr(idx: list[str]) -> str:
        if not dropout_active(node):
            return f"{x}[{elem_index(idx)}]"
        midx = ", ".join("0" if m == 1 and o != 1 else i for i, m, o in zip(idx, mshape, oshape))
        return f"{x}[{elem_index(idx)}] * {mask}[{midx}]"
    return expr


# ---------------------------------------------------------------------------------------------
# LeakyReLU




def _fc_dims(node, x_shape: tuple, w_shape: tuple) -> tuple[int, int, int]:
    """``(M, K, N)`` of a FullyConnected's GEMM ``x2 (M, K) @ w (N, K).T``."""
    m = x_shape[0] if node.params["flatten"] else math.prod(x_shape[:-1])
    return m, w_shape[1], w_shape[0]


def _fc_tiles(node, x_shape: tuple, w_shape: tuple, dtype) -> bool:
    """Whether a FullyConnected's GEMM runs as ``gemm_tiles``' kernel on numba's threads: marked
    to (``lower.cpu.threaded.place_gemms``) and of a shape it takes (``gemm_shapes``)."""
    from symjit.kernels.cpu.gemm_shapes import prefers_gemm_tiles
    return node.gemm == "threads" and prefers_gemm_tiles("nt", *_fc_dims(node, x_shape, w_shape), dtype)


def _fc_workspace(node, ins, outs):
    """The tile GEMM's scratch (``a.T`` and ``out.T``), or none for BLAS's."""
    from symjit.kernels.cpu.gemm_shapes import gemm_nt_scratch
    if not _fc_tiles(node, ins[0].shape, ins[1].shape, ins[0].dtype):
        return []
    return [((gemm_nt_scratch(*_fc_dims(node, ins[0].shape, ins[1].shape)),), ins[0].dtype)]


def fc_lower(k, node, ins, outs):
    """GEMM into the output (BLAS's, or the tiles on numba's threads in a convolution net), then
    (epilogue) ``acc + bias`` per element in the group's loop."""
    x, w, out = ins[0], ins[1], outs[0]
    flat = node.params["flatten"]

    def gemm(gk, name: str, *scratch: str) -> None:
        call(gk, "gemm_tiles" if scratch else "gemm", name, view2d(gk, x, "0" if flat else "-1"), w,
             view2d(gk, out, "0" if flat else "-1"), *scratch)
    if _fc_tiles(node, k.info[x].shape, k.info[w].shape, k.info[x].dtype):
        ws = k.workspace[0]   # the tiles run in parts: a kernel of their own before the epilogue's
        if not _as_prior(k, [x, w, out], lambda pk: gemm(pk, "gemm_nt_tiles_parts", ws), also=[ws]):
            gemm(k, "gemm_nt_tiles_parts", ws)
    else:
        gemm(k, "gemm_nt")
    if node.params["no_bias"]:
        return None
    bias = ins[2]
    return lambda idx: f"{out}[{elem_index(idx)}] + {bias}[{idx[-1]}]"


rule("FullyConnected", CPUTarget, fc_lower, epilogue=True, workspace=_fc_workspace)
rule("Convolution", CPUTarget, conv_lower, epilogue=True, workspace=_conv_forward_workspace)
rule("_backward_Convolution_data", CPUTarget, conv_data_lower, workspace=_gradient_workspace("backward_data"))
rule("Deconvolution", CPUTarget, deconv_lower,
     workspace=_conv_workspace("backward_data", (1, 0), (0, 1), (0, 0)))
rule("_backward_Convolution_weight", CPUTarget, conv_weight_lower,
     workspace=_gradient_workspace("backward_weight"))
rule("_backward_Convolution_bias", CPUTarget, conv_bias_lower)


def _like_input(slot: int, when):
    """A workspace rule: one buffer shaped like input ``slot`` when ``when(params)`` holds."""
    def workspace(node, ins, outs):
        return [(ins[slot].shape, ins[slot].dtype)] if when(node.params) else []
    return workspace


rule("Pooling", CPUTarget, pool_lower, workspace=_like_input(0, lambda p: p["pool_type"] == "lp"))
rule("_backward_Pooling", CPUTarget, pool_backward_lower,
     workspace=_like_input(0, lambda p: p["pool_type"] == "lp" and p["p_value"] != 1))
rule("Embedding", CPUTarget, embed_lower)
rule("_backward_Embedding", CPUTarget, embed_backward_lower)
# the epilogue loop reads x[i] before it writes out[i]
rule("Dropout", CPUTarget, dropout_lower, epilogue=True, inplace=((0, 0),))
