"""Reader for GuideLLM's `benchmarks.json` (`guidellm benchmark --output-path benchmarks.json`),
or the same report as `benchmarks.yaml`.

Every entry of `benchmarks` is one scenario, named from its scheduling strategy
("synchronous", "throughput", "concurrency=8", "rate=10.0/s"). Per request: TTFT
(`time_to_first_token_ms`), the end-to-end `request_latency` (seconds), token counts and the
request id. Successful requests are ok, errored ones are failed; incomplete ones (cut off when
the benchmark ended) are left out, as GuideLLM's own statistics leave them out. GuideLLM keeps
no per-token timestamps, so there is no ITL, only decode = total - TTFT.

From 0.5 the lists also hold the warm-up and cool-down requests, which GuideLLM's statistics
leave out: a request counts when it ends at or after `scheduler_metrics.measure_start_time`
and starts at or before `measure_end_time` (GuideLLM's `get_within_range`). The others are
left out here too, with a note; the count kept must equal `metrics.request_totals`, or the
file's own percentiles are used.

The per-request lists may hold only a sample (GuideLLM's `sample_size`: k of the n requests
that `metrics.request_totals` counts; 0.8 development versions wrote them empty). A sample
large enough for the budget's percentile is read per request, with a note saying k of n;
a smaller one (or none) gives way to the file's own percentiles over all n requests,
`metrics.<name>.successful.percentiles`, as an aggregate input with a note.

Read per request, the run keeps those percentiles of GuideLLM's too (`Run.tool_percentiles`),
which the report shows beside budgetdiff's: GuideLLM takes them by nearest rank, budgetdiff by
linear interpolation, so on a small run they differ by up to a few percent.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np

from budgetdiff import numbers
from budgetdiff.formats import ReadOptions
from budgetdiff.formats._checks import (
    Ctx,
    arr,
    finite,
    key,
    list_at,
    load_name,
    load_object,
    number,
    obj,
    object_at,
    optional_number,
    unique_names,
)
from budgetdiff.stats import needed_for_interval
from budgetdiff.table import Ids, Run

NAME = "guidellm"
HINT = "a GuideLLM `benchmarks.json` file"

_BENCHMARKS = re.compile(rb'"benchmarks"\s*:\s*\[')
_GUIDELLM_ANY = re.compile(rb'"guidellm_version"\s*:|"generative_benchmark"')
# the same in GuideLLM's YAML output (`--output-path benchmarks.yaml`). From 0.5 GuideLLM
# writes it with `yaml.dump`, keys sorted: `metadata` and each benchmark's `type_` come after
# the requests, past the sniffed head; the scheduler's module and GuideLLM's own name for the
# 0.1th percentile (`p001`) come before them
_YAML_BENCHMARKS = re.compile(rb"^benchmarks:[ \t]*\r?$", re.MULTILINE)
_YAML_ANY = re.compile(
    rb"^\s*(?:guidellm_version:|-?\s*type_:\s*generative_benchmark\b"
    rb"|module:\s*guidellm\.|p001:)",
    re.MULTILINE,
)
# GuideLLM's percentile keys: p001 is the 0.1th, p999 the 99.9th
_PERCENTILES = {"p01": 1.0, "p05": 5.0, "p10": 10.0, "p25": 25.0, "p50": 50.0, "p75": 75.0}
_PERCENTILES |= {"p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9, "p001": 0.1}
# metric -> (scale to ms, the summary names it fills); GuideLLM's inter_token_latency_ms is a
# token-weighted distribution of per-request means, neither `itl` nor `tpot`: left out
_METRICS = {
    "time_to_first_token_ms": (1.0, ("ttft", "first_token")),
    "request_latency": (1000.0, ("total",)),
}
CONFIDENCE = 0.95  # a sample must give a finite interval for the percentile at this confidence
METHOD = "nearest rank"  # how GuideLLM takes its percentiles (budgetdiff interpolates)


def sniff(head: bytes, name: str) -> bool:
    """A `benchmarks` list with GuideLLM's version key or benchmark type, in JSON or YAML."""
    if _BENCHMARKS.search(head) is not None and _GUIDELLM_ANY.search(head) is not None:
        return True
    return _YAML_BENCHMARKS.search(head) is not None and _YAML_ANY.search(head) is not None


def read(data: bytes, source: str, options: ReadOptions) -> list[Run]:
    ctx = Ctx(NAME, source, HINT)
    doc = load_object(data, ctx, yaml=True)
    benchmarks = list_at(doc, "benchmarks", ctx)
    if not benchmarks:
        raise ctx.error("key 'benchmarks'", "is empty")
    meta: dict[str, str | float] = {"tool": "guidellm"}
    metadata = doc.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("guidellm_version"), str):
        meta["tool_version"] = metadata["guidellm_version"]
    version = finite(metadata.get("version")) if isinstance(metadata, dict) else None
    meta["schema"] = (
        f"v{numbers.given(version)}" if version is not None else "v1 (no metadata.version)"
    )
    model = _model(doc)
    if model is not None:
        meta["model"] = model
    runs = []
    names = []
    for i, raw in enumerate(benchmarks):
        where = f"key 'benchmarks'[{i}]"
        run, name = _benchmark(obj(raw, where, ctx), where, ctx, meta, options)
        runs.append(run)
        names.append(name)
    if len(runs) == 1:
        return runs
    return [_named(r, n) for r, n in zip(runs, unique_names(names), strict=True)]


def _named(run: Run, name: str) -> Run:
    return replace(run, scenario=name)


_Row = tuple[dict[str, Any], str, bool]  # the request, where it is, whether it succeeded


def _benchmark(
    bench: dict[str, Any],
    where: str,
    ctx: Ctx,
    base_meta: dict[str, str | float],
    options: ReadOptions,
) -> tuple[Run, str]:
    meta = dict(base_meta)
    name = _strategy(bench, meta)
    rows = _measured(_rows(bench, where, ctx, meta), bench, where, ctx, meta)
    kept, totals = sum(1 for r in rows if r[2]), _totals(bench, where, ctx)
    if totals is not None and totals[0] < kept:  # GuideLLM counted fewer than the list holds
        _note(
            meta,
            f"{ctx.source}: {where}.requests.successful lists {numbers.count(kept)} requests "
            f"in the measured period but request_totals counts {numbers.count(totals[0])}; "
            "the percentiles are GuideLLM's own",
        )
        return _from_metrics(bench, where, ctx, meta, totals), name
    if totals is not None and totals[0] > kept:  # the list is a sample of the requests
        if kept < needed_for_interval(options.percentile, CONFIDENCE):
            held = "is empty" if kept == 0 else f"holds {numbers.count(kept)}"
            _note(
                meta,
                f"{ctx.source}: requests.successful {held} of the "
                f"{numbers.count(totals[0])} successful requests (request_totals), too few "
                f"for {numbers.percentile(options.percentile)}; the percentiles are "
                "GuideLLM's own over all of them",
            )
            return _from_metrics(bench, where, ctx, meta, totals), name
        _note(
            meta,
            f"{ctx.source}: the per-request list is a sample: {numbers.count(kept)} of the "
            f"{numbers.count(totals[0])} "
            "successful requests (GuideLLM's sample_size); percentiles are estimated from it",
        )
    run = _per_request(rows, ctx, duration=finite(bench.get("duration")), meta=meta)
    own = _own_percentiles(bench, where, ctx, required=False)
    if own:  # GuideLLM's own, beside budgetdiff's: each says how it takes a percentile
        meta = {**run.meta, "percentiles_by": "GuideLLM", "percentile_method": METHOD}
        run = replace(run, tool_percentiles=own, meta=meta)
    return run, name


def _rows(bench: dict[str, Any], where: str, ctx: Ctx, meta: dict[str, str | float]) -> list[_Row]:
    """The successful, then the errored requests; the count of incomplete ones into `meta`."""
    requests = object_at(bench, "requests", ctx, f"{where}.requests")
    rows: list[_Row] = []
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
    return rows


def _measured(
    rows: list[_Row], bench: dict[str, Any], where: str, ctx: Ctx, meta: dict[str, str | float]
) -> list[_Row]:
    """The requests GuideLLM's statistics count: those overlapping its measured period."""
    scheduler = bench.get("scheduler_metrics")
    if not isinstance(scheduler, dict):
        return rows
    swhere = f"{where}.scheduler_metrics"
    start = optional_number(
        scheduler.get("measure_start_time"), f"{swhere}.measure_start_time", ctx
    )
    end = optional_number(scheduler.get("measure_end_time"), f"{swhere}.measure_end_time", ctx)
    if np.isnan(start) or np.isnan(end):
        return rows
    kept = []
    for row, rwhere, good in rows:
        began = optional_number(row.get("request_start_time"), f"{rwhere}.request_start_time", ctx)
        ended = optional_number(row.get("request_end_time"), f"{rwhere}.request_end_time", ctx)
        if np.isnan(ended):  # a file without per-request times: nothing to tell apart
            return rows
        if ended >= start and (began <= end if not np.isnan(began) else ended <= end):
            kept.append((row, rwhere, good))
    left_out = len(rows) - len(kept)
    if left_out:
        _note(
            meta,
            f"{ctx.source}: {numbers.count(left_out)} of the {numbers.count(len(rows))} listed "
            "requests ran in GuideLLM's warm-up or cool-down and are left out, as its own "
            "statistics leave them out",
        )
    return kept


def _note(meta: dict[str, str | float], text: str) -> None:
    """Add a sentence to the reader's note on the file."""
    old = meta.get("note")
    meta["note"] = f"{old}; {text}" if isinstance(old, str) else text


def _per_request(
    rows: list[_Row], ctx: Ctx, *, duration: float | None, meta: dict[str, str | float]
) -> Run:
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
    return Run(
        source=ctx.source,
        n=n,
        slices={"first_token": ttft, "decode": np.maximum(decode, 0.0)},
        ttft=ttft,
        total=total,
        ok=ok,
        request_id=Ids(np.array(ids, dtype=np.str_)) if any(ids) else None,
        input_tokens=None if np.isnan(isl).all() else isl,
        output_tokens=None if np.isnan(osl).all() else osl,
        start_time=None if np.isnan(start).all() else start,
        duration_s=duration,
        meta=meta,
    )


def _totals(bench: dict[str, Any], where: str, ctx: Ctx) -> tuple[int, int] | None:
    """(successful, errored) from `metrics.request_totals` (GuideLLM 0.3: the benchmark's own
    `request_totals`), or None where the file has none."""
    metrics = bench.get("metrics")
    totals = metrics.get("request_totals") if isinstance(metrics, dict) else None
    twhere = f"{where}.metrics.request_totals"
    if not isinstance(totals, dict):
        totals, twhere = bench.get("request_totals"), f"{where}.request_totals"
    if not isinstance(totals, dict) or "successful" not in totals:
        return None
    good = number(totals["successful"], f"{twhere}.successful", ctx, latency=True)
    bad = optional_number(totals.get("errored"), f"{twhere}.errored", ctx)
    return int(good), 0 if np.isnan(bad) else int(bad)


def _from_metrics(
    bench: dict[str, Any],
    where: str,
    ctx: Ctx,
    meta: dict[str, str | float],
    totals: tuple[int, int],
) -> Run:
    """The file's own percentiles over every request, when its per-request list is too small."""
    summary = _own_percentiles(bench, where, ctx, required=True)
    good, bad = totals
    return Run(
        source=ctx.source,
        n=0,
        summary=summary,
        summary_count=good + bad,
        duration_s=finite(bench.get("duration")),
        meta={**meta, "failures": float(bad)},
    )


def _own_percentiles(
    bench: dict[str, Any], where: str, ctx: Ctx, *, required: bool
) -> dict[str, dict[float, float]]:
    """GuideLLM's own percentiles of its successful requests (`metrics.<name>.successful`), by
    summary name; `required`: a file without them is an error, else they are simply none."""
    if not required and not _has_own(bench):
        return {}
    metrics = obj(bench["metrics"], f"{where}.metrics", ctx)
    summary: dict[str, dict[float, float]] = {}
    for metric, (scale, names) in _METRICS.items():
        mwhere = f"{where}.metrics.{metric}.successful.percentiles"
        stats = obj(key(metrics, metric, ctx, f"{where}.metrics.{metric}"), mwhere, ctx)
        successful = obj(key(stats, "successful", ctx, mwhere), mwhere, ctx)
        table = obj(key(successful, "percentiles", ctx, mwhere), mwhere, ctx)
        values = {
            q: number(table[k], f"{mwhere}.{k}", ctx, latency=True) * scale
            for k, q in sorted(_PERCENTILES.items(), key=lambda item: item[1])
            if k in table
        }
        if 50.0 not in values and "median" in successful:  # 0.3 keeps p50 as `median` only
            median = number(
                successful["median"],
                f"{where}.metrics.{metric}.successful.median",
                ctx,
                latency=True,
            )
            values = dict(sorted({**values, 50.0: median * scale}.items()))
        for name in names:
            summary[name] = dict(values)
    return summary


def _has_own(bench: dict[str, Any]) -> bool:
    """Whether the benchmark holds GuideLLM's percentiles of every metric read."""
    metrics = bench.get("metrics")
    for metric in _METRICS:
        stats = metrics.get(metric) if isinstance(metrics, dict) else None
        successful = stats.get("successful") if isinstance(stats, dict) else None
        if not isinstance(successful, dict) or not isinstance(successful.get("percentiles"), dict):
            return False
    return True


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
