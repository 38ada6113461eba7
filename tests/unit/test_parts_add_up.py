"""The slices' parts of the total's percentile add up, and every stage uses the same parts:
what the headline states, what a slice budget holds, and what rebudget writes.

- the model upgrade through the CLI (paired and unpaired): `rebudget --write` writes, and
  `compare` against the written budget on the same data finds no over_budget and no breach;
- simulated pairs (fixed seeds, 1,000 requests a side): a 15% decode shift is owned by decode in
  at least 90% of reports, A/A pairs name no owner in more than 5%, and the parts always add up
  to the stated change;
- whatif: the seed's example, exits and bad inputs; what to fix first in the report.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from budgetdiff.budget.file import parse_budget
from budgetdiff.measure.prepare import prepare
from budgetdiff.measure.results import Comparison
from budgetdiff.measure.rows import compare
from budgetdiff.table import Run
from tests.support.helpers import compare_json, run, write_table

NAMES = ("network", "queue", "prefill", "decode", "app")
UPGRADE_BUDGET = """\
version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
slices:
  network: 150
  queue: 250
  prefill: 800   # prompt processing
  decode: 4200   # generation
  app: 300
headroom: 10%
"""
BUDGET = parse_budget(UPGRADE_BUDGET, "budget.yml")


def _requests(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    tokens = rng.integers(40, 420, n)
    return {
        "network": rng.lognormal(np.log(60), 0.4, n),
        "queue": rng.lognormal(np.log(80), 0.6, n),
        "prefill": rng.lognormal(np.log(380), 0.35, n),
        "decode": tokens * rng.lognormal(np.log(10), 0.15, n),
        "app": rng.lognormal(np.log(120), 0.3, n),
    }


def _upgrade(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model upgrade: prefill twice as fast, every output token 25% slower."""
    return dict(s, prefill=s["prefill"] / 2, decode=s["decode"] * 1.25)


def _table(path: Path, s: dict[str, np.ndarray], ids: list[str]) -> Path:
    cols: dict[str, object] = {"request_id": ids}
    cols.update({f"{k}_ms": v.round(3) for k, v in s.items()})
    return write_table(path, cols)


@pytest.mark.parametrize("paired", [True, False])
def test_model_upgrade_rebudget_writes_and_compare_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], paired: bool
) -> None:
    rng = np.random.default_rng(7)
    base = _requests(rng, 2000)
    head = _upgrade(base if paired else _requests(rng, 2000))
    ids = [f"r{i}" for i in range(2000)]
    b = _table(tmp_path / "base.csv", base, ids)
    h = _table(tmp_path / "head.csv", head, ids if paired else [f"h{i}" for i in range(2000)])
    budget = tmp_path / "budget.yml"
    budget.write_text(UPGRADE_BUDGET)

    # the slices' own p95s add up to more than the SLO: the old model could not write this
    own = sum(float(np.percentile(np.round(x, 3), 95)) for x in head.values())
    assert own > 6000
    code, out, err = run(["rebudget", "--head", str(h), "--budget", str(budget), "--write"], capsys)
    assert code == 0, err + out
    assert "wrote" in out and "# generation" in budget.read_text()

    code, report = compare_json(capsys, b, h, budget)
    kinds = {f["kind"] for f in report["findings"]}
    assert "over_budget" not in kinds and "breach" not in kinds, report["findings"]
    total = next(r for r in report["slo"] if r["metric"] == "total")
    parts = [r["part_ms"] for r in report["slices"]]
    assert math.fsum(parts) == pytest.approx(total["head_ms"], abs=0.01)
    assert all(r["budget_use_pct"] < 100 for r in report["slices"])
    changes = [r["tail_change_ms"] for r in report["slices"]]
    assert math.fsum(changes) == pytest.approx(total["delta_ms"], abs=0.01)
    assert report["attribution"].startswith("Shapley" if paired else "each side's Euler")
    assert report["headline"].startswith("p95 end to end +") and "decode +" in report["headline"]


# --- simulated pairs: who owns the change, and does it add up -----------------------------

N = 1000
REPORTS = 150  # per scenario; four scenarios, about 10 ms a report


def _report(rng: np.random.Generator, shift: str | None, paired: bool) -> Comparison:
    base = _requests(rng, N)
    if paired:  # the same prompts again: each slice varies a little per request
        head = {k: v * rng.lognormal(0, 0.05, N) for k, v in base.items()}
        ids = np.array([f"r{i}" for i in range(N)])
        idb = idh = ids
    else:
        head = _requests(rng, N)
        idb = np.array([f"b{i}" for i in range(N)])
        idh = np.array([f"h{i}" for i in range(N)])
    if shift is not None:
        head[shift] = head[shift] * 1.15
    sides = [
        prepare(Run(source=name, n=N, slices=s, request_id=i), BUDGET)
        for name, s, i in (("base", base, idb), ("head", head, idh))
    ]
    return compare(sides[0], sides[1], BUDGET)


_LISTED = re.compile(r"(\S+) ([+-][\d,]+) ms")


def _owner_and_sum(headline: str) -> tuple[str | None, int | None, int | None]:
    """The owner the headline names (None: no owner), the change it states, and the sum of
    the parts it lists."""
    if "(regression): " not in headline and "(improvement): " not in headline:
        return None, None, None
    stated, _, listed = headline.partition("): ")
    value = int(stated.split(" ")[4].replace(",", ""))
    parts = _LISTED.findall(listed)
    return parts[0][0], value, sum(int(v.replace(",", "")) for _, v in parts)


@pytest.mark.parametrize("paired", [False, True])
def test_a_15pct_decode_shift_is_owned_by_decode_and_aa_names_no_owner(paired: bool) -> None:
    rng = np.random.default_rng(1100 + paired)
    owned = named_aa = 0
    for shift in ("decode", None):
        for _ in range(REPORTS):
            c = _report(rng, shift, paired)
            assert c.headline is not None
            total = next(r for r in c.slo if r.name == "total")
            changes = [r.tail_change_ms for r in c.slices]
            assert all(x is not None for x in changes)
            # the parts add up to the change of the total's percentile
            assert math.fsum(x for x in changes if x is not None) == pytest.approx(
                total.delta_ms, rel=1e-9, abs=1e-6
            )
            owner, stated, listed = _owner_and_sum(c.headline)
            if owner is not None:  # the parts shown add up to the change shown
                assert stated == listed, c.headline
            if shift is None:
                named_aa += owner is not None
            else:
                owned += owner == shift
    assert owned >= 0.9 * REPORTS, owned
    assert named_aa <= 0.05 * REPORTS, named_aa


def test_unchanged_slices_get_exactly_zero_when_paired() -> None:
    rng = np.random.default_rng(5)
    base = _requests(rng, N)
    head = dict(base, decode=base["decode"] * 1.15)
    ids = np.array([f"r{i}" for i in range(N)])
    b, h = (prepare(Run(source="x", n=N, slices=s, request_id=ids), BUDGET) for s in (base, head))
    c = compare(b, h, BUDGET)
    assert c.attribution == "Shapley (exact)"
    assert {r.name: r.tail_change_ms for r in c.slices if r.name != "decode"} == dict.fromkeys(
        ("network", "queue", "prefill", "app"), 0.0
    )
    assert c.headline is not None and c.headline.endswith(
        f"(regression): decode {c.slices[3].tail_change_ms:+,.0f} ms"
    )
    # what to fix first: decode 10% faster buys the most, on the total and on attainment
    assert c.fix_first[0].slice == "decode"
    assert c.fix_first[0].total_change_ms < c.fix_first[1].total_change_ms < 0
    first = c.fix_first[0]
    assert first.attainment_change_pct is not None and first.attainment_change_pct >= 0


# --- whatif ---------------------------------------------------------------------------------


def test_whatif_the_seeds_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    budget = tmp_path / "budget.yml"
    budget.write_text(UPGRADE_BUDGET)
    argv = ["whatif", "--ttft", "850", "--tokens-per-s", "22", "--tokens", "1200"]
    code, out, err = run([*argv, "--tail", "300", "--budget", str(budget)], capsys)
    assert code == 1, err  # does not fit
    # 850 + 1,199 / 22 s + 300; the seed's formula counts all 1,200 tokens: 55,695 ms
    assert "= 55,650 ms" in out and "counting all 1,200 tokens at the rate: 55,695 ms" in out
    # the table: estimate, target, the target less 10% headroom, the headroom, the verdict
    assert "with 10% headroom" in out
    over = f"{55_650 / 6000:.1f}x over"  # 9.3 times the target, not "-827.5% headroom"
    assert re.search(rf"^  end to end +55,650 ms +6,000 ms +5,400 ms +{over}$", out, re.M), out
    assert out.endswith("does not fit\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ttft", "0", "--tokens-per-s", "22", "--tokens", "10"], "--ttft 0: must be"),
        (["--ttft", "850", "--tokens-per-s", "-22", "--tokens", "10"], "--tokens-per-s -22"),
        (["--ttft", "850", "--tokens-per-s", "22", "--tokens", "0"], "--tokens 0: must be"),
        (["--ttft", "850", "--tokens-per-s", "22", "--tokens", "10", "--tail", "-1"], "--tail -1"),
        (["--ttft", "850", "--tokens", "10"], "one of --tokens-per-s or --tpot"),
        (["--ttft", "nan", "--tpot", "20", "--tokens", "10"], "--ttft nan: must be"),
        (["--ttft", "850", "--tpot", "20", "--tokens", "10.5"], "whole number"),
        (["--ttft", "850", "--tpot", "20", "--tokens", "10", "--scale", "a=1"], "--head FILE"),
    ],
)
def test_whatif_refuses_bad_inputs_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    budget = tmp_path / "budget.yml"
    budget.write_text(UPGRADE_BUDGET)
    code, out, err = run(["whatif", *args, "--budget", str(budget)], capsys)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_whatif_honours_the_per_token_slo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "budget.yml"
    budget.write_text(UPGRADE_BUDGET.replace("total: 6000}", "total: 6000, itl: 40, tpot: 30}"))
    argv = ["whatif", "--ttft", "300", "--tokens-per-s", "30", "--tokens", "50"]
    code, out, _ = run([*argv, "--budget", str(budget)], capsys)
    assert code == 1  # 33.3 ms per token: within itl 40 with headroom? 36 ms: yes; tpot 30: no
    assert re.search(r"^  ITL +33\.3 ms +40\.0 ms +36\.0 ms +\+16\.7% +fits$", out, re.M), out
    over = f"{100 * (1000 / 30 - 30) / 30:.1f}% over"  # 33.3 ms per token against 30
    assert re.search(rf"^  TPOT +33\.3 ms +30\.0 ms +27\.0 ms +{over}$", out, re.M), out


def test_whatif_on_measured_requests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(7)
    head = _upgrade(_requests(rng, 2000))
    h = _table(tmp_path / "head.csv", head, [f"r{i}" for i in range(2000)])
    budget = tmp_path / "budget.yml"
    budget.write_text(UPGRADE_BUDGET)
    argv = ["whatif", "--head", str(h), "--budget", str(budget)]
    code, out, err = run([*argv, "--scale", "decode=0.8", "--add", "queue=-50"], capsys)
    assert code == 0, err
    total = sum(np.round(x, 3) for x in head.values())
    changed = total - 0.2 * np.round(head["decode"], 3)
    changed = changed - np.round(head["queue"], 3) + np.maximum(np.round(head["queue"], 3) - 50, 0)
    p_before, p_after = (float(np.percentile(x, 95)) for x in (total, changed))
    assert f"p95 end to end: {p_before:,.0f} ms -> {p_after:,.0f} ms" in out
    assert "queue: held at 0 ms in the requests where -50 ms would take it below" in out
    assert "SLO attainment:" in out and out.endswith("fits\n")
    # nothing changed: the measured run itself, which leaves less than the 10% headroom
    code, out, _ = run(argv, capsys)
    assert code == 1 and "fits the SLO, not the headroom" in out
    code, _, err = run([*argv, "--scale", "nope=0.5"], capsys)
    assert code == 2 and "nope is not a slice" in err
    code, _, err = run([*argv, "--scale", "decode"], capsys)
    assert code == 2 and "write SLICE=NUMBER" in err


def test_report_json_has_fix_first_and_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(3)
    base = _requests(rng, 1000)
    ids = [f"r{i}" for i in range(1000)]
    b = _table(tmp_path / "base.csv", base, ids)
    h = _table(tmp_path / "head.csv", _upgrade(base), ids)
    budget = tmp_path / "budget.yml"
    budget.write_text(UPGRADE_BUDGET)
    _, report = compare_json(capsys, b, h, budget)
    ranking = report["fix_first"]
    assert ranking[0]["slice"] == "decode"
    assert sorted(f["slice"] for f in ranking) == sorted(NAMES)
    assert all(f["total_change_ms"] <= 0 for f in ranking)
    assert [f["total_change_ms"] for f in ranking] == sorted(f["total_change_ms"] for f in ranking)
    for row in report["slices"]:
        assert row["part_ms"] is not None and row["base_part_ms"] is not None
        assert row["budget_use_pct"] == pytest.approx(100 * row["part_ms"] / row["budget_ms"], 0.01)


def test_a_budgeted_unattributed_slice_without_a_measured_total_is_0_ms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(9)
    h = _table(tmp_path / "head.csv", _requests(rng, 500), [f"r{i}" for i in range(500)])
    budget = tmp_path / "budget.yml"
    budget.write_text(UPGRADE_BUDGET.replace("  app: 300\n", "  app: 300\n  unattributed: 20\n"))
    code, out, err = run(["check", "--head", str(h), "--budget", str(budget)], capsys)
    assert code == 0 and "Traceback" not in err, err
    code, out, err = run(["rebudget", "--head", str(h), "--budget", str(budget)], capsys)
    assert code == 0, err
    # own p95, part, budget, proposed
    assert re.search(r"unattributed +0\.00 +0\.00 +20\.0 +1 ", out), out


def test_the_most_left_over_of_a_long_run_is_numpys_on_the_whole_arrays() -> None:
    """Whether the total is more than its slices is read a chunk at a time: the largest rest
    is numpy's max of total minus slice_sum on the whole arrays, a NaN among them included."""
    from budgetdiff.measure.prepare import _most_left, slice_sum

    rng = np.random.default_rng(12)
    n = 700_000  # past two chunks
    slices = {s: rng.lognormal(3.0, 1.0, n) for s in ("queue", "prefill", "decode")}
    total = slice_sum(slices) + rng.uniform(0.0, 1e-9, n)
    total[654_321] += 40.0  # one request with time no slice holds, in the last chunk
    assert _most_left(total, slices) == float(np.max(total - slice_sum(slices)))
    total[17] = np.nan
    assert np.isnan(_most_left(total, slices))


def test_the_slices_sum_of_a_long_run_is_the_left_to_right_sum_of_the_whole_arrays() -> None:
    """`slice_sum` adds a chunk of every slice at a time: bit for bit the sum taken left to
    right over the whole arrays, (((0 + a) + b) + c), across chunks, a NaN and an inf in."""
    from budgetdiff.measure.prepare import slice_sum

    rng = np.random.default_rng(13)
    n = 700_000  # past two chunks
    slices = {s: rng.lognormal(3.0, 2.0, n) for s in ("queue", "prefill", "decode")}
    slices["prefill"][300_000] = np.nan
    slices["decode"][650_000] = np.inf
    truth = ((np.zeros(n) + slices["queue"]) + slices["prefill"]) + slices["decode"]
    np.testing.assert_array_equal(slice_sum(slices), truth)
    assert slice_sum({}, 5).tolist() == [0.0] * 5
