"""Small helpers the shape/dtype rules share."""
from __future__ import annotations

from ..base import shape_str
from .registry import FLOAT_DTYPES, RuleError, Shape, either

__all__ = ["need_rank", "positive", "prod", "norm_axis", "shape_str"]


def prod(dims) -> int:
    """The product of the dims (1 for none)."""
    out = 1
    for d in dims:
        out *= int(d)
    return out


def need_rank(shape: Shape, arg: str, ranks: tuple[int, ...] | int, what: str = "") -> None:
    """Raise RuleError unless ``len(shape)`` is one of ``ranks`` (an int means 'at least')."""
    if isinstance(ranks, int):
        if len(shape) < ranks:
            raise RuleError(f"argument '{arg}' must have at least {ranks} dimensions{what}, "
                            f"got shape {shape_str(shape)}")
    elif len(shape) not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise RuleError(f"argument '{arg}' must have {want} dimensions{what}, got shape {shape_str(shape)}")


def positive(v) -> bool:
    return v > 0


def norm_axis(axis: int, ndim: int, arg: str = "axis") -> int:
    """Normalise a possibly negative axis; RuleError when out of range."""
    if not -ndim <= axis < ndim:
        raise RuleError(f"{arg}={axis} is out of range for {ndim} dimensions")
    return axis % ndim


# --- sliding windows (Convolution, Pooling) --------------------------------------------------
def window_params(p: dict, nd: int) -> tuple[Shape, Shape, Shape]:
    """``(stride, dilate, pad)`` of a windowed op with ``nd`` spatial dims, empty params filled
    with MXNet's defaults (stride 1, dilate 1, pad 0). Ops without ``dilate`` get ones.

    >>> window_params({'stride': (), 'pad': (1, 1)}, 2)
    ((1, 1), (1, 1), (1, 1))
    """
    stride = tuple(p.get("stride") or (1,) * nd)
    dilate = tuple(p.get("dilate") or (1,) * nd)
    pad = tuple(p.get("pad") or (0,) * nd)
    return stride, dilate, pad


def window_out_len(size: int, kernel: int, stride: int, dilate: int, pad: int, ceil: bool = False) -> int:
    """Output length of a sliding window over ``size`` (``ceil`` for Pooling's 'full' convention);
    RuleError when the dilated kernel does not fit the padded input.

    >>> window_out_len(28, 5, 1, 1, 0), window_out_len(5, 2, 2, 1, 0, ceil=True)
    (24, 3)
    """
    span = dilate * (kernel - 1) + 1
    room = size + 2 * pad - span
    if room < 0:
        dilated = f" (dilated to {span})" if dilate > 1 else ""
        raise RuleError(f"kernel {kernel}{dilated} is bigger than the padded input {size} + 2*{pad}")
    return (-(-room // stride) if ceil else room // stride) + 1


def need_float(dtype, arg: str) -> None:
    """RuleError unless ``dtype`` (a numpy dtype) is a floating-point dtype."""
    if dtype.kind != "f":
        raise RuleError(f"argument '{arg}' must have a floating-point dtype ({either(FLOAT_DTYPES)}), "
                        f"got {dtype.name}")


__all__ += ["window_params", "window_out_len", "need_float"]


# --- axis lists (reductions, transpose, flip, expand_dims, stack) ----------------------------
def norm_axes(axes, ndim: int, arg: str = "axis") -> tuple[int, ...]:
    """Normalise a list of possibly negative axes to sorted non-negative ones; RuleError when
    one is out of range or two name the same axis.

    >>> norm_axes((-1, 0), 3)
    (0, 2)
    """
    out = [norm_axis(int(a), ndim, arg) for a in axes]
    if len(set(out)) != len(out):
        raise RuleError(f"{arg}={tuple(axes)} names an axis twice (for {ndim} dimensions)")
    return tuple(sorted(out))


def norm_insert_axis(axis: int, ndim: int, arg: str = "axis") -> int:
    """Normalise the position of a new axis inserted into ``ndim`` dims (``[-ndim-1, ndim]``).

    >>> norm_insert_axis(-1, 2), norm_insert_axis(0, 2)
    (2, 0)
    """
    if not -ndim - 1 <= axis <= ndim:
        raise RuleError(f"{arg}={axis} is out of range [{-ndim - 1}, {ndim}] for inserting an axis "
                        f"into {ndim} dimensions")
    return axis % (ndim + 1)


__all__ += ["norm_axes", "norm_insert_axis"]


# --- broadcasting (broadcast_* binary ops) ----------------------------------------------------
def broadcast_shape(lhs: Shape, rhs: Shape) -> Shape:
    """The shape two operands broadcast to, MXNet 1.x style (as numpy: shapes aligned at their last
    axis, missing leading axes count as 1, and each axis pair must be equal or contain a 1);
    RuleError naming both shapes otherwise.

    >>> broadcast_shape((2, 1, 3), (4, 1)), broadcast_shape((3,), (2, 3))
    ((2, 4, 3), (2, 3))
    """
    nd = max(len(lhs), len(rhs))
    a = (1,) * (nd - len(lhs)) + tuple(lhs)
    b = (1,) * (nd - len(rhs)) + tuple(rhs)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise RuleError(f"operands could not be broadcast together with shapes lhs={shape_str(lhs)} "
                            f"and rhs={shape_str(rhs)}")
        out.append(y if x == 1 else x)
    return tuple(out)


__all__ += ["broadcast_shape"]
