"""``mx.onnx``: ONNX export (``export_model``) and import (``import_model``, as MXNet 1.x's
``mx.contrib.onnx.import_model``), with the ``onnx`` package (the ``onnx`` extra).

The operators covered are the keys of :data:`symjit.onnx.export.EXPORTERS` and
:data:`symjit.onnx.import_onnx.IMPORTERS` (dense layers, convolution, pooling, BatchNorm,
activations, softmax, elementwise arithmetic, reshape/flatten/concat/transpose, clip,
dropout as identity); anything else is a clear error naming the operator.
"""
from .export import export_model
from .import_onnx import get_model_metadata, import_model

__all__ = ["export_model", "import_model", "get_model_metadata"]
