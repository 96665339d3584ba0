""":class:`SymbolBlock`: a HybridBlock made from an existing Symbol (for example one read from an
exported ``-symbol.json``); every variable that is not an input becomes a parameter of the
same name.

>>> import symjit as mx
>>> x = mx.sym.var('data')
>>> net = mx.gluon.SymbolBlock(mx.sym.FullyConnected(x, num_hidden=2, name='fc'), x)
>>> sorted(net.collect_params().keys())
['fc_bias', 'fc_weight']
"""
from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from .. import symbol
from ..base import FLAG_TO_DTYPE, MXNetError
from ..ndarray import NDArray
from ..symbol import Symbol
from .block import HybridBlock, _flatten
from .parameter import ParameterDict

__all__ = ["SymbolBlock"]


def _common_prefix(names: list[str]) -> str:
    if not names:
        return ""
    prefix = os.path.commonprefix(names)
    return "" if prefix in names else prefix


def _param_dtypes(inputs: list[Symbol], out: Symbol) -> dict[str, Any]:
    """The variables' dtypes inferred from the inputs' declared dtypes (``var(..., dtype=)``);
    none when no input declares one or inference cannot decide (parameters then float32)."""
    given = {s.name: FLAG_TO_DTYPE[int(s.attr("__dtype__"))] for s in inputs
             if s.attr("__dtype__") is not None}
    if not given:
        return {}
    try:
        args, _, aux = out.infer_type(**given)
    except MXNetError:
        args = None
    if args is None:
        warnings.warn(f"SymbolBlock: cannot infer the parameters' dtypes from the inputs' {given}; "
                      "they are float32", stacklevel=3)
        return {}
    return {**dict(zip(out.list_arguments(), args)), **dict(zip(out.list_auxiliary_states(), aux))}


class SymbolBlock(HybridBlock):
    """A block computing ``outputs`` (a Symbol or a list) from the variables ``inputs``; the other
    variables are its parameters (aux states with ``grad_req='null'``), found in ``params`` when
    given, initialized later otherwise. Their dtypes are inferred from the inputs' declared
    dtypes (``mx.sym.var('data', dtype='float64')``), float32 otherwise."""

    def __init__(self, outputs: Any, inputs: Any, params: ParameterDict | None = None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        outs, self._out_format = _flatten(outputs, "output")
        out = symbol.Group(outs)
        names = []
        for s in syms:
            if len(s.get_internals().list_outputs()) != 1:
                raise ValueError(f"Input symbols must be variable, but {s.name} is an output of operators")
            names.append(s.name)
        dtypes = _param_dtypes(syms, out)
        attrs = out.attr_dict()
        for n in out.list_arguments():      # parameters of a SymbolBlock are dense, as in MXNet
            st = attrs.get(n, {}).get("__storage_type__", "0")
            if st != "0":
                raise AssertionError(f"SymbolBlock does not support Parameter {n!r} with storage type "
                                     f"id {st} (sparse); its parameters are dense")
        for n in out.list_arguments():
            if n not in names:
                self.params.get(n, allow_deferred_init=True, dtype=dtypes.get(n, np.float32))
        for n in out.list_auxiliary_states():
            if n not in names:
                self.params.get(n, grad_req="null", allow_deferred_init=True,
                                dtype=dtypes.get(n, np.float32))
        self._cached_graph = syms, out
        cut = len(_common_prefix(list(self._params.keys())))
        self._reg_params.update((k[cut:], v) for k, v in self._params.items())

    @staticmethod
    def imports(symbol_file: str, input_names: Any, param_file: str | None = None, ctx: Any = None,
                allow_missing: bool = False, ignore_extra: bool = False) -> SymbolBlock:  # noqa: FBT001, FBT002
        """A SymbolBlock from ``symbol_file`` (``-symbol.json``) with ``input_names`` as inputs
        and, when given, its parameters read from ``param_file`` (dtypes as saved)."""
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        block = SymbolBlock(sym, [symbol.var(n) for n in input_names])
        if param_file is not None:
            block.collect_params().load(param_file, ctx=ctx, allow_missing=allow_missing,
                                        ignore_extra=ignore_extra, cast_dtype=True, dtype_source="saved")
        return block

    def forward(self, x: Any, *args: Any) -> Any:
        flat = [a for a in _flatten([x, *args], "input")[0] if a is not None]
        if flat and isinstance(flat[0], NDArray):
            from .cached import call_cached
            with flat[0].context:
                return call_cached(self, x, *args)
        syms, out = self._cached_graph
        return out(**{s.name: a for s, a in zip(syms, flat)})

    def _get_graph(self, *args: Any) -> tuple:
        return self._cached_graph

    def _clear_cached_op(self) -> None:
        graph = getattr(self, "_cached_graph", ())
        super()._clear_cached_op()
        self._cached_graph = graph

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N803
        raise NotImplementedError("SymbolBlock runs its symbol; it has no hybrid_forward")

    def cast(self, dtype: Any) -> None:
        self._clear_cached_op()
        super().cast(dtype)
