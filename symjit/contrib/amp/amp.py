"""``mx.contrib.amp.amp``: MXNet's automatic mixed precision (float16/bfloat16 graphs).

symjit compiles float32 and float64 graphs (float16 NDArray calls run through float32 kernels and
a float16 ``bind`` is an error), so rewriting a model into reduced precision is not supported.
The names exist so that programs importing them run; each raises :class:`~symjit.base.MXNetError`.

>>> from symjit.contrib.amp import amp
>>> try:
...     amp.init()
... except amp.MXNetError as exc:
...     print(str(exc).split(':')[0])
mx.contrib.amp.init
"""
from __future__ import annotations

from ...base import MXNetError
from ...unsupported import _stub

_WHY = ("automatic mixed precision (float16/bfloat16 graphs) is not supported by symjit, which compiles "
        "float32 and float64 graphs")

_STUBS = ("init", "init_trainer", "scale_loss", "unscale", "convert_model", "convert_hybrid_block",
           "list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops", "list_conditional_fp32_ops",
           "list_widest_type_cast", "list_loss_output_functions", "list_lp16_use_fp32_params",
           "convert_symbol", "convert_bucketing_module")

for _name in _STUBS:
    globals()[_name] = _stub(f"mx.contrib.amp.{_name}", _WHY)
del _name
__all__ = [*_STUBS, "MXNetError"]
