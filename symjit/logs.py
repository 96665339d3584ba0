"""The ``symjit`` logger, set up as a library's logger should be.

symjit logs through ``logging.getLogger("symjit")`` (bind summaries, ahead-of-time modules, compile
workers); its messages carry no ``symjit:`` prefix of their own, since the application's format
names the logger (``logging.basicConfig(level=logging.INFO)`` prints ``INFO:symjit:...``). The only
handler symjit adds is on its own logger: while the application has configured no handler on the
way to the root logger, it prints symjit's warnings to stderr as ``symjit: ...`` (where Python's
last-resort handler would print them bare); as soon as the application configures logging, it
steps aside and the application's handlers print everything. Nothing is added to the root logger.

>>> import logging
>>> any(isinstance(h, FallbackHandler) for h in logging.getLogger("symjit").handlers)
True
"""
from __future__ import annotations

import logging
import sys

__all__ = ["LOG", "FallbackHandler", "install"]

LOG = logging.getLogger("symjit")


class FallbackHandler(logging.Handler):
    """Prints a record as ``symjit: <message>`` on the current ``sys.stderr``, unless another
    handler on the record's way up the logger hierarchy will print it.

    >>> h = FallbackHandler()
    >>> h.format(logging.makeLogRecord({"msg": "no ahead-of-time module %s", "args": ("m",)}))
    'symjit: no ahead-of-time module m'
    """

    def __init__(self, level: int = logging.WARNING):
        super().__init__(level)
        self.setFormatter(logging.Formatter("symjit: %(message)s"))

    def _others(self, name: str) -> bool:
        """Whether a handler other than this one sits on the way from logger ``name`` to the root."""
        logger: logging.Logger | None = logging.getLogger(name)
        while logger is not None:
            if any(h is not self for h in logger.handlers):
                return True
            if not logger.propagate:
                return False
            logger = logger.parent
        return False

    def emit(self, record: logging.LogRecord) -> None:
        if self._others(record.name):
            return
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging's own convention: report, never raise
            self.handleError(record)


def install(logger: logging.Logger = LOG) -> FallbackHandler:
    """Give ``logger`` its fallback handler (once; called when symjit is imported)."""
    for h in logger.handlers:
        if isinstance(h, FallbackHandler):
            return h
    handler = FallbackHandler()
    logger.addHandler(handler)
    return handler


install()
