"""Basic layers: containers, Dense, Dropout, normalizations, Embedding, Flatten, lambdas.

Parameter names, shapes and defaults are MXNet 1.9.1's (``weight``/``bias``; ``gamma``,
``beta``, ``running_mean``, ``running_var``); an input size of 0 (``in_units``,
``in_channels``) is inferred at the first forward pass.

>>> import symjit as mx
>>> d = mx.gluon.nn.Dense(4)
>>> d.initialize(); d(mx.nd.ones((2, 3))).shape, d.weight.shape
((2, 4), (4, 3))
"""
from __future__ import annotations

from typing import Any

from ... import ndarray
from ..block import Block, HybridBlock
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "BatchNorm", "Embedding", "Flatten",
           "InstanceNorm", "LayerNorm", "GroupNorm", "Lambda", "HybridLambda"]


class _Stack:
    """What both sequential containers share: ``add``, indexing, length, repr."""

    def add(self, *blocks: Block) -> None:
        """Append ``blocks`` as children, called in order."""
        for b in blocks:
            self.register_child(b)

    def __getitem__(self, key: int | slice) -> Any:
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self) -> int:
        return len(self._children)

    def __repr__(self) -> str:
        mods = "\n".join(f"  ({k}): " + repr(b).replace("\n", "\n  ") for k, b in self._children.items())
        return f"{self.__class__.__name__}(\n{mods}\n)"


class Sequential(_Stack, Block):
    """Children called one after the other."""

    def forward(self, x: Any, *args: Any) -> Any:
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):
                x, args = x[0], tuple(x[1:])
        return (x, *args) if args else x

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:  # noqa: FBT001, FBT002
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            import warnings
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. "
                          "Consider using HybridSequential for the best performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_Stack, HybridBlock):
    """HybridBlock children called one after the other."""

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:  # noqa: N803
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):
                x, args = x[0], tuple(x[1:])
        return (x, *args) if args else x


class Dense(HybridBlock):
    """``activation(dot(x, weight.T) + bias)``: ``weight`` of shape ``(units, in_units)``;
    ``flatten`` folds all axes but the first of ``x`` into one (otherwise only the last axis is
    contracted)."""

    def __init__(self, units: int, activation: str | None = None, use_bias: bool = True,  # noqa: FBT001, FBT002
                 flatten: bool = True, dtype: Any = "float32", weight_initializer: Any = None,  # noqa: FBT001, FBT002
                 bias_initializer: Any = "zeros", in_units: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self._flatten, self._units, self._in_units = flatten, units, in_units
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer,
                                          dtype=dtype, allow_deferred_init=True)
            self.bias = (self.params.get("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                                         allow_deferred_init=True) if use_bias else None)
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any = None) -> Any:  # noqa: N803
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name="fwd")
        return self.act(out) if self.act is not None else out

    def __repr__(self) -> str:
        shape = self.weight.shape
        act = self.act._act_type if self.act is not None else "linear"
        return f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {shape[0]}, {act})"


class Dropout(HybridBlock):
    """Zero each element with probability ``rate`` in training mode (the rest scaled by
    ``1 / (1 - rate)``); ``axes`` share one mask along them."""

    def __init__(self, rate: float, axes: tuple = (), **kwargs: Any):
        super().__init__(**kwargs)
        self._rate, self._axes = rate, tuple(axes)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p = {self._rate}, axes={self._axes})"


def _norm_params(block: HybridBlock, shape: tuple, center: bool, scale: bool,
                 beta_init: Any, gamma_init: Any) -> None:
    block.gamma = block.params.get("gamma", grad_req="write" if scale else "null", shape=shape,
                                   init=gamma_init, allow_deferred_init=True, differentiable=scale)
    block.beta = block.params.get("beta", grad_req="write" if center else "null", shape=shape,
                                  init=beta_init, allow_deferred_init=True, differentiable=center)


def _init_norm(block: HybridBlock, shape: tuple, epsilon: float, affine: tuple, prefix: Any,
               params: Any) -> None:
    HybridBlock.__init__(block, prefix=prefix, params=params)
    block._epsilon = epsilon
    _norm_params(block, shape, *affine)


class BatchNorm(HybridBlock):
    """Batch normalization over ``axis`` (the channels): parameters ``gamma``, ``beta`` and the
    running statistics ``running_mean``, ``running_var`` (updated with ``momentum`` in training
    mode), all of shape ``(in_channels,)``."""

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,  # noqa: FBT001, FBT002
                 scale: bool = True, use_global_stats: bool = False, beta_initializer: Any = "zeros",  # noqa: FBT001, FBT002
                 gamma_initializer: Any = "ones", running_mean_initializer: Any = "zeros",
                 running_variance_initializer: Any = "ones", in_channels: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats}
        self._axis, self._in_channels = axis, in_channels
        _norm_params(self, (in_channels,), center, scale, beta_initializer, gamma_initializer)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=(in_channels,),
                                            init=running_mean_initializer, allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=(in_channels,),
                                           init=running_variance_initializer, allow_deferred_init=True,
                                           differentiable=False)

    def cast(self, dtype: Any) -> None:
        import numpy as np
        if np.dtype(dtype).name == "float16":
            dtype = "float32"       # statistics stay float32, as MXNet keeps them
        super().cast(dtype)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any,  # noqa: N803
                       running_var: Any) -> Any:
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        ch = self.gamma.shape[0]
        args = ", ".join(f"{k}={v}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({args}, in_channels={ch if ch else None})"


class InstanceNorm(HybridBlock):
    """Normalization of each sample's channel over its spatial axes (``gamma``/``beta`` of shape
    ``(in_channels,)``; ``scale`` is off by default, as in MXNet)."""

    def __init__(self, axis: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = False,  # noqa: FBT001, FBT002
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones", in_channels: int = 0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self._axis, self._epsilon = axis, epsilon
        _norm_params(self, (in_channels,), center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any) -> Any:  # noqa: N803
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon).swapaxes(1, self._axis)


class LayerNorm(HybridBlock):
    """Normalization of each sample over ``axis`` (default the last), ``gamma``/``beta`` of
    shape ``(in_channels,)``."""

    def __init__(self, axis: int = -1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,  # noqa: FBT001, FBT002
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones", in_channels: int = 0,
                 prefix: str | None = None, params: Any = None):
        _init_norm(self, (in_channels,), epsilon, (center, scale, beta_initializer, gamma_initializer),
                   prefix, params)
        self._axis = axis

    def hybrid_forward(self, F: Any, data: Any, gamma: Any, beta: Any) -> Any:  # noqa: N803
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)


class GroupNorm(HybridBlock):
    """Normalization over groups of channels: ``num_groups`` groups, ``gamma``/``beta`` of shape
    ``(num_groups,)`` (MXNet 1.9.1's GroupNorm operator scales per group)."""

    def __init__(self, num_groups: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,  # noqa: FBT001, FBT002
                 beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 prefix: str | None = None, params: Any = None):
        _init_norm(self, (num_groups,), epsilon, (center, scale, beta_initializer, gamma_initializer),
                   prefix, params)
        self._num_groups = num_groups

    def hybrid_forward(self, F: Any, data: Any, gamma: Any, beta: Any) -> Any:  # noqa: N803
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon)


class Embedding(HybridBlock):
    """Rows of ``weight`` (shape ``(input_dim, output_dim)``) picked by integer indices;
    ``sparse_grad``: the weight's gradient is a row_sparse array (computed dense, stored sparse)."""

    def __init__(self, input_dim: int, output_dim: int, dtype: Any = "float32",
                 weight_initializer: Any = None, sparse_grad: bool = False,  # noqa: FBT001, FBT002
                 **kwargs: Any):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": bool(sparse_grad)}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, allow_deferred_init=True,
                                      grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F: Any, x: Any, weight: Any) -> Any:  # noqa: N803
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._kwargs['input_dim']} -> {self._kwargs['output_dim']}, " \
               f"{self._kwargs['dtype']})"


class Flatten(HybridBlock):
    """Fold all axes but the first into one."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.Flatten(x)

    def __repr__(self) -> str:
        return self.__class__.__name__


def _function(function: Any, space: Any, what: str) -> Any:
    if isinstance(function, str):
        if not hasattr(space, function):
            raise ValueError(f"Function name {function} is not found in {what}.")
        return getattr(space, function)
    if not callable(function):
        raise ValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")
    return function


class Lambda(Block):
    """A Block calling ``function`` (a callable, or the name of an ``mx.nd`` function)."""

    def __init__(self, function: Any, prefix: str | None = None):
        super().__init__(prefix=prefix)
        self._func = _function(function, ndarray, "ndarray")
        self._func_name = function if isinstance(function, str) else getattr(function, "__name__", "")

    def forward(self, *args: Any) -> Any:
        return self._func(*args)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._func_name})"


class HybridLambda(HybridBlock):
    """A HybridBlock calling ``function(F, x, *args)`` (or the ``F.<name>`` of a function name)."""

    def __init__(self, function: Any, prefix: str | None = None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            from ... import symbol
            _function(function, ndarray, "ndarray")
            _function(function, symbol, "symbol")
            name = function
            self._func = lambda F, *args: getattr(F, name)(*args)  # noqa: N803
        else:
            self._func = _function(function, None, "")
        self._func_name = function if isinstance(function, str) else getattr(function, "__name__", "")

    def hybrid_forward(self, F: Any, x: Any, *args: Any) -> Any:  # noqa: N803
        return self._func(F, x, *args)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._func_name})"
