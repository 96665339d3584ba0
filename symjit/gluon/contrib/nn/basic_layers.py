"""Containers whose children all see the same input, their outputs concatenated along ``axis``,
``Identity``, the block that returns its input (a branch of such a container that adds
nothing), ``SparseEmbedding`` and ``SyncBatchNorm``.

>>> import symjit as mx
>>> from symjit.gluon.contrib.nn import Concurrent, Identity
>>> pair = Concurrent(axis=0)
>>> pair.add(Identity(), Identity())
>>> pair(mx.nd.array([1.0, 2.0])).asnumpy().tolist()
[1.0, 2.0, 1.0, 2.0]
"""
from __future__ import annotations

from typing import Any

from .... import ndarray
from ....context import num_gpus
from ...block import Block, HybridBlock
from ...nn import BatchNorm, HybridSequential, Sequential
from ...parameter import ParameterDict

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm"]


class Concurrent(Sequential):
    """Calls every child on the same input and concatenates their outputs along ``axis``
    (default the last), imperatively.

    >>> import symjit as mx
    >>> from symjit.gluon.contrib.nn import Identity
    >>> c = Concurrent(axis=1); c.add(Identity(), Identity())
    >>> c(mx.nd.ones((2, 3))).shape
    (2, 6)
    """

    def __init__(self, axis: int = -1, prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x: Any) -> Any:
        return ndarray.concat(*[child(x) for child in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """:class:`Concurrent` for HybridBlock children: the concatenation is traced with them once
    hybridized.

    >>> import symjit as mx
    >>> from symjit.gluon.contrib.nn import Identity
    >>> c = HybridConcurrent(axis=0); c.add(Identity(), Identity()); c.hybridize()
    >>> c(mx.nd.ones((2, 3))).shape
    (4, 3)
    """

    def __init__(self, axis: int = -1, prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return F.concat(*[child(x) for child in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input unchanged.

    >>> import symjit as mx
    >>> Identity()(mx.nd.array([3.0])).asnumpy().tolist()
    [3.0]
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return x


class SparseEmbedding(Block):
    """Rows of ``weight`` (shape ``(input_dim, output_dim)``) picked by integer indices, as
    :class:`~symjit.gluon.nn.Embedding`: an input of shape ``(d1, ..., dk)`` gives
    ``(d1, ..., dk, output_dim)``.

    The weight and its gradient are ``row_sparse`` arrays, as MXNet keeps them for vocabularies
    too large for dense gradients: each call pulls the rows its indices name from the Trainer's
    store (``weight.row_sparse_data``), so the layer needs a Trainer before its first call, and
    the optimizer updates only the rows a batch used (the lazy update).

    >>> import symjit as mx
    >>> layer = SparseEmbedding(4, 2)
    >>> layer.initialize(mx.init.One())
    >>> trainer = mx.gluon.Trainer(layer.collect_params(), 'sgd')
    >>> layer(mx.nd.array([0, 3])).shape, layer.weight.grad().stype
    ((2, 2), 'row_sparse')
    """

    def __init__(self, input_dim: int, output_dim: int, dtype: Any = "float32",
                 weight_initializer: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype, "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, stype="row_sparse", grad_stype="row_sparse")

    def forward(self, x: Any) -> Any:
        return ndarray.Embedding(x, self.weight.row_sparse_data(x), name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{type(self).__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class SyncBatchNorm(BatchNorm):
    """Batch normalization over the channel axis (1) whose batch statistics MXNet computes over
    the whole mini-batch across ``num_devices`` GPUs (``contrib.SyncBatchNorm``). symjit runs each
    device's part on its own, so the statistics are those of each call's input: with a single
    context (the whole batch in one call) this is MXNet's result; with a batch split over several
    contexts each part is normalized by its own statistics, as :class:`~symjit.gluon.nn.BatchNorm`
    does. Parameters as BatchNorm's (``in_channels``, ``momentum``, ``epsilon``, ``center``,
    ``scale``, ``use_global_stats`` and the four initializers); ``num_devices`` (default: the
    number of GPUs, at least 1) is accepted.

    >>> import symjit as mx
    >>> bn = SyncBatchNorm(in_channels=2)
    >>> bn.initialize()
    >>> with mx.autograd.record():
    ...     y = bn(mx.nd.array([[1.0, 2.0], [3.0, 6.0]]))
    >>> y.asnumpy().round(3).tolist()
    [[-1.0, -1.0], [1.0, 1.0]]
    """

    def __init__(self, in_channels: int = 0, num_devices: int | None = None, momentum: float = 0.9,
                 epsilon: float = 1e-5, center: bool = True, scale: bool = True,  # noqa: FBT001, FBT002
                 use_global_stats: bool = False, beta_initializer: Any = "zeros",  # noqa: FBT001, FBT002
                 gamma_initializer: Any = "ones", running_mean_initializer: Any = "zeros",
                 running_variance_initializer: Any = "ones", **kwargs: Any):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        ndev = max(num_gpus(), 1) if num_devices is None else int(num_devices)
        self._sync_kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                             "use_global_stats": use_global_stats, "ndev": ndev, "key": self.prefix}

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any, running_mean: Any,  # noqa: N803
                       running_var: Any) -> Any:
        return F.contrib.SyncBatchNorm(x, gamma, beta, running_mean, running_var, name="fwd",
                                       **self._sync_kwargs)
