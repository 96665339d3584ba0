"""``mx.contrib.text.embedding``: token embeddings, a :class:`~.vocab.Vocabulary` whose every index
has a vector (``idx_to_vec``, one row per index; row 0 the unknown token's).

Embeddings load from text files of one token per line followed by its numbers, separated by
``elem_delim``: :class:`CustomEmbedding` from any such file, :class:`GloVe` and :class:`FastText`
from the published files (:func:`get_pretrained_file_names`). symjit downloads nothing: those are
read from ``<embedding_root>/glove/<name>`` or ``<embedding_root>/fasttext/<name>``
(``embedding_root`` defaults to ``$MXNET_HOME/embeddings``) and a missing file is an error that
names that path. :class:`CompositeEmbedding` concatenates several embeddings' vectors for the
tokens of a vocabulary.

>>> import os, tempfile, symjit as mx
>>> path = os.path.join(tempfile.mkdtemp(), 'vec.txt')
>>> with open(path, 'w') as f:
...     _ = f.write('hello 1 2\\nworld 3 4\\n')
>>> emb = CustomEmbedding(path, ' ')
>>> emb.idx_to_token, emb.get_vecs_by_tokens(['world', 'xyz']).asnumpy().tolist()
(['<unk>', 'hello', 'world'], [[3.0, 4.0], [0.0, 0.0]])
"""
from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError, data_dir
from ._files import FASTTEXT_FILES, GLOVE_FILES
from .vocab import UNKNOWN_IDX, TextError, Vocabulary

__all__ = ["register", "create", "get_pretrained_file_names", "GloVe", "FastText", "CustomEmbedding",
           "CompositeEmbedding", "MissingEmbeddingFile"]

_REGISTRY: dict[str, type] = {}


class MissingEmbeddingFile(MXNetError, FileNotFoundError):
    """A pre-trained embedding file that is not where symjit reads it (it downloads nothing)."""


def register(embedding_cls: type) -> type:
    """Class decorator: make a token-embedding class creatable by its lower-cased name in
    :func:`create` (its ``pretrained_file_name_sha1`` or ``pretrained_file_names`` lists its files)."""
    if not (isinstance(embedding_cls, type) and issubclass(embedding_cls, _TokenEmbedding)):
        raise TextError(f"embedding.register: expected a token-embedding class, got {embedding_cls!r}")
    _REGISTRY[embedding_cls.__name__.lower()] = embedding_cls
    return embedding_cls


def create(embedding_name: str, **kwargs: Any) -> _TokenEmbedding:
    """The registered embedding ``embedding_name`` (``'glove'``, ``'fasttext'``, ...) made with ``kwargs``."""
    klass = _REGISTRY.get(str(embedding_name).lower())
    if klass is None:
        raise KeyError(f"embedding.create: unknown embedding {embedding_name!r}; registered: "
                       f"{', '.join(sorted(_REGISTRY))}")
    return klass(**kwargs)


def _file_names(klass: type) -> list[str]:
    names = getattr(klass, "pretrained_file_name_sha1", None) or getattr(klass, "pretrained_file_names", ())
    return list(names)


def get_pretrained_file_names(embedding_name: str | None = None) -> Any:
    """The pre-trained file names of ``embedding_name``, or a dict of every registered embedding's.

    >>> len(get_pretrained_file_names('glove'))
    10
    """
    if embedding_name is None:
        return {name: _file_names(klass) for name, klass in _REGISTRY.items()}
    klass = _REGISTRY.get(str(embedding_name).lower())
    if klass is None:
        raise KeyError(f"get_pretrained_file_names: unknown embedding {embedding_name!r}; registered: "
                       f"{', '.join(sorted(_REGISTRY))}")
    return _file_names(klass)


def _as_rows(value: Any, n: int, width: int, where: str) -> np.ndarray:
    """``value`` (a function of ``shape`` such as ``nd.zeros``, or an array) as ``n`` float32 rows."""
    if callable(value):
        value = value(shape=width)
    row = np.asarray(value.asnumpy() if isinstance(value, nd.NDArray) else value, dtype=np.float32)
    if row.shape != (width,):
        raise TextError(f"{where}: init_unknown_vec gave shape {row.shape}, expected ({width},)")
    return np.tile(row, (n, 1))


class _TokenEmbedding(Vocabulary):
    """Base of the token embeddings: a Vocabulary (``unknown_token``, ``reserved_tokens``, ...
    as keyword arguments) with ``idx_to_vec`` and ``vec_len``."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._vec_len: int | None = None
        self._idx_to_vec: nd.NDArray | None = None

    @property
    def vec_len(self) -> int | None:
        """The length of each token's vector."""
        return self._vec_len

    @property
    def idx_to_vec(self) -> nd.NDArray | None:
        """``(len(self), vec_len)``: row ``i`` is the vector of ``idx_to_token[i]``."""
        return self._idx_to_vec

    @classmethod
    def _check_pretrained_file_names(cls, pretrained_file_name: str) -> None:
        names = _file_names(cls)
        if pretrained_file_name not in names:
            raise KeyError(f"{cls.__name__}: unknown pre-trained file {pretrained_file_name!r}; valid files: "
                           f"{', '.join(names)}")

    @classmethod
    def _get_pretrained_file(cls, embedding_root: str, pretrained_file_name: str) -> str:
        """The path of a pre-trained file put in ``<embedding_root>/<class name>/`` (never downloaded)."""
        path = os.path.join(os.path.expanduser(embedding_root), cls.__name__.lower(), pretrained_file_name)
        if not os.path.isfile(path):
            raise MissingEmbeddingFile(
                f"{cls.__name__}: the pre-trained file {pretrained_file_name!r} is not at {path}; symjit "
                f"does not download embeddings: get {pretrained_file_name} from the {cls.__name__} project "
                "and put it there (or pass embedding_root=<folder holding "
                f"{cls.__name__.lower()}/{pretrained_file_name}>)")
        want = (getattr(cls, "pretrained_file_name_sha1", None) or {}).get(pretrained_file_name)
        if want:
            digest = hashlib.sha1()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            if digest.hexdigest() != want:
                raise TextError(f"{cls.__name__}: {path} has SHA-1 {digest.hexdigest()}, expected {want}")
        return path

    def _load_embedding(self, pretrained_file_path: str, elem_delim: str, init_unknown_vec: Any,
                        encoding: str = "utf8") -> None:
        """Index every token of the file (after those already indexed) with its vector. The first
        vector given for the unknown token becomes row 0; rows of tokens indexed before the file
        (the unknown and reserved tokens) are ``init_unknown_vec``'s otherwise. A later line for a
        token already read is skipped with a warning, and so is a line of one number (a header)."""
        path = os.path.expanduser(pretrained_file_path)
        if not os.path.isfile(path):
            raise TextError(f"{type(self).__name__}: pretrained_file_path {path!r} is not a file")
        vectors: list[list[float]] = []
        loaded_unknown = None
        seen: set = set()
        width = None
        with open(path, encoding=encoding) as f:
            for line_num, line in enumerate(f, 1):
                elems = line.rstrip().split(elem_delim)
                if len(elems) < 2:
                    raise TextError(f"{path}, line {line_num}: expected a token and its numbers separated "
                                    f"by {elem_delim!r}, got {line.rstrip()[:60]!r}")
                token = elems[0]
                try:
                    values = [float(x) for x in elems[1:]]
                except ValueError:
                    raise TextError(f"{path}, line {line_num}: the vector of {token!r} is not "
                                    "numbers") from None
                if token == self.unknown_token and loaded_unknown is None:
                    loaded_unknown = values
                    seen.add(token)
                    continue
                if token in seen or token in self._token_to_idx:
                    warnings.warn(f"{path}, line {line_num}: a second vector for {token!r} is skipped",
                                  stacklevel=3)
                    continue
                if len(values) == 1:
                    warnings.warn(f"{path}, line {line_num}: {token!r} with one number looks like a "
                                  "header and is skipped", stacklevel=3)
                    continue
                if width is None:
                    width = len(values)
                elif len(values) != width:
                    raise TextError(f"{path}, line {line_num}: {token!r} has {len(values)} numbers but the "
                                    f"tokens before it have {width}")
                seen.add(token)
                vectors.append(values)
                self._token_to_idx[token] = len(self._idx_to_token)
                self._idx_to_token.append(token)
        if width is None:
            width = len(loaded_unknown) if loaded_unknown is not None else 0
            if width == 0:
                raise TextError(f"{path}: no token vectors")
        n_before = len(self._idx_to_token) - len(vectors)
        rows = [_as_rows(init_unknown_vec, n_before, width, type(self).__name__)]
        if loaded_unknown is not None:
            if len(loaded_unknown) != width:
                raise TextError(f"{path}: the unknown token's vector has {len(loaded_unknown)} numbers, the "
                                f"others {width}")
            rows[0][UNKNOWN_IDX] = loaded_unknown
        rows.append(np.asarray(vectors, dtype=np.float32).reshape(-1, width))
        self._vec_len = width
        self._idx_to_vec = nd.array(np.concatenate(rows))

    def _build_embedding_for_vocabulary(self, vocabulary: Vocabulary | None) -> None:
        if vocabulary is None:
            return
        if not isinstance(vocabulary, Vocabulary):
            raise TextError(f"{type(self).__name__}: vocabulary must be a Vocabulary, got "
                            f"{type(vocabulary).__name__}")
        self._set_idx_to_vec_by_embeddings([self], vocabulary.idx_to_token)
        self._index_tokens_from_vocabulary(vocabulary)

    def _index_tokens_from_vocabulary(self, vocabulary: Vocabulary) -> None:
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        reserved = vocabulary.reserved_tokens
        self._reserved_tokens = None if reserved is None else list(reserved)

    def _set_idx_to_vec_by_embeddings(self, embeddings: list, idx_to_token: list) -> None:
        """``idx_to_vec`` for ``idx_to_token``: each embedding's vectors of those tokens side by side
        (row 0 each embedding's unknown vector)."""
        blocks = []
        for emb in embeddings:
            block = emb.get_vecs_by_tokens(list(idx_to_token)).asnumpy()
            block[UNKNOWN_IDX] = emb.idx_to_vec[UNKNOWN_IDX].asnumpy()
            blocks.append(block)
        self._vec_len = sum(emb.vec_len for emb in embeddings)
        self._idx_to_vec = nd.array(np.concatenate(blocks, axis=1))

    def get_vecs_by_tokens(self, tokens: Any, lower_case_backup: bool = False) -> nd.NDArray:
        """The vector of a token (1-D) or of each token of a list (2-D); a token not indexed gets
        the unknown vector, after its lower-case form is tried when ``lower_case_backup``."""
        many = isinstance(tokens, list)
        indices = []
        for t in tokens if many else [tokens]:
            idx = self._token_to_idx.get(t)
            if idx is None and lower_case_backup and isinstance(t, str):
                idx = self._token_to_idx.get(t.lower())
            indices.append(UNKNOWN_IDX if idx is None else idx)
        vecs = self._idx_to_vec.asnumpy()[np.asarray(indices, dtype=np.int64)]
        return nd.array(vecs if many else vecs[0])

    def update_token_vectors(self, tokens: Any, new_vectors: nd.NDArray) -> None:
        """Set the vectors of indexed tokens (a token, or a list); ``new_vectors`` is
        ``(len(tokens), vec_len)``, or 1-D for one token. Tokens not indexed are an error (name the
        unknown token itself to change its vector)."""
        where = f"{type(self).__name__}.update_token_vectors"
        many = isinstance(tokens, list) and len(tokens) != 1
        if not isinstance(new_vectors, nd.NDArray) or new_vectors.ndim not in ((2,) if many else (1, 2)):
            raise TextError(f"{where}: new_vectors must be a 2-D NDArray (1-D or 2-D for one token), got "
                            f"{getattr(new_vectors, 'shape', type(new_vectors).__name__)}")
        tokens = tokens if isinstance(tokens, list) else [tokens]
        vecs = new_vectors.asnumpy().reshape(-1, new_vectors.shape[-1])
        if vecs.shape != (len(tokens), self._vec_len):
            raise TextError(f"{where}: new_vectors has shape {tuple(new_vectors.shape)}, expected "
                            f"({len(tokens)}, {self._vec_len})")
        missing = [t for t in tokens if t not in self._token_to_idx]
        if missing:
            raise ValueError(f"{where}: token {missing[0]!r} is not indexed; to change the unknown vector, "
                             f"name the unknown token {self._idx_to_token[UNKNOWN_IDX]!r} itself")
        table = self._idx_to_vec.asnumpy()
        table[[self._token_to_idx[t] for t in tokens]] = vecs
        self._idx_to_vec = nd.array(table)


def _default_root() -> str:
    return os.path.join(data_dir(), "embeddings")


class _Pretrained(_TokenEmbedding):
    """An embedding read from one of its class's published files, put beforehand in
    ``<embedding_root>/<class name in lower case>/``."""

    def __init__(self, pretrained_file_name: str, embedding_root: str | None = None,
                 init_unknown_vec: Callable = nd.zeros, vocabulary: Vocabulary | None = None, **kwargs: Any):
        type(self)._check_pretrained_file_names(pretrained_file_name)
        super().__init__(**kwargs)
        path = type(self)._get_pretrained_file(embedding_root or _default_root(), pretrained_file_name)
        self._load_embedding(path, " ", init_unknown_vec)
        self._build_embedding_for_vocabulary(vocabulary)


@register
class GloVe(_Pretrained):
    """GloVe vectors (Pennington et al.) from ``<embedding_root>/glove/<pretrained_file_name>``,
    a file of ``GLOVE_FILES`` put there beforehand (symjit does not download it)."""

    pretrained_file_names = GLOVE_FILES

    def __init__(self, pretrained_file_name: str = "glove.840B.300d.txt", embedding_root: str | None = None,
                 init_unknown_vec: Callable = nd.zeros, vocabulary: Vocabulary | None = None, **kwargs: Any):
        super().__init__(pretrained_file_name, embedding_root, init_unknown_vec, vocabulary, **kwargs)


@register
class FastText(_Pretrained):
    """fastText vectors (Bojanowski et al.) from ``<embedding_root>/fasttext/<pretrained_file_name>``,
    a ``.vec`` file of ``FASTTEXT_FILES`` put there beforehand (its header line is skipped)."""

    pretrained_file_names = FASTTEXT_FILES

    def __init__(self, pretrained_file_name: str = "wiki.simple.vec", embedding_root: str | None = None,
                 init_unknown_vec: Callable = nd.zeros, vocabulary: Vocabulary | None = None, **kwargs: Any):
        super().__init__(pretrained_file_name, embedding_root, init_unknown_vec, vocabulary, **kwargs)


class CustomEmbedding(_TokenEmbedding):
    """Vectors from any file of lines ``token<elem_delim>v1<elem_delim>v2...`` (every vector of
    the same length); ``vocabulary`` re-indexes them by that vocabulary's tokens."""

    def __init__(self, pretrained_file_path: str, elem_delim: str = " ", encoding: str = "utf8",
                 init_unknown_vec: Callable = nd.zeros, vocabulary: Vocabulary | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """The tokens of ``vocabulary``, each with the vectors of every embedding of
    ``token_embeddings`` (one or a list) concatenated in order."""

    def __init__(self, vocabulary: Vocabulary, token_embeddings: Any):
        if not isinstance(vocabulary, Vocabulary):
            raise TextError("CompositeEmbedding: vocabulary must be a Vocabulary, got "
                            f"{type(vocabulary).__name__}")
        embeddings = token_embeddings if isinstance(token_embeddings, list) else [token_embeddings]
        bad = [type(e).__name__ for e in embeddings if not isinstance(e, _TokenEmbedding)]
        if bad or not embeddings:
            raise TextError("CompositeEmbedding: token_embeddings must be token embeddings, got "
                            f"{bad or 'none'}")
        super().__init__()
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(embeddings, vocabulary.idx_to_token)
