"""Sentences as batches for bucketing: ``encode_sentences`` turns words into ids, ``BucketSentenceIter`` groups
sentences by length.

A recurrent network unrolled for 60 steps wastes most of its work on a 7-word sentence padded to 60.
Bucketing unrolls one graph per *bucket length* instead (10, 20, 30...): every sentence goes to the
shortest bucket it fits, is padded to that length with ``invalid_label``, and each batch holds sentences
of one bucket only. The batch carries ``bucket_key`` (its length), which ``mx.mod.BucketingModule`` uses
to pick (or build) the executor for that length.
"""

from __future__ import annotations

import bisect
import logging
import random
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..io import DataBatch, DataDesc, DataIter
from ..io.base import DataIterError


def encode_sentences(
    sentences: Iterable[Sequence[Hashable]],
    vocab: dict[Hashable, int] | None = None,
    invalid_label: int = -1,
    invalid_key: Hashable = "\n",
    start_label: int = 0,
    unknown_token: Hashable | None = None,
) -> tuple[list[list[int]], dict[Hashable, int]]:
    """Replace each word by its id; returns ``(encoded_sentences, vocab)``.

    With ``vocab=None`` a new vocabulary is built: ``invalid_key`` maps to ``invalid_label`` and new words get
    ids counting up from ``start_label`` (skipping ``invalid_label``). With a given ``vocab``, a word it lacks
    maps to ``unknown_token``'s id (added if needed) or, without ``unknown_token``, raises naming the word.
    """
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    next_id = start_label
    encoded = []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not new_vocab and unknown_token is None:
                    raise DataIterError(f"encode_sentences: unknown token {word!r} (not in vocab, no unknown_token)")
                key = word if unknown_token is None else unknown_token
                if key not in vocab:
                    if next_id == invalid_label:
                        next_id += 1
                    vocab[key] = next_id
                    next_id += 1
                coded.append(vocab[key])
            else:
                coded.append(vocab[word])
        encoded.append(coded)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences, one bucket per batch; the label is the sentence shifted by one word.

    Args:
        sentences: lists of word ids (``encode_sentences``).
        batch_size: sentences per batch; a bucket's last partial batch is dropped.
        buckets: the bucket lengths; default: every length at least ``batch_size`` sentences have.
        invalid_label: the padding id (also the label after a sentence's last word).
        layout: ``'NT'`` (batch major) or ``'TN'`` (time major).

    Sentences longer than the largest bucket are discarded (logged as a warning).
    """

    def __init__(
        self,
        sentences: Sequence[Sequence[int]],
        batch_size: int,
        buckets: Sequence[int] | None = None,
        invalid_label: int = -1,
        data_name: str = "data",
        label_name: str = "softmax_label",
        dtype: Any = "float32",
        layout: str = "NT",
    ) -> None:
        super().__init__(batch_size)
        if layout not in ("NT", "TN"):
            raise DataIterError(
                f"BucketSentenceIter: layout must be 'NT' (batch major) or 'TN' (time major), got {layout!r}"
            )
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise DataIterError(f"BucketSentenceIter: batch_size must be a positive int, got {batch_size!r}")
        if not buckets:
            counts = np.bincount([len(s) for s in sentences]) if len(sentences) else np.zeros(0, dtype=int)
            buckets = [length for length, count in enumerate(counts) if count >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise DataIterError(
                f"BucketSentenceIter: no bucket: no sentence length occurs at least batch_size={batch_size} times; "
                "give buckets=[...]"
            )
        per_bucket: list[list[np.ndarray]] = [[] for _ in buckets]
        discarded = 0
        for sentence in sentences:
            bucket = bisect.bisect_left(buckets, len(sentence))
            if bucket == len(buckets):
                discarded += 1
                continue
            padded = np.full((buckets[bucket],), invalid_label, dtype=dtype)
            padded[: len(sentence)] = sentence
            per_bucket[bucket].append(padded)
        if discarded:
            logging.warning("BucketSentenceIter: discarded %d sentences longer than the largest bucket.", discarded)
        self.data = [
            np.asarray(rows, dtype=dtype).reshape(len(rows), length)
            for rows, length in zip(per_bucket, buckets, strict=True)
        ]
        self.buckets = buckets
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.nddata: list[Any] = []
        self.ndlabel: list[Any] = []
        self.major_axis = layout.find("N")
        self.layout = layout
        self.default_bucket_key = max(buckets)
        shape = (batch_size, self.default_bucket_key) if self.major_axis == 0 else (self.default_bucket_key, batch_size)
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]
        # (bucket, first row) of every full batch
        self.idx = [
            (i, start) for i, rows in enumerate(self.data) for start in range(0, len(rows) - batch_size + 1, batch_size)
        ]
        self.curr_idx = 0
        self.reset()

    def reset(self) -> None:
        """Shuffle the batches and the sentences within each bucket (Python's and NumPy's global generators)."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata = []
        self.ndlabel = []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(nd.array(rows, dtype=self.dtype))
            self.ndlabel.append(nd.array(label, dtype=self.dtype))

    def next(self) -> DataBatch:
        if self.curr_idx == len(self.idx):
            raise StopIteration
        bucket, start = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[bucket][start : start + self.batch_size]
        label = self.ndlabel[bucket][start : start + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch(
            [data],
            [label],
            pad=0,
            bucket_key=self.buckets[bucket],
            provide_data=[DataDesc(name=self.data_name, shape=data.shape, layout=self.layout)],
            provide_label=[DataDesc(name=self.label_name, shape=label.shape, layout=self.layout)],
        )
