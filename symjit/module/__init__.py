"""``mx.mod`` / ``mx.module``: MXNet 1.x's Module API (bind, init_params, fit, predict, score) and
``BucketingModule``, ``SequentialModule``, ``PythonModule``, ``PythonLossModule``.

>>> import symjit as mx
>>> mx.mod.Module(mx.sym.Variable('data') * 2, label_names=None).data_names
['data']
"""
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .module import Module
from .python_module import PythonLossModule, PythonModule
from .sequential_module import SequentialModule

__all__ = ["Module", "BaseModule", "BucketingModule", "SequentialModule", "PythonModule", "PythonLossModule",
           "DataParallelExecutorGroup"]
