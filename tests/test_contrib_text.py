"""mx.contrib.text: token counting, vocabularies, embeddings from local files (nothing downloads)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import symjit as mx
from symjit.contrib.text.embedding import MissingEmbeddingFile
from symjit.contrib.text.vocab import TextError

text = mx.contrib.text


def _write(tmp_path, name, rows, delim=" "):
    path = tmp_path / name
    path.write_text("".join(delim.join([tok, *map(str, vec)]) + "\n" for tok, vec in rows))
    return str(path)


# -- counting -----------------------------------------------------------------------------------------

def test_count_tokens_splits_on_both_delimiters_literally():
    counts = text.utils.count_tokens_from_str("x.y|z.X|", token_delim=".", seq_delim="|")
    assert counts == Counter({"x": 1, "y": 1, "z": 1, "X": 1})
    into = Counter({"x": 5})
    same = text.utils.count_tokens_from_str("x.y|z.X|", ".", "|", to_lower=True, counter_to_update=into)
    assert same is into and into == Counter({"x": 7, "y": 1, "z": 1})


# -- vocabulary --------------------------------------------------------------------------------------

def test_vocabulary_orders_unknown_reserved_then_by_count_and_token():
    counts = Counter({"p": 2, "q": 5, "r": 2, "s": 1, "<pad>": 9})
    v = text.vocab.Vocabulary(counts, reserved_tokens=["<pad>", "<bos>"])
    assert v.idx_to_token == ["<unk>", "<pad>", "<bos>", "q", "p", "r", "s"]
    assert v.token_to_idx["r"] == 5 and len(v) == 7
    capped = text.vocab.Vocabulary(counts, most_freq_count=2, min_freq=2, reserved_tokens=["<pad>"])
    assert capped.idx_to_token == ["<unk>", "<pad>", "q", "p"]   # <pad> is not counted twice
    assert text.vocab.Vocabulary(counts, unknown_token="q").idx_to_token[:2] == ["q", "<pad>"]


def test_vocabulary_lookups_and_errors():
    v = text.vocab.Vocabulary(Counter([(1, 2), (1, 2), (3, 4)]), unknown_token=(0, 0))
    assert v.to_indices((1, 2)) == 1 and v.to_indices([(3, 4), (9, 9)]) == [2, 0]
    assert v.to_tokens([2, 0]) == [(3, 4), (0, 0)]
    with pytest.raises(ValueError, match="index 3"):
        v.to_tokens(3)
    for bad in ({"min_freq": 0}, {"reserved_tokens": ["x", "x"]}, {"reserved_tokens": ["<unk>"]}):
        with pytest.raises(AssertionError):
            text.vocab.Vocabulary(Counter("ab"), **bad)


# -- embeddings --------------------------------------------------------------------------------------

def test_custom_embedding_reads_vectors_unknown_row_and_lower_case_backup(tmp_path):
    path = _write(tmp_path, "e.txt", [("dog", [1, 2, 3]), ("cat", [4, 5, 6]), ("dog", [9, 9, 9])], "\t")
    with pytest.warns(UserWarning, match="second vector"):
        emb = text.embedding.CustomEmbedding(path, "\t", init_unknown_vec=mx.nd.ones)
    assert emb.idx_to_token == ["<unk>", "dog", "cat"] and emb.vec_len == 3
    np.testing.assert_allclose(emb.idx_to_vec.asnumpy(), [[1, 1, 1], [1, 2, 3], [4, 5, 6]])
    assert emb.get_vecs_by_tokens("Cat").asnumpy().tolist() == [1, 1, 1]
    assert emb.get_vecs_by_tokens(["Cat"], lower_case_backup=True).asnumpy().tolist() == [[4, 5, 6]]


def test_a_vector_for_the_unknown_token_in_the_file_becomes_row_zero(tmp_path):
    path = _write(tmp_path, "e.txt", [("dog", [1, 2]), ("<oov>", [7, 8])])
    emb = text.embedding.CustomEmbedding(path, unknown_token="<oov>", init_unknown_vec=mx.nd.ones)
    assert emb.idx_to_token == ["<oov>", "dog"]
    assert emb.get_vecs_by_tokens("never seen").asnumpy().tolist() == [7, 8]


@pytest.mark.parametrize("rows", [[("a", [1, 2]), ("b", [])], [("a", [1, 2]), ("b", [1, 2, 3])],
                                  [("a", [1, 2]), ("b", ["x", "y"])]])
def test_malformed_embedding_files_are_errors_naming_the_line(tmp_path, rows):
    path = _write(tmp_path, "bad.txt", rows)
    with pytest.raises(TextError, match="line 2"):
        text.embedding.CustomEmbedding(path)


def test_embedding_reindexed_by_a_vocabulary_and_updated(tmp_path):
    path = _write(tmp_path, "e.txt", [("dog", [1, 2]), ("cat", [3, 4])])
    vocab = text.vocab.Vocabulary(Counter(["cat", "cat", "emu"]), reserved_tokens=["<pad>"])
    emb = text.embedding.CustomEmbedding(path, vocabulary=vocab, init_unknown_vec=mx.nd.ones)
    assert emb.idx_to_token == ["<unk>", "<pad>", "cat", "emu"] and emb.reserved_tokens == ["<pad>"]
    np.testing.assert_allclose(emb.idx_to_vec.asnumpy(), [[1, 1], [1, 1], [3, 4], [1, 1]])
    emb.update_token_vectors(["emu", "<unk>"], mx.nd.array([[5, 5], [0, 0]]))
    emb.update_token_vectors("cat", mx.nd.array([6, 6]))
    np.testing.assert_allclose(emb.idx_to_vec.asnumpy(), [[0, 0], [1, 1], [6, 6], [5, 5]])
    with pytest.raises(ValueError, match="'dog' is not indexed"):
        emb.update_token_vectors("dog", mx.nd.array([0, 0]))
    with pytest.raises(AssertionError, match=r"\(1, 2\)"):
        emb.update_token_vectors("cat", mx.nd.array([0, 0, 0]))


def test_composite_embedding_concatenates_each_embeddings_vectors(tmp_path):
    first = text.embedding.CustomEmbedding(_write(tmp_path, "1.txt", [("a", [1, 1]), ("b", [2, 2])]),
                                           init_unknown_vec=mx.nd.ones)
    second = text.embedding.CustomEmbedding(_write(tmp_path, "2.txt", [("b", [7, 7]), ("c", [8, 9])]))
    vocab = text.vocab.Vocabulary(Counter(["c", "c", "a", "z"]))
    both = text.embedding.CompositeEmbedding(vocab, [first, second])
    assert both.idx_to_token == ["<unk>", "c", "a", "z"] and both.vec_len == 4
    np.testing.assert_allclose(both.idx_to_vec.asnumpy(),
                               [[1, 1, 0, 0], [1, 1, 8, 9], [1, 1, 0, 0], [1, 1, 0, 0]])


def test_pretrained_embeddings_are_read_from_the_embedding_root_never_downloaded(tmp_path):
    names = text.embedding.get_pretrained_file_names()
    assert len(names["glove"]) == 10 and "glove.6B.50d.txt" in names["glove"]
    assert "wiki.simple.vec" in text.embedding.get_pretrained_file_names("fasttext")
    with pytest.raises(KeyError):
        text.embedding.get_pretrained_file_names("word2vec")
    with pytest.raises(MissingEmbeddingFile, match=r"glove\.6B\.50d\.txt.*does not download"):
        text.embedding.create("glove", pretrained_file_name="glove.6B.50d.txt", embedding_root=str(tmp_path))
    with pytest.raises(KeyError, match="valid files"):
        text.embedding.GloVe(pretrained_file_name="nope.txt", embedding_root=str(tmp_path))
    (tmp_path / "fasttext").mkdir()
    (tmp_path / "fasttext" / "wiki.simple.vec").write_text("2 3\nhi 1 2 3\nyo 4 5 6\n")
    with pytest.warns(UserWarning, match="header"):
        ft = text.embedding.create("fasttext", embedding_root=str(tmp_path))
    assert ft.idx_to_token == ["<unk>", "hi", "yo"]
    assert ft.get_vecs_by_tokens("yo").asnumpy().tolist() == [4, 5, 6]
