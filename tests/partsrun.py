"""Calling a kernel in parts from a test: all its parts at the same time, as the host runs them."""
from __future__ import annotations

from collections.abc import Callable

from symjit.parts import PartsCall, whole_call

PARTS = 3
"""Parts a test runs a kernel in: more than our cores, so parts also wait for a core at barriers."""


def in_parts(fn: Callable, *args, parts: int = PARTS) -> None:
    """``fn`` (a kernel in parts, ``*_parts``) on ``args`` in ``parts`` parts at the same time."""
    PartsCall(fn, parts=parts)(*args, *whole_call())


def whole(fn: Callable, *args) -> None:
    """``fn`` on ``args`` as one part (the whole work in the calling thread)."""
    fn(*args, *whole_call())
