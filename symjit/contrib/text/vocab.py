"""``mx.contrib.text.vocab.Vocabulary``: an index of tokens (any hashable values), index 0 the
unknown token, then the reserved tokens, then the counted tokens from the most frequent."""
from __future__ import annotations

from collections import Counter
from typing import Any

from ...base import MXNetError

__all__ = ["Vocabulary", "TextError"]

UNKNOWN_IDX = 0


class TextError(MXNetError, ValueError, AssertionError):
    """Bad arguments or files of ``mx.contrib.text`` (MXNet asserts on these, so it is an
    AssertionError too)."""


class Vocabulary:
    """Tokens and their indices: ``unknown_token`` at index 0, the ``reserved_tokens`` next in
    their order, then the tokens of ``counter`` (a ``collections.Counter``) that occur at least
    ``min_freq`` times, most frequent first (equal counts in the tokens' sorted order), at most
    ``most_freq_count`` of them (all when None). Tokens that are the unknown token or reserved are
    not indexed again.

    >>> from collections import Counter
    >>> v = Vocabulary(Counter(['a', 'b', 'b', 'c', 'c', 'c']), reserved_tokens=['<pad>'])
    >>> v.idx_to_token
    ['<unk>', '<pad>', 'c', 'b', 'a']
    >>> v.to_indices(['b', 'zzz']), v.to_tokens(2)
    ([3, 0], 'c')
    """

    def __init__(self, counter: Counter | None = None, most_freq_count: int | None = None, min_freq: int = 1,
                 unknown_token: Any = "<unk>", reserved_tokens: list | None = None):
        if not isinstance(min_freq, int) or isinstance(min_freq, bool) or min_freq <= 0:
            raise TextError(f"Vocabulary: min_freq must be a positive int, got {min_freq!r}")
        if most_freq_count is not None and (not isinstance(most_freq_count, int) or most_freq_count < 0):
            raise TextError("Vocabulary: most_freq_count must be None or an int >= 0, got "
                            f"{most_freq_count!r}")
        if reserved_tokens is not None:
            reserved_tokens = list(reserved_tokens)
            if unknown_token in reserved_tokens:
                raise TextError(f"Vocabulary: reserved_tokens {reserved_tokens} contain the unknown token "
                                f"{unknown_token!r}")
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise TextError(f"Vocabulary: reserved_tokens {reserved_tokens} has duplicates")
        self._unknown_token = unknown_token
        self._reserved_tokens = reserved_tokens
        self._idx_to_token = [unknown_token] + (reserved_tokens or [])
        self._token_to_idx = {t: i for i, t in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter(counter, most_freq_count, min_freq)

    def _index_counter(self, counter: Counter, most_freq_count: int | None, min_freq: int) -> None:
        if not isinstance(counter, Counter):
            raise TextError("Vocabulary: counter must be a collections.Counter, got "
                            f"{type(counter).__name__}")
        ranked = sorted(sorted(counter.items(), key=lambda kv: kv[0]), key=lambda kv: kv[1], reverse=True)
        room = len(counter) if most_freq_count is None else most_freq_count
        for token, freq in ranked:
            if freq < min_freq or room <= 0:
                break
            if token in self._token_to_idx:
                continue
            self._token_to_idx[token] = len(self._idx_to_token)
            self._idx_to_token.append(token)
            room -= 1

    def __len__(self) -> int:
        return len(self._idx_to_token)

    @property
    def token_to_idx(self) -> dict:
        """Each indexed token's index."""
        return self._token_to_idx

    @property
    def idx_to_token(self) -> list:
        """The indexed tokens in index order."""
        return self._idx_to_token

    @property
    def unknown_token(self) -> Any:
        """What every token not indexed maps to (index 0)."""
        return self._unknown_token

    @property
    def reserved_tokens(self) -> list | None:
        """The reserved tokens (indices 1...), or None."""
        return self._reserved_tokens

    def to_indices(self, tokens: Any) -> Any:
        """The index of a token, or the list of indices of a list of tokens (0 for unknown ones)."""
        if isinstance(tokens, list):
            return [self._token_to_idx.get(t, UNKNOWN_IDX) for t in tokens]
        return self._token_to_idx.get(tokens, UNKNOWN_IDX)

    def to_tokens(self, indices: Any) -> Any:
        """The token of an index, or the list of tokens of a list of indices."""
        many = isinstance(indices, list)
        out = []
        for idx in indices if many else [indices]:
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(self._idx_to_token):
                raise TextError(f"Vocabulary.to_tokens: index {idx!r} is not in "
                                f"[0, {len(self._idx_to_token)})")
            out.append(self._idx_to_token[idx])
        return out if many else out[0]
