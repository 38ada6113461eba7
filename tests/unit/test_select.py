"""table.select keeps np.partition's promise: each asked rank holds the value np.sort puts
there (NaN last), nothing before it larger, nothing after it smaller."""

from __future__ import annotations

import numpy as np
import pytest

from budgetdiff.stats.quantiles import pooled_percentile
from budgetdiff.table import order_statistics, pooled_order_statistics, select


def _cases() -> list[tuple[np.ndarray, list[int]]]:
    rng = np.random.default_rng(36)
    out = []
    for trial in range(300):
        n = int(rng.integers(1, 20_000))
        x = rng.normal(size=n)
        if trial % 3 == 0:
            x = np.round(x, 1)  # ties
        if trial % 5 == 0:
            x[rng.integers(0, n, size=int(rng.integers(1, max(2, n // 3))))] = np.nan
        if trial % 11 == 0:
            x[:] = np.nan
        ranks = [int(r) for r in rng.integers(0, n, size=int(rng.integers(1, 9)))]
        if trial % 4 == 0:
            ranks += [0, n - 1]
        if trial % 6 == 0:
            k = int(rng.integers(0, n))
            ranks += [k, min(k + 1, n - 1)]
        out.append((x, ranks))
    return out


@pytest.mark.parametrize("in_place", [False, True])
def test_select_puts_every_rank_where_a_sort_does(in_place: bool) -> None:
    for x, ranks in _cases():
        truth = np.sort(x)
        given = x.copy()
        got = select(given, ranks, in_place=in_place)
        assert (got is given) == in_place
        np.testing.assert_array_equal(np.sort(got), truth)  # the same values
        for k in set(ranks):
            np.testing.assert_array_equal(got[k], truth[k])
            if np.isnan(truth[k]):
                assert np.isnan(got[k + 1 :]).all()
            else:
                assert not (got[:k] > truth[k]).any()
                assert not (got[k + 1 :] < truth[k]).any()
                assert not np.isnan(got[:k]).any()


def _large_cases() -> list[tuple[np.ndarray, list[int]]]:
    """Arrays past order_statistics' bracketing size: lognormal, ties, infinities, NaN, and
    arrays whose strided sample lies about the rest (the brackets miss)."""
    rng = np.random.default_rng(3636)
    out = []
    for trial in range(24):
        n = int(rng.integers(70_000, 400_000))
        x = rng.lognormal(5.0, 1.0, size=n)
        if trial % 3 == 1:
            x = np.round(x, -1)  # heavy ties
        if trial % 4 == 2:
            x[rng.integers(0, n, size=50)] = np.inf
            x[rng.integers(0, n, size=50)] = -np.inf
        if trial % 5 == 3:
            x[rng.integers(0, n, size=int(rng.integers(1, n // 4)))] = np.nan
        if trial % 6 == 4:  # every sampled place far above the rest
            x[:: n // (1 << 16)] += 1e6
        if trial % 7 == 5:
            x[:] = 7.0
        ranks = [int(r) for r in rng.integers(0, n, size=int(rng.integers(1, 6)))]
        k = int(rng.integers(1, n - 3000))
        ranks += [k - 1, k, k + 1, k + 700, k + 2500]  # a cluster, as a percentile's band
        ranks += [0, n - 1] if trial % 2 else [(n - 1) // 2, n // 2]
        out.append((x, ranks))
    return out


def test_order_statistics_are_what_a_sort_puts_at_each_rank() -> None:
    for x, ranks in [*_cases()[:60], *_large_cases()]:
        truth = np.sort(x)
        before = x.copy()
        got = order_statistics(x, ranks)
        np.testing.assert_array_equal(x, before)  # `x` itself is not reordered
        assert sorted(got) == sorted(set(ranks))
        for k, v in got.items():
            np.testing.assert_array_equal(v, truth[k])


def test_pooled_order_statistics_are_those_of_the_concatenation() -> None:
    cases = _large_cases()
    for (a, ranks_a), (b, _) in zip(cases[:12], cases[12:], strict=True):
        for parts in ((a, b), (a[:100], b), (a, a)):  # a part may be the other one itself
            pool = np.sort(np.concatenate(parts))
            ranks = [*(k for k in ranks_a if k < len(pool)), len(pool) - 1]
            got = pooled_order_statistics(parts, ranks)
            for k, v in got.items():
                np.testing.assert_array_equal(v, pool[k])
    x, y = cases[0][0], cases[1][0]
    for p in (50.0, 95.0, 99.9):
        assert pooled_percentile((x, y), p) == np.percentile(np.concatenate([x, y]), p)


def test_a_lone_nan_or_infinities_in_a_later_chunk_of_a_long_array_are_placed_as_sorted() -> None:
    """The brackets read a long array a chunk at a time: one NaN in its last chunk sends it
    to a selection (NaN last), +inf and -inf in different chunks stay in the brackets, and a
    NaN in the second part of a pool is found there too."""
    rng = np.random.default_rng(41)
    n = 700_000  # past two chunks
    x = rng.lognormal(5.0, 1.0, size=n)
    ranks = [0, 1, n // 2, int(0.95 * n), int(0.95 * n) + 1, n - 2, n - 1]
    lone = x.copy()
    lone[-3] = np.nan
    apart = x.copy()
    apart[10], apart[-10] = np.inf, -np.inf
    for y in (lone, apart):
        truth = np.sort(y)
        got = order_statistics(y, ranks)
        for k in ranks:
            np.testing.assert_array_equal(got[k], truth[k])
    pool = np.sort(np.concatenate([x, lone]))
    got = pooled_order_statistics((x, lone), [*ranks, 2 * n - 1])
    for k, v in got.items():
        np.testing.assert_array_equal(v, pool[k])
    assert np.isnan(got[2 * n - 1])


def test_between_and_the_exceedance_counts_are_numpys_masks_over_every_chunk() -> None:
    """The band's values (`between`, in their order) and the counts above and at a value are
    read a chunk at a time: the same as numpy's masks over the whole array, NaN and ties in."""
    from budgetdiff.stats.change import _above_and_at
    from budgetdiff.table import between

    rng = np.random.default_rng(7)
    x = np.round(rng.lognormal(5.0, 1.0, size=600_000), 0)  # past two chunks, with ties
    x[[3, 400_000]] = np.nan
    low, high = np.nanpercentile(x, [90, 95])
    np.testing.assert_array_equal(between(x, low, high), x[(x >= low) & (x <= high)])
    assert between(x[:0], low, high).size == 0
    assert _above_and_at(x, high) == (np.count_nonzero(x > high), np.count_nonzero(x == high))


def test_max_abs_is_numpys_max_of_the_absolute_values() -> None:
    """`max_abs` (the greatest and the least, no temporary) is np.max(np.abs(x)): on signed
    values, on values all negative, with an infinity, and NaN when one is NaN."""
    from budgetdiff.table import max_abs

    rng = np.random.default_rng(3)
    signed = rng.normal(0.0, 100.0, size=10_000)
    cases = [signed, -np.abs(signed), np.abs(signed), np.array([-0.0]), np.array([2.0, -np.inf])]
    for x in cases:
        assert max_abs(x) == np.max(np.abs(x))
    with_nan = signed.copy()
    with_nan[17] = np.nan
    assert np.isnan(max_abs(with_nan)) and np.isnan(np.max(np.abs(with_nan)))


def test_taken_is_numpys_gather_and_no_copy_only_for_every_place_in_order() -> None:
    """`taken(values, index)` is values[index]; the values themselves (no copy) only when the
    index is 0 .. n - 1, told a chunk at a time: one place out of order in a later chunk, a
    swap, a shorter index and an index with the right ends each gather."""
    from budgetdiff.table import taken

    n = 600_000  # past two chunks
    values = np.random.default_rng(5).normal(size=n)
    every = np.arange(n)
    assert taken(values, every) is values
    assert taken(values[:0], every[:0]).size == 0
    late = every.copy()
    late[500_000] = 7
    swapped = every.copy()
    swapped[[1, 2]] = [2, 1]
    for index in (late, swapped, every[:-1], np.array([0, n - 1]), every[::-1]):
        got = taken(values, index)
        assert got is not values
        np.testing.assert_array_equal(got, values[index])
