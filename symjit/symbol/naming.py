"""Automatic names (``fullyconnected0``), ``mx.name.Prefix`` and ``mx.AttrScope``.

Both are explicit context managers over a thread-local stack. The one other naming state is
MXNet's count of control-flow subgraph names, ``AttrScope._subgraph_names`` (a class attribute
that MXNet's own code and tests read and reset): ``contrib.foreach``, ``while_loop`` and ``cond``
name their subgraphs through :func:`unique_subgraph_name`.
"""
from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Iterator

from ..base import ParamError

__all__ = ["NameManager", "Prefix", "AttrScope", "current_name_manager", "current_attrs",
           "unique_subgraph_name", "subgraph_scope",
           "HIDDEN_KEYS", "hidden_key", "normalize_attrs", "split_attr_kwargs", "listed_attrs"]

# Attributes MXNet stores as ``__key__`` whatever form they are set in (``lr_mult`` -> ``__lr_mult__``);
# ``Symbol.attr`` finds them under either name.
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")


def hidden_key(key: str) -> str:
    """The stored form of an attribute key.

    >>> hidden_key('lr_mult'), hidden_key('__lr_mult__'), hidden_key('group')
    ('__lr_mult__', '__lr_mult__', 'group')
    """
    return f"__{key}__" if key in HIDDEN_KEYS else key


def normalize_attrs(attrs: dict[str, str]) -> dict[str, str]:
    """``attrs`` with hidden keys in their stored ``__key__`` form."""
    return {hidden_key(k): v for k, v in attrs.items()}


# The hidden keys MXNet's attribute listings also report under their plain name.
_LISTED_PLAIN = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def listed_attrs(attrs: dict[str, str]) -> dict[str, str]:
    """``attrs`` as ``list_attr``/``attr_dict`` report them: each stored ``__lr_mult__`` (and the
    other hidden keys MXNet lists twice) also under its plain name.

    >>> listed_attrs({'__lr_mult__': '2', 'group': '1'})
    {'__lr_mult__': '2', 'group': '1', 'lr_mult': '2'}
    """
    out = dict(attrs)
    for key in _LISTED_PLAIN:
        if f"__{key}__" in attrs:
            out.setdefault(key, attrs[f"__{key}__"])
    return out


def split_attr_kwargs(where: str, kwargs: dict) -> tuple[dict, dict[str, str]]:
    """Split an operator call's keyword arguments into operator params and node attributes: a
    hidden key (``lr_mult=0``) becomes the attribute ``__lr_mult__``, a ``__key__`` (``__layout__``)
    stays an attribute under its name, as MXNet keeps them; values become strings. A key that only
    ends in a hidden key (``weight_lr_mult``) is an error, as in MXNet: set it on the variable.

    >>> split_attr_kwargs('FullyConnected', {'num_hidden': 4, 'lr_mult': 0, '__layout__': 'NC'})
    ({'num_hidden': 4}, {'__lr_mult__': '0', '__layout__': 'NC'})
    """
    params: dict = {}
    attrs: dict[str, str] = {}
    for k, v in kwargs.items():
        if k in HIDDEN_KEYS or (len(k) > 4 and k.startswith("__") and k.endswith("__")):
            attrs[hidden_key(k)] = str(v)
            continue
        for hk in HIDDEN_KEYS:
            if k.endswith("_" + hk):
                raise ParamError(f"{where}: setting variable attributes with {k!r} is not supported (nor in "
                                 f"MXNet); give the variable the attribute instead: "
                                 f"w = mx.sym.Variable(..., {hk}={v!r}), then {where}({k[:-len(hk) - 1]}=w)")
        params[k] = v
    return params, attrs

_local = threading.local()


class NameManager:
    """Gives each unnamed symbol ``hint + counter`` (``fullyconnected0``, ``fullyconnected1``...).

    >>> with NameManager() as nm:
    ...     nm.get(None, 'fullyconnected'), nm.get(None, 'fullyconnected'), nm.get('fc', 'x')
    ('fullyconnected0', 'fullyconnected1', 'fc')
    """

    def __init__(self) -> None:
        self._counter: dict[str, int] = {}

    def get(self, name: str | None, hint: str) -> str:
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self) -> NameManager:
        _stack("names").append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _stack("names").pop()


class Prefix(NameManager):
    """Prefixes every name, given or automatic: ``with mx.name.Prefix('mlp_'):``."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def get(self, name: str | None, hint: str) -> str:
        return self._prefix + super().get(name, hint)


class AttrScope:
    """Attributes attached to every symbol created inside: ``with mx.AttrScope(ctx_group='dev1'):``.

    ``_subgraph_names``: how many control-flow subgraphs of each name were made (see
    :func:`unique_subgraph_name`)."""

    _subgraph_names: collections.defaultdict[str, int] = collections.defaultdict(int)

    def __init__(self, **attrs: str) -> None:
        for k, v in attrs.items():
            if not isinstance(v, str):
                raise TypeError(f"AttrScope: attribute {k!r} must be a string, got {type(v).__name__}")
        self._attrs = attrs

    def get(self, attrs: dict[str, str] | None) -> dict[str, str]:
        merged = dict(self._attrs)
        merged.update(attrs or {})
        return merged

    def __enter__(self) -> AttrScope:
        outer = current_attrs()
        self._attrs = {**outer, **self._attrs}
        _stack("attrs").append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _stack("attrs").pop()


def _stack(kind: str) -> list:
    if not hasattr(_local, kind):
        setattr(_local, kind, [NameManager()] if kind == "names" else [])
    return getattr(_local, kind)


def current_name_manager() -> NameManager:
    """The innermost name manager."""
    return _stack("names")[-1]


def current_attrs() -> dict[str, str]:
    """The attributes of the innermost AttrScope ({} outside any)."""
    stack = _stack("attrs")
    return dict(stack[-1]._attrs) if stack else {}


SUBGRAPH_KEY = "__subgraph_name__"


def unique_subgraph_name(name: str) -> str:
    """The name of a new control-flow subgraph (a ``cond`` branch, a ``while_loop``'s condition or
    step, a ``foreach`` body): ``name`` under the enclosing subgraph's (``outer$name``), counted in
    ``AttrScope._subgraph_names`` and numbered by that count, as MXNet names them.

    >>> AttrScope._subgraph_names.clear()
    >>> unique_subgraph_name('c_then'), unique_subgraph_name('c_then')
    ('c_then0', 'c_then1')
    >>> with subgraph_scope('loop0'):
    ...     unique_subgraph_name('c_then')
    'loop0$c_then0'
    """
    stack = _stack("subgraphs")
    outer = stack[-1] if stack else current_attrs().get(SUBGRAPH_KEY, "")
    if outer:
        name = f"{outer}${name}"
    counts = AttrScope._subgraph_names
    counts[name] = counts.get(name, 0) + 1
    return f"{name}{counts[name] - 1}"


@contextlib.contextmanager
def subgraph_scope(name: str) -> Iterator[str]:
    """Inside: the subgraph ``name`` (from :func:`unique_subgraph_name`) encloses the control flow
    traced, whose subgraph names it prefixes."""
    stack = _stack("subgraphs")
    stack.append(name)
    try:
        yield name
    finally:
        stack.pop()
