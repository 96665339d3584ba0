"""Statistical checks of random generators for ``mx.test_utils`` (re-exported there): Pearson's
chi-square goodness-of-fit test over buckets, repeated (:func:`verify_generator`), and the
sample mean and variance checks.

A generator is any ``f(n)`` returning ``n`` samples. Continuous distributions are checked over
buckets ``[(lo, hi), ...]`` (ascending, not overlapping; :func:`gen_buckets_probs_with_ppf` makes
equally likely ones from a quantile function), discrete ones over the list of their values.

>>> import numpy as np, scipy.stats as ss
>>> buckets, probs = gen_buckets_probs_with_ppf(lambda q: ss.uniform.ppf(q), 4)
>>> rng = np.random.RandomState(0)
>>> p_values = verify_generator(lambda n: rng.uniform(size=n), buckets, probs, nsamples=10000)
>>> len(p_values)
5
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .base import ParamError

__all__ = ["gen_buckets_probs_with_ppf", "mean_check", "var_check", "chi_square_check", "verify_generator"]


def gen_buckets_probs_with_ppf(ppf: Callable[[float], float], nbuckets: int) -> tuple[list, list]:
    """``nbuckets`` equally likely buckets ``(ppf(i/n), ppf((i+1)/n))`` and their probabilities.

    >>> gen_buckets_probs_with_ppf(lambda q: 10 * q, 2)
    ([(0.0, 5.0), (5.0, 10.0)], [0.5, 0.5])
    """
    if nbuckets <= 0:
        raise ParamError(f"gen_buckets_probs_with_ppf: nbuckets must be positive, got {nbuckets}")
    buckets = [(ppf(i / nbuckets), ppf((i + 1) / nbuckets)) for i in range(nbuckets)]
    return buckets, [1.0 / nbuckets] * nbuckets


def mean_check(generator: Callable[[int], Any], mu: float, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the mean of ``nsamples`` samples lies within three standard errors
    (``3 sigma / sqrt(n)``) of ``mu``.

    >>> mean_check(lambda n: np.random.RandomState(1).normal(0, 1, n), 0.0, 1.0, 10000)
    True
    """
    mean = float(np.mean(np.asarray(generator(nsamples))))
    half = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half < mean < mu + half)


def var_check(generator: Callable[[int], Any], sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the unbiased sample variance of ``nsamples`` samples lies within three standard
    errors (``3 sqrt(2 sigma^4 / (n - 1))``) of ``sigma**2``.

    >>> var_check(lambda n: np.random.RandomState(1).normal(0, 2, n), 2.0, 10000)
    True
    """
    var = float(np.var(np.asarray(generator(nsamples)), ddof=1))
    half = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - half < var < sigma ** 2 + half)


def _bucket_counts(samples: np.ndarray, buckets: list) -> np.ndarray:
    """How many samples fall in each bucket: values are matched exactly; with ranges a sample
    counts in the first bucket whose upper end exceeds it (``lo <= x < hi`` when the buckets
    cover the distribution's range)."""
    if not isinstance(buckets[0], (list, tuple)):
        return np.array([int(np.sum(samples == v)) for v in buckets], dtype=np.int64)
    edges = np.empty(2 * len(buckets), dtype=np.float32)
    for i, (lo, hi) in enumerate(buckets):
        if lo > hi or (i + 1 < len(buckets) and hi > buckets[i + 1][0]):
            raise ParamError(f"chi_square_check: buckets must be ascending and not overlap; bucket {i} is "
                             f"({lo}, {hi}), the next {buckets[i + 1] if i + 1 < len(buckets) else None}")
        edges[2 * i], edges[2 * i + 1] = lo, hi
    ids = np.searchsorted(edges, samples, side="right") // 2
    return np.bincount(ids[ids < len(buckets)], minlength=len(buckets)).astype(np.int64)


def chi_square_check(generator: Callable[[int], Any], buckets: list, probs: Sequence[float],
                     nsamples: int = 1000000) -> tuple[float, np.ndarray, np.ndarray]:
    """Pearson's chi-square test of ``nsamples`` samples against the bucket probabilities:
    ``(p_value, observed counts, expected counts)``; a small p-value says the generator does not
    follow the distribution.

    >>> rng = np.random.RandomState(0)
    >>> p, obs, exp = chi_square_check(lambda n: rng.randint(0, 2, n), [0, 1], [0.5, 0.5], 1000)
    >>> int(obs.sum()), exp.tolist()
    (1000, [500, 500])
    """
    import scipy.stats as ss
    if not isinstance(buckets, list) or not buckets:
        raise ParamError(f"chi_square_check: buckets must be a non-empty list, got {type(buckets).__name__}")
    if len(probs) != len(buckets):
        raise ParamError(f"chi_square_check: {len(probs)} probabilities for {len(buckets)} buckets")
    samples = np.asarray(generator(nsamples)).ravel()
    observed = _bucket_counts(samples, buckets)
    expected = (nsamples * np.asarray(probs, dtype=np.float32)).astype(np.int32)
    # scipy asks that both sides sum alike: the expected counts are scaled to the observed total
    f_exp = expected * (observed.sum() / max(expected.sum(), 1))
    _, p = ss.chisquare(f_obs=observed, f_exp=f_exp)
    return float(p), observed, expected


def verify_generator(generator: Callable[[int], Any], buckets: list, probs: Sequence[float],
                     nsamples: int = 1000000, nrepeat: int = 5, success_rate: float = 0.2,
                     alpha: float = 0.05) -> list[float]:
    """Run :func:`chi_square_check` ``nrepeat`` times; raise ``AssertionError`` unless at least
    ``nrepeat * success_rate`` of the p-values exceed ``alpha``. Returns the p-values."""
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    p_values = [r[0] for r in runs]
    if sum(p > alpha for p in p_values) < nrepeat * success_rate:
        raise AssertionError(
            f"generator check failed: chi-square p-values {p_values} (alpha {alpha}, needed "
            f"{nrepeat * success_rate:g} above it); observed {[r[1].tolist() for r in runs]}, expected "
            f"{[r[2].tolist() for r in runs]}; buckets {buckets}, probs {list(probs)}")
    return p_values
