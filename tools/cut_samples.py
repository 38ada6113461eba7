"""Copy the real tool files the tests read from ../shared/samples into tests/data/, cut down.

    python tools/cut_samples.py ../shared/samples ../shared/github

Only text is cut: prompts, generated text and streamed chunks keep their first words (every
streamed chunk stays, with its content, so token counts and timestamps are untouched). Every
number, count, key and timestamp is kept as the tool wrote it, so a test that checks a reader
against the tool's own summary of the same run checks the same thing on the cut-down file.
Files no test reads (prompt inputs, console logs, most CSV exports, the raw HTTP trace) are
left out.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"

VERBATIM = [
    "fetched/SOURCES.md",
    "fetched/inference-perf/*.json",
    "fetched/llmperf/*.json",
    "fetched/otel/*",
    "generated/*/mock_server_timings.jsonl",
    "generated/*/*/mock_server_timings.jsonl",
    "generated/aiperf/*/profile_export.jsonl",
    "generated/aiperf/*/profile_export_aiperf.json",
    "generated/aiperf/base/profile_export_aiperf.csv",
    "generated/genai-perf/*/profile_export_genai_perf.json",
    "generated/inference-perf/*/summary_lifecycle_metrics.json",
    "generated/inference-perf/*/stage_0_lifecycle_metrics.json",
    "generated/inference-perf-otel-console/*/console_spans.txt",
    "generated/inference-perf-otel-console/*/summary_lifecycle_metrics.json",
    "generated/otlp-json/*/*.otlp.json",
    "generated/prometheus/*/*.prom",
    "generated/sglang/*/sglang_bench_serving.jsonl",
]


def words(text: str, n: int = 6) -> str:
    return " ".join(text.split(" ")[:n])


def cut_vllm(doc: dict[str, Any]) -> dict[str, Any]:
    doc["generated_texts"] = [words(t, 3) for t in doc.get("generated_texts", [])]
    return doc


def cut_genai_perf(doc: dict[str, Any]) -> dict[str, Any]:
    for exp in doc["experiments"]:
        for request in exp["requests"]:
            payload = json.loads(request["request_inputs"]["payload"])
            for message in payload.get("messages", []):
                message["content"] = words(message["content"])
            request["request_inputs"]["payload"] = json.dumps(payload)
            for out in request["response_outputs"][1:-1]:  # keep the role chunk and [DONE]
                event = json.loads(out["response"].strip().removeprefix("data:"))
                for choice in event["choices"]:  # the reader's rule: does a chunk carry text
                    for drop in ("logprobs", "index"):
                        choice.pop(drop, None)
                for drop in ("object", "created", "model", "id"):
                    event.pop(drop, None)
                out["response"] = "data: " + json.dumps(event, separators=(",", ":")) + "\n\n"
    return doc


def cut_guidellm(doc: dict[str, Any]) -> dict[str, Any]:
    for bench in doc["benchmarks"]:
        for status in ("successful", "errored", "incomplete"):
            for row in bench["requests"].get(status) or []:
                if isinstance(row.get("output"), str):
                    row["output"] = words(row["output"])
                args = row.get("request_args")
                if isinstance(args, str):
                    body = json.loads(args)
                    for message in body["body"].get("messages", []):
                        for part in message.get("content", []):
                            if isinstance(part, dict) and "text" in part:
                                part["text"] = words(part["text"])
                    row["request_args"] = json.dumps(body, separators=(",", ":"))
    return doc


def cut_inference_perf(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for rec in records:
        request = json.loads(rec["request"])
        request["prompt"] = words(request["prompt"])
        rec["request"] = json.dumps(request)
        events = rec["response"].split("\n\n")
        rec["response"] = "\n\n".join(events[:2] + events[-3:])  # the id, the usage, [DONE]
        metrics = rec["info"]["response_metrics"]
        chunks = metrics.get("response_chunks")
        if isinstance(chunks, list):
            metrics["response_chunks"] = chunks[:1] + chunks[-1:]
    return records


# the tool's own JSON layout: indent (None: one line) and separators
CUT = {
    "generated/vllm/*/vllm_bench_serve.json": (cut_vllm, None, (", ", ": ")),
    "generated/genai-perf/*/profile_export.json": (cut_genai_perf, None, (",", ":")),
    "generated/guidellm/*/benchmarks.json": (cut_guidellm, None, (", ", ": ")),
    "generated/inference-perf/*/per_request_lifecycle_metrics.json": (
        cut_inference_perf,
        2,
        (",", ": "),
    ),
}


def cut_aiperf_early(mirror: Path) -> None:
    """AIPerf 0.1's example run (ai-dynamo/aiperf examples/artifacts/run1, commit 7c31f57):
    the aggregate verbatim; the records without their inter-chunk gap lists (the bulk)."""
    folder = DATA / "aiperf"
    folder.mkdir(parents=True, exist_ok=True)
    agg = (mirror / "profile_export_aiperf.json").read_bytes()
    (folder / "aiperf_early_schema_profile_export_aiperf.json").write_bytes(agg)
    lines = []
    for line in (mirror / "profile_export.jsonl").read_text().splitlines():
        record = json.loads(line)
        record["metrics"].pop("inter_chunk_latency", None)
        lines.append(json.dumps(record, separators=(",", ":")))
    text = "\n".join(lines) + "\n"
    (folder / "aiperf_early_schema_profile_export.jsonl").write_text(text)


# what `vllm bench serve --save-result` drops without --save-detailed (vllm/benchmarks/serve.py),
# and what SGLang's bench_serving adds only with --output-details (its `result_details`)
DETAILED_KEYS = {
    "vllm": (
        "input_lens",
        "output_lens",
        "start_times",
        "ttfts",
        "itls",
        "generated_texts",
        "errors",
    ),
    "sglang": ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"),
}


def cut_aggregates(samples: Path) -> None:
    """The same vLLM and SGLang runs as the tool writes them without the per-request lists."""
    for tool, name in (("vllm", "vllm_bench_serve.json"), ("sglang", "sglang_bench_serving.jsonl")):
        folder = DATA / tool
        folder.mkdir(parents=True, exist_ok=True)
        for side in ("base", "head"):
            lines = []
            for line in (samples / "generated" / tool / side / name).read_text().splitlines():
                doc = json.loads(line)
                for key in DETAILED_KEYS[tool]:
                    doc.pop(key, None)
                lines.append(json.dumps(doc))
            target = folder / f"{tool}_aggregate_{side}_{name}"
            target.write_text("\n".join(lines) + ("\n" if tool == "sglang" else ""))


def cut_guidellm_samples() -> None:
    """The generated GuideLLM run as GuideLLM writes it with a `sample_size`: every metric
    (over all 100 requests) as it is, `requests.successful` holding a sample of them, one
    request (sample_size=1), or none (as 0.8 development versions wrote it)."""
    doc = json.loads((DATA / "generated/guidellm/base/benchmarks.json").read_text())
    rows = doc["benchmarks"][0]["requests"]["successful"]
    folder = DATA / "guidellm"
    folder.mkdir(parents=True, exist_ok=True)
    pick = random.Random(0).randrange(len(rows))
    for name, sample in (("v2_empty_requests", []), (f"sampled_1_of_{len(rows)}", [rows[pick]])):
        doc["benchmarks"][0]["requests"]["successful"] = sample
        (folder / f"guidellm_{name}_benchmarks.json").write_text(json.dumps(doc))
    doc["benchmarks"][0]["requests"]["successful"] = rows


# vLLM's request histograms from the server's own timings (epoch ns), and when vLLM observes
# each: TTFT at the first token, the others when the request finishes
_VLLM_HISTOGRAMS: dict[str, tuple[Callable[[dict[str, Any]], float], str]] = {
    "time_to_first_token_seconds": (lambda r: r["first_token_ns"] - r["arrive_ns"], "first"),
    "e2e_request_latency_seconds": (lambda r: r["last_token_ns"] - r["arrive_ns"], "last"),
    "request_queue_time_seconds": (lambda r: r["scheduled_ns"] - r["arrive_ns"], "last"),
    "request_inference_time_seconds": (lambda r: r["last_token_ns"] - r["scheduled_ns"], "last"),
    "request_prefill_time_seconds": (lambda r: r["first_token_ns"] - r["scheduled_ns"], "last"),
    "request_decode_time_seconds": (lambda r: r["last_token_ns"] - r["first_token_ns"], "last"),
    "request_time_per_output_token_seconds": (
        lambda r: (r["last_token_ns"] - r["first_token_ns"]) / (r["completion_tokens"] - 1),
        "last",
    ),
}
_PROM_LINE = re.compile(r"^vllm:(\w+?)_(bucket|sum|count)(\{[^}]*\}) (\S+)$")


def _scrape(template: str, rows: list[dict[str, Any]], at_ns: float) -> str:
    """The template scrape's histogram lines, recomputed for the requests observed by `at_ns`."""
    out = []
    for line in template.splitlines():
        match = _PROM_LINE.match(line)
        if match is None:
            family = re.search(r"vllm:(\w+?)(_created)?\b", line)
            if family is not None and family.group(1) in _VLLM_HISTOGRAMS:
                out.append(line)  # HELP, TYPE, _created of a histogram
            continue  # counters (tokens, successes): not histograms, left out
        name, suffix, labels, _ = match.groups()
        value, when = _VLLM_HISTOGRAMS[name]
        seen = [value(r) / 1e9 for r in rows if r[f"{when}_token_ns"] <= at_ns]
        if suffix == "count":
            number = float(len(seen))
        elif suffix == "sum":
            number = math.fsum(seen)
        else:
            le = float(re.search(r'le="([^"]+)"', labels).group(1))  # type: ignore[union-attr]
            number = float(sum(1 for v in seen if v <= le))
        out.append(f"vllm:{name}_{suffix}{labels} {number!r}")
    return "\n".join(out) + "\n"


def cut_prometheus_in_flight(samples: Path) -> None:
    """vLLM's /metrics scraped while requests were in flight, from the vllm-base run's own
    timings: the same method as ../shared/samples/generated/prometheus (checked here: all
    requests observed gives back metrics_after.prom's histograms), at the moment the 38th
    request finished; TTFT then counts every request past its first token."""
    rows = [
        json.loads(line)
        for line in (samples / "generated/vllm/base/mock_server_timings.jsonl").open()
    ]
    template = (samples / "generated/prometheus/vllm-base/metrics_after.prom").read_text()
    everything = _scrape(template, rows, math.inf)
    kept = [line for line in template.splitlines() if _PROM_LINE.match(line)]
    mine = [line for line in everything.splitlines() if _PROM_LINE.match(line)]
    assert len(mine) == len(kept)
    for ours, theirs in zip(mine, kept, strict=True):
        if ours != theirs:  # only float summation order may differ in a _sum
            a, b = ours.rsplit(" ", 1), theirs.rsplit(" ", 1)
            assert a[0] == b[0] and math.isclose(float(a[1]), float(b[1])), (ours, theirs)
    at = sorted(r["last_token_ns"] for r in rows)[37]
    folder = DATA / "prometheus"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prometheus_in_flight_vllm_metrics.prom").write_text(_scrape(template, rows, at))


def main(samples: Path, github: Path) -> None:
    for pattern in VERBATIM:
        for path in sorted(samples.glob(pattern)):
            target = DATA / path.relative_to(samples)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    for pattern, (cut, indent, separators) in CUT.items():
        for path in sorted(samples.glob(pattern)):
            target = DATA / path.relative_to(samples)
            target.parent.mkdir(parents=True, exist_ok=True)
            doc = cut(json.loads(path.read_text()))
            text = json.dumps(doc, indent=indent, separators=separators)
            target.write_text(text + ("\n" if path.read_bytes().endswith(b"\n") else ""))
    cut_aggregates(samples)
    cut_guidellm_samples()
    cut_prometheus_in_flight(samples)
    (DATA / "github").mkdir(parents=True, exist_ok=True)
    for name in ("openapi-subset.json", "event-payloads.json"):
        doc = json.loads((github / name).read_text())
        (DATA / "github" / name).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "aiperf-early":  # a folder holding `git show` of the three run1 files
        cut_aiperf_early(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]), Path(sys.argv[2]))
