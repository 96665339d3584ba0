"""``mx.gluon.contrib``: MXNet's contributed Gluon APIs: ``nn`` (``Concurrent``,
``HybridConcurrent``, ``Identity``, ``SparseEmbedding``, ``SyncBatchNorm``, ``PixelShuffle1D/2D/3D``),
``cnn`` (``DeformableConvolution``, ``ModulatedDeformableConvolution``), ``data``
(``IntervalSampler``) and ``estimator`` (``Estimator``, its event handlers and batch processor).

>>> import symjit as mx
>>> from symjit.gluon.contrib.nn import Identity
>>> Identity()(mx.nd.ones((2,))).asnumpy().tolist()
[1.0, 1.0]
"""
from . import cnn, data, estimator, nn, rnn

__all__ = ["nn", "cnn", "data", "estimator", "rnn"]
