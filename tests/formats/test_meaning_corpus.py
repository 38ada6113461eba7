"""Hand-made tables of the shapes people write (tests/data/user_tables/meaning, made by
tools/make_meaning_tables.py): the report gives the right answer, or a finding that says why
it cannot. The truth of every table is computed here, from the file, with numpy alone:

- end to end: the measured total, else end_time - start_time, else every slice column, where
  the time to the first token is the largest of the TTFT column, a first_token column and the
  slices before it (network, gateway, queue, prefill);
- TTFT: the TTFT column, else that time when a slice ends at the first token;
- pairing: request ids pair only where the requests agree on what they asked (token counts,
  prompt hash), and the comparison is on the requests both ran.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.helpers import run
from tests.support.paths import SAMPLES

CORPUS = SAMPLES / "user_tables" / "meaning"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
BEFORE = ("network", "gateway", "queue", "prefill")  # `first_token` spans these
AFTER = ("decode", "app")
EVIDENCE = ("input_tokens", "output_tokens", "prompt_hash")
WORDS = ("inconclusive", "not_comparable", "missing_slice")  # a finding that says why not


def test_the_corpus_has_every_shape() -> None:
    assert len(CASES) >= 25


@dataclass
class Table:
    columns: dict[str, np.ndarray]
    n: int

    def has(self, name: str) -> bool:
        return name in self.columns

    def num(self, name: str) -> np.ndarray:
        return self.columns[name].astype(float)

    def text(self, name: str) -> np.ndarray:
        return self.columns[name]


def load(path: Path) -> Table:
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    cols = {name: np.array([r[i] for r in body], dtype=object) for i, name in enumerate(header)}
    return Table(cols, len(body))


def seconds(values: np.ndarray) -> np.ndarray:
    try:
        return values.astype(float)
    except ValueError:
        return np.array([datetime.fromisoformat(v).timestamp() for v in values])


@dataclass
class Truth:
    total: np.ndarray
    ttft: np.ndarray | None
    rest: np.ndarray  # total - every slice column: time in no slice (negative: they overlap)
    slices: list[str]
    ok: np.ndarray


def truth(t: Table) -> Truth:
    ok = (t.text("error") == "") if t.has("error") else np.ones(t.n, dtype=bool)
    sl = {c.removesuffix("_ms"): t.num(c) for c in t.columns if c.endswith("_ms")}
    sl = {k: v for k, v in sl.items() if k not in ("ttft", "total")}
    before = sum((sl[k] for k in BEFORE if k in sl), np.zeros(t.n))
    first = np.max(
        [before, *(x for x in (sl.get("first_token"), _maybe(t, "ttft_ms")) if x is not None)],
        axis=0,
    )
    if not any(k in sl for k in (*BEFORE, "first_token")) and t.has("ttft_ms"):
        sl["first_token"] = t.num("ttft_ms")  # the TTFT is the slice before the others
    everything = sum(sl.values(), np.zeros(t.n))
    if t.has("total_ms"):
        total, rest = t.num("total_ms"), t.num("total_ms") - everything
    elif t.has("start_time") and t.has("end_time"):
        total = 1000 * (seconds(t.text("end_time")) - seconds(t.text("start_time")))
        rest = total - everything
    else:
        total = first + sum((sl[k] for k in AFTER if k in sl), np.zeros(t.n))
        rest = total - everything
    ends = "prefill" in sl or "first_token" in sl
    ttft = t.num("ttft_ms") if t.has("ttft_ms") else first if ends else None
    return Truth(total, ttft, rest, list(sl), ok)


def _maybe(t: Table, name: str) -> np.ndarray | None:
    return t.num(name) if t.has(name) else None


def needed(p: float, confidence: float = 0.95) -> int:
    """Fewest requests with a finite distribution-free interval for the p-th percentile."""
    q = max(p, 100 - p) / 100
    n = 1
    while q**n > (1 - confidence) / 2:
        n += 1
    return n


def compared_rows(base: Table, head: Table) -> tuple[np.ndarray, np.ndarray, bool]:
    """The rows of each side compared, and whether they are paired: ids pair only where the
    requests agree on what they asked on 95% of the ids in both, and most of the smaller side
    is in both; then the comparison is on those requests."""
    every = (np.arange(base.n), np.arange(head.n), False)
    if not (base.has("request_id") and head.has("request_id")):
        return every
    a, b = base.text("request_id").astype(str), head.text("request_id").astype(str)
    where = {x: i for i, x in enumerate(b)}
    ib = np.array([i for i, x in enumerate(a) if x in where], dtype=int)
    ih = np.array([where[x] for x in a[ib]], dtype=int)
    said = [c for c in EVIDENCE if base.has(c) and head.has(c)]
    agree = np.ones(len(ib), dtype=bool)
    for c in said:
        agree &= base.text(c)[ib] == head.text(c)[ih]
    if said and (len(ib) == 0 or agree.mean() < 0.95):
        return every
    ib, ih = ib[agree], ih[agree]
    if len(ib) < 0.9 * min(base.n, head.n):
        return every
    return np.sort(ib), np.sort(ih), True


def report_for(case: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    head, budget = case / "head.csv", case / "budget.yml"
    base = case / "base.csv"
    argv = ["--head", str(head), "--budget", str(budget), "--output", "json"]
    argv = ["compare", "--base", str(base), *argv] if base.exists() else ["check", *argv]
    code, out, err = run(argv, capsys)
    assert code in (0, 1), err
    return code, json.loads(out)


def budget_of(case: Path) -> dict[str, Any]:
    import yaml

    loaded: dict[str, Any] = yaml.safe_load((case / "budget.yml").read_text())
    return loaded


@pytest.mark.parametrize("name", CASES)
def test_the_report_is_right_or_says_why_not(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    case = CORPUS / name
    code, report = report_for(case, capsys)
    budget = budget_of(case)
    p = float(budget["percentile"])
    kinds = [f["kind"] for f in report["findings"]]
    slo = {r["metric"]: r for r in report["slo"]}
    slices = {r["name"]: r for r in report["slices"]}
    head = load(case / "head.csv")
    h = truth(head)
    rows_h = np.flatnonzero(h.ok)
    base_truth = None
    if (case / "base.csv").exists():
        base = load(case / "base.csv")
        base_truth = truth(base)
        ib, ih, paired = compared_rows(base, head)
        assert report["paired"] is paired, report["notes"]
        rows_h = ih[h.ok[ih]]
        rows_b = ib[base_truth.ok[ib]]
        if len(ih) < head.n or len(ib) < base.n:  # a subset: compared on the common requests
            assert any("compared on the" in n for n in report["notes"])

    # end to end and TTFT: the number, and whether it breaches its target
    total = float(np.percentile(h.total[rows_h], p))
    assert slo["total"]["head_ms"] == pytest.approx(total, abs=0.0015)
    assert (slo["total"]["status"] == "breach") is (total > budget["slo"]["total"])
    assert ("breach" in kinds) == (
        total > budget["slo"]["total"] or _ttft_breach(h, rows_h, p, budget)
    )
    assert code == int(any(f["fails"] for f in report["findings"]))
    if h.ttft is not None:
        ttft = float(np.percentile(h.ttft[rows_h], p))
        assert slo["ttft"]["head_ms"] == pytest.approx(ttft, abs=0.0015)

    # every slice column of the table is a row: a budget that leaves one out does not drop it
    assert set(h.slices) <= set(slices), sorted(slices)

    # time in no slice: a finding of its own, unless the budget gives it a budget
    if float(np.mean(h.rest[rows_h])) > 0.05 * float(np.mean(h.total)):
        if "unattributed" in budget.get("slices", {}):
            assert "missing_slice" not in kinds and "unattributed" in slices
        else:
            assert "missing_slice" in kinds, kinds
    elif float(np.max(h.rest)) <= 1.0:  # none, or slices that overlap: nothing is missing
        assert "missing_slice" not in kinds
        assert "unattributed" not in slices or slices["unattributed"]["part_ms"] <= 1.0

    # too few requests for an interval: said, with the count needed, never a silent pass
    need = needed(p)
    few = len(rows_h) < need or (base_truth is not None and len(rows_b) < need)
    assert (slo["total"]["change"] == "inconclusive") is few
    if few:
        assert "inconclusive" in kinds and slo["total"]["needed"] == need
    if base_truth is None:
        return

    # base against head: the change of the compared requests, and different workloads named
    before = float(np.percentile(base_truth.total[rows_b], p))
    assert slo["total"]["base_ms"] == pytest.approx(before, abs=0.0015)
    differ = _different_workloads(base, head, ib, ih)
    assert ("not_comparable" in kinds) is differ, kinds
    change = (total - before) / before
    if few or differ:
        assert any(k in kinds for k in WORDS)
    elif change > 0.10:
        assert slo["total"]["change"] == "regression"
    elif abs(change) < 0.01:
        assert slo["total"]["change"] != "regression"


def _ttft_breach(h: Truth, rows: np.ndarray, p: float, budget: dict[str, Any]) -> bool:
    target = budget["slo"].get("ttft")
    return bool(h.ttft is not None and target and np.percentile(h.ttft[rows], p) > target)


def _different_workloads(base: Table, head: Table, ib: np.ndarray, ih: np.ndarray) -> bool:
    """Mean prompt or answer length 10% apart, clearly beyond noise."""
    for c in ("input_tokens", "output_tokens"):
        if not (base.has(c) and head.has(c)):
            continue
        x, y = base.num(c)[ib], head.num(c)[ih]
        se = math.sqrt(x.var(ddof=1) / len(x) + y.var(ddof=1) / len(y))
        apart = abs(y.mean() - x.mean()) > 3 * se if se else True
        if abs(y.mean() / x.mean() - 1) > 0.10 and apart:
            return True
    return False
