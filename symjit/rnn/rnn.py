"""Checkpoints of RNN models: parameters saved packed, as MXNet's ``save_rnn_checkpoint`` does."""
from __future__ import annotations

from typing import Any

from ..callback import every_epochs
from ..model import load_checkpoint, save_checkpoint

__all__ = ["save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]


def _cells(cells: Any) -> list:
    return list(cells) if isinstance(cells, (list, tuple)) else [cells]


def save_rnn_checkpoint(cells: Any, prefix: str, epoch: int, symbol: Any, arg_params: dict,
                        aux_params: dict) -> None:
    """``save_checkpoint`` with each cell's gate weights packed (``cell.pack_weights``)."""
    for cell in _cells(cells):
        arg_params = cell.pack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells: Any, prefix: str, epoch: int) -> tuple[Any, dict, dict]:
    """``load_checkpoint`` with each cell's weights unpacked (``cell.unpack_weights``)."""
    sym, arg, aux = load_checkpoint(prefix, epoch)
    for cell in _cells(cells):
        arg = cell.unpack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells: Any, prefix: str, period: int = 1) -> Any:
    """An epoch-end callback saving with :func:`save_rnn_checkpoint` every ``period`` epochs (rank 0
    only in a distributed job)."""
    return every_epochs(period, lambda epoch, sym, arg, aux: save_rnn_checkpoint(cells, prefix, epoch, sym,
                                                                                  arg, aux))
