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

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from budgetdiff import numbers
from budgetdiff.errors import UsageError
from budgetdiff.measure.results import Unit, unit_of
from budgetdiff.table import Run, all_finite, common_ids, repeated_ids

# Ids pair when at least this share of the requests in both agree on what they asked (a few
# may differ: an answer cut short by a timeout); the ones that disagree are left out.
AGREE = 0.95
# Without a proof of what was asked, ids pair only when most of the smaller side is in both.
OVERLAP = 0.9
# What a request asked, as the tables may say it: (Run field, words for a note)
EVIDENCE = (
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
        return _cut(base, head, ib, ih, _paired(base.n, head.n, len(ib), len(ib), [note], unit))
    prompts: list[np.ndarray | None] = []  # the mask of `same_prompts`, once asked
    pb, ph = ib, ih  # (typed: the closure's)

    def same_prompts() -> int | None:
        prompts.append(_same_prompts(base, head, pb, ph))
        return None if prompts[-1] is None else int(prompts[-1].sum())

    overlap = Overlap(
        base.n, head.n, len(ib), tuple(said), tuple(differ), int(agree.sum()), same_prompts
    )
    d = decide(overlap, unit)
    if not d.paired:
        return Match(base, head, False, d.notes)
    keep = {"common": None, "agree": agree, "prompts": prompts[-1] if prompts else None}[d.on]
    if keep is not None:
        ib, ih = ib[keep], ih[keep]
    return _cut(base, head, ib, ih, d)


@dataclass(frozen=True)
class Overlap:
    """What the verdict reads of the ids both runs hold, as counts (the in-memory `match`
    counts them from the arrays, the engine path in a join): each side's requests, the ids in
    both (`common`, ids usable on both sides), what the requests were compared on (`said`),
    what some differ on (`differ`), how many agree on all of it (`agree`), and, asked only
    when most disagree, how many agree on their prompts (None: nothing proves it)."""

    n_base: int
    n_head: int
    common: int
    said: tuple[str, ...]
    differ: tuple[str, ...]
    agree: int
    same_prompts: Callable[[], int | None]


@dataclass(frozen=True)
class Decision:
    """Whether the runs pair, on which of the ids in both (`common`: all of them, `agree`:
    those that agree on what they asked, `prompts`: those that agree on their prompts), how
    many pairs, whether the runs are cut to them, and what the report says."""

    paired: bool
    on: str = "common"
    kept: int = 0
    cut: bool = False
    notes: tuple[str, ...] = ()


def decide(o: Overlap, unit: Unit) -> Decision:
    """The verdict of `match` (without `--pair`) from the counts: paired where the requests in
    both agree on what they asked (or, with nothing to say it, where most are in both)."""
    if not o.common:
        return Decision(False)
    smaller = min(o.n_base, o.n_head)
    if not o.said:
        if o.common < OVERLAP * smaller:
            return Decision(False, notes=(_few_in_both(o.common, o, unit),))
        note = (
            f"paired by {unit.value} id alone: neither table has token counts or a prompt hash "
            f"to show the {unit.plural} asked the same; --no-pair if they did not"
        )
        return _paired(o.n_base, o.n_head, o.common, o.common, [note], unit)
    share = o.agree / o.common
    if share < AGREE:
        return _disagree(o, share, unit)
    kept = o.agree
    if kept < OVERLAP * smaller:
        return Decision(False, notes=(_few_in_both(kept, o, unit),))
    notes = [f"the {unit.plural} paired by id agree on their {_what(list(o.said))}"]
    if kept < o.common:  # one note: how many agree, and on what the others differ
        notes = [
            f"{numbers.count(kept)} of the {numbers.count(o.common)} {unit.plural} in both "
            f"agree on their {_what(list(o.said))}: compared on the {numbers.count(kept)} that "
            f"agree, paired; {numbers.count(o.common - kept)} disagree on their "
            f"{_what(list(o.differ))} and are left out"
        ]
    return replace(_paired(o.n_base, o.n_head, kept, o.common, notes, unit), on="agree")


def _disagree(o: Overlap, share: float, unit: Unit) -> Decision:
    """Ids in both whose requests mostly disagree on what they asked: paired on the prompts
    where those agree (a re-run answered them anew), else compared unpaired, said so."""
    same = o.same_prompts()
    if same is not None:
        return _answers_differ(o, same, unit)
    note = (
        f"{numbers.count(o.common)} {unit.value} ids are in both runs, but their "
        f"{_what(list(o.said))} agree on only {numbers.pct(100 * share)} of them: not the "
        f"same {unit.plural}, compared unpaired, on every {unit.value} of each (base "
        f"{numbers.count(o.n_base)}, head {numbers.count(o.n_head)}); --pair to pair them "
        "anyway"
    )
    return Decision(False, notes=(note,))


def _paired(
    n_base: int, n_head: int, kept: int, common: int, notes: list[str], unit: Unit
) -> Decision:
    """Paired on `kept` of the `common` ids: the runs cut to those requests (each in its own
    order) unless they are every request of both, said so when some ids are in one run only
    (those left out for disagreeing are said by `decide`)."""
    if kept == n_base == n_head:
        return Decision(True, kept=kept, notes=tuple(notes))
    if common < max(n_base, n_head):
        notes.append(
            f"head ran {numbers.count(n_head)} {unit.plural} and base {numbers.count(n_base)}: "
            f"compared on the {numbers.count(common)} both ran, the others are left out"
        )
    return Decision(True, kept=kept, cut=True, notes=tuple(notes))


def _cut(base: Run, head: Run, ib: np.ndarray, ih: np.ndarray, d: Decision) -> Match:
    if not d.cut:
        return Match(base, head, True, d.notes)
    return Match(_rows(base, np.sort(ib)), _rows(head, np.sort(ih)), True, d.notes)


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


def _answers_differ(o: Overlap, kept: int, unit: Unit) -> Decision:
    """The same prompts answered anew: paired on the prompts both ran (the answers' lengths
    are part of what changed), said so."""
    if kept < OVERLAP * min(o.n_base, o.n_head):
        return Decision(False, notes=(_few_in_both(kept, o, unit),))
    note = (
        f"{numbers.count(kept)} {unit.plural} in both runs ask the same prompts (their prompt "
        "token counts or hashes agree) but got answers of other lengths: paired on the "
        "prompts, the answers as each run got them (--no-pair to compare every request of each)"
    )
    return replace(_paired(o.n_base, o.n_head, kept, o.common, [note], unit), on="prompts")


def _few_in_both(k: int, o: Overlap, unit: Unit) -> str:
    return (
        f"only {numbers.count(k)} {unit.value} ids are in both runs (base "
        f"{numbers.count(o.n_base)}, head {numbers.count(o.n_head)}): compared unpaired, on every "
        f"{unit.value} of each"
    )


def _unusable(run: Run) -> str | None:
    """Why a run's ids cannot pair its requests (or tasks), or None."""
    ids, unit = run.request_id, unit_of(run.meta)
    if ids is None or run.n < 2:
        return f"{run.source} has no {unit.value} ids"
    if ids.blank().any():
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
    # every request of both, in the same order (`common_ids` gives its one array of places)
    whole = ib is ih and len(ib) == base.n == head.n
    for name, words in EVIDENCE:
        if not _both(base, head, name):
            continue
        text = name == "prompt_hash"
        if whole and not text and _every_one_known(base, head, name):
            same = getattr(base, name) == getattr(head, name)  # one comparison, no copies
            agree &= same
            said += [words] if len(same) else []
            differ += [] if same.all() else [words]
            continue
        x, y = getattr(base, name)[ib], getattr(head, name)[ih]
        known = (x != "") & (y != "") if text else np.isfinite(x) & np.isfinite(y)
        if name == "output_tokens":  # a failed request's count is what it got, not what it asked
            known &= base.succeeded[ib] & head.succeeded[ih]
        same = ~known | (x == y)
        agree &= same
        said += [words] if known.any() else []
        differ += [] if same.all() else [words]
    return agree, said, differ


def _every_one_known(base: Run, head: Run, name: str) -> bool:
    """Every request of both runs has a number for `name` (and, for the output token counts,
    succeeded): what `_agreement` would find known of each, from sums and one test."""
    counts = name != "output_tokens" or bool(base.succeeded.all() and head.succeeded.all())
    return counts and all_finite(getattr(base, name)) and all_finite(getattr(head, name))


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
