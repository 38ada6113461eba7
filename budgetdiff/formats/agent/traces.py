"""OTLP/JSON traces of agents, by OpenTelemetry's GenAI semantic conventions -> agent tasks.

- a task is an `invoke_agent` span (the outermost, when agents call agents), else, in a trace
  without one, the trace's root span; a call belongs to the task among its ancestors
  (`parentSpanId`), so agents running side by side in one trace keep their own calls;
- a model call is a span whose `gen_ai.operation.name` is `chat`, `text_completion` or
  `generate_content`; a tool call one whose operation is `execute_tool` (`gen_ai.tool.name`
  names the tool). Without the attribute, the span name's first word (`chat gpt-4o`,
  `execute_tool search`) says the operation, as the conventions name spans;
- a step is one tool round trip: a model call and the tool calls that start after it and
  before the next model call. It runs from the model call's start to the next model call's
  start (or the end of its last tool call): `model` is the model call, `tool` the first tool
  call's start to the last one's end, `between` the rest. A model call that no tool call
  follows (the final answer) is not a step: it is counted apart.

The file is what the
`otlp` reader takes: one ExportTraceServiceRequest or JSON Lines of them (the Collector's file
exporter), read a span at a time; what is kept of a span is its ids, times, operation and tool.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from budgetdiff.errors import ReadError
from budgetdiff.formats import ReadOptions
from budgetdiff.formats.agent.tasks import Task, as_run, build, ms_between
from budgetdiff.formats.otlp import STATUS_ERROR, _attributes, _nanos
from budgetdiff.formats.otlp_spans import spans
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


@dataclass(slots=True)  # a million of them: no __dict__ each
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
    for where, raw in spans(data, source):
        span = _span(raw, source, where)
        names[str(raw.get("name", ""))] = None
        trace = str(raw.get("traceId", ""))
        if not trace:
            raise ReadError.at(NAME, source, f"{where}: no 'traceId'")
        traces.setdefault(trace, _Trace()).spans.append(span)
    tasks: list[Task] = []
    outside = 0
    for trace_id, held in traces.items():
        found, left = _tasks(trace_id, held)
        tasks += found
        outside += left
    if not tasks:
        shown = ", ".join(list(names)[:10]) or "(no spans)"
        raise ReadError.at(
            NAME,
            source,
            "no agent tasks: no chat, text_completion, generate_content or execute_tool span "
            "(gen_ai.operation.name) under an invoke_agent span or a trace's root span "
            f"(by parentSpanId); span names are: {shown}",
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
    return _Span(  # the repeated texts shared: a million spans hold a few operations and tools
        span_id=str(raw.get("spanId", "")),
        parent=sys.intern(str(raw.get("parentSpanId", ""))),
        op=sys.intern(op),
        start=start,
        end=end,
        tool=sys.intern(str(attrs.get(TOOL_NAME) or "")),
        failed=isinstance(status, dict)
        and status.get("code") in (STATUS_ERROR, "STATUS_CODE_ERROR"),
    )


def _tasks(trace_id: str, trace: _Trace) -> tuple[list[Task], int]:
    """The tasks of one trace, and how many of its calls fell in no task: each call belongs
    to its outermost invoke_agent ancestor, or (a trace without one) to its root ancestor."""
    spans = sorted(trace.spans, key=lambda s: (s.start, -s.end))
    calls = [s for s in spans if s.op in MODEL or s.op == TOOL]
    if not calls:
        return [], 0
    tops = _ancestry(spans)
    agents = any(s.op == AGENT for s in spans)
    mine: dict[int, list[_Span]] = {}
    heads: dict[int, _Span] = {}
    for c in calls:
        root, agent = tops[id(c)]
        head = agent if agents else root
        if head is None or head is c:
            continue
        heads[id(head)] = head
        mine.setdefault(id(head), []).append(c)
    tasks, inside = [], 0
    for i, (key, head) in enumerate(sorted(heads.items(), key=lambda h: h[1].start)):
        task_id = trace_id if len(heads) == 1 else f"{trace_id}/{head.span_id or i}"
        task, left = _steps(task_id, head, mine[key])
        tasks.append(task)
        inside += len(mine[key]) - left
    return tasks, len(calls) - inside


def _ancestry(spans: list[_Span]) -> dict[int, tuple[_Span, _Span | None]]:
    """Each span's root ancestor and outermost invoke_agent ancestor (itself included), by
    `id(span)`: each parent link followed once (a loop of links ends where it closes)."""
    by_id = {s.span_id: s for s in spans if s.span_id}
    out: dict[int, tuple[_Span, _Span | None]] = {}
    for s in spans:
        path: list[_Span] = []
        seen: set[int] = set()
        cur: _Span | None = s
        while cur is not None and id(cur) not in out and id(cur) not in seen:
            path.append(cur)
            seen.add(id(cur))
            cur = by_id.get(cur.parent) if cur.parent else None
        root, agent = out[id(cur)] if cur is not None and id(cur) in out else (path[-1], None)
        for node in reversed(path):  # from the top down: the first agent met is the outermost
            if agent is None and node.op == AGENT:
                agent = node
            out[id(node)] = (root, agent)
    return out


def _steps(task_id: str, head: _Span, calls: list[_Span]) -> tuple[Task, int]:
    """One task: each model call and the tool calls that start from it to the next one (calls
    sorted by start); tool calls before the first model call are in no step. Linear: a file may
    hold a million calls in one task."""
    task = Task(task_id, total_ms=ms_between(head.start, head.end), failed=head.failed)
    models = [c for c in calls if c.op in MODEL]
    tools = [c for c in calls if c.op == TOOL]
    j = 0
    while j < len(tools) and models and tools[j].start < models[0].start:
        j += 1
    outside = j if models else len(tools)
    for i, m in enumerate(models):
        after = models[i + 1].start if i + 1 < len(models) else None
        k = j
        while k < len(tools) and (after is None or tools[k].start < after):
            k += 1
        mine, j = tools[j:k], k
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
