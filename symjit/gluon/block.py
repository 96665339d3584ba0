"""Gluon blocks: :class:`Block` (imperative), :class:`HybridBlock` (traceable into one Symbol and
then run as one compiled program) and, in :mod:`.symbol_block`, :class:`SymbolBlock`.

A block owns the parameters it registers as attributes (``self.weight = self.params.get(...)``)
and the child blocks it assigns as attributes. Names: each block has a ``prefix`` (``dense0_``,
nested ``model0_dense0_``) given by the scope it is made in, and its parameters are named
``prefix + name``; symbols made while tracing are named under the block's prefix too
(``dense0_fwd``). ``save_parameters`` writes structural names (``0.weight``,
``features.1.bias``) instead, as MXNet 1.9.1 does.

A hybridized block (``hybridize()``) traces ``hybrid_forward`` with ``F = mx.sym`` once, binds the
symbol through symjit's compiler once per input shapes, dtypes and context (:mod:`.cached`), and
runs it; under ``autograd.record()`` the call is recorded as one entry whose operator is the
traced symbol, so ``backward`` reaches the parameters.

>>> import symjit as mx
>>> from symjit.gluon import nn
>>> net = nn.HybridSequential(prefix='net_')
>>> with net.name_scope():
...     net.add(nn.Dense(3, in_units=2))
>>> net.initialize(mx.init.One())
>>> net.hybridize()
>>> net(mx.nd.ones((1, 2))).asnumpy().tolist()
[[2.0, 2.0, 2.0]]
"""
from __future__ import annotations

import re
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import ndarray, symbol
from ..base import DataDependentShape, MXNetError
from ..ndarray import NDArray
from ..ndarray import load as nd_load
from ..ndarray import save as nd_save
from ..symbol import Symbol
from ..symbol.naming import Prefix, current_name_manager
from .cached import call_cached
from .model_file import load_model, save_model
from .nest import _flatten, _regroup
from .parameter import DeferredInitializationError, Parameter, ParameterDict

__all__ = ["Block", "HybridBlock", "HookHandle"]


class _BlockScope:
    """The naming scope of a block: children made inside get prefixes ``<hint><count>_`` under
    it, and symbols made inside are prefixed with the block's prefix."""

    _local = threading.local()

    def __init__(self, block: Block):
        # weak: the block holds its scope, and a reference cycle would keep a dropped block (its
        # executors and their buffers) alive until Python's cycle collector next runs
        self._block_ref = weakref.ref(block)
        self._counter: dict[str, int] = {}
        # per entry (re-entry nests): the scope it replaced and its symbol-name prefix; popped on
        # exit, so a scope keeps no reference to an enclosing scope (or its block) afterwards
        self._entries: list[tuple[_BlockScope | None, Prefix]] = []

    @property
    def _block(self) -> Block:
        block = self._block_ref()
        if block is None:
            raise MXNetError("a block's naming scope was used after its block was freed")
        return block

    @staticmethod
    def current() -> _BlockScope | None:
        return getattr(_BlockScope._local, "value", None)

    @staticmethod
    def create(prefix: str | None, params: ParameterDict | None, hint: str) -> tuple[str, ParameterDict]:
        """The full prefix and parameter dict of a block made in the current scope."""
        current = _BlockScope.current()
        if current is None:
            if prefix is None:
                prefix = current_name_manager().get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self) -> _BlockScope:
        if self._block._empty_prefix:
            return self
        names = Prefix(self._block.prefix)
        self._entries.append((_BlockScope.current(), names))
        _BlockScope._local.value = self
        names.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._block._empty_prefix:
            return
        old, names = self._entries.pop()
        names.__exit__(*exc)
        _BlockScope._local.value = old


class HookHandle:
    """What ``register_forward_hook``/``register_forward_pre_hook`` return: ``detach()`` removes
    the hook (also on leaving a ``with`` block)."""

    _next = 0

    def __init__(self, hooks: OrderedDict, hook: Callable):
        self._hooks, self._id = hooks, HookHandle._next
        HookHandle._next += 1
        hooks[self._id] = hook

    def detach(self) -> None:
        self._hooks.pop(self._id, None)

    def __enter__(self) -> HookHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.detach()


def _indent(text: str, n: int) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * n + line for line in lines[1:]])


class Block:
    """The base of Gluon's layers and models: parameters, children, naming, saving; subclasses
    define ``forward``.

    >>> import symjit as mx
    >>> class Twice(mx.gluon.Block):
    ...     def forward(self, x):
    ...         return x * 2
    >>> Twice()(mx.nd.ones((2,))).asnumpy().tolist()
    [2.0, 2.0]
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children: OrderedDict[str, Block] = OrderedDict()
        self._reg_params: OrderedDict[str, Parameter] = OrderedDict()
        self._forward_hooks: OrderedDict = OrderedDict()
        self._forward_pre_hooks: OrderedDict = OrderedDict()

    def __repr__(self) -> str:
        mods = "\n".join(f"  ({k}): {_indent(repr(b), 2)}" for k, b in self.__dict__.items()
                         if isinstance(b, Block))
        return f"{self.__class__.__name__}(\n{mods}\n)"

    def __setattr__(self, name: str, value: Any) -> None:
        existing = self.__dict__.get(name)
        if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
            raise TypeError(f"Changing attribute type for {name} from {type(existing)} to "
                            f"{type(value)} is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params and self._reg_params[name] is not value:
                raise AssertionError(f"Overriding Parameter attribute {name} is not allowed. If you "
                                     "want to share parameters between blocks, please set 'params' at "
                                     "Block construction instead.")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self) -> str:
        return self.__class__.__name__.lower()

    @property
    def prefix(self) -> str:
        """The prefix of this block's parameter and symbol names (``dense0_``)."""
        return self._prefix

    @property
    def name(self) -> str:
        """The prefix without its trailing underscore."""
        return self._name

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters (not its children's: see :meth:`collect_params`)."""
        return self._params

    def name_scope(self) -> _BlockScope:
        """The scope to make children in (``with self.name_scope(): self.dense = nn.Dense(2)``)."""
        return self._scope

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """This block's and its descendants' parameters, those whose full name matches the
        regular expression ``select`` only (``'.*weight|.*bias'``) when given. A list, tuple or
        dict attribute holding blocks that are not children is warned about: their parameters
        are not collected."""
        self._warn_unregistered()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            sel = ParameterDict(self._params.prefix)
            sel._params.update((k, v) for k, v in self.params.items() if pattern.match(k))
            ret.update(sel)
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _warn_unregistered(self) -> None:
        children = {id(c) for c in self._children.values()}

        def blocks(value: Any) -> bool:
            if isinstance(value, Block):
                return id(value) not in children
            items = value.values() if isinstance(value, dict) else value \
                if isinstance(value, (list, tuple)) else ()
            return any(blocks(v) for v in items)

        for name, value in self.__dict__.items():
            if isinstance(value, (list, tuple, dict)) and blocks(value):
                warnings.warn(f"{self.name}: attribute {name!r} is a {type(value).__name__} holding "
                              "blocks that are not registered children; their parameters are not "
                              "collected. Register them with register_child() or hold them in "
                              "nn.Sequential/nn.HybridSequential", stacklevel=3)

    def _collect_params_with_prefix(self, prefix: str = "") -> dict[str, Parameter]:
        if prefix:
            prefix += "."
        ret = {prefix + k: v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def register_child(self, block: Block, name: str | None = None) -> None:
        """Make ``block`` a child (named ``name``, default its position)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook: Callable) -> HookHandle:
        """Call ``hook(block, inputs)`` before each forward."""
        return HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook: Callable) -> HookHandle:
        """Call ``hook(block, inputs, outputs)`` after each forward."""
        return HookHandle(self._forward_hooks, hook)

    def register_op_hook(self, callback: Callable, monitor_all: bool = False) -> None:  # noqa: FBT001, FBT002
        """Call ``callback(value_name, op_name, array)`` for each operator's outputs (with
        ``monitor_all`` first its inputs: ``dense0_fwd_weight``) while a hybridized descendant
        runs; a call runs the block's unfused program then (see
        ``Executor.set_monitor_callback``). Imperative calls are not watched."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def apply(self, fn: Callable) -> Block:
        """Call ``fn`` on every descendant, then on this block; return this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False,  # noqa: FBT001, FBT002
                   force_reinit: bool = False) -> None:  # noqa: FBT001, FBT002
        """Initialize this block's and its descendants' parameters (default ``mx.init.Uniform()``)."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:  # noqa: FBT001, FBT002
        """Hybridize the HybridBlocks among the descendants (a plain Block runs imperatively)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype: Any) -> None:
        """Convert every parameter to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for p in self.params.values():
            p.cast(dtype)

    def zero_grad(self) -> None:
        """Set all gradients of this block's parameters to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx: Any) -> None:
        """Move all parameters to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    # --- saving and loading ------------------------------------------------------------------
    def save_parameters(self, filename: str, deduplicate: bool = False) -> None:  # noqa: FBT001, FBT002
        """Write the parameters under their structural names (``0.weight``) in MXNet's
        ``.params`` format; ``deduplicate`` writes a shared parameter once."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            seen: dict[int, str] = {}
            for k, v in params.items():
                seen.setdefault(id(v), k)
            params = {k: v for k, v in params.items() if seen[id(v)] == k}
        nd_save(filename, {k: v._reduce() for k, v in params.items()})

    def load_parameters(self, filename: str, ctx: Any = None, allow_missing: bool = False,  # noqa: FBT001, FBT002
                        ignore_extra: bool = False, cast_dtype: bool = False,  # noqa: FBT001, FBT002
                        dtype_source: str = "current") -> None:
        """Read parameters written by :meth:`save_parameters` (or, when no name has a ``.``, by
        ``collect_params().save``, MXNet's older format)."""
        loaded = nd_load(filename)
        if not isinstance(loaded, dict):
            raise MXNetError(f"load_parameters: {filename} holds unnamed arrays; expected a file of "
                             "named parameters")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in k for k in loaded):
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            by_id: dict[int, list[str]] = {}
            for k, v in params.items():
                by_id.setdefault(id(v), []).append(k)
            for k, v in params.items():
                if not any(n in loaded for n in by_id[id(v)]):
                    raise AssertionError(f"Parameter {k!r} is missing in file {filename!r}, which "
                                         f"contains parameters: {sorted(loaded)}. Set "
                                         "allow_missing=True to ignore missing parameters.")
        for k, arr in loaded.items():
            if k not in params:
                if ignore_extra:
                    continue
                raise ValueError(f"Parameter {k!r} loaded from file {filename!r} is not present in "
                                 f"ParameterDict, which contains parameters {sorted(params)}. Set "
                                 "ignore_extra=True to ignore.")
            params[k]._load_init(arr, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def save_params(self, filename: str) -> None:
        """Deprecated: ``collect_params().save`` with this block's prefix stripped."""
        warnings.warn("save_params is deprecated; use save_parameters", DeprecationWarning, stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename: str, ctx: Any = None, allow_missing: bool = False,  # noqa: FBT001, FBT002
                    ignore_extra: bool = False) -> None:  # noqa: FBT001, FBT002
        """Deprecated: :meth:`load_parameters`."""
        warnings.warn("load_params is deprecated; use load_parameters", DeprecationWarning, stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def save(self, prefix: str) -> None:
        """Write the model's structure (names, which blocks are hybridized, their traced graphs)
        to ``<prefix>-model.json`` and its parameters to ``<prefix>-model.params``; :meth:`load`
        reads both into a model made by the same code (see :mod:`.model_file`)."""
        save_model(self, prefix)

    def load(self, prefix: str) -> None:
        """Read a model written by :meth:`save` into this one, made by the same code in the same
        order: names and child keys as saved, saved-hybridized blocks hybridized, parameters
        loaded."""
        load_model(self, prefix)

    # --- calling -----------------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self.forward(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def forward(self, *args: Any) -> Any:
        """The computation; subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__}.forward is not defined")

    def summary(self, *inputs: Any) -> None:
        """Print each descendant's output shape and parameter count for a forward of ``inputs``
        (the block and its descendants must not be hybridized: an AssertionError)."""
        def not_hybridized(block: Block) -> None:
            if isinstance(block, HybridBlock) and block._active:
                raise AssertionError(f"summary: {block.name!r} is hybridized; call hybridize(False) "
                                     "before summary (a hybridized block's layers run as one program)")
        self.apply(not_hybridized)
        rows: list[tuple[str, str, int]] = []
        handles = []

        def hook(block: Block, _: Any, out: Any) -> None:
            shapes = [o.shape for o in _flatten(out, "output")[0] if o is not None]
            n = sum(int(_size(p.shape)) for p in block._reg_params.values())
            rows.append((f"{block.__class__.__name__}-{len(rows) + 1}", str(shapes[0] if len(shapes) == 1
                                                                          else shapes), n))
        self.apply(lambda b: handles.append(b.register_forward_hook(hook)))
        try:
            self(*inputs)
        finally:
            for h in handles:
                h.detach()
        print(f"{'Layer (type)':>30}{'Output Shape':>30}{'Param #':>12}")
        for name, shape, n in rows:
            print(f"{name:>30}{shape:>30}{n:>12}")
        total = sum(int(_size(p.shape)) for p in self.collect_params().values())
        print(f"Parameters in forward computation graph: {total}")


def _one_context(where: str, arrays: list[NDArray]) -> None:
    """A hybridized call runs on one device: its inputs' contexts must agree (pinned host memory
    counts as the CPU of its id)."""
    found = {("cpu" if a.context.device_type == "cpu_pinned" else a.context.device_type,
              a.context.device_id) for a in arrays}
    if len(found) > 1:
        raise ValueError(f"{where}: a hybridized block runs on one context, but its inputs are on "
                         f"{sorted(f'{t}({i})' for t, i in found)}; copy them to one context first "
                         "(as_in_context)")


def _size(shape: tuple | None) -> int:
    out = 1
    for d in shape or ():
        out *= int(d)
    return out


class HybridBlock(Block):
    """A Block whose computation is ``hybrid_forward(F, x, *args, **params)``, written once for
    ``F = mx.nd`` (imperative, the default) and ``F = mx.sym`` (traced after ``hybridize()``).
    Its children must be HybridBlocks too.

    >>> import symjit as mx
    >>> class Scale(mx.gluon.HybridBlock):
    ...     def hybrid_forward(self, F, x):
    ...         return F.relu(x) * 3
    >>> b = Scale(); b.hybridize()
    >>> b(mx.nd.array([-1.0, 2.0])).asnumpy().tolist()
    [0.0, 6.0]
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph: tuple = ()
        self._cached = None
        self._imperative_only = False
        self._active = False
        self._flags: dict = {}
        self._in_format: Any = None
        self._out_format: Any = None
        self._op_hook: tuple | None = None    # (callback, monitor_all) of register_op_hook

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if isinstance(value, (HybridBlock, Parameter)):
            self._clear_cached_op()

    def register_child(self, block: Block, name: str | None = None) -> None:
        if not isinstance(block, HybridBlock):
            raise ValueError(f"Children of HybridBlock must also be HybridBlock, but {block} has type "
                             f"{type(block)}. If you are using Sequential, please try "
                             "HybridSequential instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def register_op_hook(self, callback: Callable, monitor_all: bool = False) -> None:  # noqa: FBT001, FBT002
        self._op_hook = (callback, bool(monitor_all))
        super().register_op_hook(callback, monitor_all)

    def _clear_cached_op(self) -> None:
        self._cached_graph = ()
        self._cached = None
        self._imperative_only = False    # set when the trace meets a data-dependent output shape

    def hybridize(self, active: bool = True, static_alloc: bool = False,  # noqa: FBT001, FBT002
                  static_shape: bool = False, **kwargs: Any) -> None:  # noqa: FBT001, FBT002
        """Trace this block into one Symbol at its next call and run it as one compiled program
        per input shapes (``active=False`` returns to imperative calls). ``static_alloc`` and
        ``static_shape`` are accepted: symjit's programs always have a static memory plan."""
        self._active = bool(active)
        self._flags = dict(kwargs, static_alloc=static_alloc, static_shape=static_shape)
        self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f"{self!r} is being hybridized while still having forward hooks/pre-hooks. "
                          "If it is a child of a hybridized block, its hooks will not take effect.",
                          stacklevel=2)
        super().hybridize(active, **kwargs)

    def cast(self, dtype: Any) -> None:
        self._clear_cached_op()
        super().cast(dtype)

    def _get_graph(self, *args: Any) -> tuple[list[Symbol], Symbol]:
        if not self._cached_graph:
            flat, self._in_format = _flatten(list(args), "input")
            real = [a for a in flat if a is not None]
            names = ["data"] if len(real) == 1 else [f"data{i}" for i in range(len(real))]
            it = iter(names)
            inputs = [symbol.var(next(it)) if a is not None else None for a in flat]
            grouped, _ = _regroup(inputs, self._in_format)
            params = {k: v.var() for k, v in self._reg_params.items()}
            with self.name_scope():
                out = self.hybrid_forward(symbol, *grouped, **params)
            outs, self._out_format = _flatten(out, "output")
            self._cached_graph = [i for i in inputs if i is not None], symbol.Group(outs)
        return self._cached_graph

    def _infer_attrs(self, fn: str, attr: str, *args: Any) -> None:
        inputs, out = self._get_graph(*args)
        flat = [a for a in _flatten(list(args), "input")[0] if a is not None]
        given = {i.name: getattr(a, attr) for i, a in zip(inputs, flat)}
        arg_attrs, _, aux_attrs = getattr(out, fn)(**given)
        if arg_attrs is None:
            raise ValueError(f"{self.name}: {fn} could not infer every parameter's {attr} from inputs "
                             f"{given}")
        found = dict(zip(out.list_arguments(), arg_attrs))
        found.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if p.name in found:
                setattr(p, attr, found[p.name])

    def infer_shape(self, *args: Any) -> None:
        """Infer the parameters' unknown shapes from the inputs ``args``."""
        self._infer_attrs("infer_shape", "shape", *args)

    def infer_type(self, *args: Any) -> None:
        """Infer the parameters' dtypes from the inputs ``args``."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _deferred_infer_shape(self, *args: Any) -> None:
        try:
            self.infer_shape(*args)
        except Exception as exc:
            raise ValueError(f"Deferred initialization failed because shape cannot be inferred: "
                             f"{exc}") from exc

    def forward(self, x: Any, *args: Any) -> Any:
        """Run ``hybrid_forward``: imperatively with ``F = mx.nd``, through the compiled program
        when hybridized, or symbolically (``F = mx.sym``) when ``x`` is a Symbol."""
        if not args and type(x) is NDArray and not self._active:     # the common imperative call
            ctx = x.context
            with ctx:
                try:
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    params = None       # initialized below
                if params is not None:
                    return self.hybrid_forward(ndarray, x, **params)
        given = [a for a in _flatten([x, *args], "input", loose=True)[0] if a is not None]
        flat = [a for a in given if isinstance(a, (NDArray, Symbol))]   # others: numbers, passed on
        if not flat:
            raise ValueError(f"{type(self).__name__}: at least one input must be an NDArray or a "
                             "Symbol, all are None")
        if isinstance(flat[0], NDArray):
            if not all(isinstance(a, NDArray) for a in flat):
                raise ValueError(f"{type(self).__name__}: inputs must be all NDArrays or all Symbols, "
                                 f"got {[type(a).__name__ for a in flat]}")
            ctx = flat[0].context
            with ctx:
                if self._active and len(flat) != len(given):
                    other = [type(a).__name__ for a in given if not isinstance(a, NDArray)]
                    raise ValueError(f"{type(self).__name__}: a hybridized block's inputs must be "
                                     f"NDArrays (or None), got {other}; call it without hybridize() "
                                     "to pass other values")
                if self._active and not self._imperative_only:
                    _one_context(type(self).__name__, flat)
                    try:
                        return call_cached(self, x, *args)
                    except DataDependentShape as exc:
                        self._cached_graph, self._imperative_only = (), True
                        warnings.warn(f"{type(self).__name__} is hybridized, but it runs imperatively: {exc}",
                                      stacklevel=2)
                try:
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for p in self.params.values():
                        p._finish_deferred_init()
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                return self.hybrid_forward(ndarray, x, *args, **params)
        if not all(isinstance(a, Symbol) for a in flat):
            raise ValueError(f"{type(self).__name__}: inputs must be all NDArrays or all Symbols, got "
                            f"{[type(a).__name__ for a in flat]}")
        params = {k: v.var() for k, v in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(symbol, x, *args, **params)

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N803 - MXNet's name
        """The computation over ``F`` (``mx.nd`` or ``mx.sym``); subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__}.hybrid_forward is not defined")

    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True) -> tuple[str, str]:  # noqa: FBT001, FBT002
        """Write ``path-symbol.json`` and ``path-%04d.params`` (names ``arg:<name>``/``aux:<name>``),
        what ``SymbolBlock.imports`` and ``mx.model.load_checkpoint`` read. The block must have
        been hybridized and called once."""
        if not self._cached_graph:
            raise RuntimeError("Please first call block.hybridize() and then run forward with this "
                               "block at least once before calling export.")
        sym = self._cached_graph[1]
        sym_file = f"{path}-symbol.json"
        sym.save(sym_file)
        args, aux = set(sym.list_arguments()), set(sym.list_auxiliary_states())
        arrays = {}
        for name, p in self.collect_params().items():
            if name in args:
                arrays[f"arg:{name}"] = p._reduce()
            elif name in aux:
                arrays[f"aux:{name}"] = p._reduce()
        params_file = f"{path}-{epoch:04d}.params"
        nd_save(params_file, arrays)
        return sym_file, params_file

    def optimize_for(self, x: Any, *args: Any, backend: Any = None, **kwargs: Any) -> None:
        """Hybridize and run once (symjit has no backend partitioning: ``backend`` must be None)."""
        if backend is not None:
            raise MXNetError(f"optimize_for: backend {backend!r}: symjit has no subgraph backends")
        self.hybridize(True, **kwargs)
        self(x, *args)

