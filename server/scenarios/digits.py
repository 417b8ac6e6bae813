"""The handwritten digits the training scenarios learn: scikit-learn's bundled ``load_digits``.

1797 grey 8x8 images of the digits 0-9 ship inside scikit-learn (nothing is downloaded).
Pixels (0..16) are scaled to [0, 1] and flattened to 64 features; a fixed permutation keeps
1437 images for training and 360 for validation, the split the Module acceptance test
(``tests/module/test_digits_acceptance.py``) uses, so the numbers are comparable.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

NUM_TRAIN = 1437
NUM_CLASSES = 10
NUM_FEATURES = 64
SPLIT_SEED = 0


@dataclass(frozen=True)
class Digits:
    """Train and validation arrays (float32 features in [0, 1], float32 labels 0..9), read-only."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


@lru_cache(maxsize=1)
def load() -> Digits:
    """The split data set, loaded once per process (a run in a worker process loads it once)."""
    from sklearn.datasets import load_digits  # noqa: PLC0415 - scikit-learn takes a second to import: only runs that train pay it

    bunch = load_digits()
    x = (bunch.data / 16.0).astype(np.float32)
    y = bunch.target.astype(np.float32)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(x))
    train, val = order[:NUM_TRAIN], order[NUM_TRAIN:]
    arrays = [x[train], y[train], x[val], y[val]]
    for array in arrays:
        array.setflags(write=False)  # cached: nobody may change it for the next run
    return Digits(*arrays)
