"""``mx.contrib.text``: vocabularies (:mod:`.vocab`), token embeddings (:mod:`.embedding`) and
token counting (:mod:`.utils`), as MXNet 1.x's ``mxnet.contrib.text``. Nothing here downloads:
GloVe and fastText files are read from where they were put (see :mod:`.embedding`).

>>> import symjit as mx
>>> counter = mx.contrib.text.utils.count_tokens_from_str('a b b')
>>> mx.contrib.text.vocab.Vocabulary(counter).idx_to_token
['<unk>', 'b', 'a']
"""
from __future__ import annotations

from . import embedding, utils, vocab

__all__ = ["embedding", "utils", "vocab"]
