"""One side of a comparison given as several files, made into one list of Runs.

- several Prometheus scrapes of one run (before / after): the difference of the cumulative
  histograms, i.e. what happened between the first and the last scrape;
- a client-side per-request file plus server-side span files: joined on the request id, the
  client's TTFT split into network (client TTFT - server TTFT) + queue + prefill, decode from
  the server, the client's TTFT and total kept as the measured ones;
- one file: passed through.
Pure: takes Runs, returns Runs.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from budgetdiff.errors import InputError
from budgetdiff.table import FloatArray, Histogram, Run

MIN_MATCH = 0.9
VLLM_PREFIX = "chatcmpl-"
SERVER_SLICES = ("queue", "prefill", "decode")


def combine(runs: list[list[Run]], sources: list[str]) -> list[Run]:
    """The Runs of one side read from `sources` (one list of Runs per file) as one side."""
    if len(runs) != len(sources):
        raise ValueError("one list of runs per source")
    if len(runs) == 1:
        for run in runs[0]:
            if run.histograms and run.n == 0 and not run.summary_count:
                raise InputError(
                    f"prometheus: {sources[0]}: no request recorded (every histogram is 0); "
                    "scrape /metrics after the benchmark, or pass the scrapes from before and "
                    "after it together"
                )
        return runs[0]
    flat = [run for file_runs in runs for run in file_runs]
    if all(run.histograms and run.n == 0 for run in flat):
        return [diff_scrapes(flat, sources)]
    server_files = [i for i, rs in enumerate(runs) if rs and all(is_server(r) for r in rs)]
    client_files = [i for i in range(len(runs)) if i not in server_files]
    if len(client_files) == 1 and server_files:
        client_src = sources[client_files[0]]
        servers = [r for i in server_files for r in runs[i]]
        server_src = ", ".join(sources[i] for i in server_files)
        return [join(c, servers, client_src, server_src) for c in runs[client_files[0]]]
    raise InputError(
        f"{', '.join(sources)}: cannot combine these files into one side; give either several "
        "Prometheus scrapes of one run, or one client-side per-request file plus server span "
        "files of the same run"
    )


def is_server(run: Run) -> bool:
    """A per-request run seen from the server (spans): it has no client-side first token."""
    if not run.per_request:
        return False
    return run.meta.get("side") == "server" or (
        "first_token" not in run.slices and "queue" in run.slices
    )


# ---------------------------------------------------------------- scrapes


def _total_count(run: Run) -> float:
    return float(sum(h.counts.sum() for h in run.histograms.values()))


def diff_scrapes(scrapes: list[Run], sources: list[str]) -> Run:
    """The histograms of the last scrape minus the first (scrapes ordered by total count)."""
    ordered = sorted(scrapes, key=_total_count)
    names = ", ".join(sources)
    first, last = ordered[0], ordered[-1]
    for earlier, later in itertools.pairwise(ordered):
        for key, value in later.meta.items():
            if key.startswith("created:") and earlier.meta.get(key, value) != value:
                raise InputError(
                    f"prometheus: {names}: counter reset between scrapes ({key[8:]!r} was "
                    f"created anew between {earlier.source} and {later.source}: the server "
                    "restarted); scrape before and after one run of one server process"
                )
        for name, h in later.histograms.items():
            before = earlier.histograms.get(name)
            if before is None:
                continue
            if before.bounds.shape != h.bounds.shape or not np.array_equal(before.bounds, h.bounds):
                raise InputError(
                    f"prometheus: {names}: metric {name!r} has different buckets in "
                    f"{earlier.source} and {later.source}; scrape the same server version"
                )
            if (np.cumsum(h.counts) < np.cumsum(before.counts) - 1e-9).any():
                raise InputError(
                    f"prometheus: {names}: counter reset between scrapes ({name!r} went down "
                    f"from {earlier.source} to {later.source}: the server restarted?); scrape "
                    "before and after one run of one server process"
                )
    histograms: dict[str, Histogram] = {}
    for name, h in last.histograms.items():
        before = first.histograms.get(name)
        counts = h.counts - (before.counts if before is not None else 0.0)
        histograms[name] = Histogram(bounds=h.bounds, counts=np.maximum(counts, 0.0))
    meta: dict[str, str | float] = {
        k: v for k, v in last.meta.items() if not isinstance(v, float | int)
    }
    for key, value in last.meta.items():
        if isinstance(value, float | int) and key.startswith(("sum:", "count:")):
            base = first.meta.get(key, 0.0)
            meta[key] = float(value) - (float(base) if isinstance(base, int | float) else 0.0)
    meta["scrapes"] = f"{first.source} -> {last.source}"
    count = None
    for name in ("total", "ttft", "decode"):
        if name in histograms:
            count = round(float(histograms[name].counts.sum()))
            break
    if count is None and histograms:
        count = round(max(float(h.counts.sum()) for h in histograms.values()))
    if count == 0:
        raise InputError(
            f"prometheus: {names}: no request finished between the scrapes; scrape before and "
            "after the benchmark, not twice before it"
        )
    return replace(last, histograms=histograms, meta=meta, summary_count=count, source=names)


# ---------------------------------------------------------------- client + server join


def _key(request_id: str) -> str:
    return request_id.removeprefix(VLLM_PREFIX)


def join(client: Run, servers: list[Run], client_src: str, server_src: str) -> Run:
    """The client's requests with the server's slices of the same request."""
    if client.request_id is None:
        raise InputError(
            f"{client_src}: the client file has no request ids, so it cannot be joined with "
            f"{server_src}; send an X-Request-ID per request and keep it in the results"
        )
    client_ttft = client.ttft if client.ttft is not None else client.slices.get("first_token")
    if client_ttft is None:
        raise InputError(
            f"{client_src}: no time to first token per request, so the network share cannot "
            f"be split off the server's TTFT from {server_src}"
        )
    index: dict[str, tuple[int, int]] = {}
    for s, run in enumerate(servers):
        if run.request_id is None:
            raise InputError(f"{run.source}: server spans without request ids cannot be joined")
        for row, rid in enumerate(run.request_id.tolist()):
            index.setdefault(str(rid), (s, row))
            index.setdefault(_key(str(rid)), (s, row))
    n = client.n
    where = np.full(n, -1, dtype=np.int64)
    which = np.full(n, -1, dtype=np.int64)
    for i, rid in enumerate(client.request_id.tolist()):
        hit = index.get(str(rid)) or index.get(_key(str(rid)))
        if hit is not None:
            which[i], where[i] = hit
    matched = where >= 0
    wanted = client.succeeded
    n_wanted = int(wanted.sum())
    n_matched = int((matched & wanted).sum())
    if n_wanted == 0 or n_matched < MIN_MATCH * n_wanted:
        sample = ", ".join(str(r) for r in client.request_id[~matched][:3].tolist())
        raise InputError(
            f"{client_src} + {server_src}: only {n_matched} of {n_wanted} requests have a "
            f"server span with the same request id (need {MIN_MATCH:.0%}; unmatched e.g. "
            f"{sample}); pass the client and server files of the same run, and send "
            "X-Request-ID so the server names the request after it"
        )
    keep = matched | ~wanted

    def server_column(name: str) -> FloatArray:
        out = np.full(n, np.nan)
        for s, run in enumerate(servers):
            values = run.slices.get(name)
            if values is None and name in ("ttft", "total"):
                values = getattr(run, name)
            if values is None:
                continue
            mine = matched & (which == s)
            out[mine] = values[where[mine]]
        return out

    server_ok = np.ones(n, dtype=bool)
    for s, run in enumerate(servers):
        mine = matched & (which == s)
        server_ok[mine] = run.succeeded[where[mine]]

    server_ttft = server_column("ttft")
    if np.isnan(server_ttft[matched & wanted]).all():
        pre = [server_column(x) for x in ("queue", "prefill")]
        server_ttft = pre[0] + pre[1]
    network = client_ttft - server_ttft
    negative = network < 0
    meta: dict[str, str | float] = dict(client.meta)
    for name in ("format", "schema"):
        parts = dict.fromkeys(str(r.meta.get(name, "unknown")) for r in (client, *servers))
        meta[name] = " + ".join(parts)
    # always set (0 when none), so the report can say what was dropped or clipped
    meta.update(
        {
            "joined": f"{client_src} + {server_src}",
            "matched": float(n_matched),
            "unmatched": float(n_wanted - n_matched),
            "network_clipped": float(negative.sum()),
            "network_clipped_max_ms": float(-np.nanmin(network)) if negative.any() else 0.0,
        }
    )
    network = np.where(negative, 0.0, network)
    slices: dict[str, FloatArray] = {"network": network}
    for name in SERVER_SLICES:
        slices[name] = server_column(name)
    extra = {name for run in servers for name in run.slices} - set(slices) - {"first_token"}
    for name in sorted(extra):
        slices[name] = server_column(name)
    ok = client.succeeded & server_ok

    def rows(values: FloatArray | None) -> FloatArray | None:
        return None if values is None else values[keep]

    itl = client.itl
    if itl is not None and not keep.all():
        lengths = np.diff(itl.offsets)[keep]
        starts = itl.offsets[:-1][keep]
        pick = (
            np.concatenate([np.arange(a, a + m) for a, m in zip(starts, lengths, strict=True)])
            if len(starts)
            else np.zeros(0, dtype=np.int64)
        )
        itl = replace(
            itl,
            values=itl.values[pick.astype(np.int64)],
            offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        )
    return replace(
        client,
        n=int(keep.sum()),
        slices={k: v[keep] for k, v in slices.items()},
        ttft=client_ttft[keep],
        total=rows(client.total),
        ok=None if ok[keep].all() else ok[keep],
        request_id=client.request_id[keep],
        input_tokens=rows(client.input_tokens),
        output_tokens=rows(client.output_tokens),
        itl=itl,
        start_time=rows(client.start_time),
        tpot=rows(client.tpot),
        meta=meta,
    )
