"""Testing random generators statistically: does a sampler draw from the distribution it claims?

A single draw proves nothing; many draws, binned, can be compared with the expected bin
probabilities by Pearson's chi-square test (:func:`chi_square_check`, SciPy computes the
p-value). A p-value below ``alpha`` happens by chance with probability ``alpha`` even for
a correct sampler, so :func:`verify_generator` repeats the test and fails only if too few
repetitions pass. :func:`mean_check` and :func:`var_check` are quicker 3-sigma checks of the
first two moments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .tolerances import HelperArgumentError

Generator = Callable[[int], Any]


def gen_buckets_probs_with_ppf(
    ppf: Callable[[float], float], nbuckets: int
) -> tuple[list[tuple[float, float]], list[float]]:
    """``nbuckets`` equally likely buckets of a continuous distribution, from its quantile function."""
    if nbuckets <= 0:
        raise HelperArgumentError(f"gen_buckets_probs_with_ppf: nbuckets must be positive, got {nbuckets}")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / nbuckets), ppf((i + 1) / nbuckets)) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator: Generator, mu: float, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the mean of ``generator(nsamples)`` lies within ``mu +/- 3 sigma / sqrt(n)``."""
    mean = float(np.asarray(generator(nsamples)).mean())
    half_width = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half_width < mean < mu + half_width)


def var_check(generator: Generator, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the sample variance lies within ``sigma^2 +/- 3 sqrt(2 sigma^4 / (n - 1))``."""
    var = float(np.asarray(generator(nsamples)).var(ddof=1))
    half_width = 3 * np.sqrt(2 * sigma**4 / (nsamples - 1))
    return bool(sigma**2 - half_width < var < sigma**2 + half_width)


def _bucket_counts(samples: np.ndarray, buckets: Sequence[Any]) -> np.ndarray:
    continuous = isinstance(buckets[0], tuple | list)
    if not continuous:  # discrete: each bucket is one value
        return np.array([(samples == value).sum() for value in buckets], dtype=np.int64)
    edges = np.empty(2 * len(buckets), dtype=np.float64)
    for i, (low, high) in enumerate(buckets):
        if low > high or (i + 1 < len(buckets) and high > buckets[i + 1][0]):
            raise HelperArgumentError(
                f"chi_square_check: buckets must be ascending and disjoint; bucket {i} is {buckets[i]}"
            )
        edges[2 * i], edges[2 * i + 1] = low, high
    # searchsorted gives an even position inside bucket i's [low, high), an odd one between buckets.
    positions = np.searchsorted(edges, samples, side="right") - 1
    inside = positions % 2 == 0
    return np.bincount(positions[inside] // 2, minlength=len(buckets))[: len(buckets)]


def chi_square_check(
    generator: Generator, buckets: list[Any], probs: Sequence[float], nsamples: int = 1000000
) -> tuple[float, np.ndarray, np.ndarray]:
    """Pearson's chi-square test of ``generator(nsamples)`` against bucket probabilities.

    ``buckets`` is a list of ``(low, high)`` ranges for a continuous distribution, or of the
    values themselves for a discrete one. Returns ``(p, observed counts, expected counts)``.
    """
    from scipy import stats  # noqa: PLC0415 - scipy.stats takes a second to import; only this check needs it

    if not isinstance(buckets, list) or len(buckets) != len(probs) or not buckets:
        raise HelperArgumentError("chi_square_check: buckets must be a non-empty list as long as probs")
    samples = np.asarray(generator(nsamples)).reshape(-1)
    expected = (nsamples * np.asarray(probs, dtype=np.float64)).astype(np.int64)
    observed = _bucket_counts(samples, buckets)
    _, p = stats.chisquare(f_obs=observed, f_exp=expected * observed.sum() / max(expected.sum(), 1))
    return float(p), observed, expected


def verify_generator(
    generator: Generator,
    buckets: list[Any],
    probs: Sequence[float],
    nsamples: int = 1000000,
    nrepeat: int = 5,
    success_rate: float = 0.2,
    alpha: float = 0.05,
) -> list[float]:
    """Run :func:`chi_square_check` ``nrepeat`` times; fail unless more than ``success_rate`` of
    the runs have ``p > alpha``. Returns the p-values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    p_values = [r[0] for r in results]
    passed = sum(p > alpha for p in p_values)
    if passed < nrepeat * success_rate:
        raise AssertionError(
            f"Generator test fails: chi-square p={p_values} (alpha={alpha}); "
            f"observed={[r[1].tolist() for r in results]}, expected={[r[2].tolist() for r in results]}; "
            f"buckets={buckets}, probs={list(probs)}"
        )
    return p_values


__all__ = ["chi_square_check", "gen_buckets_probs_with_ppf", "mean_check", "var_check", "verify_generator"]
