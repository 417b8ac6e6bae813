"""Train an LSTM language model with bucketing, the way MXNet 1.x's example/rnn/bucketing does.

    PYTHONPATH=$PWD python examples/rnn/lstm_bucketing.py --num-epochs 5

The text (default: tests/data/text/sentences.txt, one sentence per line) is split into words and
encoded (``mx.rnn.encode_sentences``); ``mx.rnn.BucketSentenceIter`` pads every sentence to the shortest
bucket it fits; ``sym_gen(seq_len)`` builds the network for one bucket: embedding -> stacked
``LSTMCell``s unrolled ``seq_len`` steps -> a FullyConnected over the vocabulary -> SoftmaxOutput that
ignores the padding. ``mx.mod.BucketingModule`` binds one module per bucket, all sharing the parameters.
docs/rnn.md explains the pieces.
"""

from __future__ import annotations

import argparse
import logging
import os

import framework as mx

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TEXT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "data", "text", "sentences.txt")
INVALID_LABEL = 0  # the padding id; words are numbered from 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", default=DEFAULT_TEXT, help="a text file, one sentence per line")
    parser.add_argument("--buckets", default="8,10,20", help="bucket lengths, comma separated")
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--num-hidden", type=int, default=64)
    parser.add_argument("--num-embed", type=int, default=32)
    parser.add_argument("--num-epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--disp-batches", type=int, default=10)
    return parser.parse_args(argv)


def read_sentences(path: str) -> list[list[str]]:
    with open(path, encoding="utf-8") as handle:
        return [line.split() for line in handle if line.strip()]


def make_sym_gen(vocab_size: int, args: argparse.Namespace):
    """``sym_gen(seq_len) -> (symbol, data_names, label_names)``; the cells are built once and reused."""
    stack = mx.rnn.SequentialRNNCell()
    for i in range(args.num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=args.num_hidden, prefix=f"lstm_l{i}_"))

    def sym_gen(seq_len: int):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=vocab_size, output_dim=args.num_embed, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, args.num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab_size, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax", use_ignore=True, ignore_label=INVALID_LABEL)
        return pred, ("data",), ("softmax_label",)

    return sym_gen


def main(argv: list[str] | None = None) -> float:
    """Train; returns the last epoch's training perplexity."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)-15s %(message)s")
    sentences, vocab = mx.rnn.encode_sentences(read_sentences(args.text), invalid_label=INVALID_LABEL, start_label=1)
    buckets = [int(length) for length in args.buckets.split(",")]
    train = mx.rnn.BucketSentenceIter(sentences, args.batch_size, buckets=buckets, invalid_label=INVALID_LABEL)
    model = mx.mod.BucketingModule(
        sym_gen=make_sym_gen(len(vocab) + 1, args), default_bucket_key=train.default_bucket_key, context=mx.cpu()
    )
    metric = mx.metric.Perplexity(INVALID_LABEL)
    model.fit(
        train_data=train,
        eval_metric=metric,
        optimizer=args.optimizer,
        optimizer_params={"learning_rate": args.lr},
        initializer=mx.init.Xavier(factor_type="in", magnitude=2.34),
        num_epoch=args.num_epochs,
        batch_end_callback=mx.callback.Speedometer(args.batch_size, args.disp_batches),
    )
    return metric.get()[1]


if __name__ == "__main__":
    main()
