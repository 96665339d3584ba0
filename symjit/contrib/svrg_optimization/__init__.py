"""``mx.contrib.svrg_optimization``: stochastic variance-reduced gradient (SVRG) training for the
Module API (:class:`SVRGModule`, with its helper optimizers in :mod:`.svrg_optimizer`)."""
from __future__ import annotations

from . import svrg_module, svrg_optimizer
from .svrg_module import SVRGModule

__all__ = ["SVRGModule", "svrg_module", "svrg_optimizer"]
