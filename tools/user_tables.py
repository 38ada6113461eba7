"""Write the corpus of hand-made user tables under tests/data/user_tables/ (deterministic).

The tables people write themselves: a harness's CSV, JSON Lines from a Python script, a
spreadsheet export with spaces and units in brackets; naming variants, units, timestamps,
failure markers, impossible rows, classes. `MANIFEST.json` says for each file what a reader
must make of it: the columns that hold the truth (for tests/formats/test_user_tables.py to
compute it with pandas), or the finding or exit 2 that must say why no right answer is given.

    python tools/user_tables.py          # rewrite the files (commit them)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "user_tables"
N = 300
BUDGET = "version: 1\npercentile: 95\nslo:\n  ttft: 1000\n  total: 6500\n"


class Corpus:
    def __init__(self) -> None:
        self.manifest: dict[str, dict[str, Any]] = {}
        self.files: dict[str, str] = {}

    def add(self, name: str, text: str, **entry: Any) -> None:
        assert name not in self.files, name
        self.files[name] = text
        entry.setdefault("budget", None)
        self.manifest[name] = entry

    def budget(self, name: str, text: str) -> str:
        self.files[name] = text
        return name


def _requests(seed: int, n: int = N) -> dict[str, np.ndarray]:
    """Plausible requests, ms: TTFT around 400, 20-30 ms a token, 50-600 output tokens."""
    rng = np.random.default_rng(seed)
    out_tokens = rng.integers(50, 600, n)
    in_tokens = rng.integers(100, 3000, n)
    queue = np.round(rng.lognormal(2.5, 0.8, n), 3)
    prefill = np.round(in_tokens * 0.12 + rng.lognormal(4, 0.3, n), 3)
    ttft = np.round(queue + prefill + rng.uniform(1, 5, n), 3)
    decode = np.round((out_tokens - 1) * rng.uniform(18, 30, n), 3)
    total = np.round(ttft + decode, 3)
    start = np.round(1_764_000_000 + np.cumsum(rng.exponential(0.2, n)), 6)
    return {
        "id": np.array([f"req-{seed}-{i:04d}" for i in range(n)]),
        "queue": queue,
        "prefill": prefill,
        "ttft": ttft,
        "decode": decode,
        "total": total,
        "in": in_tokens,
        "out": out_tokens,
        "start": start,
        "rng": np.array([rng.random() for _ in range(n)]),
    }


def _csv(header: list[str], rows: list[list[Any]], sep: str = ",") -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float | np.floating):
            return repr(round(float(v), 6))
        return str(v)

    lines = [sep.join(header)] + [sep.join(cell(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def _comma(x: float) -> str:
    """A number as a spreadsheet in a comma-decimal locale writes it: 1234,567."""
    return repr(round(float(x), 6)).replace(".", ",")


def _jsonl(rows: list[dict[str, Any]]) -> str:
    def plain(v: Any) -> Any:
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return round(float(v), 6)
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    return "".join(json.dumps({k: plain(v) for k, v in r.items()}) + "\n" for r in rows)


def _col(unit: str, column: str) -> dict[str, str]:
    return {"column": column, "unit": unit}


def names(c: Corpus) -> None:
    """The names people give TTFT and the end to end, with their units."""
    variants = [
        ("plain_ms.csv", "ttft_ms", "total_ms", "ms", "ms"),
        ("e2e_ms.csv", "ttft_ms", "e2e_ms", "ms", "ms"),
        ("latency_ms.csv", "first_token_latency_ms", "latency_ms", "ms", "ms"),
        ("e2el_unsuffixed.csv", "ttft", "e2el", "ms", "ms"),
        ("request_latency.csv", "time_to_first_token_ms", "request_latency_ms", "ms", "ms"),
        ("end_to_end_latency.csv", "ttft_ms", "end_to_end_latency_ms", "ms", "ms"),
        ("seconds_suffix.csv", "ttft_s", "total_s", "s", "s"),
        ("sec_suffix.csv", "ttft_sec", "e2e_latency_seconds", "s", "s"),
        ("micro_suffix.csv", "ttft_us", "total_us", "us", "us"),
        ("mixed_units.csv", "ttft_ms", "total_latency_s", "ms", "s"),
        ("response_time.csv", "TTFT_MS", "Response_Time_MS", "ms", "ms"),
    ]
    scale = {"ms": 1.0, "s": 1e-3, "us": 1e3}
    for k, (name, ttft, total, tu, su) in enumerate(variants):
        r = _requests(10 + k)
        rows = [
            [r["id"][i], r["ttft"][i] * scale[tu], r["total"][i] * scale[su], r["out"][i]]
            for i in range(N)
        ]
        c.add(
            name,
            _csv(["request_id", ttft, total, "output_tokens"], rows),
            expect="right",
            ttft=_col(tu, ttft),
            total=_col(su, total),
        )


def spreadsheet(c: Corpus) -> None:
    """Exports with spaces, case and units in brackets: TSV, semicolons, a JSON array."""
    r = _requests(30)
    header = ["Request ID", "TTFT (ms)", "Total Latency [s]", "Prompt Tokens", "Output Tokens"]
    rows = [
        [r["id"][i], r["ttft"][i], r["total"][i] / 1000, r["in"][i], r["out"][i]] for i in range(N)
    ]
    c.add(
        "spreadsheet_brackets.tsv",
        _csv(header, rows, "\t"),
        expect="right",
        sep="\t",
        ttft=_col("ms", "TTFT (ms)"),
        total=_col("s", "Total Latency [s]"),
    )
    r = _requests(31)
    header = ["id", "Time To First Token (s)", "E2E Latency (s)"]
    rows = [[r["id"][i], r["ttft"][i] / 1000, r["total"][i] / 1000] for i in range(N)]
    c.add(
        "spaces_case_seconds.csv",
        _csv(header, rows),
        expect="right",
        ttft=_col("s", "Time To First Token (s)"),
        total=_col("s", "E2E Latency (s)"),
    )
    r = _requests(32)
    rows = [[r["id"][i], r["ttft"][i], r["total"][i]] for i in range(N)]
    c.add(
        "semicolon_export.csv",
        _csv(["request_id", "ttft_ms", "total_ms"], rows, ";"),
        expect="right",
        sep=";",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
    )
    r = _requests(34)
    header = '"Request ID";"TTFT (ms)";"E2E Latency (s)";"Status"'
    lines = [
        f"{r['id'][i]};{_comma(r['ttft'][i])};{_comma(r['total'][i] / 1000)};"
        + ("OK" if r["rng"][i] > 0.05 else "Error")
        for i in range(N)
    ]
    c.add(
        "excel_eu_decimal_comma.csv",
        "\ufeff" + "\r\n".join([header, *lines]) + "\r\n",
        expect="right",
        sep=";",
        decimal=",",
        ttft=_col("ms", "TTFT (ms)"),
        total=_col("s", "E2E Latency (s)"),
        failed={"rule": "status", "column": "Status"},
    )
    r = _requests(33)
    objs = [
        {
            "prompt_tokens": r["in"][i],
            "completion_tokens": r["out"][i],
            "ttft_ms": r["ttft"][i],
            "latency_ms": r["total"][i],
            "status_code": 200,
        }
        for i in range(N)
    ]
    c.add(
        "openai_harness.jsonl",
        _jsonl(objs),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "latency_ms"),
        failed={"rule": "status", "column": "status_code"},
    )


def slices(c: Corpus) -> None:
    """Slice columns under the names harnesses give them, every slice budgeted."""
    for k, queue_name in enumerate(("queue_time_ms", "queued_ms", "queue_ms")):
        r = _requests(40 + k)
        rows = [[r["id"][i], r["queue"][i], r["prefill"][i], r["decode"][i]] for i in range(N)]
        budget = c.budget(
            "slices.budget.yml",
            BUDGET + "slices:\n  queue: 200\n  prefill: 700\n  decode: 5000\n"
            "first_token_after: prefill\n",
        )
        c.add(
            f"slices_{queue_name.removesuffix('_ms')}.csv",
            _csv(["request_id", queue_name, "prefill_ms", "decode_ms"], rows),
            expect="right",
            budget=budget,
            ttft={"sum": [queue_name, "prefill_ms"], "unit": "ms"},
            total={"sum": [queue_name, "prefill_ms", "decode_ms"], "unit": "ms"},
        )


def units(c: Corpus) -> None:
    """Units written wrong: seconds in _ms columns, ms in _s columns, unsuffixed seconds."""
    r = _requests(50)
    rows = [[r["id"][i], r["ttft"][i] / 1000, r["total"][i] / 1000, r["out"][i]] for i in range(N)]
    c.add(
        "seconds_in_ms_columns.csv",
        _csv(["request_id", "ttft_ms", "total_ms", "output_tokens"], rows),
        expect="finding",
        kind="units",
        subject="ttft_ms",
    )
    r = _requests(51)
    rows = [[r["id"][i], r["ttft"][i], r["total"][i], r["out"][i]] for i in range(N)]
    c.add(
        "ms_in_s_columns.csv",
        _csv(["request_id", "ttft_s", "total_s", "output_tokens"], rows),
        expect="finding",
        kind="units",
        subject="total_s",
    )
    r = _requests(52)
    rows = [[r["ttft"][i] / 1000, r["total"][i] / 1000, r["out"][i]] for i in range(N)]
    c.add(
        "unsuffixed_seconds.csv",
        _csv(["ttft", "total", "output_tokens"], rows),
        expect="finding",
        kind="units",
        subject="ttft",
    )
    r = _requests(53)
    rows = [[r["total"][i] / 1000, r["out"][i]] for i in range(N)]
    c.add(
        "unsuffixed_total_seconds_tokens.csv",
        _csv(["latency", "completion_tokens"], rows),
        expect="finding",
        kind="units",
        subject="latency",
    )
    r = _requests(54)
    rng = np.random.default_rng(54)
    objs = []
    for i in range(N):
        gaps = list(np.round(rng.uniform(0.02, 0.045, int(r["out"][i]) - 1), 5))
        objs.append({"ttft_ms": r["ttft"][i], "total_ms": r["total"][i], "itl": gaps})
    c.add(
        "itl_seconds_vllm.jsonl",
        _jsonl(objs),
        expect="finding",
        kind="units",
        subject="itl",
    )
    r = _requests(55)
    rows = [[r["id"][i], int(r["start"][i] * 1000), r["ttft"][i], r["total"][i]] for i in range(N)]
    c.add(
        "epoch_ms_start_time.csv",
        _csv(["request_id", "start_time", "ttft_ms", "total_ms"], rows),
        expect="finding",
        kind="units",
        subject="start_time",
    )
    r = _requests(56)
    rows = [[r["id"][i], r["ttft"][i], r["total"][i]] for i in range(N)]
    c.add(
        "budget_unit_contradicts_suffix.csv",
        _csv(["request_id", "ttft_ms", "total_ms"], rows),
        expect="exit2",
        budget=c.budget(
            "unit_s_on_ms.budget.yml",
            BUDGET + "slices:\n  first: {budget: 1000, column: ttft_ms, unit: s}\n",
        ),
        message="contradicts the suffix",
    )
    r = _requests(57)
    rows = [[r["id"][i], r["ttft"][i], r["decode"][i] / 1000, r["out"][i]] for i in range(N)]
    c.add(
        "mapped_column_without_unit.csv",
        _csv(["request_id", "ttft_ms", "generation", "output_tokens"], rows),
        expect="finding",
        kind="units",
        subject="generation",
        budget=c.budget(
            "generation.budget.yml",
            BUDGET + "slices:\n  generation: {budget: 5000, column: generation}\n",
        ),
    )
    r = _requests(58)
    rows = [[r["id"][i], r["ttft"][i] / 1000, r["total"][i] / 1000] for i in range(N)]
    c.add(
        "unit_applies_to_every_use.csv",
        _csv(["request_id", "ttft", "e2e"], rows),
        expect="right",
        budget=c.budget(
            "every_use.budget.yml",
            BUDGET + "slices:\n  first: {budget: 1000, column: ttft, unit: s}\n"
            "  whole: {budget: 6500, column: e2e, unit: s}\n",
        ),
        ttft=_col("s", "ttft"),
        total=_col("s", "e2e"),
    )


def failures(c: Corpus) -> None:
    """Failure markers as tables write them."""
    r = _requests(60)
    fail = r["rng"] < 0.08
    rows = [
        [r["id"][i], r["ttft"][i], r["total"][i], "timeout" if fail[i] else "OK"] for i in range(N)
    ]
    c.add(
        "error_ok.csv",
        _csv(["request_id", "ttft_ms", "total_ms", "error"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        failed={"rule": "error", "column": "error"},
    )
    r = _requests(61)
    fail = r["rng"] < 0.1
    rows = [
        [
            r["id"][i],
            5.0 if fail[i] else r["ttft"][i],
            6.0 if fail[i] else r["total"][i],
            503 if fail[i] else 200,
        ]
        for i in range(N)
    ]
    c.add(
        "status_503_fast.csv",
        _csv(["request_id", "ttft_ms", "total_ms", "status"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        failed={"rule": "status", "column": "status"},
    )
    r = _requests(62)
    fail = r["rng"] < 0.05
    objs = [
        {
            "request_id": r["id"][i],
            "ttft_ms": r["ttft"][i],
            "e2e_ms": r["total"][i],
            "success": not fail[i],
        }
        for i in range(N)
    ]
    c.add(
        "success_boolean.jsonl",
        _jsonl(objs),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "e2e_ms"),
        failed={"rule": "success", "column": "success"},
    )
    r = _requests(63)
    fail = r["rng"] < 0.06
    rows = [[r["ttft"][i], r["total"][i], 0 if fail[i] else 1] for i in range(N)]
    c.add(
        "ok_zero_one.csv",
        _csv(["ttft_ms", "total_ms", "ok"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        failed={"rule": "success", "column": "ok"},
    )
    r = _requests(64)
    fail = r["rng"] < 0.07
    rows = [
        [r["id"][i], 0 if fail[i] else r["ttft"][i], 0 if fail[i] else r["total"][i]]
        for i in range(N)
    ]
    c.add(
        "all_zero_failed_rows.csv",
        _csv(["request_id", "ttft_ms", "total_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        failed={"rule": "zero"},
    )
    r = _requests(65)
    fail = r["rng"] < 0.07
    rows = [
        [r["id"][i], "" if fail[i] else r["ttft"][i], "" if fail[i] else r["total"][i]]
        for i in range(N)
    ]
    c.add(
        "empty_latency_failed_rows.csv",
        _csv(["request_id", "ttft_ms", "total_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        failed={"rule": "zero"},
    )
    r = _requests(66)
    codes = np.where(r["rng"] < 0.04, "500", np.where(r["rng"] > 0.97, "429", "200"))
    rows = [[r["id"][i], r["ttft"][i], r["total"][i], codes[i]] for i in range(N)]
    c.add(
        "status_code_text.csv",
        _csv(["request_id", "ttft_ms", "total_ms", "status_code"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        failed={"rule": "status", "column": "status_code"},
    )
    r = _requests(68)
    rows = [[r["id"][i], r["ttft"][i], r["total"][i], round(r["rng"][i] * 3, 3)] for i in range(N)]
    c.add(
        "error_ms_is_no_failure_marker.csv",
        _csv(["request_id", "ttft_ms", "total_ms", "error_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        note="error_ms",
    )
    r = _requests(67)
    objs = []
    for i in range(N):
        obj: dict[str, Any] = {"ttft_ms": r["ttft"][i], "total_ms": r["total"][i]}
        x = r["rng"][i]
        obj["error"] = "Internal Server Error" if x < 0.05 else (None if x < 0.5 else "none")
        objs.append(obj)
    c.add(
        "error_null_none.jsonl",
        _jsonl(objs),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        failed={"rule": "error", "column": "error"},
    )


def impossible(c: Corpus) -> None:
    """Rows no request can have: refused, left out with a word, or a failing finding."""
    r = _requests(70)
    swap = r["rng"] < 0.2
    rows = [
        [
            r["id"][i],
            r["total"][i] if swap[i] else r["ttft"][i],
            r["ttft"][i] if swap[i] else r["total"][i],
        ]
        for i in range(N)
    ]
    c.add(
        "total_below_ttft.csv",
        _csv(["request_id", "ttft_ms", "total_ms"], rows),
        expect="finding",
        kind="impossible",
        subject="total",
    )
    r = _requests(71)
    rows = [[r["id"][i], r["ttft"][i], r["total"][i]] for i in range(N)]
    for label, q in (("mean", None), ("p50", 50), ("p95", 95), ("p99", 99), ("max", 100)):
        t = float(np.mean(r["ttft"])) if q is None else float(np.percentile(r["ttft"], q))
        e = float(np.mean(r["total"])) if q is None else float(np.percentile(r["total"], q))
        rows.append([label, round(t, 3), round(e, 3)])
    c.add(
        "summary_rows_labelled.csv",
        _csv(["request_id", "ttft_ms", "total_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        drop_last=5,
        finding="impossible",
    )
    r = _requests(72)
    rows = [[r["ttft"][i], r["total"][i]] for i in range(N)]
    for q in (None, 95, 100):
        t = float(np.mean(r["ttft"])) if q is None else float(np.percentile(r["ttft"], q))
        e = float(np.mean(r["total"])) if q is None else float(np.percentile(r["total"], q))
        rows.append([round(t, 3), round(e, 3)])
    c.add(
        "summary_rows_unlabelled.csv",
        _csv(["ttft_ms", "total_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        drop_last=3,
        finding="impossible",
    )
    rows = [["mean", 412.5, 5230.1], ["p50", 380.2, 4990.0], ["p95", 820.7, 9120.4]]
    c.add(
        "only_summary_rows.csv",
        _csv(["metric", "ttft_ms", "total_ms"], rows),
        expect="exit2",
        message="a summary, not requests",
    )
    r = _requests(73)
    rows = [
        [r["id"][i], -r["ttft"][i] if i == 17 else r["ttft"][i], r["total"][i]] for i in range(N)
    ]
    c.add(
        "negative_ttft.csv",
        _csv(["request_id", "ttft_ms", "total_ms"], rows),
        expect="exit2",
        message="row 18, column 'ttft_ms': negative latency",
    )
    r = _requests(74)
    rng = np.random.default_rng(74)
    objs = []
    for i in range(N):
        gaps = list(np.round(rng.uniform(18, 30, int(r["out"][i]) - 1), 3))
        objs.append(
            {"ttft_ms": r["ttft"][i], "total_ms": r["total"][i], "itl_ms": [r["ttft"][i], *gaps]}
        )
    c.add(
        "itl_starts_at_request_start.jsonl",
        _jsonl(objs),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        itl={"column": "itl_ms", "drop_first": True},
        finding="impossible",
    )
    r = _requests(75)
    rows = [[r["id"][i], r["ttft"][i], r["total"][i], r["total"][i] + 1] for i in range(N)]
    c.add(
        "two_totals.csv",
        _csv(["request_id", "ttft_ms", "e2e_ms", "latency_ms"], rows),
        expect="exit2",
        message="both read as the total",
    )


def classes_and_times(c: Corpus) -> None:
    """A class column splitting the table; start/end times, epoch and ISO."""
    r = _requests(80)
    cls = np.where(r["rng"] < 0.6, "chat", "api")
    rows = [[r["id"][i], cls[i], r["ttft"][i], r["total"][i]] for i in range(N)]
    c.add(
        "traffic_class.csv",
        _csv(["request_id", "traffic_class", "ttft_ms", "total_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        classes="traffic_class",
    )
    r = _requests(81)
    cls = np.where(r["rng"] < 0.5, "short", "long")
    objs = [
        {"scenario": cls[i], "ttft_ms": r["ttft"][i], "latency_ms": r["total"][i]} for i in range(N)
    ]
    c.add(
        "scenario_column.jsonl",
        _jsonl(objs),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "latency_ms"),
        classes="scenario",
    )
    r = _requests(82)
    rows = [
        [r["id"][i], r["start"][i], round(r["start"][i] + r["total"][i] / 1000, 6), r["ttft"][i]]
        for i in range(N)
    ]
    c.add(
        "start_end_epoch_seconds.csv",
        _csv(["request_id", "start_time", "end_time", "ttft_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total={"span": ["start_time", "end_time"], "unit": "s"},
    )
    r = _requests(83)
    offsets = np.round((r["start"] - r["start"][0]) * 1000).astype("timedelta64[ms]")
    stamps = np.datetime64("2026-11-30T12:00:00", "ms") + offsets
    rows = [
        [r["id"][i], str(stamps[i].astype("datetime64[ms]")), r["ttft"][i], r["total"][i]]
        for i in range(N)
    ]
    c.add(
        "iso_start_time.csv",
        _csv(["request_id", "start_time", "ttft_ms", "total_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
    )
    r = _requests(85)
    t0 = r["start"] - r["start"][0]
    rows = [
        [round(t0[i] * 1000, 3), round(t0[i] * 1000 + r["total"][i], 3), r["ttft"][i]]
        for i in range(N)
    ]
    c.add(
        "start_end_relative_ms.csv",
        _csv(["start_time", "end_time", "ttft_ms"], rows),
        expect="finding",
        kind="units",
        subject="end_time - start_time",
    )
    r = _requests(86)
    objs = [
        {
            "Request Id": r["id"][i],
            "TTFT": r["ttft"][i],
            "E2E Latency": r["total"][i],
            "Prompt Tokens": r["in"][i],
        }
        for i in range(N)
    ]
    c.add(
        "json_array.json",
        json.dumps([json.loads(line) for line in _jsonl(objs).splitlines()], indent=1) + "\n",
        expect="right",
        ttft=_col("ms", "TTFT"),
        total=_col("ms", "E2E Latency"),
    )
    r = _requests(84)
    rows = [[r["id"][i], r["ttft"][i], r["total"][i], r["decode"][i] * 0.3] for i in range(N)]
    c.add(
        "unread_latency_column.csv",
        _csv(["request_id", "ttft_ms", "total_ms", "gpu_busy_time_ms"], rows),
        expect="right",
        ttft=_col("ms", "ttft_ms"),
        total=_col("ms", "total_ms"),
        note="gpu_busy_time_ms",
    )


def main() -> None:
    c = Corpus()
    for part in (names, spreadsheet, slices, units, failures, impossible, classes_and_times):
        part(c)
    OUT.mkdir(parents=True, exist_ok=True)
    c.files["budget.yml"] = BUDGET
    for name, text in c.files.items():
        (OUT / name).write_bytes(text.encode("utf-8"))
    (OUT / "MANIFEST.json").write_text(json.dumps(c.manifest, indent=1, sort_keys=True) + "\n")
    print(f"{len(c.manifest)} tables in {OUT}")


if __name__ == "__main__":
    main()
