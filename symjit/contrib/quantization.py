"""``mx.contrib.quantization``: int8 quantization of models, which symjit does not support.

The names exist so that programs importing them run; each raises :class:`~symjit.base.MXNetError`.

>>> import symjit as mx
>>> try:
...     mx.contrib.quantization.quantize_model(None, {}, {})
... except mx.MXNetError as exc:
...     print(str(exc).split(':')[0])
mx.contrib.quantization.quantize_model
"""
from __future__ import annotations

from ..unsupported import _QUANT_WHY, _stub

_STUBS = ("quantize_model", "quantize_model_mkldnn", "quantize_graph", "quantize_net", "quantize_net_v2",
           "calib_graph", "combine_histogram", "CalibrationCollector")

for _name in _STUBS:
    globals()[_name] = _stub(f"mx.contrib.quantization.{_name}", _QUANT_WHY)
del _name
__all__ = list(_STUBS)
