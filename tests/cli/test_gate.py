"""The merge gate says only what is true (issue 9): no silent pass, no failure on a row the budget
does not name. Every case runs through `budgetdiff compare` / `check`: exit code, finding kind,
message."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from budgetdiff import action
from budgetdiff.budget.file import parse_budget
from budgetdiff.errors import UsageError
from budgetdiff.judge.findings import judge
from budgetdiff.measure.aggregate import compare_aggregate
from budgetdiff.render.cells import change as change_cell
from budgetdiff.table import Histogram, Run
from tests.support.helpers import BUDGET, budget_file, compare_json, run, slices, write_table
from tests.support.paths import DEMO, SAMPLES

DATA = SAMPLES / "fetched" / "inference-perf"
# inference-perf's server-side summaries: mean, median, p90 and p99, no p95 (see the report)
SUMMARY_BASE = DATA / "vllm_stage_0_prometheus_metrics.json"
SUMMARY_HEAD = DATA / "vllm_summary_prometheus_metrics.json"


def kinds(report: dict[str, Any]) -> list[str]:
    return [f["kind"] for f in report["findings"]]


def one_error_line(err: str) -> str:
    assert err.startswith("budgetdiff: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


# ---- a base that is not there --------------------------------------------------------------


def test_a_missing_or_directory_local_base_is_exit_2_like_the_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(2, n=200))
    budget = budget_file(tmp_path)
    args = ["compare", "--head", str(head), "--budget", str(budget)]
    code, out, err = run([*args, "--base", str(tmp_path / "nope.csv")], capsys)
    assert code == 2 and out == ""
    assert "nope.csv: no such file" in one_error_line(err)
    (tmp_path / "results").mkdir()
    for extra in ([], ["--allow-missing-base"]):  # a directory is never "absent by design"
        code, out, err = run([*args, "--base", str(tmp_path / "results"), *extra], capsys)
        assert code == 2 and out == ""
        assert "results: is a directory" in one_error_line(err)


def test_allow_missing_base_makes_an_absent_base_the_no_base_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(2, n=200))
    budget = budget_file(tmp_path)
    gone = tmp_path / "nope.csv"
    code, report = compare_json(capsys, gone, head, budget, "--allow-missing-base")
    assert code == 0 and report["verdict"] == "warn"
    assert (
        kinds(report)[0] == "no_base"
        and "nope.csv do not exist" in report["findings"][0]["message"]
    )
    code, _ = compare_json(
        capsys, gone, head, budget, "--allow-missing-base", "--fail-on", "no_base"
    )
    assert code == 1


def test_the_action_input_allow_missing_base_reaches_the_cli_through_env() -> None:
    env = {"INPUT_HEAD": "head.csv", "INPUT_BASE": "base.csv"}
    assert not action.build(env)[0].allow_missing_base
    assert action.build({**env, "INPUT_ALLOW_MISSING_BASE": "true"})[0].allow_missing_base
    assert action.build({**env, "INPUT_ALLOW_MISSING_BASE": "yes"})[0].allow_missing_base
    assert not action.build({**env, "INPUT_ALLOW_MISSING_BASE": "off"})[0].allow_missing_base
    with pytest.raises(UsageError, match="input `allow-missing-base`: 'yes please'"):
        action.build({**env, "INPUT_ALLOW_MISSING_BASE": "yes please"})


def test_the_same_bytes_as_base_and_head_is_a_finding_not_a_silent_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(2, n=300))
    copy = tmp_path / "copy.csv"
    copy.write_bytes(head.read_bytes())
    budget = budget_file(tmp_path)
    code, report = compare_json(capsys, copy, head, budget)
    assert code == 0 and report["verdict"] == "warn"
    [same] = [f for f in report["findings"] if f["kind"] == "same_input"]
    assert "are the same bytes" in same["message"] and "copy.csv" in same["message"]
    code, _ = compare_json(capsys, copy, head, budget, "--fail-on", "no_base")
    assert code == 1  # it is no base at all: `no_base` in fail_on blocks it
    data = bytearray(head.read_bytes())
    digit = len(data.rstrip()) - 1  # the last decode value's last digit
    data[digit] = ord("1") if data[digit] != ord("1") else ord("2")
    twin = tmp_path / "twin.csv"  # the same size, one digit apart
    twin.write_bytes(bytes(data))
    assert len(data) == len(head.read_bytes()) and bytes(data) != head.read_bytes()
    _, report = compare_json(capsys, twin, head, budget)
    assert "same_input" not in kinds(report)


# ---- a target that was not evaluated --------------------------------------------------------


def test_an_aggregate_file_without_the_budget_percentile_is_unmeasured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = budget_file(tmp_path, "version: 1\nslo: {ttft: 5000, total: 6000}\n")
    code, report = compare_json(capsys, SUMMARY_BASE, SUMMARY_HEAD, budget)
    assert code == 0 and report["verdict"] == "warn"  # never pass
    unmeasured = {f["subject"]: f for f in report["findings"] if f["kind"] == "unmeasured"}
    assert set(unmeasured) == {"ttft", "total"}  # the targets; ITL has none
    message = unmeasured["ttft"]["message"]
    assert "p95 not in " in message and "it has p50, p90, p99" in message
    assert "set `percentile: 90`" in message and "per-request file" in message
    assert not unmeasured["ttft"]["fails"]
    code, report = compare_json(
        capsys, SUMMARY_BASE, SUMMARY_HEAD, budget, "--fail-on", "unmeasured"
    )
    assert code == 1 and report["verdict"] == "fail"
    budget.write_text("version: 1\nslo: {ttft: 5000, total: 6000}\nfail_on: [unmeasured]\n")
    code, _ = compare_json(capsys, SUMMARY_BASE, SUMMARY_HEAD, budget)
    assert code == 1
    # at a percentile the files hold, every target is evaluated: no unmeasured finding
    budget.write_text("version: 1\npercentile: 90\nslo: {ttft: 5000, total: 6000}\n")
    _, report = compare_json(capsys, SUMMARY_BASE, SUMMARY_HEAD, budget)
    assert "unmeasured" not in kinds(report)
    assert {r["metric"]: r["head_ms"] for r in report["slo"]}["ttft"] == pytest.approx(4610.787)


def test_a_target_the_data_cannot_give_is_unmeasured_and_not_in_attainment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # no output token counts: there is no TPOT row, so neither the table nor attainment holds it
    budget = budget_file(tmp_path, BUDGET.replace("total: 6000}", "total: 6000, tpot: 50}"))
    head = write_table(tmp_path / "head.csv", slices(2, n=300))
    code, out, _ = run(
        ["check", "--head", str(head), "--budget", str(budget), "--output", "json"], capsys
    )
    report = json.loads(out)
    assert code == 0 and report["verdict"] == "warn"
    [f] = [f for f in report["findings"] if f["kind"] == "unmeasured"]
    assert f["subject"] == "tpot" and "it is not checked" in f["message"]
    assert "tpot" not in {r["metric"] for r in report["slo"]}
    assert report["attainment"]["head"]["held_to"] == ["ttft", "total"]


def test_an_unknown_request_count_is_shown_as_unknown_never_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an LLMPerf summary cut down to its latency percentiles: it does not say how many ran
    uncounted = SAMPLES / "llmperf" / "anyscale_70b_summary_uncounted_gate.json"
    budget = budget_file(tmp_path, "version: 1\nslo: {total: 6000}\n")
    args = ["check", "--head", str(uncounted), "--budget", str(budget)]
    code, out, _ = run([*args, "--output", "json"], capsys)
    assert code == 0 and json.loads(out)["requests"]["head"] is None
    _, table, _ = run(args, capsys)
    _, markdown, _ = run([*args, "--output", "markdown"], capsys)
    for text in (" ".join(table.split()), markdown):  # the table's prose wraps at 80 columns
        assert "0 requests" not in text and "head requests: count not in the file" in text
    assert json.loads(out)["failed"]["head"] is None  # not 0: the file does not say


def test_an_unknown_failure_count_is_null_never_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vLLM result without `completed` / `failed` (vllm-ascend's nightly files keep only the
    metrics): the JSON says null and the table says no failed count; with them, the count."""
    data = SAMPLES / "vllm" / "vllm_aggregate_head_vllm_bench_serve.json"
    doc = json.loads(data.read_text())
    budget = budget_file(tmp_path, "version: 1\nslo: {ttft: 1200, total: 6000}\n")
    for counted in (True, False):
        if not counted:
            del doc["completed"], doc["failed"]
        path = tmp_path / "head.json"
        path.write_text(json.dumps(doc))
        args = ["check", "--head", str(path), "--budget", str(budget)]
        code, out, _ = run([*args, "--output", "json"], capsys)
        report = json.loads(out)
        assert code == 0
        assert report["failed"]["head"] == (0 if counted else None)
        assert report["requests"]["head"] == (100 if counted else None)
        _, table, _ = run(args, capsys)
        assert ("0 failed" in table) is counted


# ---- only what the budget names can fail ------------------------------------------------------


def streamed(
    seed: int, n: int, bursty: bool, app_scale: float = 1.0, tokens: int = 65
) -> list[dict[str, Any]]:
    """Requests with per-token gaps; the same seed gives the same decode times and tokens.
    `bursty` keeps each request's decode time but spends it as many short gaps and 8 stalls."""
    rng = np.random.default_rng(seed)
    prefill = rng.lognormal(np.log(300), 0.3, n)
    decode = rng.lognormal(np.log(640), 0.2, n)
    app = rng.lognormal(np.log(40), 0.3, n) * app_scale
    rows = []
    for i in range(n):
        k = tokens - 1
        weights = np.ones(k)
        if bursty:
            weights[:: k // 8] = 12.0  # eight stalls of 12 ordinary gaps each
        gaps = decode[i] * weights / weights.sum()
        rows.append(
            {
                "request_id": f"q{i}",
                "prefill_ms": round(float(prefill[i]), 3),
                "decode_ms": round(float(decode[i]), 3),
                "app_ms": round(float(app[i]), 3),
                "output_tokens": tokens,
                "itl_ms": [round(float(g), 4) for g in gaps],
            }
        )
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


STREAM_BUDGET = """\
version: 1
percentile: 95
slo: {ttft: 1200, total: 6000}
slices: {prefill: 800, decode: 4200, app: 300}
"""


def test_burstier_token_gaps_alone_do_not_fail_an_unbudgeted_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_jsonl(tmp_path / "base.jsonl", streamed(5, 400, bursty=False))
    head = write_jsonl(tmp_path / "head.jsonl", streamed(5, 400, bursty=True))
    budget = budget_file(tmp_path, STREAM_BUDGET)
    code, report = compare_json(capsys, base, head, budget)
    changes = {r["metric"]: r["change"] for r in report["slo"]}
    assert changes["itl"] == "regression" and changes["max_stall"] == "regression"
    assert changes["tpot"] == "none" and changes["total"] == "none"
    assert code == 0 and report["verdict"] == "warn"  # shown, never failing
    informing = [f for f in report["findings"] if f["kind"] == "regression"]
    assert {f["subject"] for f in informing} == {"itl", "max_stall"}
    assert not any(f["fails"] for f in informing)
    assert all("regression.metrics" in f["message"] for f in informing)
    # named in regression.metrics, or given a target, the same change fails the gate
    named = STREAM_BUDGET + "regression: {metrics: [itl]}\n"
    code, report = compare_json(capsys, base, head, budget_file(tmp_path, named, "n.yml"))
    assert code == 1 and [f["subject"] for f in report["findings"] if f["fails"]] == ["itl"]
    targeted = STREAM_BUDGET.replace("total: 6000}", "total: 6000, itl: 400}")
    code, report = compare_json(capsys, base, head, budget_file(tmp_path, targeted, "t.yml"))
    assert code == 1 and "itl" in [f["subject"] for f in report["findings"] if f["fails"]]


def test_a_slower_app_leaves_tpot_alone_and_is_one_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_jsonl(tmp_path / "base.jsonl", streamed(6, 400, bursty=False))
    head = write_jsonl(tmp_path / "head.jsonl", streamed(6, 400, bursty=False, app_scale=4.0))
    code, report = compare_json(capsys, base, head, budget_file(tmp_path, STREAM_BUDGET))
    tpot = next(r for r in report["slo"] if r["metric"] == "tpot")
    assert tpot["base_ms"] == tpot["head_ms"] and tpot["change"] == "none"  # decode / 64 tokens
    assert tpot["head_ms"] == pytest.approx(
        np.percentile([r["decode_ms"] / 64 for r in streamed(6, 400, False)], 95), abs=1e-3
    )
    regressions = [f for f in report["findings"] if f["kind"] == "regression"]
    assert [f["subject"] for f in regressions] == ["app"]  # the cause, once
    assert "it moved end to end by +" in regressions[0]["message"]
    assert code == 1


def test_one_cause_is_one_finding_listing_the_rows_it_moved(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, report = compare_json(capsys, DEMO / "base.csv", DEMO / "head.csv", DEMO / "budget.yml")
    assert code == 1
    assert {"decode", "total", "tpot"} <= set(report["regressions"])  # the rows that moved
    [finding] = [f for f in report["findings"] if f["kind"] == "regression"]
    assert finding["subject"] == "decode" and finding["fails"]
    assert "it moved end to end by +" in finding["message"] and "TPOT" in finding["message"]


def test_the_table_says_what_itl_and_tpot_mean_and_whom_attainment_holds_to_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_jsonl(tmp_path / "base.jsonl", streamed(7, 200, bursty=False))
    head = write_jsonl(tmp_path / "head.jsonl", streamed(8, 200, bursty=False))
    targeted = STREAM_BUDGET.replace("total: 6000}", "total: 6000, itl: 30}")
    budget = budget_file(tmp_path, targeted)
    args = ["compare", "--base", str(base), "--head", str(head), "--budget", str(budget)]
    _, table, _ = run(args, capsys)
    _, markdown, _ = run([*args, "--output", "markdown"], capsys)
    for text in (" ".join(table.split()), markdown):  # the table's prose wraps at 80 columns
        assert "ITL pools every gap between tokens of every request (token-weighted)" in text
        assert "TPOT is each request's mean gap, decode / (output tokens - 1)" in text
        assert "ITL (token-weighted) ≤ 30.0 ms (the mean of its own gaps)" in text
    _, report = compare_json(capsys, base, head, budget)
    assert report["attainment"]["head"]["held_to"] == ["ttft", "total", "itl"]


# ---- input that should just work ----------------------------------------------------------------


@pytest.mark.parametrize("with_total", [False, True])
def test_a_table_of_the_budgets_own_slices_is_detected_without_format(
    with_total: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def table(seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        cols = {
            "retrieval_ms": rng.lognormal(np.log(90), 0.3, 300).round(2),
            "guardrail_ms": rng.lognormal(np.log(30), 0.3, 300).round(2),
        }
        if with_total:
            cols["total_ms"] = (cols["retrieval_ms"] + cols["guardrail_ms"] + 5).round(2)
        return cols

    budget = budget_file(
        tmp_path, "version: 1\nslo: {total: 400}\nslices: {retrieval: 250, guardrail: 100}\n"
    )
    base = write_table(tmp_path / "base.csv", table(1))
    head = write_table(tmp_path / "head.csv", table(2))
    code, report = compare_json(capsys, base, head, budget)
    assert code == 0
    assert [r["name"] for r in report["slices"]][:2] == ["retrieval", "guardrail"]


def test_a_misspelt_key_names_the_likely_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(2, n=100))
    cases = {
        "version: 1\npercentil: 95\n": "b.yml:2: percentil: unknown key; did you mean "
        "`percentile`?",
        "version: 1\nslo: {tft: 900}\n": "slo.tft: unknown key; did you mean `ttft`?",
        "version: 1\nregresion: {min_ms: 3}\n": "did you mean `regression`?",
        "version: 1\nfail_on: [breech]\n": "did you mean `breach`?",
        "version: 1\nregression: {metrics: [tpott]}\n": "did you mean `tpot`?",
    }
    for text, words in cases.items():
        budget = budget_file(tmp_path, text, "b.yml")
        code, _, err = run(["check", "--head", str(head), "--budget", str(budget)], capsys)
        assert code == 2 and words in one_error_line(err), err


@pytest.mark.parametrize(
    "text,words",
    [
        ("slices: {llm: 8s}", "slices.llm: write the slice's budget in milliseconds, `llm: 4200`"),
        ("slices: {llm: [1, 2]}", "slices.llm: write the slice's budget in milliseconds"),
        ("slices: {llm: -5}", "slices.llm: must be more than 0 ms, not -5"),
        ("slo: {ttft: fast}", "slo.ttft: must be a number of milliseconds, e.g. `ttft: 4200`"),
        ("slo: 900", "slo: must be a mapping of keys"),
        ("fail_on: breach", "fail_on: must be a list, e.g. `fail_on: [breach, regression]`"),
        ("percentile: 100", "percentile: must be at most 99.99, not 100"),
        ("headroom: 150%", "headroom: write a percentage from 0% to under 100%"),
        ("slices: {a: {budget: 3, unit: min}}", "slices.a.unit: 'min' is not one of ms, s, us"),
    ],
)
def test_a_wrong_value_is_worded_in_the_budgets_terms(
    text: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(2, n=100))
    budget = budget_file(tmp_path, f"version: 1\n{text}\n", "b.yml")
    code, _, err = run(["check", "--head", str(head), "--budget", str(budget)], capsys)
    assert code == 2 and words in one_error_line(err), err
    for pydantic_words in ("Input should", "instance of", "Slice", "Slo", "Regression", "Budget"):
        assert pydantic_words not in err


def test_the_terminal_prints_the_notes_the_markdown_folds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cols = slices(2, n=300)
    total = cols["queue_ms"] + cols["prefill_ms"] + cols["decode_ms"] + 400  # a slice is missing
    head = write_table(tmp_path / "head.csv", {**cols, "total_ms": total.round(3)})
    args = ["check", "--head", str(head), "--budget", str(budget_file(tmp_path))]
    _, table, _ = run(args, capsys)
    _, markdown, _ = run([*args, "--output", "markdown"], capsys)
    assert "<details><summary>Notes</summary>" in markdown
    assert "total over, slices under" in markdown
    assert "notes:" in table and "total over, slices under" in table


def test_the_action_inputs_comment_and_accept_label_reach_the_cli() -> None:
    env = {"INPUT_HEAD": "head.csv", "INPUT_BASE": "base.csv"}
    o, _ = action.build({**env, "INPUT_COMMENT": "on-findings"})
    assert o.comment == "on-findings" and o.accept_label == "budgetdiff:accept"
    assert action.build({**env, "INPUT_COMMENT": "No"})[0].comment is False  # the CLI's rule
    o, _ = action.build({**env, "INPUT_ACCEPT_LABEL": "perf:ok"})
    assert o.accept_label == "perf:ok"
    o, _ = action.build({**env, "INPUT_ACCEPT_LABEL": ""})
    assert o.accept_label == ""  # set but empty: disabled
    assert action.build({**env, "INPUT_SCENARIO": "c=8, c=16"})[0].scenario == ("c=8", "c=16")
    assert action.build({**env, "INPUT_SCENARIO": ""})[0].scenario == ()  # all of them


def test_comment_takes_true_false_or_on_findings(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["compare", "--head", "h.csv", "--comment", "sometimes"], capsys)
    assert code == 2  # one line, exit 2
    assert err == "budgetdiff: error: --comment: 'sometimes': write true, false or on-findings\n"


# ---- histograms: a change the buckets cannot tell is said to be that --------------------------

BOUNDS = np.array([10.0, 20.0, 50.0, 100.0, np.inf])


def scrape(name: str, counts: list[float]) -> Run:
    """A scrape of one TTFT histogram (buckets up to 10, 20, 50, 100 ms and +Inf)."""
    return Run(source=name, n=0, histograms={"ttft": Histogram(BOUNDS, np.array(counts))})


@pytest.mark.parametrize(
    ("base", "head", "coarse", "cell"),
    [
        # p95 of both in (20, 50] ms: the buckets cannot tell a change
        ([0, 40, 920, 40, 0], [0, 60, 900, 40, 0], True, "inconclusive (buckets too coarse)"),
        # p95 in the first bucket (0, 10] ms on both: not placed at all
        ([990, 10, 0, 0, 0], [980, 20, 0, 0, 0], True, "inconclusive (buckets too coarse)"),
        # head's p95 in a higher bucket: tested on the bucket counts
        ([0, 50, 900, 50, 0], [0, 0, 500, 500, 0], False, "regression"),
    ],
    ids=["same-bucket", "first-bucket", "across-buckets"],
)
def test_a_change_inside_one_bucket_is_inconclusive_because_the_buckets_are_too_coarse(
    base: list[float], head: list[float], coarse: bool, cell: str
) -> None:
    budget = parse_budget("version: 1\nslo: {ttft: 100}\n", "b.yml")
    c = compare_aggregate(scrape("base.prom", base), scrape("head.prom", head), budget)
    (row,) = c.slo
    assert row.coarse_buckets is coarse
    assert change_cell(row).endswith(cell)


def binned(values: np.ndarray) -> list[float]:
    """Per-bucket counts of `values` in BOUNDS' buckets (lo, hi]."""
    edges = np.concatenate(([0.0], BOUNDS))
    return [float(np.sum((values > lo) & (values <= hi))) for lo, hi in pairwise(edges)]


def test_an_slo_target_inside_the_percentiles_bucket_is_unmeasured_not_pass_or_breach() -> None:
    """Two runs with the same buckets, one whose p95 is under the 80 ms target and one over it
    (numpy's own p95 of the values): the buckets cannot tell them apart, so neither is a pass
    nor a breach; the finding names the bucket and the target."""
    fast = np.concatenate((np.full(900, 30.0), np.full(100, 55.0)))
    slow = np.concatenate((np.full(900, 30.0), np.full(100, 95.0)))
    assert np.quantile(fast, 0.95) < 80 < np.quantile(slow, 0.95)
    assert binned(fast) == binned(slow) == [0, 0, 900, 100, 0]
    budget = parse_budget("version: 1\nslo: {ttft: 80}\n", "b.yml")
    c = compare_aggregate(None, scrape("head.prom", binned(fast)), budget)
    (row,) = c.slo
    assert row.status is None and row.headroom_pct is None
    assert row.target_in_bucket == (50.0, 100.0)
    findings, verdict = judge(c, budget, ["breach", "unmeasured"])
    assert [(f.kind, f.subject) for f in findings] == [("unmeasured", "ttft")]
    assert "(50, 100] ms" in findings[0].message and "80.0 ms target" in findings[0].message
    assert verdict == "fail"  # fail_on names unmeasured here


@pytest.mark.parametrize(
    ("target", "status"),
    [(100, "ok"), (50, "breach"), (40, "breach"), (200, "ok")],
    ids=["on-upper-bound", "on-lower-bound", "below-bucket", "above-bucket"],
)
def test_a_target_on_or_outside_the_bucket_is_decided(target: int, status: str) -> None:
    """p95 in (50, 100] ms: at most 100 is within a 100 ms target, above 50 is over 50."""
    budget = parse_budget(f"version: 1\nslo: {{ttft: {target}}}\n", "b.yml")
    (row,) = compare_aggregate(None, scrape("head.prom", [0, 0, 900, 100, 0]), budget).slo
    assert row.target_in_bucket is None
    assert row.status == status
