"""Four silent wrong answers on tables people write themselves (issue 37), through the CLI.

Each table is made here with a fixed seed, and each truth is numpy's on the same numbers:
- base measured its end to end in a column and head's harness dropped it: both ends to end
  are derived the same way, or the compare refuses; never "no change" by two definitions;
- an `itl` column of one number per request is each request's mean gap (a TPOT), not gaps;
- an `itl` list of times since the first token (a growing list) is told from gaps;
- a head that re-ran the first 500 of base's 2,000 prompts: the rows use the requests the
  note says they use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.helpers import run, write_table

P = 95

SLICED_BUDGET = """\
version: 1
percentile: 95
slo: {total: 9000}
slices: {network: 200, prefill: 900, decode: 5000, app: 1500}
"""


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code, out, err = run([*argv, "--output", "json"], capsys)
    assert code in (0, 1), err
    return code, json.loads(out), err


def _slo(report: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(r for r in report["slo"] if r["metric"] == metric)


def _compare(tmp_path: Path, base: Path, head: Path, budget: str) -> list[str]:
    path = tmp_path / "budget.yml"
    path.write_text(budget)
    return ["compare", "--base", str(base), "--head", str(head), "--budget", str(path)]


def _pct(values: np.ndarray) -> float:
    return float(np.percentile(values, P))


# ---------------------------------------------------------------- a. a total on one side only


def _sliced(seed: int, n: int = 400, app_extra: float = 0.0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "network_ms": rng.lognormal(np.log(30), 0.3, n).round(3),
        "prefill_ms": rng.lognormal(np.log(400), 0.3, n).round(3),
        "decode_ms": rng.lognormal(np.log(2500), 0.3, n).round(3),
        "app_ms": (rng.lognormal(np.log(200), 0.3, n) + app_extra).round(3),
    }


@pytest.mark.parametrize("measured", ["base", "head"])
def test_a_total_on_one_side_only_is_derived_the_same_way_on_both(
    measured: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The side with a total column also spent 500 ms in no slice: with its total read as
    measured and the other side's made of its slices, head's app slice growing by 500 ms
    left the totals equal ("no change"). Made of the slices on both sides, the end to end
    shows the 500 ms."""
    base, head = _sliced(1), _sliced(1, app_extra=500.0)  # the same requests, app +500 ms
    sums = {
        side: np.sum(list(cols.values()), axis=0) for side, cols in (("base", base), ("head", head))
    }
    with_total = base if measured == "base" else head
    rng = np.random.default_rng(3)
    overhead = 500.0 + rng.normal(0, 5, len(sums[measured]))
    with_total["total_ms"] = (sums[measured] + overhead).round(3)
    # the trap: read as measured, the side's total is as large as the other's made of slices
    if measured == "base":
        assert abs(_pct(with_total["total_ms"]) - _pct(sums["head"])) < 0.05 * _pct(sums["head"])
    b = write_table(tmp_path / "base.csv", base)
    h = write_table(tmp_path / "head.csv", head)
    _, report, _ = _json(_compare(tmp_path, b, h, SLICED_BUDGET), capsys)
    total = _slo(report, "total")
    assert total["base_ms"] == pytest.approx(_pct(sums["base"]), rel=1e-6, abs=2e-3)
    assert total["head_ms"] == pytest.approx(_pct(sums["head"]), rel=1e-6, abs=2e-3)
    if measured == "base":
        assert total["change"] == "regression"
    said = " ".join(report["notes"])
    assert "total_ms" in said and "the same way" in said, report["notes"]


def test_a_total_the_other_side_cannot_derive_the_same_way_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Base measured TTFT and the end to end; head has TTFT, TPOT and token counts, its end to
    end TTFT + TPOT x (tokens - 1). Base has no TPOT to derive its own so: exit 2, one line."""
    rng = np.random.default_rng(4)
    n = 300
    ttft = rng.lognormal(np.log(300), 0.3, n).round(3)
    tokens = rng.integers(50, 300, n)
    tpot = rng.lognormal(np.log(20), 0.2, n).round(3)
    b = write_table(
        tmp_path / "base.csv", {"ttft_ms": ttft, "total_ms": ttft + tpot * (tokens - 1)}
    )
    h = write_table(
        tmp_path / "head.csv", {"ttft_ms": ttft, "tpot_ms": tpot, "output_tokens": tokens}
    )
    budget = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 9000}\n"
    code, _, err = run(_compare(tmp_path, b, h, budget), capsys)
    assert code == 2
    assert err.count("\n") == 1, err
    assert "base.csv" in err and "head.csv" in err and "end to end" in err, err


# ---------------------------------------------------------------- b. one `itl` per request


def _decoding(seed: int, n: int = 400) -> dict[str, np.ndarray]:
    """TTFT, output tokens and each request's gaps; the end to end adds time after the last
    token (the usage chunk, the close), so that total - TTFT is not the decoding time."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(20, 200, n)
    gaps = [rng.lognormal(np.log(18), 0.5, k - 1) for k in tokens]
    ttft = rng.lognormal(np.log(250), 0.3, n)
    after = rng.lognormal(np.log(40), 0.5, n)
    total = ttft + np.array([g.sum() for g in gaps]) + after
    return {"ttft": ttft, "total": total, "tokens": tokens, "gaps": gaps}  # type: ignore[dict-item]


def test_b_itl_of_one_number_per_request_is_a_tpot_not_gaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _decoding(5)
    means = np.array([g.mean() for g in d["gaps"]])
    head = write_table(
        tmp_path / "head.csv",
        {
            "ttft_ms": d["ttft"].round(3),
            "total_ms": d["total"].round(3),
            "output_tokens": d["tokens"],
            "itl_ms": means.round(4),
        },
    )
    budget = tmp_path / "b.yml"
    budget.write_text(
        "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 9000, tpot: 60, itl: 60}\n"
    )
    _, report, _ = _json(["check", "--head", str(head), "--budget", str(budget)], capsys)
    tpot = _slo(report, "tpot")
    assert tpot["head_ms"] == pytest.approx(_pct(means.round(4)), rel=1e-6, abs=2e-3)
    # not pooled as if it were every gap: there is no ITL row with a number
    itl = [r for r in report["slo"] if r["metric"] == "itl"]
    assert not itl or itl[0]["head_ms"] is None, itl
    said = " ".join(report["notes"])
    assert "itl_ms" in said and "per-request mean" in said and "TPOT" in said, report["notes"]
    (use,) = [u for u in report["inputs"]["head"]["columns"] if u["column"] == "itl_ms"]
    assert use["target"] == "tpot"


def test_b_itl_of_one_number_per_request_is_a_tpot_without_token_counts_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tool's own per-request mean gap needs no token count to be a TPOT row."""
    d = _decoding(12)
    means = np.array([g.mean() for g in d["gaps"]]).round(4)
    head = write_table(
        tmp_path / "head.csv",
        {"ttft_ms": d["ttft"].round(3), "total_ms": d["total"].round(3), "itl_ms": means},
    )
    budget = tmp_path / "b.yml"
    budget.write_text("version: 1\npercentile: 95\nslo: {ttft: 1200, total: 9000, tpot: 60}\n")
    _, report, _ = _json(["check", "--head", str(head), "--budget", str(budget)], capsys)
    assert _slo(report, "tpot")["head_ms"] == pytest.approx(_pct(means), rel=1e-6, abs=2e-3)
    assert report["attainment"]["head"]["held_to"] == ["ttft", "total", "tpot"]


# ---------------------------------------------------------------- c. cumulative `itl` lists


def _lists_table(tmp_path: Path, lists: list[np.ndarray], d: dict[str, Any]) -> Path:
    path = tmp_path / "head.jsonl"
    with path.open("w") as f:
        for i, values in enumerate(lists):
            row = {
                "request_id": f"q{i}",
                "ttft_ms": round(float(d["ttft"][i]), 3),
                "total_ms": round(float(d["total"][i]), 3),
                "output_tokens": int(d["tokens"][i]),
                "itl_ms": [round(float(v), 4) for v in values],
            }
            f.write(json.dumps(row) + "\n")
    return path


ITL_BUDGET = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 9000, itl: 60}\n"


@pytest.mark.parametrize("since", ["first token", "request start"])
def test_c_itl_lists_of_times_since_the_first_token_are_differenced(
    since: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each list holds the token times, growing, not the gaps: summed it runs far past the
    end to end. The gaps are their differences (said in a note)."""
    d = _decoding(6)
    origin = 0.0 if since == "first token" else None
    lists = [
        np.cumsum(g) if origin is not None else d["ttft"][i] + np.concatenate([[0.0], np.cumsum(g)])
        for i, g in enumerate(d["gaps"])
    ]
    assert all(float(np.sum(x)) > d["total"][i] for i, x in enumerate(lists))  # the tell
    head = _lists_table(tmp_path, lists, d)
    budget = tmp_path / "b.yml"
    budget.write_text(ITL_BUDGET)
    _, report, _ = _json(["check", "--head", str(head), "--budget", str(budget)], capsys)
    # the truth: the gaps from the same rounded numbers the file holds
    rounded = [np.round(x, 4) for x in lists]
    gaps = np.concatenate(
        [
            np.diff(x) if since == "request start" else np.diff(np.concatenate([[0.0], x]))
            for x in rounded
        ]
    )
    assert _slo(report, "itl")["head_ms"] == pytest.approx(_pct(gaps), rel=1e-6, abs=2e-3)
    said = " ".join([*report["notes"], *(f["message"] for f in report["findings"])])
    assert "itl_ms" in said and "differences" in said, said
    assert not [f for f in report["findings"] if f["fails"] and f["kind"] == "impossible"]


def test_c_itl_lists_summing_past_the_end_to_end_that_do_not_grow_fail_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lists that sum past the end to end are no gaps between its tokens, and not growing they
    are no token times either: an `impossible` finding that fails the check."""
    d = _decoding(7)
    rng = np.random.default_rng(8)
    lists = [rng.permutation(np.cumsum(g)) for g in d["gaps"]]
    head = _lists_table(tmp_path, lists, d)
    budget = tmp_path / "b.yml"
    budget.write_text(ITL_BUDGET)
    code, report, _ = _json(["check", "--head", str(head), "--budget", str(budget)], capsys)
    assert code == 1
    bad = [f for f in report["findings"] if f["kind"] == "impossible" and f["fails"]]
    assert any("itl_ms" in f["message"] for f in bad), report["findings"]


def test_c_real_gap_lists_are_read_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _decoding(9)
    head = _lists_table(tmp_path, list(d["gaps"]), d)
    budget = tmp_path / "b.yml"
    budget.write_text(ITL_BUDGET)
    _, report, _ = _json(["check", "--head", str(head), "--budget", str(budget)], capsys)
    gaps = np.concatenate([np.round(g, 4) for g in d["gaps"]])
    assert _slo(report, "itl")["head_ms"] == pytest.approx(_pct(gaps), rel=1e-6, abs=2e-3)
    assert "differences" not in " ".join(report["notes"])


# ---------------------------------------------------------------- d. head re-ran part of base


def _prompts(tmp_path: Path, variant: str) -> tuple[Path, Path, dict[str, np.ndarray]]:
    """Base ran 2,000 prompts sorted by length; head re-ran the first (shortest) 500, 20% slower
    on each. With all of base, head's p95 looks like an improvement."""
    rng = np.random.default_rng(10)
    n, m = 2000, 500
    isl = np.sort(rng.integers(20, 8000, n))
    osl = 30 + isl // 40 + rng.integers(0, 20, n)  # a longer question, a longer answer
    ttft = 40 + isl * 0.08 + rng.gamma(2, 5, n)
    total = ttft + (20 + rng.gamma(2, 1, n)) * (osl - 1)
    ids = np.array([f"p{i:04d}" for i in range(n)])
    base = {"request_id": ids, "input_tokens": isl, "output_tokens": osl}
    head = {"request_id": ids[:m], "input_tokens": isl[:m], "output_tokens": osl[:m]}
    if variant.startswith("answers differ"):  # a re-run samples new answers: other lengths
        head["output_tokens"] = osl[:m] + rng.integers(-10, 10, m)
    if variant == "answers differ, one prompt length":  # the counts tell no prompt apart
        base["input_tokens"], head["input_tokens"] = np.full(n, 1024), np.full(m, 1024)
    if variant == "ids alone":
        for side in (base, head):
            del side["input_tokens"], side["output_tokens"]
    base |= {"ttft_ms": ttft.round(3), "total_ms": total.round(3)}
    head |= {"ttft_ms": (ttft[:m] * 1.2).round(3), "total_ms": (total[:m] * 1.2).round(3)}
    truth = {"base_total": base["total_ms"], "head_total": head["total_ms"]}
    return write_table(tmp_path / "base.csv", base), write_table(tmp_path / "head.csv", head), truth


PROMPTS_BUDGET = "version: 1\npercentile: 95\nslo: {ttft: 2000, total: 60000}\n"


@pytest.mark.parametrize(
    ("variant", "says"),
    [
        ("same answers", ("500 requests succeeded in both",)),
        ("ids alone", ("500 requests succeeded in both",)),
        # the output lengths disagree but the prompt token counts (which tell the prompts
        # apart) agree: the same prompts answered anew
        (
            "answers differ",
            ("500 requests in both runs ask the same prompts", "compared on the 500 both ran"),
        ),
    ],
)
def test_d_a_head_that_re_ran_part_of_base_is_compared_on_the_requests_both_ran(
    variant: str, says: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b, h, truth = _prompts(tmp_path, variant)
    assert _pct(truth["head_total"]) < _pct(truth["base_total"])  # the trap: all of base
    _, report, _ = _json(_compare(tmp_path, b, h, PROMPTS_BUDGET), capsys)
    assert report["paired"] is True
    # the counts are of every row (failures too, issue 38); the rows of the 500 both ran
    assert report["requests"] == {"base": 2000, "head": 500}
    total = _slo(report, "total")
    assert total["base_ms"] == pytest.approx(_pct(truth["base_total"][:500]), rel=1e-6, abs=2e-3)
    assert total["head_ms"] == pytest.approx(_pct(truth["head_total"]), rel=1e-6, abs=2e-3)
    assert total["change"] == "regression"
    said = " ".join(report["notes"])
    assert all(s in said for s in says) and "2,000" in said, report["notes"]


def test_d_a_re_run_whose_answers_differ_says_it_compares_unequal_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ids are in both but the output lengths disagree and nothing tells the prompts apart
    (every prompt of one length): not proven the same requests, so compared unpaired, on every
    request of each; the rows and the note say the same thing."""
    b, h, truth = _prompts(tmp_path, "answers differ, one prompt length")
    _, report, _ = _json(_compare(tmp_path, b, h, PROMPTS_BUDGET), capsys)
    assert report["paired"] is False
    assert report["requests"] == {"base": 2000, "head": 500}
    total = _slo(report, "total")
    assert total["base_ms"] == pytest.approx(_pct(truth["base_total"]), rel=1e-6, abs=2e-3)
    said = " ".join(report["notes"])
    assert "unpaired" in said and "base 2,000" in said and "head 500" in said, report["notes"]
    assert "ran in both" not in said
