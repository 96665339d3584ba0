"""Small helpers the shape/dtype rules share."""
from __future__ import annotations

from ..base import shape_str
from .registry import RuleError, Shape

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
