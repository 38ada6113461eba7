"""What prepare derives and refuses, whatever reader produced the run."""

from __future__ import annotations

import numpy as np
import pytest

from budgetdiff.budget.file import parse_budget
from budgetdiff.errors import InputError
from budgetdiff.formats import ReadOptions, detect
from budgetdiff.measure.prepare import prepare
from budgetdiff.table import Itl, Run

BUDGET = parse_budget("version: 1\nslo: {total: 6000, itl: 20}\n", "b.yml")


def run_with_gaps(gaps: list[list[float]], **kw: object) -> Run:
    values = np.array([g for r in gaps for g in r], dtype=float)
    offsets = np.cumsum([0, *map(len, gaps)]).astype(np.int64)
    n = len(gaps)
    return Run(
        source="r.json",
        n=n,
        slices={"decode": np.full(n, 100.0)},
        total=np.full(n, 150.0),
        ttft=np.full(n, 50.0),
        itl=Itl(values, offsets),
        **kw,
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
def test_a_bad_gap_of_a_succeeded_request_is_an_error(bad: float) -> None:
    with pytest.raises(InputError, match=r"r\.json: request #2 .*inter-token gap"):
        prepare(run_with_gaps([[1, 2], [3, bad]]), BUDGET)


def test_a_failed_request_may_have_any_gaps() -> None:
    prep = prepare(run_with_gaps([[1, 2], [3, np.nan]], ok=np.array([True, False])), BUDGET)
    assert list(prep.metrics["itl"]) == [1.0, 2.0]


def test_attainment_holds_itl_by_each_requests_own_mean_gap_as_the_table_says() -> None:
    # no output token counts: ITL is still checked, from the request's own gaps
    prep = prepare(run_with_gaps([[1, 2], [30, 40]]), BUDGET)
    assert prep.good is not None and list(prep.good) == [True, False]  # means 1.5 and 35
    assert prep.held_to == ("total", "itl")
    # a TPOT target with no token counts has no TPOT row: not held in attainment either
    tpot = parse_budget("version: 1\nslo: {total: 6000, tpot: 20}\n", "b.yml")
    prep = prepare(run_with_gaps([[1, 2], [30, 40]]), tpot)
    assert "tpot" not in prep.metrics and prep.held_to == ("total",)


def test_attainment_is_left_out_when_a_checked_target_cannot_be_checked_per_request() -> None:
    tpot = parse_budget("version: 1\nslo: {total: 6000, tpot: 20}\n", "b.yml")
    tokens = np.array([11.0, np.nan])  # TPOT 100 / 10 = 10 ms for the first; unknown after
    prep = prepare(run_with_gaps([[1, 2], [3, 4]], output_tokens=tokens), tpot)
    assert prep.good is None and prep.held_to == ()
    assert any("tpot target cannot be checked" in n for n in prep.notes)
    tokens = np.array([11.0, 3.0])  # TPOT decode 100 / 10 = 10 ms meets 20; / 2 = 50 does not
    prep = prepare(run_with_gaps([[1, 2], [3, 4]], output_tokens=tokens), tpot)
    assert prep.good is not None and list(prep.good) == [True, False]


def test_dropped_client_requests_are_said() -> None:
    r = Run(
        source="c.jsonl",
        n=2,
        slices={"decode": np.array([1.0, 2.0])},
        meta={"unmatched": 3.0, "network_clipped": 1.0, "network_clipped_max_ms": 0.4},
    )
    notes = prepare(r, parse_budget("version: 1\n", "b.yml")).notes
    assert any("3 succeeded client requests had no server span" in n for n in notes)
    assert any("clocks disagree" in n for n in notes)


@pytest.mark.parametrize(
    "content",
    [
        b"total_ms,total_ms\n100,1\n200,2\n",
        b'[{"total_ms":100},{"total_ms":[1,2]}]',
    ],
)
def test_malformed_tables_are_input_errors(content: bytes) -> None:
    with pytest.raises(InputError, match=r"native: t\.x: "):
        detect.read(content, "t.x", "native", ReadOptions())


def tpot_run(*, tool: bool = False, decode: bool = True) -> Run:
    """Two requests of 150 ms end to end, 50 ms TTFT and 11 output tokens; decode 80 ms of
    it (the rest is app time), and the tool's own TPOT 7 ms where `tool`."""
    n = 2
    return Run(
        source="r.json",
        n=n,
        slices={"decode": np.full(n, 80.0)} if decode else {"queue": np.full(n, 50.0)},
        total=np.full(n, 150.0),
        ttft=np.full(n, 50.0),
        output_tokens=np.full(n, 11.0),
        tpot=np.full(n, 7.0) if tool else None,
    )


@pytest.mark.parametrize(
    ("tool", "decode", "source", "tpot_ms", "met"),
    [
        (True, True, "tool", 7.0, True),  # the tool's own wins: its summary then matches
        (False, True, "decode", 8.0, True),  # decode / (tokens - 1): app time is not decoding
        (False, False, "total - TTFT", 10.0, False),  # (150 - 50) / 10, vLLM's definition
    ],
    ids=["tool", "decode", "total-minus-ttft"],
)
def test_tpot_is_the_tools_else_decode_else_total_minus_ttft_in_the_row_and_in_attainment(
    tool: bool, decode: bool, source: str, tpot_ms: float, met: bool
) -> None:
    budget = parse_budget("version: 1\nslo: {tpot: 9}\n", "b.yml")
    prep = prepare(tpot_run(tool=tool, decode=decode), budget)
    assert prep.tpot_from == source
    assert list(prep.metrics["tpot"]) == [tpot_ms, tpot_ms]
    # attainment holds each request to the TPOT the row shows
    assert prep.held_to == ("tpot",) and prep.good is not None and list(prep.good) == [met, met]


def test_no_tpot_without_output_token_counts() -> None:
    run = Run(source="r.json", n=2, total=np.full(2, 150.0), ttft=np.full(2, 50.0))
    prep = prepare(run, parse_budget("version: 1\n", "b.yml"))
    assert prep.tpot_from is None and "tpot" not in prep.metrics


def test_each_rows_values_keep_their_run() -> None:
    """A side of several runs: every row's values carry the run they came from, cut as the row
    cuts its values (failed requests out, arrival order within a run, TPOT of requests with
    more than one token, ITL per gap, the longest stall of requests with gaps)."""
    from budgetdiff.budget.file import parse_budget
    from budgetdiff.table import Itl

    budget = parse_budget("version: 1\npercentile: 95\nslo: {total: 1000}\n", "budget.yml")
    labels = np.array([0, 0, 0, 1, 1, 1])
    ok = np.array([True, True, False, True, True, True])
    gaps = [2, 0, 1, 3, 1, 2]  # per request
    decode = np.array([10.0, 11, 12, 13, 14, 15])
    run = Run(
        "runs.csv",
        6,
        slices={"queue": np.ones(6), "decode": decode},
        ok=ok,
        output_tokens=np.array([3.0, 1, 2, 4, 1, 3]),
        itl=Itl(values=np.arange(9.0) + 1, offsets=np.concatenate([[0], np.cumsum(gaps)])),
        start_time=np.array([1.0, 0, 2, 5, 4, 3]),  # each run's clock; run 1 backwards
        run=labels,
    )
    prep = prepare(run, budget)
    order = [1, 0, 5, 4, 3]  # succeeded, by (run, start)
    assert prep.run_count == 2
    np.testing.assert_array_equal(prep.slices["decode"], decode[order])
    np.testing.assert_array_equal(prep.runs["decode"], labels[order])
    np.testing.assert_array_equal(prep.runs["total"], labels[order])
    # TPOT: requests 0, 5, 3 (more than one token), in that order
    assert len(prep.metrics["tpot"]) == 3
    np.testing.assert_array_equal(prep.runs["tpot"], [0, 1, 1])
    # ITL: the gaps of succeeded requests in file order (request 2 failed: its gap is out)
    assert len(prep.metrics["itl"]) == 8
    np.testing.assert_array_equal(prep.runs["itl"], [0, 0, 1, 1, 1, 1, 1, 1])
    # the longest stall of requests with gaps (request 1 has none): 0, 5, 4, 3
    assert len(prep.metrics["max_stall"]) == 4
    np.testing.assert_array_equal(prep.runs["max_stall"], [0, 1, 1, 1])


def test_the_agreement_of_every_request_in_order_is_the_gathered_ones() -> None:
    """Runs with the same ids in the same order compare their token counts in place (one
    comparison); the verdict, what was compared and what differs are those of the gathered
    path, with a differing count, a gap, a failed request and on clean runs alike."""
    from budgetdiff.measure.pairing import _agreement

    rng = np.random.default_rng(46)
    n = 5_000
    ids = np.array([f"r{i}" for i in range(n)])
    tokens = rng.integers(10, 500, n).astype(np.float64)
    for case in ("clean", "differ", "gap", "failed"):
        other = tokens.copy()
        ok = np.ones(n, dtype=bool)
        if case == "differ":
            other[[7, 4_000]] += 1
        if case == "gap":
            other[11] = np.nan
        if case == "failed":
            ok[12], other[12] = False, 3.0
        base = Run("b.csv", n, request_id=ids, output_tokens=tokens, input_tokens=tokens * 2)
        head = Run("h.csv", n, request_id=ids, output_tokens=other, ok=ok, input_tokens=tokens * 2)
        places = np.arange(n)
        fast = _agreement(base, head, places, places)  # one array of places: in place
        slow = _agreement(base, head, places, places.copy())  # two: gathered
        np.testing.assert_array_equal(fast[0], slow[0])
        assert fast[1:] == slow[1:]
        assert ("output token counts" in fast[2]) == (case == "differ"), case
