"""Sentences for RNN training: :func:`encode_sentences` and :class:`BucketSentenceIter`."""
from __future__ import annotations

import bisect
import logging
from typing import Any

import numpy as np

from ..base import MXNetError, ParamError
from ..io.iterators import DataBatch, DataDesc, DataIter
from ..ndarray.creation import array as nd_array

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences: list, vocab: dict | None = None, invalid_label: int = -1,
                     invalid_key: str = "\n", start_label: int = 0,
                     unknown_token: str | None = None) -> tuple[list[list[int]], dict]:
    """Each sentence (a list of tokens) as a list of ids, and the vocabulary used.

    Without ``vocab`` a new one is built (``invalid_key`` maps to ``invalid_label``; new words
    get ids from ``start_label``, skipping ``invalid_label``). With a ``vocab``, an unknown word is
    an error unless ``unknown_token`` names the token it becomes.

    >>> encode_sentences([['a', 'b'], ['b', 'c']])
    ([[0, 1], [1, 2]], {'\\n': -1, 'a': 0, 'b': 1, 'c': 2})
    """
    idx = start_label
    new_vocab = vocab is None
    vocab = {invalid_key: invalid_label} if vocab is None else vocab
    out = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                if not new_vocab and not unknown_token:
                    raise MXNetError(f"encode_sentences: unknown token {word!r} (give unknown_token)")
                if unknown_token:
                    word = unknown_token
                if word not in vocab:
                    if idx == invalid_label:
                        idx += 1
                    vocab[word] = idx
                    idx += 1
            coded.append(vocab[word])
        out.append(coded)
    return out, vocab


class BucketSentenceIter(DataIter):
    """Batches of same-length sentences for a language model: each sentence goes to the smallest
    bucket (length) that holds it, padded with ``invalid_label``; the label is the sentence
    shifted by one word. Every batch carries ``bucket_key`` (its length) for a
    ``BucketingModule``. Sentences longer than the largest bucket are dropped (with a warning).
    Without ``buckets``, every length with at least ``batch_size`` sentences is one. ``reset``
    shuffles batches and sentences with ``mx.random``'s generator.

    >>> it = BucketSentenceIter([[1, 2, 3], [4, 5, 6], [7, 8]], batch_size=2, buckets=[3])
    >>> b = next(it)
    >>> b.bucket_key, b.data[0].shape
    (3, (2, 3))
    """

    def __init__(self, sentences: list, batch_size: int, buckets: list[int] | None = None,
                 invalid_label: int = -1, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: Any = "float32", layout: str = "NT"):
        super().__init__(int(batch_size))
        if not buckets:
            counts = np.bincount([len(s) for s in sentences]) if sentences else np.zeros(0, int)
            buckets = [i for i, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(int(b) for b in buckets)
        if not buckets:
            raise ParamError(f"BucketSentenceIter: no bucket: no length has {batch_size} sentences; "
                             "give buckets")
        if layout not in ("NT", "TN"):
            raise ParamError(f"BucketSentenceIter: layout must be 'NT' (batch major) or 'TN', got {layout!r}")
        data: list[list] = [[] for _ in buckets]
        dropped = 0
        for sent in sentences:
            b = bisect.bisect_left(buckets, len(sent))
            if b == len(buckets):
                dropped += 1
                continue
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[:len(sent)] = sent
            data[b].append(row)
        if dropped:
            logging.warning("BucketSentenceIter: discarded %d sentences longer than the largest bucket.",
                            dropped)
        self.data = [np.asarray(d, dtype=dtype).reshape(-1, buckets[i]) for i, d in enumerate(data)]
        self.buckets, self.invalid_label, self.dtype = buckets, invalid_label, np.dtype(dtype)
        self.data_name, self.label_name, self.layout = data_name, label_name, layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(buckets)
        shape = ((batch_size, self.default_bucket_key) if self.major_axis == 0
                 else (self.default_bucket_key, batch_size))
        self.provide_data = [DataDesc(data_name, shape, self.dtype.type, layout)]
        self.provide_label = [DataDesc(label_name, shape, self.dtype.type, layout)]
        self.idx = [(i, j) for i, d in enumerate(self.data)
                    for j in range(0, len(d) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.reset()

    def reset(self) -> None:
        """Shuffle the batches and the sentences in each bucket; start again."""
        from .. import random as _random
        rng = _random._rng
        self.curr_idx = 0
        self.idx = [self.idx[k] for k in rng.permutation(len(self.idx))]
        self.nddata, self.ndlabel = [], []
        for k, bucket in enumerate(self.data):
            bucket = bucket[rng.permutation(len(bucket))] if len(bucket) else bucket
            self.data[k] = bucket
            label = np.empty_like(bucket)
            if bucket.size:
                label[:, :-1] = bucket[:, 1:]
                label[:, -1] = self.invalid_label
            self.nddata.append(bucket)
            self.ndlabel.append(label)

    def next(self) -> DataBatch:
        """The next batch (``bucket_key`` its sentence length)."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data, label = self.nddata[i][j:j + self.batch_size], self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        data, label = nd_array(np.ascontiguousarray(data), dtype=self.dtype), nd_array(
            np.ascontiguousarray(label), dtype=self.dtype)
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(self.data_name, data.shape, self.dtype.type, self.layout)],
                         provide_label=[DataDesc(self.label_name, label.shape, self.dtype.type, self.layout)])
