"""Data-parallel execution shared by ``mx.mod.Module`` and ``mx.model.FeedForward``.

A :class:`DataParallelExecutorGroup` binds one executor per context, each on a slice of the batch
(sizes from ``work_load_list``); parameters are replicated, gradients summed through a kvstore (or
locally) and applied by the optimizer, as MXNet 1.x's executor group does.

>>> import symjit as mx
>>> split_input_slice(10, [1, 1, 2])
[slice(0, 2, None), slice(2, 4, None), slice(4, 10, None)]
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import kvstore as kvs
from ..base import MXNetError, ParamError, ShapeError, shape_str
from ..context import Context
from ..executor import Executor, simple_bind_arrays
from ..io import DataDesc
from ..ndarray import NDArray, zeros
from ..ndarray.ndarray import wrap
from ..optimizer import Updater

__all__ = ["DataParallelExecutorGroup", "split_input_slice", "as_descs", "create_kvstore",
           "global_batch_size", "initialize_kvstore", "update_params_on_kvstore", "update_params"]


def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> list[slice]:
    """Split ``batch_size`` samples into one slice per device, proportional to the work loads.

    >>> split_input_slice(5, [1, 1])
    [slice(0, 2, None), slice(2, 5, None)]
    """
    total = float(sum(work_load_list))
    if total <= 0 or any(w < 0 for w in work_load_list):
        raise ParamError(f"work_load_list must hold non-negative loads with a positive sum, got "
                         f"{list(work_load_list)}")
    counts = [round(w * batch_size / total) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, begin = [], 0
    for n in counts:
        end = min(begin + n, batch_size)
        if begin >= end:
            raise ParamError(f"split_input_slice: a batch of {batch_size} cannot be split over "
                             f"{len(work_load_list)} devices (loads {list(work_load_list)}): some "
                             "slices would be empty")
        slices.append(slice(begin, end))
        begin = end
    return slices


class DescError(ParamError, TypeError):
    """Input shapes that are not DataDescs or ``(name, shape)`` pairs with a tuple of ints (a
    TypeError, as in MXNet)."""


def as_descs(shapes: Any, where: str) -> list[DataDesc]:
    """``[(name, shape)]`` or DataDescs as a list of DataDescs (None or empty gives [])."""
    if not shapes:
        return []
    out = []
    for item in shapes:
        if isinstance(item, DataDesc):
            out.append(item)
        elif (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
              and isinstance(item[1], (tuple, list))
              and all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in item[1])):
            out.append(DataDesc(item[0], tuple(int(d) for d in item[1])))
        else:
            raise DescError(f"{where}: shapes must be DataDescs or (name, shape) pairs with a tuple of "
                            f"ints, got {item!r:.80}")
    return out


def _batch_axis(desc: DataDesc) -> int:
    axis = DataDesc.get_batch_axis(getattr(desc, "layout", None))
    return 0 if axis < 0 else axis


def _slice_shape(desc: DataDesc, sl: slice) -> tuple[int, ...]:
    shape = list(desc.shape)
    shape[_batch_axis(desc)] = sl.stop - sl.start
    return tuple(shape)


def _take(arr: Any, sl: slice, axis: int) -> np.ndarray:
    host = arr.asnumpy() if isinstance(arr, NDArray) else np.asarray(arr)
    index = [slice(None)] * host.ndim
    index[axis] = sl
    return host[tuple(index)]


class DataParallelExecutorGroup:
    """One executor per context over slices of the batch (parameters replicated).

    ``param_arrays[i][k]`` is parameter ``param_names[i]`` on device ``k``; ``grad_arrays`` the
    same for gradients (None where no gradient is computed); ``aux_arrays`` for aux states.
    """

    def __init__(self, symbol: Any, contexts: list[Context], workload: list[float],
                 data_shapes: Any, label_shapes: Any, param_names: list[str], for_training: bool,
                 inputs_need_grad: bool, shared_group: DataParallelExecutorGroup | None = None,
                 logger: Any = logging, fixed_param_names: Any = None, grad_req: Any = "write",
                 group2ctxs: Any = None):
        self.symbol = symbol
        # MXNet's group2ctxs: one ctx_group placement per context, or one for all of them
        self.group2ctxs = (list(group2ctxs) if isinstance(group2ctxs, (list, tuple))
                           else [group2ctxs] * len(contexts))
        self.contexts = list(contexts)
        self.workload = list(workload)
        self.param_names = list(param_names)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = set(fixed_param_names or [])
        self.grad_req = grad_req
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.output_names = symbol.list_outputs()
        # the batch axis of each output: from its ``__layout__`` attribute ('TNC': 1), else 0
        self.output_axes = [max(0, DataDesc.get_batch_axis(symbol[i].attr("__layout__")))
                            for i in range(len(self.output_names))]
        self.execs: list[Executor] = []
        self._monitor = None
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # -- binding -----------------------------------------------------------------------------
    def _req(self, name: str) -> str:
        if not self.for_training:
            return "null"
        req = self.grad_req.get(name, "null") if isinstance(self.grad_req, dict) else self.grad_req
        if name in self.param_names:
            return "null" if name in self.fixed_param_names else req
        if name in self.data_names:
            return req if self.inputs_need_grad else "null"
        return "null"

    def bind_exec(self, data_shapes: Any, label_shapes: Any,
                  shared_group: DataParallelExecutorGroup | None = None, reshape: bool = False) -> None:
        """Bind (or with ``reshape`` re-shape) one executor per context for these input shapes."""
        self.data_shapes = as_descs(data_shapes, "bind")
        self.label_shapes = as_descs(label_shapes, "bind")
        if not self.data_shapes:
            raise ParamError("bind: data_shapes must name at least one input")
        self.data_names = [d.name for d in self.data_shapes]
        self.label_names = [d.name for d in self.label_shapes]
        for d in self.data_shapes + self.label_shapes:
            if d.name not in self.arg_names:
                raise ParamError(f"bind: input {d.name!r} is not an argument of the symbol; "
                                 f"arguments: {self.arg_names}")
        first = self.data_shapes[0]
        self.batch_size = int(first.shape[_batch_axis(first)])
        self.slices = split_input_slice(self.batch_size, self.workload)
        execs = []
        for k, (ctx, sl) in enumerate(zip(self.contexts, self.slices)):
            shapes = {d.name: _slice_shape(d, sl) for d in self.data_shapes + self.label_shapes}
            if reshape:
                execs.append(self.execs[k].reshape(partial_shaping=True, allow_up_sizing=True, **shapes))
            else:
                shared = shared_group.execs[k] if shared_group is not None else None
                execs.append(self._bind_one(ctx, shapes, shared, self.group2ctxs[k]))
        self.execs = execs
        self._collect_arrays()
        if self._monitor is not None:
            self.install_monitor(self._monitor)

    def _bind_one(self, ctx: Context, shapes: dict, shared: Executor | None,
                  group2ctx: Any = None) -> Executor:
        reqs = {n: self._req(n) for n in self.arg_names}
        types = {d.name: d.dtype for d in self.data_shapes if d.dtype is not None}
        try:
            args, grads, aux, reqs = simple_bind_arrays(self.symbol, ctx, reqs, types, shapes)
        except MXNetError as exc:
            raise MXNetError(f"bind: cannot bind the symbol for input shapes {shapes}: {exc}") from exc
        if shared is not None:   # share parameters and their gradients with another module (same shapes)
            table = shared.arg_dict
            args = [table[n] if n in self.param_names and n in table and table[n].shape == a.shape
                    else a for n, a in zip(self.arg_names, args)]
            gtable = shared.grad_dict     # so grad_req='add' accumulates over buckets, as in MXNet
            grads = [gtable[n] if g is not None and n in self.param_names and gtable.get(n) is not None
                     and gtable[n].shape == g.shape and gtable[n].dtype == g.dtype else g
                     for n, g in zip(self.arg_names, grads)]
            aux = [shared.aux_dict.get(n, a) if shared.aux_dict.get(n, a).shape == a.shape else a
                   for n, a in zip(self.aux_names, aux)]
        return Executor(self.symbol, ctx, args, grads, reqs, aux, group2ctx=group2ctx)

    def _collect_arrays(self) -> None:
        self.param_arrays = [[e.arg_dict[n] for e in self.execs] for n in self.param_names]
        self.grad_arrays = [[e.grad_dict.get(n) for e in self.execs] for n in self.param_names]
        self.aux_arrays = [[e.aux_dict[n] for e in self.execs] for n in self.aux_names]
        self.data_arrays = [[e.arg_dict[n] for e in self.execs] for n in self.data_names]
        self.label_arrays = [[e.arg_dict[n] for e in self.execs] for n in self.label_names]

    def reshape(self, data_shapes: Any, label_shapes: Any) -> None:
        """Re-bind for new input shapes (same-shape arrays such as the parameters are kept)."""
        if as_descs(data_shapes, "reshape") == self.data_shapes and \
                as_descs(label_shapes, "reshape") == self.label_shapes:
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # -- parameters --------------------------------------------------------------------------
    def set_params(self, arg_params: dict, aux_params: dict | None, allow_extra: bool = False) -> None:
        """Copy parameter values into every executor."""
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params: dict, aux_params: dict) -> None:
        """Write the device-averaged parameters into the (CPU) dicts, in place where present."""
        for names, blocks, table in ((self.param_names, self.param_arrays, arg_params),
                                     (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                value = block[0].asnumpy()
                if len(block) > 1:
                    value = sum(b.asnumpy().astype(np.float64) for b in block) / len(block)
                if name in table and table[name].shape == block[0].shape:
                    table[name][:] = value
                else:
                    table[name] = wrap(np.ascontiguousarray(value, dtype=block[0].dtype), block[0].context)

    # -- running -----------------------------------------------------------------------------
    def _load(self, names: list[str], descs: list[DataDesc], blocks: list[list[NDArray]],
              values: Sequence[Any], what: str) -> None:
        if len(values) != len(names):
            raise ShapeError(f"forward: the batch has {len(values)} {what} arrays, the module was "
                             f"bound with {len(names)} {names}")
        for name, desc, block, value in zip(names, descs, blocks, values):
            axis = _batch_axis(desc)
            if value.shape[axis] != self.batch_size:
                raise ShapeError(f"forward: {what} {name!r} has shape {shape_str(tuple(value.shape))}, "
                                 f"the module was bound for batch size {self.batch_size}")
            host = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            for dst, sl in zip(block, self.slices):
                part = _take(host, sl, axis)
                if part.shape != dst.shape:
                    raise ShapeError(f"forward: {what} {name!r} has shape {shape_str(host.shape)}, "
                                     f"the module was bound with {shape_str(desc.shape)}")
                dst[:] = part

    def load_data_batch(self, data_batch: Any) -> None:
        """Copy a batch's data (and label, when bound with labels and the batch has them)."""
        self._load(self.data_names, self.data_shapes, self.data_arrays, list(data_batch.data), "data")
        if self.label_names and data_batch.label:
            self._load(self.label_names, self.label_shapes, self.label_arrays,
                       list(data_batch.label), "label")

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        """Load ``data_batch`` and run every executor's forward pass."""
        self.load_data_batch(data_batch)
        is_train = self.for_training if is_train is None else is_train
        for e in self.execs:
            e.forward(is_train=is_train)

    def backward(self, out_grads: Any = None) -> None:
        """Backward on every executor; ``out_grads`` (merged over the batch) are sliced per device."""
        if not self.for_training:
            raise MXNetError("backward: the module was bound with for_training=False")
        if isinstance(out_grads, (NDArray, np.ndarray)):
            out_grads = [out_grads]
        for e, sl in zip(self.execs, self.slices):
            grads = None if out_grads is None else [
                None if g is None else _take(g, sl, axis) for g, axis in zip(out_grads, self.output_axes)]
            e.backward(out_grads=grads)

    def _merge(self, per_device: list[list[NDArray]], merge: bool, axes: list[int]) -> list:
        """Each block's per-device arrays, concatenated along its batch axis when ``merge``."""
        if not merge:
            return per_device
        if len(self.execs) == 1:
            return [block[0] for block in per_device]
        return [None if block[0] is None else
                wrap(np.concatenate([b.asnumpy() for b in block], axis=axis), block[0].context)
                for block, axis in zip(per_device, axes)]

    def get_outputs(self, merge_multi_context: bool = True) -> list:
        """The outputs, concatenated over devices (or ``[[dev0, dev1, ...]]`` per output)."""
        return self._merge([[e.outputs[i] for e in self.execs] for i in range(len(self.output_names))],
                           merge_multi_context, self.output_axes)

    def get_input_grads(self, merge_multi_context: bool = True) -> list:
        """Gradients of the data inputs (bound with ``inputs_need_grad``); None for an input whose
        grad_req is ``'null'``, as in MXNet."""
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads: bind with inputs_need_grad=True first")
        return self._merge([[e.grad_dict.get(n) for e in self.execs] for n in self.data_names],
                           merge_multi_context, [_batch_axis(d) for d in self.data_shapes])

    def update_metric(self, eval_metric: Any, labels: Sequence[Any], pad: int = 0) -> None:
        """Update ``eval_metric`` with each device's outputs and its slice of ``labels``; the last
        ``pad`` samples (padding) are left out."""
        labels = list(labels or [])
        if pad:
            n = self.batch_size - pad
            preds = [wrap(np.ascontiguousarray(o.asnumpy()[:n]), o.context) for o in self.get_outputs()]
            labs = [wrap(np.ascontiguousarray(_take(lb, slice(0, n), 0)), preds[0].context) for lb in labels]
            self._update(eval_metric, labs, preds)
            return
        for e, sl in zip(self.execs, self.slices):
            labs = [wrap(np.ascontiguousarray(_take(lb, sl, 0)), e._ctx) for lb in labels]
            self._update(eval_metric, labs, list(e.outputs))

    def _update(self, eval_metric: Any, labels: list[NDArray], preds: list[NDArray]) -> None:
        names = self.label_names if len(self.label_names) == len(labels) else \
            [f"label{i}" for i in range(len(labels))]
        if hasattr(eval_metric, "update_dict"):
            eval_metric.update_dict(dict(zip(names, labels)), dict(zip(self.output_names, preds)))
        else:
            eval_metric.update(labels, preds)

    def install_monitor(self, mon: Any) -> None:
        """Install a Monitor on every executor (kept across reshapes)."""
        self._monitor = mon
        for e in self.execs:
            mon.install(e)

    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """``(name, shape)`` of each output for the whole batch."""
        shapes = {d.name: d.shape for d in self.data_shapes + self.label_shapes}
        _, out, _ = self.symbol.infer_shape(**shapes)
        return list(zip(self.output_names, [tuple(s) for s in out]))


# -- kvstore and updates ----------------------------------------------------------------------

def create_kvstore(kvstore: Any, num_device: int, arg_params: dict) -> tuple[Any, bool]:
    """``(kvstore or None, update_on_kvstore)`` as MXNet 1.x chooses them: a local store is only
    used with several devices, and then updates run on the store."""
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStore):
        kv = kvstore
    elif isinstance(kvstore, str):
        kv = None if num_device == 1 and "dist" not in kvstore else kvs.create(kvstore)
    else:
        raise ParamError(f"kvstore must be None, a str or a KVStore, got {type(kvstore).__name__}")
    return kv, kv is not None


def global_batch_size(batch_size: int, kvstore: Any) -> int:
    """The batch one update sums over, as MXNet counts it for ``rescale_grad``: a synchronous
    distributed store sums the gradients of every worker's batch."""
    if kvstore is not None and "dist" in kvstore.type and "_sync" in kvstore.type:
        return batch_size * kvstore.num_workers
    return batch_size


def initialize_kvstore(kvstore: Any, param_arrays: list, arg_params: dict, param_names: list[str],
                       update_on_kvstore: bool) -> None:
    """Put every parameter in the store (keyed by name; one call, so a distributed store sends
    rank 0's values to every worker at once) and pull them back onto every device."""
    if not param_names:
        return
    kvstore.init(list(param_names), [arg_params[name] for name in param_names])
    if update_on_kvstore:
        kvstore.pull(list(param_names), [list(block) for block in param_arrays])


def update_params_on_kvstore(param_arrays: list, grad_arrays: list, kvstore: Any,
                             param_names: list[str]) -> None:
    """Push every parameter's gradients in one push (summed over devices; the optimizer runs in
    the store, one update kernel for all keys) and pull the updated weights onto every device."""
    live = [i for i, grads in enumerate(grad_arrays) if grads[0] is not None]
    if not live:
        return
    names = [param_names[i] for i in live]
    kvstore.push(names, [list(grad_arrays[i]) for i in live])
    kvstore.pull(names, [list(param_arrays[i]) for i in live])


def update_params(param_arrays: list, grad_arrays: list, updater: Any, num_device: int,
                  kvstore: Any = None, param_names: list[str] | None = None) -> None:
    """Sum each gradient over devices (through ``kvstore`` when given) and apply ``updater`` on
    every device copy with index ``i * num_device + k``: an ``mx.optimizer.Updater`` gets every
    index in one call (one update kernel for all parameters), another callable one at a time."""
    live = [i for i, grads in enumerate(grad_arrays) if grads[0] is not None]
    if kvstore is not None and live:
        names = [param_names[i] if param_names else i for i in live]
        kvstore.push(names, [list(grad_arrays[i]) for i in live])
        kvstore.pull(names, [list(grad_arrays[i]) for i in live])
    elif num_device > 1:
        for i in live:
            total = sum(g.asnumpy() for g in grad_arrays[i])
            for g in grad_arrays[i]:
                g[:] = total
    triples = [(i * num_device + k, g, w) for i in live
               for k, (w, g) in enumerate(zip(param_arrays[i], grad_arrays[i]))]
    if isinstance(updater, Updater) and len(triples) > 1:
        updater([t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples])
        return
    for index, g, w in triples:
        updater(index, g, w)


def zeros_like_blocks(blocks: list[list[NDArray]], names: list[str]) -> dict[str, NDArray]:
    """A dict name -> zeroed CPU array shaped like the first device's array."""
    return {n: zeros(b[0].shape, dtype=b[0].dtype) for n, b in zip(names, blocks)}
