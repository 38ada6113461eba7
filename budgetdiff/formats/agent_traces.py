"""OTLP/JSON traces of agents, by OpenTelemetry's GenAI semantic conventions -> agent tasks.

- a task is an `invoke_agent` span (the outermost, when agents call agents), else, in a trace
  without one, the trace's root span;
- a model call is a span whose `gen_ai.operation.name` is `chat`, `text_completion` or
  `generate_content`; a tool call one whose operation is `execute_tool` (`gen_ai.tool.name`
  names the tool). Without the attribute, the span name's first word (`chat gpt-4o`,
  `execute_tool search`) says the operation, as the conventions name spans;
- a step is one tool round trip: a model call and the tool calls that start after it and
  before the next model call. It runs from the model call's start to the next model call's
  start (or the end of its last tool call): `model` is the model call, `tool` the first tool
  call's start to the last one's end, `between` the rest. A model call that no tool call
  follows (the final answer) is not a step: it is counted apart.

Calls belong to the task of their trace whose span holds their start. The file is what the
`otlp` reader takes: one ExportTraceServiceRequest or JSON Lines of them (the Collector's file
exporter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from budgetdiff.errors import ReadError
from budgetdiff.formats import ReadOptions
from budgetdiff.formats.agent_tasks import Task, as_run, build, ms_between
from budgetdiff.formats.otlp import STATUS_ERROR, _attributes, _documents, _nanos, _spans
from budgetdiff.table import Run

NAME = "agent-traces"
OPERATION = "gen_ai.operation.name"
TOOL_NAME = "gen_ai.tool.name"
AGENT = "invoke_agent"
TOOL = "execute_tool"
MODEL = ("chat", "text_completion", "generate_content")


def sniff(head: bytes, name: str) -> bool:
    """An OTLP/JSON export (first key `resourceSpans`) with GenAI agent or tool spans."""
    text = head.lstrip()
    if not text.startswith(b"{") or not text[1:].lstrip().startswith(b'"resourceSpans"'):
        return False
    return b'"invoke_agent' in head or b'"execute_tool' in head


@dataclass
class _Span:
    span_id: str
    parent: str
    op: str
    start: int
    end: int
    tool: str
    failed: bool


@dataclass
class _Trace:
    spans: list[_Span] = field(default_factory=list)


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    """Every task of the file with its steps, as one Run (one row per task)."""
    traces: dict[str, _Trace] = {}
    names: dict[str, None] = {}
    for where, raw in _spans(_documents(data, source), source):
        span = _span(raw, source, where)
        names[str(raw.get("name", ""))] = None
        trace = str(raw.get("traceId", ""))
        if not trace:
            raise ReadError.at(NAME, source, f"{where}: no 'traceId'")
        traces.setdefault(trace, _Trace()).spans.append(span)
    tasks: list[Task] = []
    outside = 0
    for trace_id, spans in traces.items():
        found, left = _tasks(trace_id, spans)
        tasks += found
        outside += left
    if not tasks:
        shown = ", ".join(list(names)[:10]) or "(no spans)"
        raise ReadError.at(
            NAME,
            source,
            "no agent tasks: no invoke_agent span and no trace with chat or execute_tool spans "
            f"(gen_ai.operation.name); span names are: {shown}",
        )
    meta: dict[str, str | float] = {"calls_outside_steps": outside} if outside else {}
    return [as_run(build(tasks, NAME, source), source, NAME, meta)]


def _span(raw: dict[str, Any], source: str, where: str) -> _Span:
    attrs = _attributes(raw, source, where)
    op = attrs.get(OPERATION)
    if not isinstance(op, str):
        op = str(raw.get("name", "")).split(" ", 1)[0]
    start = _nanos(raw, "startTimeUnixNano", source, where)
    end = _nanos(raw, "endTimeUnixNano", source, where)
    if end < start:
        raise ReadError.at(NAME, source, f"{where}: ends before it starts")
    status = raw.get("status") or {}
    return _Span(
        span_id=str(raw.get("spanId", "")),
        parent=str(raw.get("parentSpanId", "")),
        op=op,
        start=start,
        end=end,
        tool=str(attrs.get(TOOL_NAME) or ""),
        failed=isinstance(status, dict)
        and status.get("code") in (STATUS_ERROR, "STATUS_CODE_ERROR"),
    )


def _tasks(trace_id: str, trace: _Trace) -> tuple[list[Task], int]:
    """The tasks of one trace, and how many of its calls fell in no step of one."""
    spans = sorted(trace.spans, key=lambda s: (s.start, -s.end))
    calls = [s for s in spans if s.op in MODEL or s.op == TOOL]
    if not calls:
        return [], 0
    heads = _outermost([s for s in spans if s.op == AGENT])
    if not heads:  # no invoke_agent span: the trace's root is the task
        ids = {s.span_id for s in spans}
        heads = [s for s in spans if not s.parent or s.parent not in ids][:1] or spans[:1]
    tasks, outside = [], 0
    for i, head in enumerate(heads):
        mine = [c for c in calls if head.start <= c.start <= head.end and c is not head]
        task_id = trace_id if len(heads) == 1 else f"{trace_id}/{head.span_id or i}"
        task, left = _steps(task_id, head, mine)
        tasks.append(task)
        outside += left
    return tasks, outside + sum(
        1 for c in calls if not any(h.start <= c.start <= h.end for h in heads)
    )


def _outermost(agents: list[_Span]) -> list[_Span]:
    """The invoke_agent spans no other holds (sorted by start, the longest first)."""
    out: list[_Span] = []
    for a in agents:
        if not any(o.start <= a.start and a.end <= o.end for o in out):
            out.append(a)
    return out


def _steps(task_id: str, head: _Span, calls: list[_Span]) -> tuple[Task, int]:
    """One task: each model call and the tool calls before the next one; tool calls before the
    first model call are in no step."""
    task = Task(task_id, total_ms=ms_between(head.start, head.end), failed=head.failed)
    models = [c for c in calls if c.op in MODEL]
    tools = [c for c in calls if c.op == TOOL]
    outside = sum(1 for t in tools if not models or t.start < models[0].start)
    for i, m in enumerate(models):
        after = models[i + 1].start if i + 1 < len(models) else None
        mine = [t for t in tools if m.start <= t.start and (after is None or t.start < after)]
        model_ms = ms_between(m.start, m.end)
        if not mine:
            task.answers += 1
            task.answer_ms += model_ms
            continue
        first, last = min(t.start for t in mine), max(t.end for t in mine)
        end = after if after is not None else max(last, m.end)
        tool_ms = ms_between(first, last)
        between = max(ms_between(m.start, end) - model_ms - tool_ms, 0.0)
        name = "+".join(sorted({t.tool for t in mine if t.tool}))
        task.steps.append((model_ms, tool_ms, between, name))
    return task, outside
