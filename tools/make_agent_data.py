"""Regenerate the agent test data in tests/data/agent (fixed seeds: the output never changes).

Agent tasks of a few steps each (a step: a model call that asks for a tool, the tool call, a
little framework time between), then a final answer. Written two ways: a step table (one row
per step, `agent-steps`) and OTLP/JSON traces by OpenTelemetry's GenAI conventions
(`invoke_agent` > `chat` / `execute_tool`, `agent-traces`).
Run: python tools/make_agent_data.py
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "agent"
TOOLS = ("search", "fetch")


@dataclass(frozen=True)
class Spec:
    """How one side's tasks are drawn."""

    seed: int
    tasks: int
    steps: Sequence[int]  # each task's step count is drawn from these, evenly
    model_ms: float = 200.0
    tool_ms: float = 120.0
    between_ms: float = 80.0
    slow_tool: str | None = None  # this tool's calls take `slow` times as long
    slow: float = 1.0


def draw(spec: Spec) -> list[list[tuple[float, float, float, str]]]:
    """Per task, its steps (model, tool, between ms, tool name) and last its answer (model ms,
    no tool: tool name None is written as an empty name)."""
    rng = np.random.default_rng(spec.seed)
    out = []
    for _ in range(spec.tasks):
        n = int(rng.choice(spec.steps))
        steps = []
        for _ in range(n):
            tool = TOOLS[int(rng.integers(len(TOOLS)))]
            model = spec.model_ms * rng.lognormal(0, 0.2)
            took = spec.tool_ms * rng.lognormal(0, 0.25)
            if tool == spec.slow_tool:
                took *= spec.slow
            steps.append(
                (
                    round(model, 3),
                    round(took, 3),
                    round(spec.between_ms * rng.lognormal(0, 0.1), 3),
                    tool,
                )
            )
        steps.append((round(150 * rng.lognormal(0, 0.2), 3), -1.0, 0.0, ""))  # the answer
        out.append(steps)
    return out


def write_steps(path: Path, tasks: list[list[tuple[float, float, float, str]]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["task_id", "step", "model_ms", "tool_ms", "tool_name", "between_ms"])
        for t, steps in enumerate(tasks):
            for s, (model, tool, between, name) in enumerate(steps, 1):
                w.writerow([f"t{t}", s, model, "" if tool < 0 else tool, name, between])


def _attr(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


def _span(
    trace: str,
    sid: str,
    parent: str,
    name: str,
    start: int,
    end: int,
    attrs: list[dict[str, object]],
) -> dict[str, object]:
    span: dict[str, object] = {
        "traceId": trace,
        "spanId": sid,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attrs,
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def write_traces(path: Path, tasks: list[list[tuple[float, float, float, str]]], seed: int) -> None:
    """One ExportTraceServiceRequest; times in whole microseconds (as nanoseconds); each side
    its own trace ids, as tracing makes them."""
    spans = []
    t0 = 1_700_000_000_000_000_000
    for t, steps in enumerate(tasks):
        trace, root = f"{seed:08x}{t + 1:024x}", f"{t + 1:08x}00000000"
        now = t0 + t * 60_000_000_000
        start = now
        children = []
        for s, (model, tool, between, name) in enumerate(steps):
            m_end = now + int(model * 1000) * 1000
            op = _attr("gen_ai.operation.name", "chat")
            children.append(
                _span(trace, f"{t + 1:08x}{2 * s + 1:08x}", root, "chat gpt-x", now, m_end, [op])
            )
            now = m_end
            if tool >= 0:
                gap = int(between * 1000) * 1000
                tool_end = now + gap // 2 + int(tool * 1000) * 1000
                attrs = [
                    _attr("gen_ai.operation.name", "execute_tool"),
                    _attr("gen_ai.tool.name", name),
                ]
                children.append(
                    _span(
                        trace,
                        f"{t + 1:08x}{2 * s + 2:08x}",
                        root,
                        f"execute_tool {name}",
                        now + gap // 2,
                        tool_end,
                        attrs,
                    )
                )
                now = tool_end + gap - gap // 2
        agent = [
            _attr("gen_ai.operation.name", "invoke_agent"),
            _attr("gen_ai.agent.name", "helper"),
        ]
        spans += [_span(trace, root, "", "invoke_agent helper", start, now, agent), *children]
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attr("service.name", "agent")]},
                "scopeSpans": [{"scope": {"name": "agent"}, "spans": spans}],
            }
        ]
    }
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


STEP_TABLES = {
    "steps-base.csv": Spec(seed=1, tasks=400, steps=[5]),
    "steps-aa.csv": Spec(seed=2, tasks=400, steps=[5]),
    "steps-more.csv": Spec(seed=3, tasks=400, steps=[7]),
    "steps-slow-tool.csv": Spec(seed=4, tasks=400, steps=[5], tool_ms=280.0),
}
TRACES = {
    "traces-base.json": Spec(seed=11, tasks=150, steps=[5]),
    "traces-slow-search.json": Spec(seed=12, tasks=150, steps=[5], slow_tool="search", slow=1.4),
    "traces-more-steps.json": Spec(seed=13, tasks=150, steps=[6, 7, 8]),
}


def main(out: Path = OUT) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, spec in STEP_TABLES.items():
        write_steps(out / name, draw(spec))
    for name, spec in TRACES.items():
        write_traces(out / name, draw(spec), spec.seed)


if __name__ == "__main__":
    main()
