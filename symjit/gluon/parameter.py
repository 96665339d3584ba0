"""Gluon parameters: :class:`Parameter`, :class:`Constant` and :class:`ParameterDict`.

A Parameter holds one array per context it was initialized on (and, unless ``grad_req`` is
``'null'``, a gradient array per context, made an autograd variable with
``mx.autograd.mark_variables``). A shape with unknown (0) dimensions defers initialization until
a block's first forward pass infers them (``allow_deferred_init``).

>>> import symjit as mx
>>> p = mx.gluon.Parameter('w', shape=(2, 3))
>>> p.initialize(init=mx.init.One())
>>> float(p.data().asnumpy().sum()), p.grad().shape
(6.0, (2, 3))
"""
from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import autograd, initializer
from ..base import MXNetError, np_dtype
from ..context import Context, cpu, current_context
from ..ndarray import NDArray, arange, zeros
from ..ndarray import load as nd_load
from ..ndarray import save as nd_save
from ..symbol import Variable

__all__ = ["Parameter", "Constant", "ParameterDict", "DeferredInitializationError"]

GRAD_REQS = ("write", "add", "null")
STYPES = ("default", "row_sparse", "csr")   # MXNet's storage types


class DeferredInitializationError(MXNetError):
    """A parameter whose shape is not known yet was asked for its data (its initialization
    waits for the first forward pass)."""


def _ctx_list(ctx: Any) -> list[Context]:
    if ctx is None:
        return [current_context()]
    return [ctx] if isinstance(ctx, Context) else list(ctx)


def _shape_known(shape: tuple | None) -> bool:
    return shape is not None and all(int(d) > 0 for d in shape)


class Parameter:
    """A weight (or other state) of a Block: its arrays per context and their gradients.

    ``shape`` may hold 0 for dimensions inferred at the first forward pass; ``init`` (an
    initializer or its name) overrides the one given to :meth:`initialize`; ``grad_req`` is
    ``'write'``, ``'add'`` or ``'null'``; ``lr_mult``/``wd_mult`` scale the optimizer's learning
    rate and weight decay.

    >>> import symjit as mx
    >>> p = mx.gluon.Parameter('fc_bias', shape=(0,), allow_deferred_init=True)
    >>> p.initialize()
    >>> p.shape = (4,)
    >>> p._finish_deferred_init(); p.data().shape
    (4,)
    """

    def __init__(self, name: str, grad_req: str = "write", shape: Any = None, dtype: Any = np.float32,
                 lr_mult: float = 1.0, wd_mult: float = 1.0, init: Any = None,
                 allow_deferred_init: bool = False, differentiable: bool = True,  # noqa: FBT001, FBT002
                 stype: str = "default", grad_stype: str = "default"):
        for what, st in (("stype", stype), ("grad_stype", grad_stype)):
            if st not in STYPES:
                raise AssertionError(f"Parameter {name!r}: {what} must be one of {STYPES}, got {st!r}")
        self.name = name
        self._shape = None if shape is None else ((int(shape),) if isinstance(shape, int)
                                                   else tuple(int(d) for d in shape))
        self.dtype = np_dtype(dtype).type if dtype is not None else np.float32
        self.lr_mult, self.wd_mult = lr_mult, wd_mult
        self.init = init
        self.allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        self._grad_req = None
        self.grad_req = grad_req if differentiable else "null"
        self._data: list[NDArray] | None = None
        self._grad: list[NDArray] | None = None
        self._ctx_list: list[Context] = []
        self._deferred_init: tuple = ()
        self._var = None
        self._stype, self._grad_stype = stype, grad_stype
        self._trainer: Any = None   # the Trainer updating it (its kvstore copy is reset by set_data)

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={np.dtype(self.dtype).name})"

    # --- attributes ---------------------------------------------------------------------------
    @property
    def grad_req(self) -> str:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in GRAD_REQS:
            raise ValueError(f"Parameter {self.name!r}: grad_req must be one of {GRAD_REQS}, got {req!r}")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and getattr(self, "_grad", None) is not None:
            self._grad = None
            for d in self._data or []:
                d._ag_grad = d._ag_req = None
        elif getattr(self, "_data", None) is not None:
            self._init_grad()

    @property
    def shape(self) -> tuple | None:
        return self._shape

    @shape.setter
    def shape(self, new: Any) -> None:
        new = None if new is None else tuple(int(d) for d in new)
        if self._shape is None or new is None:
            self._shape = new
            return
        if len(self._shape) != len(new) or not all(o in (0, n) for o, n in zip(self._shape, new)):
            raise AssertionError(f"Parameter {self.name!r}: expected shape {new} is incompatible "
                                 f"with its shape {self._shape}")
        self._shape = new

    @property
    def stype(self) -> str:
        return self._stype

    @property
    def grad_stype(self) -> str:
        return self._grad_stype

    def _set_trainer(self, trainer: Any) -> None:
        """Record the Trainer that updates this parameter (None: none); a sparse parameter takes
        only one (its rows are pulled from that trainer's store)."""
        if self._stype != "default" and self._trainer is not None and trainer is not None \
                and self._trainer is not trainer:
            raise RuntimeError(f"Failed to set the trainer for Parameter {self.name!r}: it has one "
                               f"already, and a {self._stype} Parameter takes only one Trainer")
        self._trainer = trainer

    # --- initialization -----------------------------------------------------------------------
    def initialize(self, init: Any = None, ctx: Any = None, default_init: Any = None,
                   force_reinit: bool = False) -> None:  # noqa: FBT001, FBT002
        """Make this parameter's arrays on ``ctx`` (a context or a list; default the current
        one) and fill them: with the parameter's own ``init`` if it has one, else ``init``, else
        ``default_init`` (``mx.init.Uniform()``). A shape with unknown dimensions waits for them
        (``allow_deferred_init``)."""
        if default_init is None:
            default_init = initializer.Uniform()
        if self._data is not None and not force_reinit:
            return
        self._data = self._grad = None
        ctxs = _ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not _shape_known(self._shape):
            if self.allow_deferred_init:
                self._deferred_init = (init, ctxs, default_init, None)
                return
            raise ValueError(f"Cannot initialize Parameter {self.name!r} because it has invalid shape "
                             f"{self._shape}")
        self._deferred_init = (init, ctxs, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        """Initialize now that the shape is known (a no-op when nothing waits)."""
        if not self._deferred_init:
            return
        init, ctxs, default_init, data = self._deferred_init
        if not _shape_known(self._shape):
            raise DeferredInitializationError(
                f"Parameter {self.name!r} has unknown shape {self._shape}; it is initialized at the "
                "first forward pass, which infers it")
        self._deferred_init = ()
        with autograd.pause():
            if data is None:
                data = zeros(self._shape, ctx=cpu(), dtype=self.dtype)
                initializer.create(default_init)(initializer.InitDesc(self.name, {"__init__": init}), data)
            self._init_impl(data, ctxs)

    def _init_impl(self, data: NDArray, ctxs: list[Context]) -> None:
        self._ctx_list = list(ctxs)
        self._data = [data.copyto(c) if data.context != c or data.dtype != self.dtype else data.copy()
                      for c in ctxs]
        self._data = [d if d.dtype == self.dtype else d.astype(self.dtype) for d in self._data]
        if any(d.stype != self._stype for d in self._data):
            self._data = [d.tostype(self._stype) for d in self._data]
        self._init_grad()

    def _init_grad(self) -> None:
        if self._grad_req == "null" or self._data is None:
            self._grad = None
            return
        self._grad = [zeros(d.shape, ctx=d.context, dtype=d.dtype, stype=self._grad_stype)
                      for d in self._data]
        autograd.mark_variables(self._data, self._grad, self._grad_req)

    def _check_and_get(self, arrs: list | None, ctx: Any, what: str) -> Any:
        if arrs is not None:
            if ctx is list:
                return arrs
            if ctx is None:
                if len(self._ctx_list) == 1:
                    return arrs[0]
                ctx = current_context()
            for c, a in zip(self._ctx_list, arrs):
                if c == ctx:
                    return a
            raise RuntimeError(f"Parameter {self.name!r} was not initialized on context {ctx}; it was "
                               f"only initialized on {self._ctx_list}")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter {self.name!r} has not been initialized yet because initialization was "
                "deferred; its shape is inferred at the block's first forward pass")
        raise RuntimeError(f"Parameter {self.name!r} has not been initialized{what}. Initialize "
                           "parameters with Block.collect_params().initialize() (Block.params does "
                           "not include the parameters of nested child blocks)")

    def _dense_only(self, method: str) -> None:
        if self._stype != "default":
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name!r} via {method}() because "
                               f"its storage type is {self._stype}; use row_sparse_data() instead")

    def data(self, ctx: Context | None = None) -> NDArray:
        """This parameter's array on ``ctx`` (the only context, or the current one); a
        row_sparse parameter's rows come from :meth:`row_sparse_data` instead."""
        self._dense_only("data")
        return self._check_and_get(self._data, ctx, "")

    def list_data(self) -> list[NDArray]:
        """The arrays on every context, in the order of :meth:`list_ctx`."""
        self._dense_only("list_data")
        return self._check_and_get(self._data, list, "")

    def _get_row_sparse(self, ctx: Any, row_id: Any, method: str) -> Any:
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name!r} via {method}() because "
                               f"its storage type is {self._stype}; use data() instead")
        if not isinstance(row_id, NDArray):
            raise TypeError(f"Parameter {self.name!r}.{method}: row_id must be an NDArray, got "
                            f"{type(row_id).__name__}")
        if self._trainer is None:
            raise RuntimeError(f"Cannot get row_sparse data for Parameter {self.name!r} when no Trainer "
                               "is created with it")
        results = self._check_and_get(self._data, ctx, "")
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    def row_sparse_data(self, row_id: NDArray) -> NDArray:
        """This row_sparse parameter's array on ``row_id``'s context, holding the rows ``row_id``
        (pulled from its Trainer's store).

        >>> import symjit as mx
        >>> p = mx.gluon.Parameter('w', shape=(3, 1), stype='row_sparse')
        >>> p.initialize(init=mx.init.One())
        >>> t = mx.gluon.Trainer([p], 'sgd')
        >>> p.row_sparse_data(mx.nd.array([2])).indices.asnumpy().tolist()
        [2]
        """
        return self._get_row_sparse(row_id.context if isinstance(row_id, NDArray) else None, row_id,
                                    "row_sparse_data")

    def list_row_sparse_data(self, row_id: NDArray) -> list[NDArray]:
        """This row_sparse parameter's arrays on every context, each holding the rows ``row_id``."""
        return self._get_row_sparse(list, row_id, "list_row_sparse_data")

    def grad(self, ctx: Context | None = None) -> NDArray:
        """The gradient array on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter {self.name!r} because "
                               "grad_req='null'")
        return self._check_and_get(self._grad, ctx, "")

    def list_grad(self) -> list[NDArray]:
        """The gradient arrays on every context."""
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter {self.name!r} because "
                               "grad_req='null'")
        return self._check_and_get(self._grad, list, "")

    def list_ctx(self) -> list[Context]:
        """The contexts this parameter lives on (those waiting for deferred initialization too)."""
        if self._data is None:
            if self._deferred_init:
                return list(self._deferred_init[1])
            raise RuntimeError(f"Parameter {self.name!r} has not been initialized")
        return list(self._ctx_list)

    def zero_grad(self) -> None:
        """Set the gradient arrays to 0."""
        for g in self._grad or []:
            g[:] = 0

    def set_data(self, data: Any) -> None:
        """Write ``data`` into this parameter's arrays on every context (its shape fixes a
        shape not known yet)."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise RuntimeError(f"Parameter {self.name!r} has not been initialized")
            arr = data if isinstance(data, NDArray) else NDArray(np.asarray(data), cpu())
            self._deferred_init = self._deferred_init[:3] + (arr.copyto(cpu()),)
            return
        trainer = self._trainer      # a kvstore holding the weights for updates must take the new ones
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore \
                and self not in trainer._params_to_init:
            trainer._reset_kvstore()
        with autograd.pause():
            for d in self._data:
                d[:] = data

    def _load_init(self, data: NDArray, ctx: Any, cast_dtype: bool = False,  # noqa: FBT001, FBT002
                   dtype_source: str = "current") -> None:
        """Take the loaded array ``data`` as this parameter's value (see ``load_parameters``)."""
        if cast_dtype:
            if dtype_source not in ("current", "saved"):
                raise ValueError(f"dtype_source must be 'current' or 'saved', got {dtype_source!r}")
            if dtype_source == "current":
                data = data.astype(self.dtype)
            elif np.dtype(data.dtype) != np.dtype(self.dtype):
                self.cast(data.dtype)        # the arrays take the saved dtype
        elif np.dtype(data.dtype) != np.dtype(self.dtype):
            raise AssertionError(f"Failed loading Parameter {self.name!r} from saved params: dtype "
                                 f"incompatible expected {np.dtype(self.dtype).name} vs saved "
                                 f"{np.dtype(data.dtype).name}. Set cast_dtype=True to cast the dtype "
                                 "of saved params")
        if self._shape is not None and (len(self._shape) != data.ndim or not all(
                o in (0, n) for o, n in zip(self._shape, data.shape))):
            raise AssertionError(f"Failed loading Parameter {self.name!r} from saved params: shape "
                                 f"incompatible expected {self._shape} vs saved {data.shape}")
        self._shape = tuple(data.shape)
        if self._data is None:
            ctxs = self._deferred_init[1] if self._deferred_init and ctx is None else _ctx_list(ctx)
            self._deferred_init = ()
            with autograd.pause():
                self._init_impl(data, ctxs)
        else:
            if ctx is not None and set(_ctx_list(ctx)) != set(self._ctx_list):
                raise AssertionError(f"Failed to load Parameter {self.name!r} on {_ctx_list(ctx)} "
                                     f"because it was previously initialized on {self._ctx_list}")
            self.set_data(data)

    def _reduce(self) -> NDArray:
        """The value to save: the first context's array, on the CPU (a row_sparse parameter's every
        row, from its Trainer's store when it has one)."""
        if self._stype == "default":
            return self.list_data()[0].copyto(cpu())
        out = self._check_and_get(self._data, list, "")[0].copyto(cpu())
        if self._trainer is not None:
            self._trainer._row_sparse_pull(self, out, arange(0, self._shape[0], ctx=cpu()), full_idx=True)
        return out

    def reset_ctx(self, ctx: Any) -> None:
        """Move this parameter's arrays (or its pending initialization) to ``ctx``."""
        ctxs = _ctx_list(ctx)
        if self._data is not None:
            with autograd.pause():
                data = self._data[0].copyto(cpu())
                self._init_impl(data, ctxs)
        elif self._deferred_init:
            self._deferred_init = (self._deferred_init[0], ctxs) + self._deferred_init[2:]
        else:
            raise ValueError(f"Cannot reset context for Parameter {self.name!r} because it has not "
                             "been initialized")

    def cast(self, dtype: Any) -> None:
        """Change this parameter's dtype (its arrays and gradients are converted)."""
        self.dtype = np_dtype(dtype).type
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(self.dtype) for d in self._data]
            self._init_grad()

    def var(self) -> Any:
        """This parameter as a symbol variable (name, shape, dtype, lr/wd multipliers, init)."""
        if self._var is None:
            init = self.init
            if init is not None and not isinstance(init, str):
                init = init.dumps() if hasattr(init, "dumps") else None
            elif isinstance(init, str):
                init = initializer.create(init).dumps()
            # a shape with unknown dimensions is left out: inference fills it from the inputs
            shape = self._shape if _shape_known(self._shape) else None
            self._var = Variable(self.name, shape=shape, dtype=self.dtype, lr_mult=self.lr_mult,
                                 wd_mult=self.wd_mult, init=init,
                                 stype=None if self._stype == "default" else self._stype)
        return self._var


class Constant(Parameter):
    """A parameter whose value never changes (``grad_req='null'``), initialized to ``value``.

    >>> import symjit as mx
    >>> c = mx.gluon.Constant('c', [1.0, 2.0]); c.initialize()
    >>> c.data().asnumpy().tolist()
    [1.0, 2.0]
    """

    def __init__(self, name: str, value: Any):
        if not isinstance(value, NDArray):
            value = NDArray(np.asarray(value, dtype=np.float32), cpu())
        self.value = value
        val = value

        class _Init(initializer.Initializer):
            def _init_weight(self, _: str, arr: NDArray) -> None:
                arr[:] = val

            def dumps(self) -> str:
                return initializer.Constant(val.asnumpy().tolist()).dumps()
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype, init=_Init())

    @Parameter.grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != "null":
            import warnings
            warnings.warn(f"Constant {self.name!r} does not support gradients: grad_req stays 'null'",
                          stacklevel=2)
        self._grad_req = "null"


_CMP = ("shape", "dtype", "lr_mult", "wd_mult", "init", "grad_req", "allow_deferred_init")


class ParameterDict:
    """Parameters by full name (``prefix`` + name), shared with another dict when ``shared``
    is given (its parameters are found first by :meth:`get`).

    >>> import symjit as mx
    >>> pd = mx.gluon.ParameterDict('net_')
    >>> w = pd.get('weight', shape=(2, 2)); list(pd.keys())
    ['net_weight']
    """

    def __init__(self, prefix: str = "", shared: ParameterDict | None = None):
        self._prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        body = "\n".join(f"  {v!r}" for v in self.values())
        return f"{self._prefix} (\n{body}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, key: str) -> bool:
        return key in self._params

    def items(self) -> Any:
        return self._params.items()

    def keys(self) -> Any:
        return self._params.keys()

    def values(self) -> Any:
        return self._params.values()

    @property
    def prefix(self) -> str:
        return self._prefix

    def _get_impl(self, name: str) -> Parameter | None:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name: str, **kwargs: Any) -> Parameter:
        """The parameter ``prefix + name``, made with ``kwargs`` (Parameter's arguments) when
        absent; when present, ``kwargs`` must agree with it (unknown shape dimensions are
        filled in)."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            param = self._params[full] = Parameter(full, **kwargs)
            return param
        for k, v in kwargs.items():
            if not hasattr(param, k) or getattr(param, k) is None:
                setattr(param, k, v)
                continue
            old = getattr(param, k)
            if k == "shape" and v is not None:
                v = (int(v),) if isinstance(v, int) else tuple(v)
                if len(v) == len(old) and all(a in (0, b) or b == 0 for a, b in zip(old, v)):
                    param._shape = tuple(max(a, b) for a, b in zip(old, v))
                    continue
            elif k == "dtype" and np.dtype(v) == np.dtype(old):
                continue
            if v is not None and v != old:
                raise AssertionError(f"Cannot retrieve Parameter {name!r} because desired attribute "
                                     f"does not match with stored for attribute {k!r}: desired "
                                     f"{v!r} vs stored {old!r}")
        return param

    def get_constant(self, name: str, value: Any = None) -> Constant:
        """The constant ``prefix + name``, made from ``value`` when absent."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named {name!r}; give a value to create it")
            param = self._params[full] = Constant(full, value)
        elif not isinstance(param, Constant):
            raise TypeError(f"Parameter {full!r} exists and is not a Constant")
        return param

    def update(self, other: ParameterDict) -> None:
        """Add ``other``'s parameters (a name held by another parameter object is an error)."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise ValueError(f"Cannot update self with other because they have different "
                                 f"Parameters with the same name {k!r}")
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init: Any = None, ctx: Any = None, verbose: bool = False,  # noqa: FBT001, FBT002
                   force_reinit: bool = False) -> None:  # noqa: FBT001, FBT002
        """Initialize every parameter (``init`` is each one's default initializer)."""
        if init is None:
            init = initializer.Uniform()
        if verbose and hasattr(init, "set_verbosity"):
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        """Set every gradient to 0."""
        for v in self.values():
            v.zero_grad()

    def reset_ctx(self, ctx: Any) -> None:
        """Move every parameter to ``ctx``."""
        for v in self.values():
            v.reset_ctx(ctx)

    def list_ctx(self) -> list[Context]:
        """The contexts any parameter lives on."""
        out: list[Context] = []
        for v in self.values():
            out += [c for c in v.list_ctx() if c not in out]
        return out

    def setattr(self, name: str, value: Any) -> None:
        """Set attribute ``name`` (``grad_req``, ``lr_mult``, ...) on every parameter."""
        for v in self.values():
            setattr(v, name, value)

    def save(self, filename: str, strip_prefix: str = "") -> None:
        """Write the parameters in MXNet's ``.params`` format, by full name minus ``strip_prefix``."""
        arrays = {}
        for name, p in self.items():
            if not name.startswith(strip_prefix):
                raise ValueError(f"Prefix {strip_prefix!r} is to be stripped before saving, but "
                                 f"Parameter {name!r} does not start with it")
            arrays[name[len(strip_prefix):]] = p._reduce()
        nd_save(filename, arrays)

    def load(self, filename: str, ctx: Any = None, allow_missing: bool = False,  # noqa: FBT001, FBT002
             ignore_extra: bool = False, restore_prefix: str = "",  # noqa: FBT001, FBT002
             cast_dtype: bool = False, dtype_source: str = "current") -> None:  # noqa: FBT001, FBT002
        """Read a ``.params`` file (names with ``arg:``/``aux:`` accepted, ``restore_prefix``
        prepended) into the parameters."""
        for name in self.keys():
            if not name.startswith(restore_prefix):
                raise ValueError(f"restore_prefix is {restore_prefix!r} but Parameter {name!r} does "
                                 "not start with it")
        loaded = nd_load(filename)
        if not isinstance(loaded, dict):
            raise MXNetError(f"ParameterDict.load: {filename} holds unnamed arrays; expected a file of "
                             "named parameters")
        arrays = {restore_prefix + re.sub(r"^(arg|aux):", "", k): v for k, v in loaded.items()}
        if not allow_missing:
            for name in self.keys():
                if name not in arrays:
                    raise AssertionError(f"Parameter {name[len(restore_prefix):]!r} is missing in file "
                                         f"{filename!r}; set allow_missing=True to ignore missing "
                                         "parameters")
        for name, arr in arrays.items():
            if name not in self._params:
                if ignore_extra:
                    continue
                raise AssertionError(f"Parameter {name[len(restore_prefix):]!r} loaded from file "
                                     f"{filename!r} is not present in this ParameterDict; set "
                                     "ignore_extra=True to ignore")
            self._params[name]._load_init(arr, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)
