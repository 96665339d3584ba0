"""A word-level LSTM language model trained with ``BucketingModule`` over ``BucketSentenceIter``,
as MXNet's ``example/rnn/bucketing/lstm_bucketing.py``.

    python examples/train_lstm_bucketing.py [--text FILE] [--epochs 3] [--layers 2] [--hidden 64]
        [--embed 32] [--batch-size 32] [--buckets 10,20,30] [--lr 0.05] [--fused]

Each line of ``--text`` is a sentence (words split on whitespace). Without ``--text`` a synthetic
corpus is generated: sentences from a small Markov chain over 30 words, whose perplexity a model
can bring far below the vocabulary size. Prints the training perplexity per epoch (``Perplexity``
ignores the padding label). ``--fused`` builds the layers as one ``RNN`` operator
(``mx.rnn.FusedRNNCell``, as MXNet's ``cudnn_bucketing.py``) instead of unrolled ``LSTMCell``s.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402

INVALID = 0   # the padding label (the vocabulary starts at 1, as in MXNet's example)


def synthetic_corpus(n: int = 2000, vocab: int = 30, seed: int = 0, max_len: int = 28) -> list[list[str]]:
    """Sentences of 5 to ``max_len`` words from a Markov chain where each word has 3 likely successors."""
    rng = np.random.default_rng(seed)
    nxt = rng.integers(0, vocab, size=(vocab, 3))
    sentences = []
    for _ in range(n):
        w, sent = int(rng.integers(vocab)), []
        for _ in range(int(rng.integers(5, max_len + 1))):
            sent.append(f"w{w}")
            w = int(nxt[w, rng.integers(3)]) if rng.random() < 0.9 else int(rng.integers(vocab))
        sentences.append(sent)
    return sentences


def sym_gen_for(vocab: int, layers: int, hidden: int, embed: int, fused: bool = False):
    """``sym_gen(seq_len)``: Embedding -> stacked LSTM (unrolled cells, or one fused ``RNN``
    operator) -> FullyConnected -> softmax."""
    if fused:
        stack = mx.rnn.FusedRNNCell(hidden, num_layers=layers, mode="lstm", prefix="lstm_")
    else:
        stack = mx.rnn.SequentialRNNCell()
        for i in range(layers):
            stack.add(mx.rnn.LSTMCell(num_hidden=hidden, prefix=f"lstm_l{i}_"))

    def sym_gen(seq_len: int):
        data, label = mx.sym.Variable("data"), mx.sym.Variable("softmax_label")
        emb = mx.sym.Embedding(data=data, input_dim=vocab, output_dim=embed, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=emb, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax", use_ignore=True,
                                    ignore_label=INVALID)
        return pred, ("data",), ("softmax_label",)
    return sym_gen


def main(argv: list[str] | None = None) -> list[float]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--text", help="a text file, one sentence per line (default: a synthetic corpus)")
    ap.add_argument("--sentences", type=int, default=2000, help="synthetic corpus size")
    ap.add_argument("--max-len", type=int, default=28, help="longest synthetic sentence")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--embed", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--buckets", default="10,20,30")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--fused", action="store_true", help="one RNN operator (FusedRNNCell) for the layers")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(3)
    if args.text:
        sentences = [line.split() for line in Path(args.text).read_text().splitlines() if line.strip()]
    else:
        sentences = synthetic_corpus(args.sentences, max_len=args.max_len)
    coded, vocab = mx.rnn.encode_sentences(sentences, invalid_label=INVALID, start_label=1)
    buckets = [int(b) for b in args.buckets.split(",")]
    train = mx.rnn.BucketSentenceIter(coded, args.batch_size, buckets=buckets, invalid_label=INVALID)
    sym_gen = sym_gen_for(len(vocab) + 1, args.layers, args.hidden, args.embed, args.fused)
    model = mx.mod.BucketingModule(sym_gen,
                                   default_bucket_key=train.default_bucket_key)
    history: list[float] = []

    def record(epoch: int, sym=None, arg=None, aux=None) -> None:
        history.append(metric.get_global()[1])

    metric = mx.metric.Perplexity(INVALID)
    model.fit(train, eval_metric=metric, num_epoch=args.epochs, optimizer="sgd",
              optimizer_params={"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-5,
                                "clip_gradient": 5.0},
              initializer=mx.init.Xavier(factor_type="in", magnitude=2.34), epoch_end_callback=record,
              batch_end_callback=mx.callback.Speedometer(args.batch_size, 20))
    print(f"vocabulary {len(vocab)} words, buckets {buckets}, "
          f"{len(model._buckets)} bucket modules bound")
    for epoch, ppl in enumerate(history):
        print(f"epoch {epoch}: train perplexity {ppl:.2f}")
    return history


if __name__ == "__main__":
    main()
