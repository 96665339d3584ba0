"""``mx.mod`` / ``mx.module``: MXNet 1.x's Module API (bind, init_params, fit, predict, score).

>>> import symjit as mx
>>> mx.mod.Module(mx.sym.Variable('data') * 2, label_names=None).data_names
['data']
"""
from .executor_group import DataParallelExecutorGroup
from .module import Module

BaseModule = Module

__all__ = ["Module", "BaseModule", "DataParallelExecutorGroup"]
