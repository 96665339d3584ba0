"""Checkpoints of RNN models: parameters saved packed, as MXNet's ``save_rnn_checkpoint`` does."""
from __future__ import annotations

from typing import Any

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
    from ..dist import world
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0 and world()[0] == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
