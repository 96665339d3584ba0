"""Token counting for :mod:`symjit.contrib.text` (``mx.contrib.text.utils``)."""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ...base import ParamError

__all__ = ["count_tokens_from_str"]


def count_tokens_from_str(source_str: str, token_delim: str = " ", seq_delim: str = "\n",
                          to_lower: bool = False, counter_to_update: Any = None) -> Counter:
    """Count the tokens of ``source_str``: the pieces between any two delimiters (``token_delim``
    or ``seq_delim``, plain strings, not patterns), empty pieces left out, lower-cased first when
    ``to_lower``. The counts are added to ``counter_to_update`` (and it is returned) when given.

    >>> count_tokens_from_str(' Life is good \\n life is life \\n', to_lower=True)
    Counter({'life': 3, 'is': 2, 'good': 1})
    """
    if not isinstance(source_str, str):
        raise ParamError(f"count_tokens_from_str: source_str must be a str, got {type(source_str).__name__}")
    if not token_delim or not seq_delim:
        raise ParamError("count_tokens_from_str: token_delim and seq_delim must be non-empty strings")
    pieces = re.split(f"{re.escape(token_delim)}|{re.escape(seq_delim)}", source_str)
    tokens = [p.lower() if to_lower else p for p in pieces if p]
    if counter_to_update is None:
        return Counter(tokens)
    if not isinstance(counter_to_update, Counter):
        raise ParamError("count_tokens_from_str: counter_to_update must be a collections.Counter, got "
                         f"{type(counter_to_update).__name__}")
    counter_to_update.update(tokens)
    return counter_to_update
