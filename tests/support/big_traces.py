"""Large trace files for the memory tests and bench/bench_traces.py (fixed seeds), written
span by span so that making them costs no memory: vLLM-style OTLP request spans, and agent
traces (invoke_agent > chat / execute_tool)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _attr(key: str, kind: str, value: object) -> dict[str, object]:
    return {"key": key, "value": {kind: value}}


def write_otlp(path: Path, spans: int, seed: int = 35) -> None:
    """vLLM-style request spans, one ExportTraceServiceRequest, written span by span."""
    rng = np.random.default_rng(seed)
    queue = rng.lognormal(-4, 0.5, spans)
    prefill = rng.lognormal(-2.5, 0.3, spans)
    decode = rng.lognormal(-0.5, 0.3, spans)
    start = 1_700_000_000_000_000_000
    with path.open("w") as f:
        f.write('{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [')
        for i in range(spans):
            e2e = queue[i] + prefill[i] + decode[i]
            begin = start + i * 1_000_000
            span = {
                "traceId": f"{i:032x}",
                "spanId": f"{i:016x}",
                "name": "llm_request",
                "startTimeUnixNano": str(begin),
                "endTimeUnixNano": str(begin + int(e2e * 1e9)),
                "attributes": [
                    _attr("gen_ai.request.id", "stringValue", f"req-{i}"),
                    _attr("gen_ai.latency.time_in_queue", "doubleValue", round(queue[i], 6)),
                    _attr(
                        "gen_ai.latency.time_in_model_prefill", "doubleValue", round(prefill[i], 6)
                    ),
                    _attr(
                        "gen_ai.latency.time_in_model_decode", "doubleValue", round(decode[i], 6)
                    ),
                    _attr("gen_ai.latency.e2e", "doubleValue", round(e2e, 6)),
                ],
            }
            f.write(("," if i else "") + json.dumps(span, separators=(",", ":")))
        f.write("]}]}]}\n")


def write_agent(path: Path, spans: int, seed: int = 35) -> None:
    """Agent tasks of 3 steps and an answer: invoke_agent, then chat / execute_tool pairs."""
    rng = np.random.default_rng(seed)
    per_task = 8  # the agent span, 3 x (chat, execute_tool), the answer's chat
    tasks = max(1, spans // per_task)
    t0 = 1_700_000_000_000_000_000
    first = True
    with path.open("w") as f:
        f.write('{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [')
        for task in range(tasks):
            trace = f"{task:032x}"
            root = f"{task:08x}00000000"
            at = t0 + task * 10_000_000_000
            calls: list[tuple[str, str, int, int]] = []
            cursor = at
            for step in range(3):
                model = int(rng.lognormal(np.log(0.2), 0.2) * 1e9)
                tool = int(rng.lognormal(np.log(0.12), 0.2) * 1e9)
                calls.append(("chat", "", cursor, cursor + model))
                cursor += model + 10_000_000
                calls.append(("execute_tool", ("search", "fetch")[step % 2], cursor, cursor + tool))
                cursor += tool + 50_000_000
            answer = int(rng.lognormal(np.log(0.2), 0.2) * 1e9)
            calls.append(("chat", "", cursor, cursor + answer))
            cursor += answer
            spans_out = [
                {
                    "traceId": trace,
                    "spanId": root,
                    "name": "invoke_agent helper",
                    "startTimeUnixNano": str(at),
                    "endTimeUnixNano": str(cursor),
                    "attributes": [_attr("gen_ai.operation.name", "stringValue", "invoke_agent")],
                }
            ]
            for n, (op, tool_name, begin, end) in enumerate(calls, start=1):
                attrs = [_attr("gen_ai.operation.name", "stringValue", op)]
                if tool_name:
                    attrs.append(_attr("gen_ai.tool.name", "stringValue", tool_name))
                spans_out.append(
                    {
                        "traceId": trace,
                        "spanId": f"{task:08x}{n:08x}",
                        "parentSpanId": root,
                        "name": f"{op} {tool_name or 'gpt-x'}",
                        "startTimeUnixNano": str(begin),
                        "endTimeUnixNano": str(end),
                        "attributes": attrs,
                    }
                )
            for span in spans_out:
                f.write(("" if first else ",") + json.dumps(span, separators=(",", ":")))
                first = False
        f.write("]}]}]}\n")
