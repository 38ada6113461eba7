"""One side of a comparison given as several files, made into one list of Runs.

- several Prometheus scrapes of one run (before / after): the difference of the cumulative
  histograms, i.e. what happened between the first and the last scrape;
- a client-side per-request file plus server-side span files: joined on the request id, the
  client's TTFT split into network (client TTFT - server TTFT) + queue + prefill, decode from
  the server, the client's TTFT and total kept as the measured ones;
- several per-request files of the same tool and shape (repeated runs of one configuration):
  one Run per scenario, their requests one after another, each labelled with its file's index
  (`Run.run`), so the statistics can count the variance between runs;
- one file: passed through.
Pure: takes Runs, returns Runs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from budgetdiff.errors import ReadError
from budgetdiff.numbers import setting_pct
from budgetdiff.table import BoolArray, FloatArray, Histogram, Ids, Itl, Run, repeated_ids

if TYPE_CHECKING:
    import numpy.typing as npt

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
                raise ReadError(
                    f"prometheus: {sources[0]}: no request recorded (every histogram is 0); "
                    "scrape /metrics after the benchmark, or pass the scrapes from before and "
                    "after it together",
                    file=sources[0],
                )
        return runs[0]
    flat = [run for file_runs in runs for run in file_runs]
    if any(run.agent is not None for run in flat):  # a join would drop the steps
        raise ReadError(
            f"{', '.join(sources)}: agent tasks are read from one file per side; pass one step "
            "table or one traces file",
            file=", ".join(sources),
        )
    if all(run.histograms and run.n == 0 for run in flat):
        return [diff_scrapes(flat, sources)]
    server_files = [i for i, rs in enumerate(runs) if rs and all(is_server(r) for r in rs)]
    client_files = [i for i in range(len(runs)) if i not in server_files]
    if len(client_files) == 1 and server_files:
        client_src = sources[client_files[0]]
        servers = [r for i in server_files for r in runs[i]]
        server_src = ", ".join(sources[i] for i in server_files)
        return [join(c, servers, client_src, server_src) for c in runs[client_files[0]]]
    if _same_shape(runs):
        return [stack([file_runs[i] for file_runs in runs]) for i in range(len(runs[0]))]
    raise ReadError(
        f"{', '.join(sources)}: cannot combine these files into one side; give either several "
        "Prometheus scrapes of one run, one client-side per-request file plus server span "
        "files of the same run, or repeated runs as per-request files of one tool with the "
        "same columns and scenarios",
        file=", ".join(sources),
    )


# ---------------------------------------------------------------- repeated runs

# the per-request columns a run may have: runs of one side must have the same ones
_COLUMNS = (
    "ttft",
    "total",
    "request_id",
    "input_tokens",
    "output_tokens",
    "itl",
    "start_time",
    "end_time",
    "prompt_hash",
    "tpot",
)


def _shape(run: Run) -> tuple[object, ...]:
    return (
        run.meta.get("format"),
        run.scenario,
        tuple(run.slices),
        tuple(getattr(run, name) is None for name in _COLUMNS),
    )


def _same_shape(runs: list[list[Run]]) -> bool:
    """Every file holds per-request runs of the same tool, scenarios and columns."""
    if not all(r.per_request for file_runs in runs for r in file_runs):
        return False
    first = [_shape(r) for r in runs[0]]
    return all([_shape(r) for r in file_runs] == first for file_runs in runs[1:])


def stack(runs: list[Run]) -> Run:
    """Runs of one configuration as one Run: their requests one after another, `run` the
    index of the run each came from (a file's own `run` labels kept apart from the others')."""
    labels, offset = [], 0
    for r in runs:
        own = r.run if r.run is not None else np.zeros(r.n, dtype=np.int64)
        labels.append(own + offset)
        offset += int(own.max()) + 1

    def cat(name: str) -> Any:
        parts = [getattr(r, name) for r in runs]
        return None if parts[0] is None else np.concatenate(parts)

    given = [r.request_id for r in runs]
    ids = None if None in given else Ids.concat([i for i in given if i is not None])
    if ids is not None and repeated_ids(ids):  # each run sent the same ids
        ids = Ids(
            np.array([f"{k}:{rid}" for k, r in enumerate(runs) for rid in _ids(r)], dtype=object)
        )
    ok = None if all(r.ok is None for r in runs) else np.concatenate([r.succeeded for r in runs])
    durations = [r.duration_s for r in runs]
    first = runs[0]
    return replace(
        first,
        source=" + ".join(r.source for r in runs),
        n=sum(r.n for r in runs),
        slices={name: np.concatenate([r.slices[name] for r in runs]) for name in first.slices},
        ttft=cat("ttft"),
        total=cat("total"),
        ok=ok,
        request_id=ids,
        input_tokens=cat("input_tokens"),
        output_tokens=cat("output_tokens"),
        itl=_stacked_itl([r.itl for r in runs]),
        start_time=cat("start_time"),
        end_time=cat("end_time"),
        prompt_hash=cat("prompt_hash"),
        tpot=cat("tpot"),
        duration_s=None if None in durations else sum(d for d in durations if d is not None),
        doubts=tuple(d for r in runs for d in r.doubts),
        run=np.concatenate(labels),
        tool_percentiles={},  # each file's own were of its requests, not of all of them
    )


def _ids(run: Run) -> list[Any]:
    return [] if run.request_id is None else run.request_id.tolist()


def _stacked_itl(itls: list[Itl | None]) -> Itl | None:
    """The gaps of several runs' requests, one run after another."""
    if any(itl is None for itl in itls):
        return None
    have = [itl for itl in itls if itl is not None]
    ends = np.cumsum([0] + [len(itl.values) for itl in have[:-1]])
    return Itl(
        values=np.concatenate([itl.values for itl in have]),
        offsets=np.concatenate(
            [[0]] + [itl.offsets[1:] + end for itl, end in zip(have, ends, strict=True)]
        ).astype(np.int64),
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
                raise ReadError(
                    f"prometheus: {names}: counter reset between scrapes ({key[8:]!r} was "
                    f"created anew between {earlier.source} and {later.source}: the server "
                    "restarted); scrape before and after one run of one server process",
                    file=names,
                )
        for name, h in later.histograms.items():
            before = earlier.histograms.get(name)
            if before is None:
                continue
            if before.bounds.shape != h.bounds.shape or not np.array_equal(before.bounds, h.bounds):
                raise ReadError(
                    f"prometheus: {names}: metric {name!r} has different buckets in "
                    f"{earlier.source} and {later.source}; scrape the same server version",
                    file=names,
                )
            if (np.cumsum(h.counts) < np.cumsum(before.counts) - 1e-9).any():
                raise ReadError(
                    f"prometheus: {names}: counter reset between scrapes ({name!r} went down "
                    f"from {earlier.source} to {later.source}: the server restarted?); scrape "
                    "before and after one run of one server process",
                    file=names,
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
        raise ReadError(
            f"prometheus: {names}: no request finished between the scrapes; scrape before and "
            "after the benchmark, not twice before it",
            file=names,
        )
    return replace(last, histograms=histograms, meta=meta, summary_count=count, source=names)


# ---------------------------------------------------------------- client + server join


def _key(request_id: str) -> str:
    return request_id.removeprefix(VLLM_PREFIX)


def join(client: Run, servers: list[Run], client_src: str, server_src: str) -> Run:
    """The client's requests with the server's slices of the same request."""
    if client.request_id is None:
        raise ReadError(
            f"{client_src}: the client file has no request ids, so it cannot be joined with "
            f"{server_src}; send an X-Request-ID per request and keep it in the results",
            file=client_src,
        )
    client_ttft = client.ttft if client.ttft is not None else client.slices.get("first_token")
    if client_ttft is None:
        raise ReadError(
            f"{client_src}: no time to first token per request, so the network share cannot "
            f"be split off the server's TTFT from {server_src}",
            file=client_src,
        )
    match = _match(client.request_id, servers)
    wanted = client.succeeded
    n_wanted = int(wanted.sum())
    n_matched = int((match.matched & wanted).sum())
    if n_wanted == 0 or n_matched < MIN_MATCH * n_wanted:
        sample = ", ".join(str(r) for r in client.request_id[~match.matched][:3].tolist())
        raise ReadError(
            f"{client_src} + {server_src}: only {n_matched} of {n_wanted} requests have a "
            f"server span with the same request id (need {setting_pct(MIN_MATCH)}; unmatched e.g. "
            f"{sample}); pass the client and server files of the same run, and send "
            "X-Request-ID so the server names the request after it",
            file=client_src,
        )
    server_ttft = match.column("ttft")
    if np.isnan(server_ttft[match.matched & wanted]).all():
        server_ttft = match.column("queue") + match.column("prefill")
    network = client_ttft - server_ttft
    negative = network < 0
    meta: dict[str, str | float] = dict(client.meta)
    for name in ("format", "schema"):
        parts = dict.fromkeys(str(r.meta.get(name, "unknown")) for r in (client, *servers))
        meta[name] = " + ".join(parts)
    # always set (0 when none), so the report can say what was dropped or clipped
    meta["joined"] = f"{client_src} + {server_src}"
    meta["matched"], meta["unmatched"] = float(n_matched), float(n_wanted - n_matched)
    meta["network_clipped"] = float(negative.sum())
    meta["network_clipped_max_ms"] = float(-np.nanmin(network)) if negative.any() else 0.0
    slices: dict[str, FloatArray] = {"network": np.where(negative, 0.0, network)}
    for name in SERVER_SLICES:
        slices[name] = match.column(name)
    extra = {name for run in servers for name in run.slices} - set(slices) - {"first_token"}
    for name in sorted(extra):
        slices[name] = match.column(name)
    return _kept(
        client,
        keep=match.matched | ~wanted,
        slices=slices,
        ttft=client_ttft,
        ok=client.succeeded & match.server_ok(),
        meta=meta,
    )


@dataclass(frozen=True, slots=True)
class _Match:
    """Which server span each client request has: run `which[i]`, row `where[i]` (-1: none)."""

    servers: list[Run]
    which: npt.NDArray[np.int64]
    where: npt.NDArray[np.int64]

    @property
    def matched(self) -> BoolArray:
        return self.where >= 0

    def column(self, name: str) -> FloatArray:
        """A server slice (or its TTFT / total) for each client request; NaN where unmatched."""
        out = np.full(len(self.where), np.nan)
        for s, run in enumerate(self.servers):
            values = run.slices.get(name)
            if values is None and name in ("ttft", "total"):
                values = getattr(run, name)
            if values is None:
                continue
            mine = self.matched & (self.which == s)
            out[mine] = values[self.where[mine]]
        return out

    def server_ok(self) -> BoolArray:
        """Whether the server saw each request succeed (True where unmatched)."""
        out = np.ones(len(self.where), dtype=bool)
        for s, run in enumerate(self.servers):
            mine = self.matched & (self.which == s)
            out[mine] = run.succeeded[self.where[mine]]
        return out


def _match(client_ids: Ids, servers: list[Run]) -> _Match:
    """Each client request's server span, by request id (with or without vLLM's prefix)."""
    index: dict[str, tuple[int, int]] = {}
    for s, run in enumerate(servers):
        if run.request_id is None:
            raise ReadError(
                f"{run.source}: server spans without request ids cannot be joined",
                file=run.source,
            )
        for row, rid in enumerate(run.request_id.tolist()):
            index.setdefault(str(rid), (s, row))
            index.setdefault(_key(str(rid)), (s, row))
    where = np.full(len(client_ids), -1, dtype=np.int64)
    which = np.full(len(client_ids), -1, dtype=np.int64)
    for i, rid in enumerate(client_ids.tolist()):
        hit = index.get(str(rid)) or index.get(_key(str(rid)))
        if hit is not None:
            which[i], where[i] = hit
    return _Match(servers=servers, which=which, where=where)


def _kept(
    client: Run,
    *,
    keep: BoolArray,
    slices: dict[str, FloatArray],
    ttft: FloatArray,
    ok: BoolArray,
    meta: dict[str, str | float],
) -> Run:
    """The joined run: the client's rows in `keep` (matched, or failed on the client)."""
    assert client.request_id is not None  # join checked it

    def rows(values: FloatArray | None) -> FloatArray | None:
        return None if values is None else values[keep]

    return replace(
        client,
        n=int(keep.sum()),
        slices={k: v[keep] for k, v in slices.items()},
        ttft=ttft[keep],
        total=rows(client.total),
        ok=None if ok[keep].all() else ok[keep],
        request_id=client.request_id[keep],
        input_tokens=rows(client.input_tokens),
        output_tokens=rows(client.output_tokens),
        itl=client.itl.rows(keep) if client.itl is not None and not keep.all() else client.itl,
        start_time=rows(client.start_time),
        end_time=rows(client.end_time),
        prompt_hash=client.prompt_hash[keep] if client.prompt_hash is not None else None,
        run=client.run[keep] if client.run is not None else None,
        tpot=rows(client.tpot),
        meta=meta,
        # the tool's own were of all its requests, not of those the join kept
        tool_percentiles=client.tool_percentiles if keep.all() else {},
    )
