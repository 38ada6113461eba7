"""Re-budgeting: propose a new split of the SLO across the slices from measured data, warn when
an SLO cannot be met by construction, and write the proposal back into the budget file.

`propose`, `feasibility` and `missing_slices` compute; `write_budget` is the one edge (file I/O).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from budgetdiff.budget import Budget, parse_budget
from budgetdiff.errors import BudgetError
from budgetdiff.table import UNATTRIBUTED

if TYPE_CHECKING:
    from budgetdiff.whatif import FixFirst

ADDED_COMMENT = "# added by budgetdiff rebudget"
# `unattributed` joins a proposal when its measured value or tail contribution would round to at
# least 1 ms; less is rounding noise.
_UNATTRIBUTED_MIN_MS = 0.5
# Feasibility: warn when the per-token decode time the SLO leaves is this far below measured.
_FAR_BELOW = 0.8
# An anchor (`&name`) or tag (`!!int`) before a scalar, each followed by blanks.
_PROPERTIES = re.compile(r"(?:[&!][^\s]*\s+)+")


@dataclass(frozen=True)
class Proposal:
    """A proposed allocation of the SLO; `messages` say in plain words what changed and why."""

    allocation: dict[str, int]  # slice -> whole ms, in the budget's slice order
    target_ms: float  # what the allocation fills: total SLO x (1 - headroom), or the SLO
    fits: bool  # the total's (and TTFT's) measured percentile fit their SLO: writable
    shortfall_ms: float  # by how much the total (or TTFT) is over its SLO when not fits, else 0
    work_first: str | None  # the slice whose 10% speed-up helps the total most, when not fits
    messages: tuple[str, ...]


def missing_slices(budget: Budget, measured: Mapping[str, float]) -> list[str]:
    """The budget's slices that `measured` has no (finite) value for, in budget order
    (`unattributed` is computed, not measured: absent, it is 0 ms)."""
    return [
        name
        for name in budget.slices
        if name != UNATTRIBUTED and (name not in measured or not math.isfinite(measured[name]))
    ]


def _num(x: float) -> str:
    """Milliseconds in a message, as a budget file writes them: '4200', '812', '7.5'."""
    return f"{x:.0f}" if abs(x) >= 10 or x == int(x) else f"{x:.1f}"


def propose(
    budget: Budget,
    parts: Mapping[str, float],
    *,
    total_ms: float,
    ttft_ms: float | None = None,
    fix_first: Sequence[FixFirst] = (),
) -> Proposal:
    """Split the total SLO across the budget's slices so that the same data is within every
    slice budget: a slice's budget holds its part of the total's p-th percentile.

    - `parts`: each slice's part of the total's p-th percentile at head
      (`attribution.quantile_contributions`; they add up to `total_ms`, that percentile);
    - the target is total SLO x (1 - headroom) when the total fits it; when the total fits
      only the SLO itself, the SLO (the report warns of low headroom); without a total SLO, the
      sum of the current slice budgets (so that repeated `rebudget --write` is stable);
    - when the total fits, every slice gets more than its part (at least its part + 1 ms,
      whole ms) and the slack is shared in proportion to the parts, so no slice sits at 100%;
    - it does not fit only when the total (or TTFT) is over its SLO: then it says by how much
      and which slice to work on first (`fix_first`, else the largest part), and the
      allocation is the target split in proportion to the parts (not to be written);
    - `unattributed` joins the allocation (after the budget's slices) when the budget lacks it
      and its part is 0.5 ms or more: it is real time, to be covered;
    - whole ms, summing to at most the target, every slice at least 1 ms.

    The caller checks `missing_slices` first; a missing value here is a ValueError.
    """
    if not budget.slices:
        raise BudgetError(
            "slices: the budget has no slices to re-budget; add them, e.g. `decode: 4200`"
        )
    missing = missing_slices(budget, parts)
    if missing:
        raise ValueError(f"propose: no measured value for {', '.join(missing)}")
    names = list(budget.slices)
    added = UNATTRIBUTED not in budget.slices and parts.get(UNATTRIBUTED, 0.0) >= (
        _UNATTRIBUTED_MIN_MS
    )
    if added:
        names.append(UNATTRIBUTED)
    need = {n: max(0.0, parts.get(n, 0.0)) for n in names}
    weights = dict(need) if math.fsum(need.values()) > 0 else dict.fromkeys(names, 1.0)

    p = f"p{budget.percentile:g}"
    pct = f"{budget.headroom * 100:g}%"
    slo = budget.slo.total
    messages: list[str] = []
    shortfall = 0.0
    over: str | None = None
    if slo is not None:
        target = slo * (1 - budget.headroom)
        messages.append(
            f"target {_num(target)} ms = total SLO {_num(slo)} ms x (1 - {pct} headroom)"
        )
        if target < total_ms <= slo:
            target = slo
            messages.append(
                f"the {p} end to end, {_num(total_ms)} ms, leaves less than the budget's {pct} "
                f"headroom: the split fills the SLO itself, {_num(slo)} ms"
            )
        elif total_ms > slo:
            shortfall, over = total_ms - slo, f"the {p} end to end, {_num(total_ms)} ms"
    else:
        target = math.fsum(s.budget for s in budget.slices.values())
        messages.append(
            f"the budget has no total SLO: the target is the sum of the current slice budgets, "
            f"{_num(target)} ms (add `slo: total:` to re-budget against an SLO)"
        )
        if total_ms > target:
            shortfall, over = total_ms - target, f"the {p} end to end, {_num(total_ms)} ms"
    ttft_slo = budget.slo.ttft
    if over is None and ttft_slo is not None and ttft_ms is not None and ttft_ms > ttft_slo:
        shortfall, over = ttft_ms - ttft_slo, f"the {p} TTFT, {_num(ttft_ms)} ms"
    fits = over is None

    units = math.floor(target + 1e-9)
    floors = _lower_bounds(need, units) if fits else _at_least_one(names, units)
    allocation = _round(_water_fill(weights, floors, units), units)

    work_first = None
    for name in names:
        if budget.slice_budget(name) is None:
            messages.append(
                f"{name} (not in the budget) {allocation[name]} ms: time the slices do not "
                f"explain ({_num(need[name])} ms of the {p} end to end); it gets its own line, "
                "or add the slice that is missing"
            )
    # the per-slice old -> new is `allocation` itself: every rendering shows it as a table
    if all(allocation[n] == budget.slice_budget(n) for n in names):
        messages.append("the current slice budgets already hold the measured parts")
    if not fits:
        ranked = [f for f in fix_first if f.slice in names and f.total_change_ms < 0]
        work_first = ranked[0].slice if ranked else max(names, key=lambda n: weights[n])
        gain = f" (10% faster: {_num(ranked[0].total_change_ms)} ms)" if ranked else ""
        messages.append(
            f"does not fit: {over} is over its SLO by {_num(shortfall)} ms; no split of the "
            f"slices can fix that: work on {work_first} first{gain}"
        )
    ttft_slices = budget.ttft_slices
    if budget.slo.ttft is not None and ttft_slices:
        ttft_sum = sum(allocation[n] for n in ttft_slices)
        if ttft_sum > budget.slo.ttft:
            messages.append(
                f"the slices up to {ttft_slices[-1]} get {ttft_sum} ms, more than the "
                f"ttft SLO {_num(budget.slo.ttft)} ms"
            )
    return Proposal(
        allocation=allocation,
        target_ms=target,
        fits=fits,
        shortfall_ms=shortfall,
        work_first=work_first,
        messages=tuple(messages),
    )


def _at_least_one(names: list[str], units: int) -> dict[str, float]:
    return dict.fromkeys(names, 1.0 if units >= len(names) else 0.0)


def _lower_bounds(measured: dict[str, float], units: int) -> dict[str, float]:
    """Whole-ms floors: above the measured parts (+1 ms, so none sits at 100%) where that fits
    in whole ms, else the parts rounded up, else down."""
    for rounding in (lambda m: math.floor(m) + 1, math.ceil, math.floor):
        floors = {n: float(max(1, rounding(m))) for n, m in measured.items()}
        if sum(floors.values()) <= units:
            return floors
    return _at_least_one(list(measured), units)


def _water_fill(
    weights: dict[str, float], floors: dict[str, float], units: int
) -> dict[str, float]:
    """Split `units` in proportion to `weights`, with no slice below its floor (sum of floors
    <= units): fix the slices whose share falls below their floor at the floor, re-split the
    rest, until none does."""
    fixed: dict[str, float] = {}
    while True:
        free = [n for n in weights if n not in fixed]
        left = units - math.fsum(fixed.values())
        wsum = math.fsum(weights[n] for n in free)
        if wsum > 0:
            shares = {n: left * weights[n] / wsum for n in free}
        else:  # only weightless slices are left: split evenly
            shares = {n: left / len(free) for n in free} if free else {}
        under = [n for n in free if shares[n] < floors[n]]
        if not under:
            return {n: fixed.get(n, shares.get(n, 0.0)) for n in weights}
        for n in under:
            fixed[n] = floors[n]


def _round(shares: dict[str, float], units: int) -> dict[str, int]:
    """Whole ms: floor each share, then hand the ms left to the largest remainders, so the sum
    is `units` (the floors are whole, so floor(share) never drops below one)."""
    out = {n: math.floor(s + 1e-9) for n, s in shares.items()}
    left = units - sum(out.values())
    order = sorted(shares, key=lambda n: out[n] - shares[n])  # largest remainder first
    for n in order[: max(0, left)]:
        out[n] += 1
    return out


def feasibility(
    budget: Budget,
    *,
    ttft_p_ms: float | None,
    output_tokens_p50: float | None,
    tpot_measured_ms: float | None,
) -> list[str]:
    """Warnings for an SLO that cannot be met by construction (empty when there is none).

    The decode time per output token that the total SLO leaves after TTFT is
    (total target - ttft target, or the measured TTFT without one) / (median output tokens - 1).
    Warn when nothing is left, when it is below 1 ms per token, or when it is more than 20%
    below the median measured TPOT (`tpot_measured_ms`): a typical answer at a typical rate.
    """
    total = budget.slo.total
    ttft = budget.slo.ttft if budget.slo.ttft is not None else ttft_p_ms
    if total is None or ttft is None or output_tokens_p50 is None:
        return []
    if not math.isfinite(output_tokens_p50) or output_tokens_p50 <= 1:
        return []
    tokens = output_tokens_p50
    source = "ttft target" if budget.slo.ttft is not None else "measured ttft"
    left = total - ttft
    if left <= 0:
        return [
            f"the {source} ({_num(ttft)} ms) leaves nothing of the total target "
            f"({_num(total)} ms) for the {_num(tokens)} output tokens of a median answer"
        ]
    per_token = left / (tokens - 1)
    said = (
        f"the total target {_num(total)} ms leaves {per_token:.2f} ms per output token after "
        f"the {source} of {_num(ttft)} ms, for a median answer of {_num(tokens)} tokens"
    )
    reasons: list[str] = []
    if per_token < 1.0:
        reasons.append("below 1 ms per token, which no serving stack reaches")
    if tpot_measured_ms is not None and per_token < _FAR_BELOW * tpot_measured_ms:
        faster = 100.0 * (1 - per_token / tpot_measured_ms)
        reasons.append(
            f"the median measured TPOT is {tpot_measured_ms:.2f} ms: decoding must get "
            f"{faster:.0f}% "
            f"faster, or the total SLO grow to about "
            f"{_num(ttft + tpot_measured_ms * (tokens - 1))} ms"
        )
    return [f"{said}: {'; '.join(reasons)}"] if reasons else []


# --- the edge: writing the budget file ---------------------------------------------------


def write_budget(path: Path, allocation: Mapping[str, int]) -> None:
    """Set the slice budgets in `path` to `allocation`, changing nothing else in the file.

    ruamel.yaml parses the file to find where each slice's budget number is (short form
    `decode: 4200`, long form `decode: {budget: 4200, ...}` or block style); only those number
    tokens are replaced in the original text, so comments, key order, quoting, blank lines and
    line endings survive byte for byte. A slice the file does not have is appended at the end
    of `slices:` with the comment `# added by budgetdiff rebudget`. The result is validated as
    a budget and written atomically (a temporary file in the same folder, then os.replace).
    """
    target = Path(os.path.realpath(path))
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        raise BudgetError(f"{path}: no such budget file to update") from None
    except OSError as e:
        raise BudgetError(f"{path}: cannot read the budget file ({e.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BudgetError(f"{path}: not UTF-8 text; save the budget file as UTF-8") from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    new_text = bom + update_budget_text(text[len(bom) :], allocation, str(path))
    parse_budget(new_text[len(bom) :], str(path))  # never write a budget that does not load
    _atomic_write(target, new_text.encode("utf-8"), str(path))


def update_budget_text(text: str, allocation: Mapping[str, int], source: str) -> str:
    """`text` with the slice budgets of `allocation` replaced or added (see `write_budget`)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.nodes import MappingNode, ScalarNode

    try:
        root = YAML(typ="rt").compose(text)
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise BudgetError(f"{source}{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(root, MappingNode):
        raise BudgetError(f"{source}: the budget must be a mapping of keys")
    slices = _value_of(root, "slices")
    if slices is None or (isinstance(slices, ScalarNode) and slices.value in ("", "~", "null")):
        if allocation:
            raise BudgetError(
                f"{source}: has no `slices:` to update; add `slices:` with one line per slice"
            )
        return text
    if not isinstance(slices, MappingNode):
        raise BudgetError(f"{source}:{_line(slices)}: slices: must be a mapping of slice names")

    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), in the text
    present: set[str] = set()
    for key, value in slices.value:
        name = str(key.value)
        if name not in allocation:
            continue
        present.add(name)
        number = value
        if isinstance(value, MappingNode):
            number = _value_of(value, "budget")
            if number is None:
                raise BudgetError(f"{source}:{_line(value)}: slices.{name}: has no `budget:`")
        if number.start_mark.index < key.end_mark.index:
            raise BudgetError(
                f"{source}:{_line(key)}: slices.{name}: the budget is a YAML alias; write it "
                "as a number so that rebudget can update it"
            )
        if not isinstance(number, ScalarNode) or not number.value.strip():
            raise BudgetError(
                f"{source}:{_line(value)}: slices.{name}: write its budget as a number"
            )
        edits.append(_number_edit(text, number, allocation[name]))

    new = [n for n in allocation if n not in present]
    if new:
        edits.append(_append_edit(text, slices, [(n, allocation[n]) for n in new]))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _value_of(mapping: Any, key: str) -> Any:
    for k, v in mapping.value:
        if str(k.value) == key:
            return v
    return None


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1


def _number_edit(text: str, node: Any, value: int) -> tuple[int, int, str]:
    """Replace the scalar's token (after any anchor or tag), keeping its quotes if it has them."""
    start, end = node.start_mark.index, node.end_mark.index
    m = _PROPERTIES.match(text, start, end)
    if m:
        start = m.end()
    token = text[start:end]
    quote = token[0] if token[:1] in ("'", '"') else ""
    return start, end, f"{quote}{value}{quote}"


def _content_end(node: Any) -> int:
    """The text index just after the last character that belongs to `node`."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, MappingNode | SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1]
        if isinstance(node, MappingNode):
            return max(_content_end(last[0]), _content_end(last[1]))
        return _content_end(last)
    return int(node.end_mark.index)


def _append_edit(text: str, slices: Any, items: list[tuple[str, int]]) -> tuple[int, int, str]:
    """Add `name: value` entries at the end of the slices mapping, marked with a comment."""
    newline = "\r\n" if "\r\n" in text else "\n"
    if slices.flow_style:
        close = slices.end_mark.index - 1  # the closing brace
        while close > 0 and text[close] != "}":
            close -= 1
        sep = ", " if slices.value else ""
        body = ", ".join(f"{n}: {v}" for n, v in items)
        line_end = text.find("\n", slices.end_mark.index)
        line_end = len(text) if line_end < 0 else line_end
        rest = text[slices.end_mark.index : line_end].strip()
        names = ", ".join(n for n, _ in items)
        if not rest:
            # put the comment after the closing brace, at the end of its line
            return (
                close,
                slices.end_mark.index,
                f"{sep}{body}}}  {ADDED_COMMENT}: {names}",
            )
        # something (a comment) follows on that line: mark the addition on a line of its own
        kept = text[close:line_end].rstrip("\r")
        at_eof = line_end == len(text)
        return (
            close,
            line_end if at_eof else line_end + 1,
            f"{sep}{body}{kept}{newline}{ADDED_COMMENT}: {names}{'' if at_eof else newline}",
        )
    end = _content_end(slices)
    line_end = text.find("\n", end)
    indent = " " * slices.value[0][0].start_mark.column
    lines = "".join(f"{indent}{n}: {v}  {ADDED_COMMENT}{newline}" for n, v in items)
    if line_end < 0:  # the last slice ends the file without a newline
        return len(text), len(text), newline + lines.removesuffix(newline)
    return line_end + 1, line_end + 1, lines


def _atomic_write(target: Path, data: bytes, shown: str) -> None:
    import tempfile  # `rebudget --write` alone: 3 ms of every compare otherwise

    try:
        mode = target.stat().st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise BudgetError(f"{shown}: cannot write the budget file ({e.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise BudgetError(f"{shown}: cannot write the budget file ({e.strerror})") from None
