"""Issue 17, case by case: hostile and absurd input ends in a plausible report (exit 0/1) or one
inert line naming the file (exit 2); a crash inside budgetdiff is exit 3, never a traceback."""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from budgetdiff.errors import InputError
from budgetdiff.github.artifact import extract
from budgetdiff.render.text import one_line
from tests.support.helpers import BUDGET, run, slices, write_table
from tests.support.paths import DEMO, SAMPLES

DATA = SAMPLES / "fuzz"  # small cut-downs, see tests/data/SOURCES.md
SLO_ONLY = "version: 1\npercentile: 95\nslo: {ttft: 1200, total: 6000}\n"


def _budget(tmp_path: Path, text: str = SLO_ONLY) -> Path:
    path = tmp_path / "budget.yml"
    path.write_text(text)
    return path


def _check(
    capsys: pytest.CaptureFixture[str], head: Path, budget: Path, *extra: str
) -> tuple[int, str, str]:
    return run(["check", "--head", str(head), "--budget", str(budget), *extra], capsys)


def _refused(code: int, out: str, err: str, name: str, *words: str) -> None:
    """Exit 2: one line on stderr naming the file, nothing on stdout, no `::` line."""
    assert code == 2, (out, err)
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("budgetdiff: error: ") and name in err, err
    for word in words:
        assert word in err, (word, err)


def _no_command_lines(*texts: str) -> None:
    for text in texts:
        assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]


def _mutant(tmp_path: Path, source: Path, change: Callable[[Any], Any], name: str = "") -> Path:
    """A copy of a JSON fixture with `change` applied to its parsed document."""
    doc = json.loads(source.read_text())
    doc = change(doc) or doc
    path = tmp_path / (name or source.name)
    path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------ security


def test_workflow_commands_in_a_csv_header_print_as_one_inert_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = tmp_path / "head.csv"
    head.write_text('total_ms,"x\n::error title=pwn::owned\r\n::add-mask::abc"\n1,2\n')
    budget = _budget(tmp_path, "version: 1\nslo: {total: 100}\nslices: {decode: 50}\n")
    code, out, err = _check(capsys, head, budget)
    _refused(code, out, err, "head.csv", "\\n::error title=pwn::owned\\r\\n::add-mask::abc")
    _no_command_lines(out, err)


def test_workflow_commands_in_a_budget_slice_name_print_as_one_inert_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = write_table(tmp_path / "head.csv", slices(1, 50))
    budget = _budget(tmp_path, 'version: 1\nslices: {"a\\n::warning::x\\u2028y": 100}\n')
    code, out, err = _check(capsys, head, budget)
    _refused(code, out, err, "budget.yml", "a\\n::warning::x\\u2028y")
    _no_command_lines(out, err)


def test_workflow_commands_in_a_span_name_print_as_one_inert_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (DATA / "otel-console/fuzz_console_spans.txt").read_text()
    span, end = json.JSONDecoder().raw_decode(text)
    span["name"] = "llm\n::error title=pwn::owned\n::add-mask::abc"
    span["attributes"]["gen_ai.response.time_to_first_token"] = "not a number"
    head = tmp_path / "console_spans.txt"
    head.write_text(json.dumps(span, indent=4) + text[end:])
    code, out, err = _check(capsys, head, _budget(tmp_path))
    _refused(code, out, err, head.name, "span 'llm\\n::error title=pwn::owned\\n::add-mask")
    _no_command_lines(out, err)


def test_one_line_escapes_every_control_character() -> None:
    assert one_line("a\nb\rc\td\x1b[31me\x85f\u2028g\u202eh\udcff") == (
        "a\\nb\\rc\\td\\x1b[31me\\x85f\\u2028g\\u202eh\\udcff"
    )
    assert one_line("x" * 5000).endswith("…") and len(one_line("x" * 5000)) == 1000


# ------------------------------------------------------------------ a bug is exit 3


def test_a_crash_inside_budgetdiff_is_exit_3_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from budgetdiff.measure import rows

    def broken(*args: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(rows, "compare", broken)  # stands for any bug
    code, out, err = _check(capsys, DEMO / "head.csv", DEMO / "budget.yml")
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "a bug in budgetdiff, not in your input (ZeroDivisionError at " in err
    assert "https://github.com/budgetdiff/budgetdiff/issues" in err


# ------------------------------------------------------------------ absurd numbers


def _set(key: str, value: float, inner: int | None = None) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        if inner is None:
            doc[key][0] = value
        else:
            doc[key][0][inner] = value

    return change


@pytest.mark.parametrize(
    ("source", "change", "field"),
    [
        ("vllm/fuzz_vllm_bench_serve.json", _set("itls", 1e200, 0), "inter-token gap"),
        ("vllm/fuzz_vllm_bench_serve.json", _set("latencies", 1e200), "decode"),
        ("sglang/fuzz_sglang_bench_serving.jsonl", _set("ttfts", 1e200), "first_token"),
        ("sglang/fuzz_sglang_bench_serving.jsonl", _set("itls", 1e200, 3), "request #1"),
    ],
    ids=["vllm-itl", "vllm-e2e", "sglang-ttft", "sglang-itl"],
)
def test_latency_of_1e200_is_refused_not_an_overflow(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    source: str,
    change: Callable[[Any], None],
    field: str,
) -> None:
    head = _mutant(tmp_path, DATA / source, change)
    code, out, err = _check(capsys, head, _budget(tmp_path))
    _refused(code, out, err, head.name, field, "more than a day")


def test_llmperf_end_to_end_of_1e200_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(doc: Any) -> None:
        doc[0]["end_to_end_latency_s"] = 1e200

    head = _mutant(tmp_path, DATA / "llmperf/fuzz_anyscale_70b_individual_responses.json", change)
    code, out, err = _check(capsys, head, _budget(tmp_path))
    _refused(code, out, err, head.name, "more than a day")


def test_1e308_in_every_aiperf_record_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (DATA / "aiperf/fuzz_profile_export.jsonl").read_text()
    head = tmp_path / "profile_export.jsonl"
    head.write_text(re.sub(r'("value":)\s*[0-9.]+', r"\1 1e308", text))
    code, out, err = _check(capsys, head, _budget(tmp_path))
    _refused(code, out, err, head.name, "1e+308", "more than a day")


@pytest.mark.parametrize("rows", ["one", "every"])
def test_1e308_in_native_rows_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: str
) -> None:
    columns = slices(2, 300)
    for name in ("queue_ms", "prefill_ms", "decode_ms"):
        if rows == "every":
            columns[name] = np.full(300, 1e308)
    columns["decode_ms"][7] = 1e308
    head = write_table(tmp_path / "head.csv", columns)
    code, out, err = _check(capsys, head, _budget(tmp_path, BUDGET))
    _refused(code, out, err, "head.csv", "1e+308", "more than a day")
    assert "request #1" in err if rows == "every" else "request #8" in err


def test_parquet_integer_of_2_to_63_ms_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = tmp_path / "head.parquet"
    total = pa.array([100, 200, 2**63 - 1, 150], type=pa.int64())
    pq.write_table(pa.table({"total_ms": total}), head)
    code, out, err = _check(capsys, head, _budget(tmp_path, "version: 1\nslo: {total: 500}\n"))
    _refused(code, out, err, "head.parquet", "total of request #3", "more than a day")


@pytest.mark.parametrize("value", [-5, float("inf"), 1e308])
def test_token_counts_that_are_no_counts_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: float
) -> None:
    columns: dict[str, Any] = dict(slices(3, 100))
    columns["output_tokens"] = np.full(100, 120.0)
    columns["output_tokens"][4] = value
    head = write_table(tmp_path / "head.csv", columns)
    code, out, err = _check(capsys, head, _budget(tmp_path, BUDGET))
    _refused(code, out, err, "head.csv", "output_tokens of request #5", "not a token count")


def test_a_missing_token_count_is_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    columns: dict[str, Any] = dict(slices(3, 100))
    columns["output_tokens"] = np.full(100, 120.0)
    columns["output_tokens"][4] = np.nan
    head = write_table(tmp_path / "head.csv", columns)
    code, out, err = _check(capsys, head, _budget(tmp_path, BUDGET), "--output", "json")
    assert code in (0, 1), err
    notes = json.loads(out)["notes"]
    assert any("1 succeeded request(s) have no output token count" in n for n in notes), notes


@pytest.mark.parametrize("count", ["1e30", "Infinity", "-3"])
def test_genai_perf_request_count_that_is_no_count_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: str
) -> None:
    text = (DATA / "genai-perf/fuzz_profile_export_genai_perf.json").read_text()
    changed = re.sub(r'("request_count":\s*\{[^}]*"avg":)\s*[0-9.]+', rf"\1 {count}", text)
    assert changed != text
    head = tmp_path / "profile_export_genai_perf.json"
    head.write_text(changed)
    code, out, err = _check(capsys, head, _budget(tmp_path))
    _refused(code, out, err, head.name, "request_count" if count != "1e30" else "request count")


def test_inference_perf_request_count_of_1e30_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def change(doc: Any) -> None:
        doc["successes"]["count"] = 1e30

    head = _mutant(tmp_path, DATA / "inference-perf/fuzz_summary_lifecycle_metrics.json", change)
    code, out, err = _check(capsys, head, _budget(tmp_path))
    _refused(code, out, err, head.name, "count")


@pytest.mark.parametrize("count", [-5, 1e30])
def test_inference_perf_failure_count_that_is_no_count_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: float
) -> None:
    """-5 crashed the judge (a math domain error), 1e30 was reported as it was."""

    def change(doc: Any) -> None:
        doc["failures"]["count"] = count

    source = DATA / "inference-perf/fuzz_summary_lifecycle_metrics.json"
    head = _mutant(tmp_path, source, change, "head.json")
    argv = ["compare", "--base", str(source), "--head", str(head), "--budget"]
    code, out, err = run([*argv, str(_budget(tmp_path))], capsys)
    _refused(code, out, err, "head.json", "the failures count", "not a count")


# ------------------------------------------------------------------ the budget


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("percentile: 1e-300\n", ["percentile", "at least 1"]),
        ("percentile: 99.99999999999999\n", ["percentile", "at most 99.99"]),
        ("percentile: " + "9" * 5000 + "\n", [":1:", "5,000 digits"]),
        ("slo: {ttft: true}\n", [":1:", "`true` reads as a boolean"]),
        ("percentile: true\n", [":1:", "`true` reads as a boolean"]),
        (
            "slo: {total: 6000}\nfail_on: [breach]\nfail_on: []\n",
            [":3:", "'fail_on' is given twice"],
        ),
        ("slo: " + "[" * 10_000 + "]" * 10_000 + "\n", [":1:"]),
        ("slo:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 40)), ["nested more than"]),
        ("slo: {total: 1e300}\n", ["slo.total", "at most 86,400,000 ms"]),
        ("slo: {total: 6000}\nregression: {min_ms: .inf}\n", ["regression.min_ms"]),
    ],
    ids=[
        "percentile-1e-300",
        "percentile-almost-100",
        "5000-digit-int",
        "ttft-true",
        "percentile-true",
        "duplicated-key",
        "nested-10000-deep",
        "nested-block-40-deep",
        "budget-1e300",
        "min-ms-inf",
    ],
)
def test_hostile_budget_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, words: list[str]
) -> None:
    code, out, err = _check(capsys, DEMO / "head.csv", _budget(tmp_path, text))
    _refused(code, out, err, "budget.yml", *words)


def test_ten_thousand_budget_problems_make_twenty_one_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every problem of a budget is a line of its own, but a budget of 10,000 unknown keys is
    not a budget with typos: the first 20 in the file's order, then how many more."""
    text = "".join(f"key{i}: 1\n" for i in range(10_000))
    budget = _budget(tmp_path, text)
    code, out, err = _check(capsys, DEMO / "head.csv", budget)
    assert code == 2 and out == ""
    keys = "version, percentile, slo, slices, first_token_after, headroom, regression, fail_on"
    unknown = f"unknown key; the keys here are {keys}, agent, classes, prometheus"
    said = err.splitlines()
    assert said == [
        *(f"budgetdiff: error: {budget}:{i + 1}: key{i}: {unknown}" for i in range(20)),
        f"budgetdiff: error: {budget}: and 9,980 more problems",
    ]


def test_budget_naming_unattributed_on_data_with_no_remainder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rebudget --write` may add `unattributed`; data without a measured total has none."""
    head = write_table(tmp_path / "head.csv", slices(4, 200))
    budget = _budget(
        tmp_path,
        "version: 1\nslo: {total: 6000}\n"
        "slices: {queue: 250, prefill: 800, decode: 4200, unattributed: 50}\n",
    )
    code, out, err = _check(capsys, head, budget, "--output", "json")
    assert code in (0, 1), err
    rows = {r["name"]: r for r in json.loads(out)["slices"]}
    assert rows["unattributed"]["head_ms"] == 0
    code, out, err = run(["rebudget", "--head", str(head), "--budget", str(budget)], capsys)
    assert code == 0, err
    assert "unattributed" in out


# ------------------------------------------------------------------ duplicates


def test_repeated_head_request_ids_are_noted_and_not_paired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_cols = slices(5, 400)
    head_cols = {k: v.copy() for k, v in base_cols.items()}
    head_cols["request_id"][:60] = head_cols["request_id"][60:120]  # 60 ids twice
    base = write_table(tmp_path / "base.csv", base_cols)
    head = write_table(tmp_path / "head.csv", head_cols)
    argv = ["compare", "--base", str(base), "--head", str(head), "--budget"]
    code, out, err = run([*argv, str(_budget(tmp_path, BUDGET)), "--output", "json"], capsys)
    assert code in (0, 1), err
    report = json.loads(out)
    assert not report["paired"]
    assert any("60 request(s) repeat the id" in n for n in report["notes"]), report["notes"]


def test_otlp_span_given_twice_is_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def change(doc: Any) -> None:
        spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        spans.append(dict(spans[0]))

    head = _mutant(tmp_path, DATA / "otlp/fuzz_server_spans.otlp.json", change)
    code, out, err = _check(capsys, head, _budget(tmp_path), "--output", "json")
    assert code in (0, 1), err
    assert any("1 request(s) repeat the id" in n for n in json.loads(out)["notes"])


def test_console_span_given_twice_is_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (DATA / "otel-console/fuzz_console_spans.txt").read_text()
    head = tmp_path / "console_spans.txt"
    head.write_text(text + text[: text.index("\n}\n") + 3])
    code, out, err = _check(capsys, head, _budget(tmp_path), "--output", "json")
    assert code in (0, 1), err
    assert any("1 request(s) repeat the id" in n for n in json.loads(out)["notes"])


# ------------------------------------------------------------------ auto-detection


DETECTED = {
    "llmperf": "llmperf/fuzz_anyscale_70b_individual_responses.json",
    "inference-perf": "inference-perf/fuzz_per_request_lifecycle_metrics.json",
    "otlp": "otlp/fuzz_server_spans.otlp.json",
    "otel-console": "otel-console/fuzz_console_spans.txt",
    "prometheus": "prometheus/fuzz_metrics_after.prom",
}


def _reversed(value: Any) -> Any:
    """Every object's keys in reverse order (another encoder's choice)."""
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


@pytest.mark.parametrize("change", ["bom", "cr-only", "reversed"])
@pytest.mark.parametrize("fmt", list(DETECTED))
def test_bom_cr_only_and_reversed_order_do_not_defeat_detection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, change: str
) -> None:
    raw = (DATA / DETECTED[fmt]).read_bytes()
    if change == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif change == "cr-only":
        raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
    elif fmt == "prometheus":
        raw = b"\n".join(reversed(raw.splitlines()))
    elif fmt == "otel-console":  # one span object after another, each pretty-printed
        text, spans, at = raw.decode(), [], 0
        decoder = json.JSONDecoder()
        while text[at:].strip():
            span, at = decoder.raw_decode(text, len(text) - len(text[at:].lstrip()))
            spans.append(span)
        raw = "\n".join(json.dumps(_reversed(s), indent=4) for s in reversed(spans)).encode()
    else:  # the requests or spans last to first, and their keys too
        doc = json.loads(raw)
        listed = doc if isinstance(doc, list) else doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        listed.reverse()
        raw = json.dumps(_reversed(doc), indent=1).encode()
    head = tmp_path / Path(DETECTED[fmt]).name
    head.write_bytes(raw)
    code, out, err = _check(capsys, head, _budget(tmp_path), "--output", "json")
    assert code in (0, 1), err
    assert json.loads(out)["requests"]["head"] > 0


# ------------------------------------------------------------------ one line, always


def test_a_damaged_parquet_footer_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pyarrow's message for it ends in a newline (and a control character)."""
    buf = io.BytesIO()
    pq.write_table(pa.table({"total_ms": [1.0, 2.0, 3.0]}), buf)
    data = bytearray(buf.getvalue())
    footer = int.from_bytes(data[-8:-4], "little")
    data[len(data) - 8 - footer] = 0x0E  # the footer's first thrift field: a type that is none
    head = tmp_path / "head.parquet"
    head.write_bytes(bytes(data))
    code, out, err = _check(capsys, head, _budget(tmp_path, "version: 1\nslo: {total: 500}\n"))
    _refused(code, out, err, "head.parquet", "thrift", "\\x0e\\n")


def test_ten_thousand_slices_mapped_with_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Correctness here; the speed is measured by bench/bench_hostile.py."""
    n = 2000
    rng = np.random.default_rng(6)
    head = write_table(
        tmp_path / "wide.csv", {f"c{i}": rng.uniform(0.1, 0.5, 10).round(3) for i in range(n)}
    )
    lines = "".join(f"  s{i}: {{budget: 100, column: c{i}}}\n" for i in range(n))
    budget = _budget(tmp_path, f"version: 1\nslo: {{total: 60000}}\nslices:\n{lines}")
    code, out, err = _check(capsys, head, budget, "--output", "json")
    assert code in (0, 1), err
    assert len([r for r in json.loads(out)["slices"] if r["name"].startswith("s")]) == n


# ------------------------------------------------------------------ artifact zips


def _zip(*entries: tuple[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, data in entries:
            archive.writestr(zipfile.ZipInfo(name), data)
    return buf.getvalue()


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize(
    "names", [("x.csv", "x.csv/y.csv"), ("x.csv/y.csv", "x.csv"), ("a.csv", "a.csv")]
)
def test_artifact_entry_both_file_and_folder_is_refused(
    tmp_path: Path, names: tuple[str, str]
) -> None:
    data = _zip(*[(n, b"total_ms\n1\n") for n in names])
    with pytest.raises(
        InputError, match=r"^artifact: entry '[ax][^']*' (is both a file|appears twice)"
    ):
        extract(data, tmp_path / "out", "artifact")


def test_artifact_entry_with_a_304_character_name_is_refused(tmp_path: Path) -> None:
    data = _zip(("r" * 300 + ".csv", b"total_ms\n1\n"))
    with pytest.raises(InputError, match="name too long"):
        extract(data, tmp_path / "out", "artifact")


def test_artifact_entry_flagged_utf8_that_is_not_is_refused(tmp_path: Path) -> None:
    data = _zip(("caf\xe9.csv", b"total_ms\n1\n"))  # a non-ASCII name: UTF-8, flag set
    data = data.replace("caf\xe9".encode(), b"caf\xff\xfe")  # same length, not UTF-8
    with pytest.raises(InputError, match="not the UTF-8 it claims"):
        extract(data, tmp_path / "out", "artifact")


def test_exit_2_is_one_line_in_a_real_process(tmp_path: Path) -> None:
    """In a child process, where numpy's warnings and argparse's usage would reach stderr."""
    import subprocess
    import sys

    columns = slices(2, 300)
    for name in ("queue_ms", "prefill_ms", "decode_ms"):
        columns[name] = np.full(300, 1e308)
    head = write_table(tmp_path / "head.csv", columns)
    budget = _budget(tmp_path, BUDGET)
    for argv in (
        ["check", "--head", str(head), "--budget", str(budget)],
        ["check", "--head", str(head), "--output", "yaml\n::error::x"],
        [],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "budgetdiff", *argv], capture_output=True, text=True
        )
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.count("\n") == 1 and "error: " in done.stderr, done.stderr
