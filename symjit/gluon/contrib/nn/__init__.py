"""``mx.gluon.contrib.nn``: containers that run their children side by side and join the outputs
(``Concurrent``, ``HybridConcurrent``), the pass-through ``Identity``, ``SparseEmbedding`` (dense
storage here), ``SyncBatchNorm`` and the pixel-shuffle upsampling layers ``PixelShuffle1D/2D/3D``.

>>> import symjit as mx
>>> from symjit.gluon import nn
>>> from symjit.gluon.contrib.nn import HybridConcurrent, Identity
>>> both = HybridConcurrent(axis=1)
>>> both.add(Identity(), nn.Dense(2, in_units=3))
>>> both.initialize(mx.init.One())
>>> both(mx.nd.ones((1, 3))).asnumpy().tolist()
[[1.0, 1.0, 1.0, 3.0, 3.0]]
"""
from .basic_layers import Concurrent, HybridConcurrent, Identity, SparseEmbedding, SyncBatchNorm
from .pixel_shuffle import PixelShuffle1D, PixelShuffle2D, PixelShuffle3D

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm", "PixelShuffle1D",
           "PixelShuffle2D", "PixelShuffle3D"]
