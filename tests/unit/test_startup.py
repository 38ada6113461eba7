"""What replaced library helpers on the start-up path gives the libraries' values. Start-up
itself is a guard measured by `bench/bench_readers.py --startup` (a 100-row compare within 3x
of `python -c "import numpy, pyarrow"`), not timed or import-listed here: which modules a run
imports is the code's own business."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from budgetdiff.formats import ReadOptions, detect
from budgetdiff.measure.attribution import _check as check_values
from budgetdiff.stats import percentile, percentiles
from budgetdiff.table import Ids, all_finite, arrow_numpy, common_ids, repeated_ids
from tests.support.helpers import slices, write_table


def test_percentile_is_numpys_exactly() -> None:
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 100, 1001):
        x = rng.lognormal(5, 1, n)
        x[rng.integers(0, n, n // 3)] = x[0]  # ties
        for p in (1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99):
            want = float(np.percentile(x, p))
            assert percentile(x, p) == want
            pool = x.copy()
            assert percentile(pool, p, in_place=True) == want
    x = np.array([3.0, np.nan, 1.0, 2.0])
    assert np.isnan(np.percentile(x, 50)) and np.isnan(percentile(x, 50))
    assert all(np.isnan(v) for v in percentiles(x, [50.0, 95.0]))


def _id_arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(6)
    return [
        np.array([], dtype=str),
        np.array(["a"]),
        np.array(["a", "b", "a", "c", "a", "b"]),
        rng.integers(0, 50, 200).astype(str),
        np.array(["x", "y", "x"], dtype=object),
        rng.integers(0, 30_000, 25_000).astype(str),  # past HASH_IDS_FROM: hashed
    ]


def _ids(values: np.ndarray, form: str) -> Ids:
    """`values` as a reader hands them over: numpy, one Arrow array, or Parquet's chunks."""
    if form == "numpy":
        return Ids(values)
    arr = pa.array(values.tolist(), type=pa.string())
    if form == "arrow":
        return Ids(arr)
    cut = len(arr) // 3
    return Ids(pa.chunked_array([arr[:cut], arr[cut : 2 * cut], arr[2 * cut :]], pa.string()))


FORMS = ["numpy", "arrow", "chunked"]


@pytest.mark.parametrize("form", FORMS)
def test_repeated_ids_counts_what_np_unique_drops(form: str) -> None:
    for values in _id_arrays():
        ids = _ids(values, form)
        assert repeated_ids(ids) == len(values) - len(np.unique(values))
        assert ids.tolist() == values.tolist() and len(ids) == len(values)
        if len(values):
            mask = np.arange(len(values)) % 2 == 0
            assert ids[mask].tolist() == values[mask].tolist()
            assert ids[np.array([len(values) - 1, 0])].tolist() == [values[-1], values[0]]


@pytest.mark.parametrize("early", ["none", "one", "both"])
def test_ids_counted_early_count_what_np_unique_drops(early: str) -> None:
    """Counted on another thread (`count_early`, as the reader asks): the same counts, on
    each side alone and, when both sides hold the same ids, whichever side was counted."""
    rng = np.random.default_rng(8)
    for values in (
        rng.permutation(40_000).astype(str),
        rng.integers(0, 30_000, 40_000).astype(str),
    ):
        want = len(values) - len(np.unique(values))
        a, b = (Ids(pa.array(values.tolist(), type=pa.string())) for _ in range(2))
        for ids in {"none": [], "one": [b], "both": [a, b]}[early]:
            ids.count_early()
        common_ids(a, b)  # the same ids in the same order
        assert (repeated_ids(a), repeated_ids(b)) == (want, want)
        alone = Ids(pa.array(values.tolist(), type=pa.string()))
        alone.count_early()
        assert repeated_ids(Ids(alone)) == want  # a wrapper of the same ids keeps the count
        wrapped, called_off = Ids(a), Ids(pa.array(values.tolist(), type=pa.string()))
        called_off.count_early()
        assert called_off._counting is not None
        called_off._counting.cancel()  # whether or not it began: the count is still right
        assert repeated_ids(called_off) == repeated_ids(wrapped) == want


def test_the_same_ids_in_other_chunks_or_forms_are_the_same() -> None:
    values = np.random.default_rng(9).permutation(25_000).astype(str)
    forms = [_ids(values, f) for f in FORMS]
    for a in forms:
        for b in forms:
            assert a.same(b)
            ia, ib = common_ids(a, b)
            assert ia.tolist() == ib.tolist() == list(range(len(values)))
    assert Ids.concat([forms[1], forms[2]]).tolist() == [*values.tolist(), *values.tolist()]
    assert not forms[2].same(_ids(values[::-1].copy(), "chunked"))


@pytest.mark.parametrize("form", FORMS)
def test_common_ids_are_np_intersect1d_pairs_in_the_first_sides_order(form: str) -> None:
    rng = np.random.default_rng(7)
    for n in (5, 300, 30_000):
        a = rng.integers(0, 2 * n, n).astype(str)
        b = rng.integers(0, 2 * n, n + 3).astype(str)
        _, ia, ib = np.intersect1d(a, b, return_indices=True)  # first places, sorted by id
        order = np.argsort(ia, kind="stable")

        got_a, got_b = common_ids(_ids(a, form), _ids(b, form))
        assert got_a.tolist() == ia[order].tolist()
        assert got_b.tolist() == ib[order].tolist()
        assert (a[got_a] == b[got_b]).all()


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_leaves_the_cycle_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    path = write_table(tmp_path / "r.csv", slices(3, 50))
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        runs = detect.read(path.read_bytes(), str(path), "auto", ReadOptions())
        assert runs[0].n == 50
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_all_finite_from_the_sum_never_says_finite_of_a_nan_or_an_infinity() -> None:
    """`all_finite` reads the sum: True only when np.isfinite holds of every value; a sum that
    overflows says False, and the callers then ask each value (never an error of it)."""
    rng = np.random.default_rng(10)
    for trial in range(200):
        x = rng.lognormal(5, 2, int(rng.integers(0, 2000)))
        if len(x) and trial % 3:
            x[rng.integers(0, len(x))] = (np.nan, np.inf, -np.inf)[trial % 3]
        assert all_finite(x) == bool(np.isfinite(x).all())
    huge = np.array([1e308, 1e308, 5.0])
    assert np.isfinite(huge).all() and not all_finite(huge)
    assert check_values("huge", huge, 3) is huge  # the attribution's check asks each value


def test_arrow_numpy_is_arrows_own_to_numpy_for_every_form() -> None:
    """Numbers and booleans from their buffers: the same values and dtype as Arrow's own
    `to_numpy`, for slices (an offset inside a byte of bits), chunks, empty arrays and each
    width; with nulls, or a type of another layout, it is Arrow's own."""
    rng = np.random.default_rng(36)
    kinds = [pa.float64(), pa.float32(), pa.float16(), pa.int64(), pa.int8(), pa.uint32()]
    cases: list[pa.Array | pa.ChunkedArray] = []
    for kind in kinds:
        raw = rng.integers(0, 100, 1_000)
        values = raw.astype(np.float16) if kind == pa.float16() else raw
        whole = pa.array(values, type=kind)
        cases += [
            whole,
            whole.slice(3, 500),
            whole.slice(1_000),
            pa.chunked_array([whole[:7], whole[7:]]),
        ]
    flags = pa.array(rng.random(1_001) < 0.3)
    cases += [flags, flags.slice(5, 13), flags.slice(3), pa.chunked_array([flags[:9], flags[9:]])]
    cases += [pa.array([1.5, None]), pa.array(["a", "b"]), pa.chunked_array([], type=pa.int64())]
    for arr in cases:
        got, want = arrow_numpy(arr), arr.to_numpy(zero_copy_only=False)
        assert got.dtype == want.dtype and got.shape == want.shape, arr.type
        np.testing.assert_array_equal(got, want)
    ids = pa.chunked_array([pa.array(["a", None, ""]), pa.array(["", "b"], type=pa.string())])
    blank = Ids(ids).blank()  # from the ids' lengths: a null is not blank, "" is
    np.testing.assert_array_equal(blank, np.array(ids.to_pylist(), dtype=object) == "")
