"""Which requests of base and head are the same request: paired by id only when proven.

Two runs that both number their requests r0..r999 share every id and none of their prompts.
A request id pairs a base request with a head request only when the two agree on what they
asked: the prompt and output token counts where both tables have them, the prompt hash where
both give one. A head that re-ran part of the base is compared on the requests both ran; a
re-run that got answers of other lengths pairs on what it asked (the prompts' token counts,
where they tell prompts apart, or hashes).
Pure: runs in, runs out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from budgetdiff import numbers
from budgetdiff.errors import UsageError
from budgetdiff.measure.results import Unit, unit_of
from budgetdiff.table import Run, common_ids, repeated_ids

# Ids pair when at least this share of the requests in both agree on what they asked (a few
# may differ: an answer cut short by a timeout); the ones that disagree are left out.
AGREE = 0.95
# Without a proof of what was asked, ids pair only when most of the smaller side is in both.
OVERLAP = 0.9
# What a request asked, as the tables may say it: (Run field, words for a note)
_EVIDENCE = (
    ("input_tokens", "prompt token counts"),
    ("output_tokens", "output token counts"),
    ("prompt_hash", "prompt hashes"),
)


@dataclass(frozen=True)
class Match:
    """The base and head requests to compare (all of them, or those both ran), whether they are
    paired request by request, and what the report must say about it."""

    base: Run
    head: Run
    paired: bool
    notes: tuple[str, ...] = ()


def match(base: Run, head: Run, pair: bool | None = None) -> Match:
    """Pair base and head by request id where the requests agree on what they asked; `pair`
    True (`--pair`) pairs on ids alone, False (`--no-pair`) never pairs. The notes name what
    the runs count (`request`, or an agent's `task`)."""
    unit = unit_of(head.meta)
    if pair is False:
        return Match(base, head, False, (f"not paired by {unit.value} id (--no-pair)",))
    a, b = base.request_id, head.request_id
    # both sides' ids hashed once: the pairs, and (remembered) whether any id repeats
    ib, ih = common_ids(a, b) if a is not None and b is not None else (None, None)
    why_not = _unusable(base) or _unusable(head)
    if why_not:
        if pair:
            raise UsageError(f"--pair: {why_not}; pair only runs with one id per {unit.value}")
        return Match(base, head, False)
    assert ib is not None and ih is not None
    if not len(ib):
        if pair:
            raise UsageError(f"--pair: no {unit.value} id of {head.source} is in {base.source}")
        return Match(base, head, False)
    agree, said, differ = _agreement(base, head, ib, ih)
    if pair:
        agreed = f"; their {_what(said)} agree on {numbers.pct(100 * float(agree.mean()))}"
        note = f"paired by {unit.value} id (--pair){agreed if said else ''}"
        return _paired(base, head, ib, ih, [note], unit, len(ib))
    if not said:
        if len(ib) < OVERLAP * min(base.n, head.n):
            return Match(base, head, False, (_few_in_both(len(ib), base, head, unit),))
        note = (
            f"paired by {unit.value} id alone: neither table has token counts or a prompt hash "
            f"to show the {unit.plural} asked the same; --no-pair if they did not"
        )
        return _paired(base, head, ib, ih, [note], unit, len(ib))
    if float(agree.mean()) < AGREE:
        return _disagree(base, head, ib, ih, agree, said, unit)
    kept = int(agree.sum())
    if kept < OVERLAP * min(base.n, head.n):
        return Match(base, head, False, (_few_in_both(kept, base, head, unit),))
    notes = [f"the {unit.plural} paired by id agree on their {_what(said)}"]
    if kept < len(ib):  # one note: how many agree, and on what the others differ
        notes = [
            f"{numbers.count(kept)} of the {numbers.count(len(ib))} {unit.plural} in both "
            f"agree on their {_what(said)}: compared on the {numbers.count(kept)} that agree, "
            f"paired; {numbers.count(len(ib) - kept)} disagree on their {_what(differ)} "
            "and are left out"
        ]
    return _paired(base, head, ib[agree], ih[agree], notes, unit, len(ib))


def _disagree(
    base: Run,
    head: Run,
    ib: np.ndarray,
    ih: np.ndarray,
    agree: np.ndarray,
    said: list[str],
    unit: Unit,
) -> Match:
    """Ids in both whose requests mostly disagree on what they asked: paired on the prompts
    where those agree (a re-run answered them anew), else compared unpaired, said so."""
    same = _same_prompts(base, head, ib, ih)
    if same is not None:
        return _answers_differ(base, head, ib, ih, same, unit)
    share = float(agree.mean())
    note = (
        f"{numbers.count(len(ib))} {unit.value} ids are in both runs, but their "
        f"{_what(said)} agree on only {numbers.pct(100 * share)} of them: not the "
        f"same {unit.plural}, compared unpaired, on every {unit.value} of each (base "
        f"{numbers.count(base.n)}, head {numbers.count(head.n)}); --pair to pair them "
        "anyway"
    )
    return Match(base, head, False, (note,))


def _paired(
    base: Run,
    head: Run,
    ib: np.ndarray,
    ih: np.ndarray,
    notes: list[str],
    unit: Unit,
    common: int,
) -> Match:
    """Both runs cut to the paired requests (each in its own order), and said so when some ids
    are in one run only (those left out for disagreeing are said by `match`)."""
    if len(ib) == base.n == head.n:
        return Match(base, head, True, tuple(notes))
    if common < max(base.n, head.n):
        notes.append(
            f"head ran {numbers.count(head.n)} {unit.plural} and base {numbers.count(base.n)}: "
            f"compared on the {numbers.count(common)} both ran, the others are left out"
        )
    return Match(_rows(base, np.sort(ib)), _rows(head, np.sort(ih)), True, tuple(notes))


def _same_prompts(base: Run, head: Run, ib: np.ndarray, ih: np.ndarray) -> np.ndarray | None:
    """Where the runs' output lengths disagree but what the requests asked agrees (prompt hashes,
    or prompt token counts that vary from request to request, so that they tell prompts
    apart): the requests in both that agree on their prompts, or None. A re-run samples new
    answers; its prompts are the base's."""
    agree = np.ones(len(ib), dtype=bool)
    proven = False
    for name in ("input_tokens", "prompt_hash"):
        if not _both(base, head, name):
            continue
        x, y = getattr(base, name)[ib], getattr(head, name)[ih]
        text = name == "prompt_hash"
        known = (x != "") & (y != "") if text else np.isfinite(x) & np.isfinite(y)
        if not known.any() or (not text and len(np.unique(x[known])) < 2):
            continue  # one prompt length for every request: it tells no prompt apart
        agree &= ~known | (x == y)
        proven = True
    return agree if proven and float(agree.mean()) >= AGREE else None


def _answers_differ(
    base: Run, head: Run, ib: np.ndarray, ih: np.ndarray, same: np.ndarray, unit: Unit
) -> Match:
    """The same prompts answered anew: paired on the prompts both ran (the answers' lengths
    are part of what changed), said so."""
    kept = int(same.sum())
    if kept < OVERLAP * min(base.n, head.n):
        return Match(base, head, False, (_few_in_both(kept, base, head, unit),))
    note = (
        f"{numbers.count(kept)} {unit.plural} in both runs ask the same prompts (their prompt "
        "token counts or hashes agree) but got answers of other lengths: paired on the "
        "prompts, the answers as each run got them (--no-pair to compare every request of each)"
    )
    return _paired(base, head, ib[same], ih[same], [note], unit, len(ib))


def _few_in_both(k: int, base: Run, head: Run, unit: Unit) -> str:
    return (
        f"only {numbers.count(k)} {unit.value} ids are in both runs (base "
        f"{numbers.count(base.n)}, head {numbers.count(head.n)}): compared unpaired, on every "
        f"{unit.value} of each"
    )


def _unusable(run: Run) -> str | None:
    """Why a run's ids cannot pair its requests (or tasks), or None."""
    ids, unit = run.request_id, unit_of(run.meta)
    if ids is None or run.n < 2:
        return f"{run.source} has no {unit.value} ids"
    if not (ids != "").all():
        return f"{run.source} has {unit.plural} without an id"
    if repeated_ids(ids):
        return f"{run.source} repeats {unit.value} ids"
    return None


def _both(base: Run, head: Run, name: str) -> bool:
    return getattr(base, name) is not None and getattr(head, name) is not None


def _agreement(
    base: Run, head: Run, ib: np.ndarray, ih: np.ndarray
) -> tuple[np.ndarray, list[str], list[str]]:
    """Per request in both: do they agree on what they asked, where both tables say it; what
    was compared (a column both have, with a value on both sides for some request); and what
    some of them differ on."""
    agree = np.ones(len(ib), dtype=bool)
    said: list[str] = []
    differ: list[str] = []
    for name, words in _EVIDENCE:
        if not _both(base, head, name):
            continue
        x, y = getattr(base, name)[ib], getattr(head, name)[ih]
        text = name == "prompt_hash"
        known = (x != "") & (y != "") if text else np.isfinite(x) & np.isfinite(y)
        if name == "output_tokens":  # a failed request's count is what it got, not what it asked
            known &= base.succeeded[ib] & head.succeeded[ih]
        same = ~known | (x == y)
        agree &= same
        said += [words] if known.any() else []
        differ += [] if same.all() else [words]
    return agree, said, differ


def _what(said: list[str]) -> str:
    return " and ".join(said)


def _rows(run: Run, index: np.ndarray) -> Run:
    """The run's requests at `index` (every per-request column cut alike)."""

    def cut(values: Any) -> Any:
        return None if values is None else values[index]

    return replace(
        run,
        n=len(index),
        slices={k: v[index] for k, v in run.slices.items()},
        ttft=cut(run.ttft),
        total=cut(run.total),
        ok=cut(run.ok),
        request_id=cut(run.request_id),
        input_tokens=cut(run.input_tokens),
        output_tokens=cut(run.output_tokens),
        itl=run.itl.rows(index) if run.itl is not None else None,
        start_time=cut(run.start_time),
        end_time=cut(run.end_time),
        prompt_hash=cut(run.prompt_hash),
        tpot=cut(run.tpot),
        run=cut(run.run),
        tool_percentiles={},  # the tool's own were of all its requests, not of these
    )
