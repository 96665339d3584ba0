"""``mx.mod.BucketingModule``: one bound Module per bucket (e.g. sentence length), all sharing the
default bucket's parameters, gradients' optimizer and updater.

``sym_gen(bucket_key) -> (symbol, data_names, label_names)`` builds a bucket's network. The
default bucket (the largest, usually) is bound first; a batch with another ``bucket_key`` binds
that bucket's module on first sight with ``shared_module`` = the default one, so every bucket
reads and updates the same parameter arrays. Each bucket compiles its own program (kernels of the
same form are shared through the kernel cache).

>>> import symjit as mx
>>> def sym_gen(n):
...     x = mx.sym.Variable('data')
...     return mx.sym.FullyConnected(x, num_hidden=n, name='fc'), ('data',), ()
>>> mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=3)
>>> mod.symbol.infer_shape(data=(2, 5))[1]
[(2, 3)]
"""
from __future__ import annotations

import logging
from typing import Any

from .. import model as _model
from .. import ndarray as nd
from ..base import MXNetError, ParamError, write_atomic
from ..initializer import Uniform
from ..symbol.naming import NameManager
from .module import Module

__all__ = ["BucketingModule"]

_DEFAULT_INIT = Uniform(0.01)   # MXNet's default for BucketingModule.init_params (shared, never mutated)


class BucketingModule(Module):
    """A Module whose network depends on the batch's ``bucket_key`` (see the module docstring)."""

    def __init__(self, sym_gen: Any, default_bucket_key: Any = None, logger: Any = logging,
                 context: Any = None, work_load_list: list | None = None, fixed_param_names: Any = None,
                 state_names: Any = None, group2ctxs: Any = None, compression_params: Any = None):
        if default_bucket_key is None:
            raise ParamError("BucketingModule: default_bucket_key is required")
        if not callable(sym_gen):
            raise ParamError(f"BucketingModule: sym_gen must be callable, got {type(sym_gen).__name__}")
        self._sym_gen, self._default_bucket_key = sym_gen, default_bucket_key
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._kwargs = dict(logger=logger, context=context, work_load_list=work_load_list,
                            fixed_param_names=fixed_param_names, state_names=state_names,
                            group2ctxs=group2ctxs)
        self._template = Module(symbol, data_names, label_names, **self._kwargs)   # checks the names
        self.logger = logger
        self._buckets: dict[Any, Module] = {}
        self._curr_module: Module | None = None
        self._curr_bucket_key = None
        self._monitor = None
        self._grad_req: Any = "write"
        self._bucketing_params_dirty = False
        self._loaded: tuple | None = None      # (arg, aux) of load(), set at the bind
        self.binded = self.params_initialized = self.optimizer_initialized = False
        self.for_training = self.inputs_need_grad = False

    def _call_sym_gen(self, key: Any) -> tuple[Any, Any, Any]:
        with NameManager():     # each bucket's automatic names start afresh, as in MXNet
            out = self._sym_gen(key)
        if not (isinstance(out, tuple) and len(out) == 3):
            raise ParamError(f"BucketingModule: sym_gen({key!r}) must return (symbol, data_names, "
                             f"label_names), got {type(out).__name__}")
        return out

    @property
    def _active(self) -> Module:
        return self._curr_module if self._curr_module is not None else self._template

    # -- what Module's shared code reads ------------------------------------------------------
    @property
    def _exec_group(self) -> Any:          # score / predict read the current bucket's group
        return self._active._exec_group

    @property
    def _symbol(self) -> Any:
        return self._active._symbol

    @property
    def symbol(self) -> Any:
        """The current bucket's symbol (the default bucket's before binding)."""
        return self._active._symbol

    @property
    def data_names(self) -> list[str]:
        return self._active.data_names

    @property
    def label_names(self) -> list[str]:
        return self._active.label_names

    @property
    def output_names(self) -> list[str]:
        return self._active.output_names

    @property
    def data_shapes(self) -> Any:
        self._need("data_shapes", binded=True)
        return self._curr_module.data_shapes

    @property
    def label_shapes(self) -> Any:
        self._need("label_shapes", binded=True)
        return self._curr_module.label_shapes

    @property
    def output_shapes(self) -> Any:
        self._need("output_shapes", binded=True)
        return self._curr_module.output_shapes

    @property
    def default_bucket_key(self) -> Any:
        return self._default_bucket_key

    # -- binding and buckets --------------------------------------------------------------------
    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind the default bucket's module for these shapes (the largest bucket's, usually)."""
        if shared_module is not None:
            raise MXNetError("BucketingModule.bind: shared_module is not supported")
        if self._loaded is not None:
            params, self._loaded = self._loaded, None
        else:
            params = self.get_params() if self.params_initialized else None
        if force_rebind:
            self._buckets, self._curr_module, self.binded = {}, None, False
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self.for_training, self.inputs_need_grad, self._grad_req = for_training, inputs_need_grad, grad_req
        symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        module = Module(symbol, data_names, label_names, **self._kwargs)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, grad_req=grad_req)
        self._buckets = {self._default_bucket_key: module}
        self._curr_module, self._curr_bucket_key = module, self._default_bucket_key
        self.binded = True
        if params is not None:
            self.set_params(*params)

    def switch_bucket(self, bucket_key: Any, data_shapes: Any, label_shapes: Any = None) -> None:
        """Make ``bucket_key``'s module current, binding it (sharing the default bucket's
        parameters) the first time."""
        self._need("switch_bucket", binded=True)
        if bucket_key not in self._buckets:
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = Module(symbol, data_names, label_names, **self._kwargs)
            default = self._buckets[self._default_bucket_key]
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, shared_module=default, grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module, self._curr_bucket_key = self._buckets[bucket_key], bucket_key

    # -- parameters and optimizer -----------------------------------------------------------------
    def init_params(self, initializer: Any = _DEFAULT_INIT, arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False, force_init: bool = False,
                    allow_extra: bool = False) -> None:
        """Initialise the (shared) parameters through the current module."""
        if self.params_initialized and not force_init:
            return
        self._need("init_params", binded=True)
        self._curr_module.init_params(initializer, arg_params, aux_params, allow_missing, force_init,
                                      allow_extra)
        self._bucketing_params_dirty = False
        self.params_initialized = True

    def get_params(self) -> tuple[dict, dict]:
        """The parameters (copied from the devices when updates happened since)."""
        self._need("get_params", binded=True, params=True)
        self._curr_module._params_dirty = self._curr_module._params_dirty or self._bucketing_params_dirty
        params = self._curr_module.get_params()
        self._bucketing_params_dirty = False
        return params

    def set_params(self, arg_params: dict, aux_params: dict | None, allow_missing: bool = False,
                   force_init: bool = True, allow_extra: bool = False) -> None:
        """Set the shared parameters."""
        self._need("set_params", binded=True)
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                     force_init=force_init, allow_extra=allow_extra)
        self._bucketing_params_dirty = True
        self.params_initialized = True

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),), force_init: bool = False) -> None:
        """Create the optimizer on the current module; every bucket borrows it."""
        self._need("init_optimizer", binded=True, params=True)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for module in self._buckets.values():
            if module is not self._curr_module:
                module.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def borrow_optimizer(self, shared_module: Module) -> None:
        self._curr_module.borrow_optimizer(shared_module)
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        self._curr_module.save_optimizer_states(fname)

    def load_optimizer_states(self, fname: str) -> None:
        self._curr_module.load_optimizer_states(fname)

    # -- computation ---------------------------------------------------------------------------
    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Bind the batch's bucket ahead of its forward."""
        key = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self.switch_bucket(key, None, None)

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Forward on the batch's bucket (``data_batch.bucket_key``; the default bucket without)."""
        self._need("forward", binded=True, params=True)
        key = getattr(data_batch, "bucket_key", None)
        key = self._default_bucket_key if key is None else key
        shapes = getattr(data_batch, "provide_data", None)
        if key not in self._buckets and not shapes:
            raise MXNetError(f"BucketingModule.forward: bucket {key!r} is not bound and the batch has no "
                             "provide_data")
        self.switch_bucket(key, shapes, getattr(data_batch, "provide_label", None))
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads: Any = None) -> None:
        self._need("backward", binded=True, params=True)
        self._curr_module.backward(out_grads)

    def update(self) -> None:
        """Update the shared parameters with the current bucket's gradients."""
        self._need("update", binded=True, params=True, optimizer=True)
        self._bucketing_params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        return self._curr_module.get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        return self._curr_module.get_input_grads(merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        """Install a Monitor on every bucket's module (and those bound later)."""
        self._need("install_monitor", binded=True)
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    def reshape(self, data_shapes: Any, label_shapes: Any = None) -> None:
        self._curr_module.reshape(data_shapes, label_shapes)

    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False) -> None:
        """MXNet's files of a bucketing checkpoint: the shared parameters
        (``prefix-%04d.params``), each bound bucket's symbol (``prefix-<key>-symbol.json``) and
        the bucket keys (``prefix.buckets``, int32), with the optimizer states when asked."""
        if not self._buckets:
            raise MXNetError("BucketingModule.save_checkpoint: no bucket is bound, nothing to save")
        default = self._buckets[self._default_bucket_key]
        default._params_dirty = default._params_dirty or self._bucketing_params_dirty
        default.save_params(f"{prefix}-{int(epoch):04d}.params")
        for key in self._buckets:
            write_atomic(f"{prefix}-{key}-symbol.json", self._call_sym_gen(key)[0].tojson())
        nd.save(f"{prefix}.buckets", [nd.array(list(self._buckets), dtype="int32")])
        if save_optimizer_states:
            default.save_optimizer_states(f"{prefix}-{int(epoch):04d}.states")

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen: Any = None, default_bucket_key: Any = None,
             **kwargs: Any) -> BucketingModule:
        """A BucketingModule over ``sym_gen`` with the parameters of checkpoint ``prefix``/``epoch``
        (``prefix-%04d.params``), set when it is bound; the buckets bind from ``sym_gen`` as
        batches need them (the saved bucket symbols are what ``sym_gen`` makes).

        >>> import os, tempfile, symjit as mx
        >>> def sym_gen(n):
        ...     return mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc'), ('data',), ()
        >>> mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
        >>> mod.bind([('data', (1, 4))], for_training=False); mod.init_params()
        >>> prefix = os.path.join(tempfile.mkdtemp(), 'net')
        >>> mod.save_checkpoint(prefix, 1)
        >>> sorted(os.listdir(os.path.dirname(prefix)))
        ['net-0001.params', 'net-4-symbol.json', 'net.buckets']
        >>> back = mx.mod.BucketingModule.load(prefix, 1, sym_gen, 4)
        >>> back.bind([('data', (1, 4))], for_training=False)
        >>> bool((back.get_params()[0]['fc_weight'] == mod.get_params()[0]['fc_weight']).asnumpy().all())
        True
        """
        if sym_gen is None or default_bucket_key is None:
            raise ParamError("BucketingModule.load: sym_gen and default_bucket_key are required")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        mod._loaded = _model.load_params(prefix, epoch)
        mod.params_initialized = True
        return mod
