""":class:`Trainer`: applies an ``mx.optimizer`` to a set of Gluon parameters.

``step(batch_size)`` scales the gradients by ``1 / batch_size`` (the optimizer's ``rescale_grad``),
sums each parameter's gradients over its contexts through a key-value store and updates the
parameters. As in MXNet 1.x, the store is made at the first step (``_init_kvstore``): none for
parameters on one context (unless the store is distributed, or a store object is given), else
``mx.kv.create(kvstore)``. With ``update_on_kvstore`` (MXNet's default when the store can run the
optimizer, ``MXNET_UPDATE_ON_KVSTORE=0`` turns it off) the store sums the gradients, updates its
copy of the weights and every context pulls them; otherwise the store only sums the gradients
(``allreduce_grads``) and each context's copy is updated by its own :class:`symjit.optimizer.Updater`
(``_updaters``, one per context, all of a context's parameters in one fused update call).

>>> import symjit as mx
>>> net = mx.gluon.nn.Dense(1, in_units=2, use_bias=False)
>>> net.initialize(mx.init.One())
>>> trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5})
>>> with mx.autograd.record():
...     y = net(mx.nd.array([[1.0, 2.0]]))
>>> y.backward(); trainer.step(1)
>>> net.weight.data().asnumpy().tolist(), trainer._kvstore    # one context: no store
([[0.5, 0.0]], None)
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import autograd
from .. import kvstore as kvs
from .. import optimizer as opt
from ..base import MXNetError
from ..context import Context
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]

_LOCAL_UPDATE_LIMIT = 1 << 24   # a 'local' store leaves updates to the devices above this size


def _create_kvstore(kvstore: Any, num_device: int, arrays: list) -> tuple[Any, bool]:
    """``(store or None, update_on_kvstore)`` as MXNet 1.x picks them for dense parameters."""
    on_kv = bool(int(os.environ.get("MXNET_UPDATE_ON_KVSTORE", "1")))
    if isinstance(kvstore, str):     # one device on one machine needs no store
        kv = kvs.create(kvstore) if num_device > 1 or "dist" in kvstore else None
        big = max((int(np.prod(a.shape)) for a in arrays), default=0) > _LOCAL_UPDATE_LIMIT
        on_kv = on_kv and not (kvstore == "local" and big)
    elif kvstore is None or isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    else:
        raise TypeError(f"Trainer: kvstore must be a KVStore, a str or None, got {type(kvstore).__name__}")
    return kv, kv is not None and on_kv and kv.is_capable(kvs.KVStoreBase.OPTIMIZER)


def _arrays(p: Parameter) -> list:
    """A parameter's arrays on every context, whatever its storage type."""
    return p._check_and_get(p._data, list, "")


def _sparse_store(kvstore: Any) -> Any:
    """The store for row_sparse weights: always one (their rows are pulled from it)."""
    if isinstance(kvstore, kvs.KVStoreBase):
        return kvstore
    if isinstance(kvstore, str):
        return kvs.create(kvstore)
    raise TypeError(f"Cannot create {kvstore!r} KVStore with row_sparse parameters: the kvstore must be a "
                    "KVStore or a str")


class Trainer:
    """Updates ``params`` (a ParameterDict or dict, taken in sorted key order, or a list of
    Parameters) with ``optimizer`` (a name with ``optimizer_params``, or an Optimizer instance).

    ``kvstore`` (a type name, a store, or None) and ``update_on_kvstore`` (None: the store's choice)
    are MXNet 1.x's; gradient compression is not supported."""

    def __init__(self, params: Any, optimizer: Any, optimizer_params: dict | None = None,
                 kvstore: Any = "device", compression_params: dict | None = None,
                 update_on_kvstore: bool | None = None):  # noqa: FBT001
        if isinstance(params, (dict, ParameterDict)):
            params = [params[k] for k in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"First argument must be a list or dict of Parameters, got {type(params)}.")
        self._params: list[Parameter] = []
        self._param2idx: dict[str, int] = {}
        seen: set[int] = set()
        for p in params:
            if not isinstance(p, Parameter):
                raise ValueError(f"First argument must be a list or dict of Parameters, got list of "
                                 f"{type(p)}.")
            if id(p) in seen:
                continue
            seen.add(id(p))
            self._param2idx[p.name] = len(self._params)
            self._params.append(p)
            p._set_trainer(self)
        if compression_params:
            raise MXNetError("Trainer: gradient compression is not supported by symjit; got "
                             f"compression_params={compression_params!r:.80}")
        self._compression_params = compression_params
        self._contexts = self._check_contexts(strict=False)
        self._init_optimizer(optimizer, dict(optimizer_params or {}))
        self._scale = float(self._optimizer.rescale_grad)
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._reset_kvstore()

    # -- contexts, optimizer and store --------------------------------------------------------
    def _check_contexts(self, strict: bool = True) -> list[Context] | None:
        """The contexts every parameter lives on (the same for all, as MXNet requires); None
        while a parameter is not initialized yet (an error with ``strict``)."""
        contexts = None
        for p in self._params:
            if p._data is None and not p._deferred_init and not strict:
                return None
            ctx = p.list_ctx()
            if contexts is not None and ctx != contexts:
                raise AssertionError(f"All Parameters must be initialized on the same set of contexts, but "
                                     f"Parameter {p.name} is initialized on {ctx} while previous "
                                     f"Parameters are initialized on {contexts}.")
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer: Any, optimizer_params: dict) -> None:
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError("optimizer_params must be None if optimizer is an instance of "
                                     "Optimizer instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict   # not a copy: lr_mult/wd_mult changes count
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters: list[opt.Updater] = [opt.get_updater(self._optimizer)
                                             for _ in self._contexts or [None]]

    def _reset_kvstore(self) -> None:
        """Drop the store: the next step makes a new one and gives it the current weights."""
        kv = getattr(self, "_kvstore", None)
        if kv is not None and "dist" in kv.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore: Any = None
        self._distributed: bool | None = None
        self._update_on_kvstore: bool | None = None
        self._params_to_init: list[Parameter] = list(self._params)

    def _init_kvstore(self) -> None:
        """Make the store and choose ``_update_on_kvstore`` (see the module's description)."""
        self._contexts = self._check_contexts()
        while len(self._updaters) < len(self._contexts):
            self._updaters.append(opt.get_updater(self._optimizer))
        asked = self._kvstore_params["update_on_kvstore"]
        arrays = [_arrays(p)[0] for p in self._params if p._data is not None]
        if any(p.stype != "default" for p in self._params):
            # sparse weights: a store that updates them (its rows are pulled from it)
            if asked is False:
                raise ValueError("Cannot set update_on_kvstore=False when sparse weights are present.")
            kv, on_kv = _sparse_store(self._kvstore_params["kvstore"]), True
            asked = None
        else:
            kv, on_kv = _create_kvstore(self._kvstore_params["kvstore"], len(self._contexts), arrays)
            if any(p.grad_stype != "default" for p in self._params):
                # dense weights, sparse gradients: the store sums, each context updates its rows
                on_kv = kv is not None and "dist" in kv.type
        self._distributed = kv is not None and "dist" in kv.type
        if self._distributed and "async" in kv.type:
            if asked is False:
                raise ValueError("Please set update_on_kvstore=True when training in async mode.")
            on_kv = True
        if kv is not None and asked is not None:
            if asked and not kv.is_capable(kvs.KVStoreBase.OPTIMIZER):
                raise ValueError(f"Please set update_on_kvstore=False when training with {type(kv)}")
            on_kv = bool(asked)
        if kv is not None and on_kv:
            kv.set_optimizer(self._optimizer)
        self._kvstore = kv
        self._update_on_kvstore = on_kv if kv is not None else None
        self._kv_initialized = True

    def _init_params(self) -> None:
        """Give the store each parameter's weights (those still waiting for deferred
        initialization later) and copy the first context's to the others."""
        waiting = []
        if self._kvstore is not None:
            for p in self._params_to_init:
                if p._deferred_init:
                    waiting.append(p)
                elif p.stype != "default":     # the store keeps the weight; rows are pulled
                    self._kvstore.init(self._param2idx[p.name], _arrays(p)[0])
                else:
                    datas = _arrays(p)
                    self._kvstore.broadcast(self._param2idx[p.name], datas[0], datas)
        self._params_to_init = waiting

    def _ready(self) -> None:
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # -- learning rate ------------------------------------------------------------------------
    @property
    def optimizer(self) -> opt.Optimizer:
        """The optimizer applied."""
        return self._optimizer

    @property
    def learning_rate(self) -> float:
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr: float) -> None:
        """Set the optimizer's learning rate."""
        self._optimizer.set_learning_rate(lr)

    # -- steps --------------------------------------------------------------------------------
    def _check_and_rescale_grad(self, scale: float) -> None:
        if self._update_on_kvstore and self._distributed and self._kv_initialized \
                and self._optimizer.rescale_grad != scale:
            raise UserWarning("Possible change in the `batch_size` from previous `step` detected. "
                              "Optimizer gradient normalizing factor will not change w.r.t new "
                              "batch_size when update_on_kvstore=True and when distributed kvstore "
                              "is used.")
        self._optimizer.rescale_grad = scale

    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:  # noqa: FBT001, FBT002
        """Reduce the gradients over contexts and update the parameters, gradients scaled by
        ``1 / batch_size``. A gradient no ``backward`` wrote since the last step is an error
        (MXNet's ``UserWarning``), or with ``ignore_stale_grad`` that parameter is skipped."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._ready()
        if self._kvstore is not None and self._update_on_kvstore:
            stale = self._stale(ignore_stale_grad)
            for p in self._params:
                for d in _arrays(p) if p.grad_req != "null" and p not in stale else []:
                    d._fresh_grad = False
            self._allreduce_grads(skip=stale)
            return
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients over its contexts into every context's gradient (for
        :meth:`update`; not when the store updates the weights)."""
        self._ready()
        if self._kvstore is not None and self._update_on_kvstore:
            raise AssertionError("allreduce_grads() when parameters are updated on kvstore is not "
                                 "supported. Try setting `update_on_kvstore` to False when creating "
                                 "trainer.")
        self._allreduce_grads()

    def _allreduce_grads(self, skip: Any = ()) -> None:
        if self._kvstore is None:
            return
        for i, p in enumerate(self._params):
            if p.grad_req == "null" or p in skip:
                continue
            if self._update_on_kvstore and p.stype != "default":   # rows pulled when asked for
                self._kvstore.push(i, p.list_grad(), priority=-i)
            elif self._update_on_kvstore:
                self._kvstore.pushpull(i, p.list_grad(), out=_arrays(p), priority=-i)
            else:
                self._kvstore.pushpull(i, p.list_grad(), priority=-i)

    def _row_sparse_pull(self, parameter: Parameter, out: Any, row_id: Any,
                         full_idx: bool = False) -> None:  # noqa: FBT001, FBT002
        """Pull the rows ``row_id`` of ``parameter`` (a row_sparse weight) from the store into
        ``out`` (an array or a list); ``full_idx``: every row."""
        with autograd.pause():      # called from a forward pass that may be recording
            if not self._kv_initialized:
                self._init_kvstore()
            if parameter in self._params_to_init:   # only this one: the others' arrays may be
                self._params_to_init.remove(parameter)     # recorded already in this pass
                self._kvstore.init(self._param2idx[parameter.name], _arrays(parameter)[0])
            idx = self._param2idx[parameter.name]
            if full_idx and "dist" not in self._kvstore.type:
                self._kvstore.pull(idx, out=out, priority=-idx)
            else:
                self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:  # noqa: FBT001, FBT002
        """Update the parameters without reducing the gradients over contexts (call
        :meth:`allreduce_grads` first); not when the store updates the weights."""
        self._ready()
        if self._kvstore is not None and self._update_on_kvstore:
            raise AssertionError("update() when parameters are updated on kvstore is not supported. "
                                 "Try setting `update_on_kvstore` to False when creating trainer.")
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _stale(self, ignore_stale_grad: bool) -> list[Parameter]:
        """The parameters with a gradient not written since the last step (an error unless
        ignored)."""
        stale = []
        for p in self._params:
            if p.grad_req == "null":
                continue
            old = [d for d in _arrays(p) if not getattr(d, "_fresh_grad", False)]
            if old and not ignore_stale_grad:
                raise UserWarning(
                    f"Gradient of Parameter `{p.name}` on context {old[0].context} has not been updated "
                    "by backward since last `step`. This could mean a bug in your model that made it "
                    "only use a subset of the Parameters (Blocks) for this iteration. If you are "
                    "intentionally only using a subset, call step with ignore_stale_grad=True to "
                    "suppress this warning and skip updating of Parameters with stale gradient")
            if old:
                stale.append(p)
        return stale

    def _update(self, ignore_stale_grad: bool) -> None:
        self._stale(ignore_stale_grad)
        updates: list[list[tuple]] = [[] for _ in self._updaters]
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            for upd, arr, grad in zip(updates, _arrays(p), p.list_grad()):
                if getattr(arr, "_fresh_grad", False):     # (stale ones only get here when ignored)
                    upd.append((i, grad, arr))
                    arr._fresh_grad = False
        for updater, upd in zip(self._updaters, updates):
            if upd:
                idx, grads, weights = zip(*upd)
                updater(list(idx), list(grads), list(weights))

    # -- states -------------------------------------------------------------------------------
    def save_states(self, fname: str) -> None:
        """Write the optimizer and its states (the store's, or the first context's) to ``fname``;
        the parameters' ``lr_mult``/``wd_mult`` are not saved."""
        self._ready()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise AssertionError("Cannot save trainer states when some parameters are not yet "
                                     "initialized in kvstore.")
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
            return
        with open(fname, "wb") as f:
            f.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname: str) -> None:
        """Read states written by :meth:`save_states` (into the store's updater, or every context's);
        the optimizer read becomes this trainer's, with this trainer's parameters."""
        self._ready()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))
