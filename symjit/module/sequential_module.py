"""``mx.mod.SequentialModule``: modules chained, each one's outputs the next one's data.

``add(module, take_labels=True)`` gives a module the batch's labels (usually the last: the loss);
``auto_wiring=True`` renames the previous outputs to the module's data names. Backward passes
each module's input gradients to the module before it, so every module but the first is bound
with ``inputs_need_grad``.

>>> import symjit as mx
>>> net1 = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc1')
>>> net2 = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('fc1_output'), num_hidden=2,
...                                                   name='fc2'), name='softmax')
>>> seq = mx.mod.SequentialModule()
>>> _ = seq.add(mx.mod.Module(net1, label_names=None)).add(mx.mod.Module(net2, data_names=['fc1_output']),
...                                                        take_labels=True, auto_wiring=True)
>>> seq.bind([('data', (3, 5))], [('softmax_label', (3,))])
>>> seq.output_shapes
[('softmax_output', (3, 2))]
"""
from __future__ import annotations

import copy
import logging
from typing import Any

from ..base import MXNetError, ParamError
from ..initializer import Uniform
from .module import Module

__all__ = ["SequentialModule"]

_DEFAULT_INIT = Uniform(0.01)   # MXNet's default here (shared, never mutated)


class SequentialModule(Module):
    """A chain of modules (see the module docstring)."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger: Any = logging):
        self.logger = logger
        self._modules: list[Module] = []
        self._metas: list[dict] = []
        self._label_shapes = None
        self.binded = self.for_training = self.inputs_need_grad = False
        self.params_initialized = self.optimizer_initialized = False

    def add(self, module: Module, **kwargs: Any) -> SequentialModule:
        """Append ``module`` (options ``take_labels``, ``auto_wiring``); returns self, to chain."""
        unknown = sorted(set(kwargs) - {self.META_TAKE_LABELS, self.META_AUTO_WIRING})
        if unknown:
            raise ParamError(f"SequentialModule.add: unknown options {unknown}")
        self._modules.append(module)
        self._metas.append(dict(kwargs))
        self.binded = self.params_initialized = self.optimizer_initialized = False
        return self

    def _first_last(self, where: str) -> tuple[Module, Module]:
        if not self._modules:
            raise MXNetError(f"SequentialModule.{where}: add modules first")
        return self._modules[0], self._modules[-1]

    # -- what Module's shared code reads ------------------------------------------------------
    @property
    def _exec_group(self) -> Any:
        return self._first_last("score")[1]._exec_group

    @property
    def _symbol(self) -> Any:
        return self._first_last("symbol")[1].symbol

    @property
    def symbol(self) -> Any:
        """The last module's symbol."""
        return self._symbol

    @property
    def data_names(self) -> list[str]:
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self) -> list[str]:
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self) -> Any:
        self._need("data_shapes", binded=True)
        return self._modules[0].data_shapes

    @property
    def label_shapes(self) -> Any:
        self._need("label_shapes", binded=True)
        return self._label_shapes

    @property
    def output_shapes(self) -> Any:
        self._need("output_shapes", binded=True)
        return self._modules[-1].output_shapes

    # -- binding, parameters, optimizer ---------------------------------------------------------
    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind each module on the previous one's output shapes."""
        self._first_last("bind")
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNetError("SequentialModule.bind: shared_module is not supported")
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        shapes, needs_labels = data_shapes, False
        for i, (module, meta) in enumerate(zip(self._modules, self._metas)):
            takes = bool(meta.get(self.META_TAKE_LABELS))
            needs_labels |= takes
            if meta.get(self.META_AUTO_WIRING):
                names = module.data_names
                shapes = [(n, tuple(s[1])) for n, s in zip(names, shapes)]   # (name, shape) or DataDesc
                if len(names) != len(shapes):
                    raise ParamError(f"SequentialModule.bind: module {i} takes data {names} but the "
                                     f"previous module gives {len(shapes)} outputs")
            module.bind(shapes, label_shapes if takes else None, for_training,
                        bool(inputs_need_grad or (for_training and i > 0)), force_rebind, None, grad_req)
            shapes = module.output_shapes
        self._label_shapes = label_shapes if needs_labels else None
        self.binded = True

    def init_params(self, initializer: Any = _DEFAULT_INIT, arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False, force_init: bool = False,
                    allow_extra: bool = False) -> None:
        """Initialise every module's parameters (their names must not collide)."""
        if self.params_initialized and not force_init:
            return
        self._need("init_params", binded=True)
        seen: dict[str, int] = {}
        for i, module in enumerate(self._modules):
            module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                               allow_missing=allow_missing, force_init=force_init, allow_extra=True)
            arg, aux = module.get_params()
            for name in list(arg) + list(aux):
                if name in seen:
                    raise MXNetError(f"SequentialModule: parameter {name!r} is in module {seen[name]} and "
                                     f"module {i}; names must be unique")
                seen[name] = i
        self.params_initialized = True

    def get_params(self) -> tuple[dict, dict]:
        self._need("get_params", binded=True, params=True)
        arg_params: dict = {}
        aux_params: dict = {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def set_params(self, arg_params: dict, aux_params: dict | None, allow_missing: bool = False,
                   force_init: bool = True, allow_extra: bool = False) -> None:
        for module in self._modules:
            module.set_params(arg_params, aux_params, allow_missing=allow_missing, force_init=force_init,
                              allow_extra=True)
        self.params_initialized = True

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),), force_init: bool = False) -> None:
        """Give every module the optimizer."""
        self._need("init_optimizer", binded=True, params=True)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    # -- computation ---------------------------------------------------------------------------
    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Forward through the chain."""
        self._need("forward", binded=True, params=True)
        batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            batch.data = module.get_outputs()
            batch.provide_data = None   # shapes come from the arrays
            if getattr(batch, "bucket_key", None) is not None:
                batch.bucket_key = None

    def backward(self, out_grads: Any = None) -> None:
        """Backward through the chain, each module's input gradients the previous one's out_grads."""
        self._need("backward", binded=True, params=True)
        for i in range(len(self._modules) - 1, -1, -1):
            self._modules[i].backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = self._modules[i].get_input_grads()

    def update(self) -> None:
        self._need("update", binded=True, params=True, optimizer=True)
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        return self._modules[-1].get_outputs(merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        return self._modules[0].get_input_grads(merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Update ``eval_metric`` through the modules that take labels."""
        for meta, module in zip(self._metas, self._modules):
            if meta.get(self.META_TAKE_LABELS):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon: Any) -> None:
        for module in self._modules:
            module.install_monitor(mon)

    def score(self, eval_data: Any, eval_metric: Any, num_batch: int | None = None,
              batch_end_callback: Any = None, score_end_callback: Any = None, reset: bool = True,
              epoch: int = 0, sparse_row_id_fn: Any = None) -> list[tuple[str, Any]]:
        """Run over ``eval_data`` (inference) and return the metric's values."""
        from .. import metric as _metric
        self._need("score", binded=True, params=True)
        if reset:
            eval_data.reset()
        eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            self.update_metric(eval_metric, batch.label)
        return eval_metric.get_name_value()
