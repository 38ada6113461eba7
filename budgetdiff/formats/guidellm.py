"""Reader for GuideLLM's `benchmarks.json` (`guidellm benchmark --output-path benchmarks.json`).

Every entry of `benchmarks` is one scenario, named from its scheduling strategy
("synchronous", "throughput", "concurrency=8", "rate=10.0/s"). Per request: TTFT
(`time_to_first_token_ms`), the end-to-end `request_latency` (seconds), token counts and the
request id. Successful requests are ok, errored ones are failed; incomplete ones (cut off when
the benchmark ended) are left out, as GuideLLM's own statistics leave them out. GuideLLM keeps
no per-token timestamps, so there is no ITL, only decode = total - TTFT.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np

from budgetdiff.formats import ReadOptions
from budgetdiff.formats._client import (
    Ctx,
    arr,
    finite,
    key,
    load_json,
    load_name,
    number,
    obj,
    optional_number,
    unique_names,
)
from budgetdiff.table import Run

NAME = "guidellm"
HINT = "a GuideLLM `benchmarks.json` file"

_BENCHMARKS = re.compile(rb'"benchmarks"\s*:\s*\[')
_GUIDELLM_ANY = re.compile(rb'"guidellm_version"\s*:|"generative_benchmark"')


def sniff(head: bytes, name: str) -> bool:
    """A `benchmarks` list with GuideLLM's version key or benchmark type."""
    return _BENCHMARKS.search(head) is not None and _GUIDELLM_ANY.search(head) is not None


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    doc = obj(load_json(data, ctx), "top level", ctx)
    benchmarks = arr(key(doc, "benchmarks", ctx), "key 'benchmarks'", ctx)
    if not benchmarks:
        raise ctx.error("key 'benchmarks'", "is empty")
    meta: dict[str, str | float] = {"tool": "guidellm"}
    metadata = doc.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("guidellm_version"), str):
        meta["tool_version"] = metadata["guidellm_version"]
    model = _model(doc)
    if model is not None:
        meta["model"] = model
    runs = []
    names = []
    for i, raw in enumerate(benchmarks):
        where = f"key 'benchmarks'[{i}]"
        run, name = _benchmark(obj(raw, where, ctx), where, ctx, meta)
        runs.append(run)
        names.append(name)
    if len(runs) == 1:
        return runs
    return [_named(r, n) for r, n in zip(runs, unique_names(names), strict=True)]


def _named(run: Run, name: str) -> Run:
    return replace(run, scenario=name)


def _benchmark(
    bench: dict[str, Any], where: str, ctx: Ctx, base_meta: dict[str, str | float]
) -> tuple[Run, str]:
    meta = dict(base_meta)
    name = _strategy(bench, meta)
    requests = obj(key(bench, "requests", ctx, f"{where}.requests"), f"{where}.requests", ctx)
    rows: list[tuple[dict[str, Any], str, bool]] = []
    for status, good in (("successful", True), ("errored", False)):
        group = requests.get(status)
        if group is None:
            if status == "successful":
                raise ctx.error(f"{where}.requests.successful", "is missing")
            continue
        for j, row in enumerate(arr(group, f"{where}.requests.{status}", ctx)):
            rwhere = f"{where}.requests.{status}[{j}]"
            rows.append((obj(row, rwhere, ctx), rwhere, good))
    incomplete = requests.get("incomplete")
    if isinstance(incomplete, list):
        meta["incomplete"] = float(len(incomplete))
    n = len(rows)
    ttft = np.full(n, np.nan)
    total = np.full(n, np.nan)
    start = np.full(n, np.nan)
    isl = np.full(n, np.nan)
    osl = np.full(n, np.nan)
    ok = np.array([r[2] for r in rows], dtype=bool)
    ids = []
    for i, (row, rwhere, good) in enumerate(rows):
        request_id = row.get("request_id")
        ids.append(request_id if isinstance(request_id, str) else "")
        start[i] = optional_number(
            row.get("request_start_time", row.get("start_time")),
            f"{rwhere}.request_start_time",
            ctx,
        )
        isl[i] = optional_number(row.get("prompt_tokens"), f"{rwhere}.prompt_tokens", ctx)
        osl[i] = optional_number(row.get("output_tokens"), f"{rwhere}.output_tokens", ctx)
        if not good:
            continue
        latency = number(
            key(row, "request_latency", ctx, f"{rwhere}.request_latency"),
            f"{rwhere}.request_latency",
            ctx,
            latency=True,
        )
        total[i] = latency * 1000.0
        ttft[i] = optional_number(
            key(row, "time_to_first_token_ms", ctx, f"{rwhere}.time_to_first_token_ms"),
            f"{rwhere}.time_to_first_token_ms",
            ctx,
            latency=True,
        )
    decode = total - ttft
    bad = ok & (decode < -1e-3)
    if bad.any():
        raise ctx.error(
            f"{rows[int(np.argmax(bad))][1]}.request_latency",
            "is shorter than time_to_first_token_ms",
        )
    duration = bench.get("duration")
    return (
        Run(
            source=ctx.source,
            n=n,
            slices={"first_token": ttft, "decode": np.maximum(decode, 0.0)},
            ttft=ttft,
            total=total,
            ok=ok,
            request_id=np.array(ids, dtype=np.str_) if any(ids) else None,
            input_tokens=None if np.isnan(isl).all() else isl,
            output_tokens=None if np.isnan(osl).all() else osl,
            start_time=None if np.isnan(start).all() else start,
            duration_s=finite(duration),
            meta=meta,
        ),
        name,
    )


def _strategy(bench: dict[str, Any], meta: dict[str, str | float]) -> str:
    """The scenario name from `config.strategy` (older files: top-level `args.strategy`)."""
    config = bench.get("config")
    strategy = config.get("strategy") if isinstance(config, dict) else None
    if not isinstance(strategy, dict):
        args = bench.get("args")
        strategy = args.get("strategy") if isinstance(args, dict) else None
    if not isinstance(strategy, dict):
        return "benchmark"
    kind = strategy.get("type_")
    kind = kind if isinstance(kind, str) else "benchmark"
    meta["strategy"] = kind
    streams = strategy.get("streams", strategy.get("max_concurrency"))
    rate = strategy.get("rate")
    streams, rate = finite(streams), finite(rate)
    if kind == "concurrent" and streams is not None:
        meta["concurrency"] = streams
        return load_name(streams, None)
    if kind in ("constant", "poisson") and rate is not None:
        meta["rate"] = rate
        return ("poisson " if kind == "poisson" else "") + load_name(None, rate)
    return kind


def _model(doc: dict[str, Any]) -> str | None:
    config = doc.get("config")
    spec = config.get("spec") if isinstance(config, dict) else None
    backend = spec.get("backend") if isinstance(spec, dict) else None
    model = backend.get("model") if isinstance(backend, dict) else None
    return model if isinstance(model, str) else None
