"""``mx.mod.Module``: MXNet 1.x's intermediate-level training interface over a Symbol.

>>> import numpy as np, symjit as mx
>>> net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2,
...                            name='fc'), name='softmax')
>>> mod = mx.mod.Module(net)
>>> mod.bind(data_shapes=[('data', (4, 3))], label_shapes=[('softmax_label', (4,))])
>>> mod.init_params()
>>> mod.init_optimizer(optimizer_params={'learning_rate': 0.1})
>>> mod.forward(mx.io.DataBatch([mx.nd.ones((4, 3))], [mx.nd.zeros((4,))]))
>>> mod.backward(); mod.update()
>>> mod.get_outputs()[0].shape, mod.output_shapes
((4, 2), [('softmax_output', (4, 2))])
"""
from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np

from .. import metric as _metric
from .. import model as _model
from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MXNetError, ParamError, ShapeError, shape_str, write_atomic
from ..callback import BatchEndParam
from ..context import Context, cpu
from ..initializer import InitDesc
from ..io import DataBatch, DataDesc
from .base_module import DEFAULT_INITIALIZER, BaseModule, _call_all
from .executor_group import (
    DataParallelExecutorGroup,
    as_descs,
    create_kvstore,
    global_batch_size,
    initialize_kvstore,
    update_params,
    update_params_on_kvstore,
)

__all__ = ["Module"]



def _names(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    names = list(value)
    for n in names:
        if not isinstance(n, str):
            raise ParamError(f"Module: {what} must be names (str), got {n!r}")
    return names


def _check_names(descs: list[DataDesc], names: list[str], what: str) -> None:
    got = [d.name for d in descs]
    if sorted(got) != sorted(names):
        raise ParamError(f"Module.bind: {what}_shapes name {got}, but the module's {what}_names are "
                         f"{names}")


class MissingParamError(ParamError, RuntimeError):
    """Parameters absent from the values given to ``init_params``/``set_params`` (a RuntimeError,
    as in MXNet)."""


class Module(BaseModule):
    """A symbol with its parameters, bound on one or several contexts (data parallel).

    ``data_names``/``label_names`` are the symbol's input arguments; every other argument is a
    parameter (``fixed_param_names`` are never updated: their gradient request is ``'null'``).
    """

    def __init__(self, symbol: Any, data_names: Any = ("data",), label_names: Any = ("softmax_label",),
                 logger: Any = logging, context: Any = None, work_load_list: list | None = None,
                 fixed_param_names: Any = None, state_names: Any = None, group2ctxs: Any = None,
                 compression_params: Any = None):
        super().__init__(logger)
        self._symbol = symbol
        self._context = [cpu()] if context is None else (
            list(context) if isinstance(context, (list, tuple)) else [context])
        for c in self._context:
            if not isinstance(c, Context):
                raise ParamError(f"Module: context must be a Context or a list of them, got {c!r}")
        self._work_load_list = list(work_load_list) if work_load_list else [1] * len(self._context)
        if isinstance(group2ctxs, (list, tuple)) and len(group2ctxs) != len(self._context):
            raise ParamError(f"Module: group2ctxs has {len(group2ctxs)} entries for "
                             f"{len(self._context)} contexts")
        self._group2ctxs = group2ctxs
        if len(self._work_load_list) != len(self._context):
            raise ParamError(f"Module: work_load_list has {len(self._work_load_list)} entries for "
                             f"{len(self._context)} contexts")
        self._data_names = _names(data_names, "data_names")
        self._label_names = _names(label_names, "label_names")
        self._state_names = _names(state_names, "state_names")
        self._fixed_param_names = _names(fixed_param_names, "fixed_param_names")
        arg_names = symbol.list_arguments()
        missing = [n for n in self._data_names + self._state_names if n not in arg_names]
        if missing:
            raise ParamError(f"Module: data/state names {missing} are not arguments of the symbol; "
                             f"arguments: {arg_names}")
        absent = [n for n in self._label_names if n not in arg_names]
        if absent:
            warnings.warn(f"Module: label names {absent} are not arguments of the symbol", stacklevel=2)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [n for n in arg_names if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params: dict | None = None
        self._aux_params: dict | None = None
        self._params_dirty = False
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = False
        self._updater = None
        self._preload_opt_states: str | None = None
        self._exec_group: DataParallelExecutorGroup | None = None
        self._data_shapes: list[DataDesc] = []
        self._label_shapes: list[DataDesc] | None = None
        self._grad_req: Any = "write"

    # -- properties --------------------------------------------------------------------------
    @property
    def symbol(self) -> Any:
        """The module's symbol."""
        return self._symbol

    @property
    def data_names(self) -> list[str]:
        """Names of the data inputs."""
        return self._data_names

    @property
    def label_names(self) -> list[str]:
        """Names of the label inputs."""
        return self._label_names

    @property
    def output_names(self) -> list[str]:
        """Names of the symbol's outputs."""
        return self._output_names

    @property
    def data_shapes(self) -> list[DataDesc]:
        """The bound data shapes (DataDescs)."""
        self._need("data_shapes", binded=True)
        return self._data_shapes

    @property
    def label_shapes(self) -> list[DataDesc] | None:
        """The bound label shapes (None when bound without labels)."""
        self._need("label_shapes", binded=True)
        return self._label_shapes

    @property
    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """``(name, shape)`` of each output for the bound batch."""
        self._need("output_shapes", binded=True)
        return self._exec_group.output_shapes()

    def _need(self, where: str, binded: bool = False, params: bool = False, optimizer: bool = False) -> None:
        if binded and not self.binded:
            raise MXNetError(f"Module.{where}: call bind() first")
        if params and not self.params_initialized:
            raise MXNetError(f"Module.{where}: call init_params() first")
        if optimizer and not self.optimizer_initialized:
            raise MXNetError(f"Module.{where}: call init_optimizer() first")

    # -- binding and parameters --------------------------------------------------------------
    def bind(self, data_shapes: Any, label_shapes: Any = None, for_training: bool = True,
             inputs_need_grad: bool = False, force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        """Bind one executor per context for these input shapes (``[(name, shape)]``/DataDescs)."""
        if force_rebind:
            self._exec_group = None
            self.binded = False
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ParamError("Module.bind: inputs_need_grad=True needs for_training=True")
        data = as_descs(data_shapes, "Module.bind")
        labels = as_descs(label_shapes, "Module.bind")
        _check_names(data, self._data_names, "data")
        if labels:
            _check_names(labels, self._label_names, "label")
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._grad_req = grad_req
        shared_group = shared_module._exec_group if shared_module is not None else None
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, data, labels, self._param_names,
            for_training, inputs_need_grad, shared_group, self.logger, self._fixed_param_names, grad_req,
            self._group2ctxs)
        self._data_shapes, self._label_shapes = data, (labels or None)
        self.binded = True
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params, self._aux_params = shared_module._arg_params, shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=True)
        else:
            g = self._exec_group
            self._arg_params = {n: nd.zeros(b[0].shape, dtype=b[0].dtype)
                                for n, b in zip(g.param_names, g.param_arrays)}
            self._aux_params = {n: nd.zeros(b[0].shape, dtype=b[0].dtype)
                                for n, b in zip(g.aux_names, g.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)

    def reshape(self, data_shapes: Any, label_shapes: Any = None) -> None:
        """Re-bind for new input shapes (parameters are kept; uses ``Executor.reshape``)."""
        self._need("reshape", binded=True)
        data, labels = as_descs(data_shapes, "Module.reshape"), as_descs(label_shapes, "Module.reshape")
        _check_names(data, self._data_names, "data")
        self._exec_group.reshape(data, labels)
        self._data_shapes, self._label_shapes = data, (labels or None)

    def init_params(self, initializer: Any = DEFAULT_INITIALIZER, arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Initialise the parameters: copied from ``arg_params``/``aux_params`` where given, else
        filled by ``initializer`` (with each variable's attributes, so ``__init__`` attrs apply)."""
        if self.params_initialized and not force_init:
            warnings.warn("Module.init_params: parameters already initialized and force_init=False; "
                          "call ignored", stacklevel=2)
            return
        self._need("init_params", binded=True)
        pairs = (("arg_params", arg_params, self._arg_params), ("aux_params", aux_params, self._aux_params))
        for what, given, own in pairs if not allow_missing else ():
            missing = sorted(set(own) - set(given)) if given is not None else []
            if missing:
                raise MissingParamError(f"Module.init_params: {missing} are not presented in the given "
                                        f"{what} (pass allow_missing=True to initialize them)")
        for what, given, own in pairs:
            extra = sorted(set(given or {}) - set(own))
            if extra and not allow_extra:
                raise ParamError(f"Module.init_params: {what} has {extra}, which the module does not "
                                 "use (pass allow_extra=True to ignore them)")
        attrs = self._symbol.attr_dict()
        for own, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name in sorted(own):
                self._init_one(InitDesc(name, attrs.get(name)), own[name], given, initializer,
                               allow_missing)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params)

    @staticmethod
    def _init_one(desc: InitDesc, arr: nd.NDArray, given: dict | None, initializer: Any,
                  allow_missing: bool) -> None:
        if given is not None and desc in given:
            src = given[desc]
            if src is arr:
                return
            if tuple(src.shape) != arr.shape:
                raise ShapeError(f"Module.init_params: parameter {str(desc)!r} has shape "
                                 f"{shape_str(tuple(src.shape))}, the module needs {shape_str(arr.shape)}")
            arr[:] = src.asnumpy() if isinstance(src, nd.NDArray) else np.asarray(src)
            return
        if given is not None and not allow_missing:
            raise ParamError(f"Module.init_params: {str(desc)!r} is not presented in the given "
                             "parameters (pass allow_missing=True to initialize it)")
        if initializer is None:
            if given is None:
                raise ParamError(f"Module.init_params: no initializer for {str(desc)!r}")
            return
        initializer(desc, arr)

    def set_params(self, arg_params: dict, aux_params: dict | None, allow_missing: bool = False,
                   force_init: bool = True, allow_extra: bool = False) -> None:
        """Assign parameter values (missing ones are an error unless ``allow_missing``)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params or {},
                         allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)

    def get_params(self) -> tuple[dict, dict]:
        """``(arg_params, aux_params)``: CPU copies averaged over the devices."""
        self._need("get_params", binded=True, params=True)
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def _sync_params_from_devices(self) -> None:
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # -- optimizer ---------------------------------------------------------------------------
    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),), force_init: bool = False) -> None:
        """Create the optimizer (``rescale_grad`` defaults to 1/batch size) and the kvstore."""
        self._need("init_optimizer", binded=True, params=True)
        if self.optimizer_initialized and not force_init:
            warnings.warn("Module.init_optimizer: optimizer already initialized, ignoring", stacklevel=2)
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        n = len(self._context)
        kv, on_kv = create_kvstore(kvstore, n, self._arg_params)
        rescale = 1.0 / global_batch_size(self._exec_group.batch_size, kv)
        names = self._exec_group.param_names
        idx2name = dict(enumerate(names)) if on_kv else {
            i * n + k: name for i, name in enumerate(names) for k in range(n)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params or {})
            params.setdefault("rescale_grad", rescale)
            optimizer = opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name, **params)
        elif isinstance(optimizer, opt.Optimizer):
            if optimizer.rescale_grad != rescale:
                warnings.warn(f"Module.init_optimizer: optimizer.rescale_grad is {optimizer.rescale_grad},"
                              f" not 1/batch_size = {rescale}; is that intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = dict(idx2name)
                optimizer.set_wd_mult(dict(optimizer.wd_mult))
        else:
            raise ParamError(f"Module.init_optimizer: optimizer must be a name or an Optimizer, got "
                             f"{type(optimizer).__name__}")
        self._optimizer, self._kvstore, self._update_on_kvstore = optimizer, kv, on_kv
        self._updater = None
        if kv is not None:
            if on_kv:
                kv.set_optimizer(optimizer)
            initialize_kvstore(kv, self._exec_group.param_arrays, self._arg_params, names, on_kv)
        if not on_kv:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module: Module) -> None:
        """Use another module's optimizer, kvstore and updater."""
        if not shared_module.optimizer_initialized:
            raise MXNetError("Module.borrow_optimizer: the shared module has no optimizer")
        self._optimizer, self._kvstore = shared_module._optimizer, shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        """Write the optimizer states (symjit's non-pickle format) to ``fname``."""
        self._need("save_optimizer_states", optimizer=True)
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            write_atomic(fname, self._updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Read optimizer states written by :meth:`save_optimizer_states`."""
        self._need("load_optimizer_states", optimizer=True)
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            return
        try:
            with open(fname, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise MXNetError(f"Module.load_optimizer_states: cannot read {fname!r}: {exc}") from exc
        self._updater.set_states(data)

    # -- computation -------------------------------------------------------------------------
    def _batch_shapes(self, data_batch: Any) -> tuple[list[DataDesc], list[DataDesc] | None]:
        provided = getattr(data_batch, "provide_data", None)
        data = as_descs(provided, "Module.forward") if provided else [
            DataDesc(d.name, tuple(a.shape), d.dtype, d.layout)
            for d, a in zip(self._data_shapes, data_batch.data)]
        provided = getattr(data_batch, "provide_label", None)
        if provided:
            return data, as_descs(provided, "Module.forward")
        if self._label_shapes and data_batch.label:
            return data, [DataDesc(d.name, tuple(a.shape), d.dtype, d.layout)
                          for d, a in zip(self._label_shapes, data_batch.label)]
        return data, None

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Forward on a DataBatch (re-binds automatically when its shapes differ)."""
        self._need("forward", binded=True, params=True)
        if not isinstance(getattr(data_batch, "data", None), (list, tuple)):
            raise ParamError(f"Module.forward: expected a DataBatch, got {type(data_batch).__name__}")
        new = tuple(tuple(a.shape) for a in data_batch.data)
        if new != tuple(tuple(d.shape) for d in self._data_shapes):
            self.reshape(*self._batch_shapes(data_batch))
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads: Any = None) -> None:
        """Backward pass (``out_grads`` for outputs that are not loss layers)."""
        self._need("backward", binded=True, params=True)
        self._exec_group.backward(out_grads)

    def update(self) -> None:
        """Apply the optimizer to every parameter with the gradients of the last backward."""
        self._need("update", binded=True, params=True, optimizer=True)
        self._params_dirty = True
        g = self._exec_group
        if self._update_on_kvstore:
            update_params_on_kvstore(g.param_arrays, g.grad_arrays, self._kvstore, g.param_names)
        else:
            update_params(g.param_arrays, g.grad_arrays, self._updater, len(self._context),
                          self._kvstore, g.param_names)

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """The outputs of the last forward (merged over devices)."""
        self._need("get_outputs", binded=True, params=True)
        return self._exec_group.get_outputs(merge_multi_context)

    def get_states(self, merge_multi_context: bool = True) -> list:
        """The arrays of the ``state_names`` inputs (concatenated over devices, or one list of
        per-device arrays per state)."""
        self._need("get_states", binded=True, params=True)
        group = self._exec_group
        per_device = [[e.arg_dict[n] for e in group.execs] for n in self._state_names]
        return group._merge(per_device, merge_multi_context, [0] * len(per_device))

    def set_states(self, states: Any = None, value: Any = None) -> None:
        """Set the ``state_names`` inputs: from ``states`` (one list of per-device arrays per
        state, as ``get_states(merge_multi_context=False)`` gives them) or all to the number ``value``."""
        self._need("set_states", binded=True, params=True)
        if (states is None) == (value is None):
            raise ParamError("Module.set_states: give exactly one of states and value")
        execs = self._exec_group.execs
        if value is not None:
            for e in execs:
                for n in self._state_names:
                    e.arg_dict[n][:] = value
            return
        if len(states) != len(self._state_names):
            raise ParamError(f"Module.set_states: {len(states)} states for the state names "
                             f"{self._state_names}")
        for n, given in zip(self._state_names, states):
            per_device = given if isinstance(given, (list, tuple)) else [given]
            if len(per_device) != len(execs):
                raise ParamError(f"Module.set_states: state {n!r} has {len(per_device)} arrays for "
                                 f"{len(execs)} devices")
            for e, src in zip(execs, per_device):
                e.arg_dict[n][:] = src.asnumpy() if isinstance(src, nd.NDArray) else src

    @property
    def _total_exec_bytes(self) -> int:
        """The planned temporaries of this module's executors, in bytes (MXNet's attribute)."""
        return sum(e.planned_bytes for e in self._exec_group.execs) if self._exec_group else 0

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._need("get_input_grads", binded=True, params=True)
        return self._exec_group.get_input_grads(merge_multi_context)

    def update_metric(self, eval_metric: Any, labels: Any, pre_sliced: bool = False) -> None:
        """Accumulate ``eval_metric`` on the last outputs and ``labels``."""
        self._exec_group.update_metric(eval_metric, labels)

    def install_monitor(self, mon: Any) -> None:
        """Install a Monitor on every executor."""
        self._need("install_monitor", binded=True)
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch: Any, sparse_row_id_fn: Any = None) -> None:
        """Nothing to prepare (dense storage only)."""

    # -- high-level API ----------------------------------------------------------------------
    def score(self, eval_data: Any, eval_metric: Any, num_batch: int | None = None,
              batch_end_callback: Any = None, score_end_callback: Any = None, reset: bool = True,
              epoch: int = 0, sparse_row_id_fn: Any = None) -> list[tuple[str, Any]]:
        """Run over ``eval_data`` and return ``eval_metric.get_name_value()`` (padding samples of
        the last batch are not counted)."""
        self._need("score", binded=True, params=True)
        if reset:
            eval_data.reset()
        eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        actual = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            self._exec_group.update_metric(eval_metric, batch.label, pad=batch.pad or 0)
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            actual += 1
        _call_all(score_end_callback, BatchEndParam(epoch, actual, eval_metric, locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data: Any, num_batch: int | None = None, reset: bool = True):
        """Yield ``(outputs, nbatch, batch)`` per batch, outputs trimmed of padding."""
        self._need("iter_predict", binded=True, params=True)
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            real = self._exec_group.batch_size - (batch.pad or 0)
            yield [nd.array(o.asnumpy()[:real], dtype=o.dtype) for o in self.get_outputs()], nbatch, batch

    def predict(self, eval_data: Any, num_batch: int | None = None, merge_batches: bool = True,
                reset: bool = True, always_output_list: bool = False, sparse_row_id_fn: Any = None) -> Any:
        """Outputs over ``eval_data`` (a DataIter, or one array run as a single batch), padding cut
        off; merged into one NDArray per output unless ``merge_batches=False``."""
        if isinstance(eval_data, (np.ndarray, nd.NDArray)):
            arr = nd.array(eval_data, dtype=np.float32) if isinstance(eval_data, np.ndarray) else eval_data
            self.forward(DataBatch([arr]), is_train=False)
            return nd.array(self.get_outputs()[0].asnumpy())
        output_list = [outs for outs, _, _ in self.iter_predict(eval_data, num_batch, reset)]
        if not output_list or not merge_batches:
            return output_list
        count = len(output_list[0])
        if any(len(o) != count for o in output_list):
            raise MXNetError("Module.predict: cannot merge batches with different output counts")
        merged = [nd.array(np.concatenate([o[i].asnumpy() for o in output_list]),
                           dtype=output_list[0][i].dtype) for i in range(count)]
        return merged[0] if count == 1 and not always_output_list else merged

    # -- checkpoints -------------------------------------------------------------------------
    def save_params(self, fname: str) -> None:
        """Write the parameters as an NDArray dict file with ``arg:``/``aux:`` keys."""
        arg, aux = self.get_params()
        save = {f"arg:{k}": v for k, v in arg.items()}
        save.update({f"aux:{k}": v for k, v in aux.items()})
        write_atomic(fname, nd.save_tobuffer(save))

    def load_params(self, fname: str) -> None:
        """Read parameters written by :meth:`save_params` (or MXNet)."""
        arg, aux = _model._split_params(nd.load(fname), fname)
        self.set_params(arg, aux)

    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False) -> None:
        """Write ``prefix-symbol.json``, ``prefix-%04d.params`` (and ``.states``)."""
        write_atomic(f"{prefix}-symbol.json", self._symbol.tojson())
        param_name = f"{prefix}-{int(epoch):04d}.params"
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = f"{prefix}-{int(epoch):04d}.states"
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False, **kwargs: Any) -> Module:
        """A Module from a checkpoint; its parameters are set when it is bound."""
        sym, args, auxs = _model.load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params, mod._aux_params = args, auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{int(epoch):04d}.states"
        return mod

