""":class:`Trainer`: applies an ``mx.optimizer`` to a set of Gluon parameters.

Each ``step(batch_size)`` sums every parameter's gradients over its contexts (when it lives on
several), scales them by ``1 / batch_size`` (the optimizer's ``rescale_grad``) and updates each
context's copy with one :class:`symjit.optimizer.Updater` per context, all parameters of a context
in one call (symjit's fused update kernels). ``kvstore`` is accepted; the reduction over contexts
is done here (symjit's ``dist_*`` stores are used through ``mx.kv`` and Module).

>>> import symjit as mx
>>> net = mx.gluon.nn.Dense(1, in_units=2, use_bias=False)
>>> net.initialize(mx.init.One())
>>> trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5})
>>> with mx.autograd.record():
...     y = net(mx.nd.array([[1.0, 2.0]]))
>>> y.backward(); trainer.step(1)
>>> net.weight.data().asnumpy().tolist()
[[0.5, 0.0]]
"""
from __future__ import annotations

from typing import Any

from .. import optimizer as opt
from ..base import MXNetError
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]


class Trainer:
    """Updates ``params`` (a ParameterDict, or a list/dict of Parameters) with ``optimizer`` (a
    name with ``optimizer_params``, or an Optimizer instance)."""

    def __init__(self, params: Any, optimizer: Any, optimizer_params: dict | None = None,
                 kvstore: Any = "device", compression_params: dict | None = None,
                 update_on_kvstore: bool | None = None):  # noqa: FBT001
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"First argument must be a list or dict of Parameters, got {type(params)}.")
        self._params: list[Parameter] = []
        seen: set[int] = set()
        for p in params:
            if not isinstance(p, Parameter):
                raise ValueError(f"First argument must be a list or dict of Parameters, got list of "
                                 f"{type(p)}.")
            if id(p) not in seen:
                seen.add(id(p))
                self._params.append(p)
        if compression_params:
            raise MXNetError("Trainer: gradient compression is not supported by symjit")
        self._kvstore, self._update_on_kvstore = kvstore, update_on_kvstore
        optimizer_params = dict(optimizer_params or {})
        self._scale = float(optimizer_params.get("rescale_grad", 1.0))
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError("optimizer_params must be None if optimizer is an instance of "
                                     "Optimizer instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters: dict[Any, opt.Updater] = {}

    @property
    def optimizer(self) -> opt.Optimizer:
        return self._optimizer

    @property
    def learning_rate(self) -> float:
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr: float) -> None:
        """Set the optimizer's learning rate."""
        self._optimizer.set_learning_rate(lr)

    def _updater(self, ctx: Any) -> opt.Updater:
        if ctx not in self._updaters:
            self._updaters[ctx] = opt.get_updater(self._optimizer)
        return self._updaters[ctx]

    def _live(self) -> list[tuple[int, Parameter]]:
        return [(i, p) for i, p in enumerate(self._params) if p.grad_req != "null"]

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients over its contexts into every context's gradient."""
        for _, p in self._live():
            grads = p.list_grad()
            if len(grads) > 1:
                total = grads[0].copyto(grads[0].context)
                for g in grads[1:]:
                    total += g.as_in_context(total.context)
                for g in grads:
                    total.copyto(g)

    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:  # noqa: FBT001, FBT002
        """Reduce the gradients over contexts and update the parameters, gradients scaled by
        ``1 / batch_size``."""
        self._optimizer.rescale_grad = self._scale / batch_size
        self.allreduce_grads()
        self._update(ignore_stale_grad)

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:  # noqa: FBT001, FBT002
        """Update the parameters without reducing the gradients over contexts (call
        :meth:`allreduce_grads` first)."""
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad: bool) -> None:
        by_ctx: dict[Any, tuple[list, list, list]] = {}
        for i, p in self._live():
            datas = p.list_data()
            stale = [d for d in datas if not getattr(d, "_fresh_grad", False)]
            if stale:
                if not ignore_stale_grad:
                    raise UserWarning(
                        f"Gradient of Parameter `{p.name}` on context {stale[0].context} has not been "
                        "updated by backward since last `step`. This could mean a bug in your model "
                        "that made it only use a subset of the Parameters (Blocks) for this iteration. "
                        "If you are intentionally only using a subset, call step with "
                        "ignore_stale_grad=True to suppress this warning and skip updating of "
                        "Parameters with stale gradient")
                continue
            for d, g in zip(datas, p.list_grad()):
                idx, grads, weights = by_ctx.setdefault(d.context, ([], [], []))
                idx.append(i)
                grads.append(g)
                weights.append(d)
                d._fresh_grad = False
        for ctx, (idx, grads, weights) in by_ctx.items():
            self._updater(ctx)(idx, grads, weights)

    def save_states(self, fname: str) -> None:
        """Write the optimizer's states (of the first context) to ``fname``."""
        updater = next(iter(self._updaters.values()), None) or self._updater(None)
        with open(fname, "wb") as f:
            f.write(updater.get_states(dump_optimizer=True))

    def load_states(self, fname: str) -> None:
        """Read states written by :meth:`save_states` (into every context's updater)."""
        with open(fname, "rb") as f:
            states = f.read()
        ctxs = {d.context for p in self._params for d in (p.list_data() if p._data is not None else [])}
        for ctx in ctxs or {None}:
            self._updater(ctx).set_states(states)
        self._optimizer = next(iter(self._updaters.values())).optimizer
        for u in self._updaters.values():
            u.optimizer = self._optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))

