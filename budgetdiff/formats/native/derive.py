"""What a client-only table's columns determine (issue 38): a harness that writes TTFT and the
end to end, and no slice, still says how long each request decoded. `first_token` is the TTFT
and `decode` the end to end less it, per request, as the client tools' readers (vLLM, SGLang)
split them; TPOT then is decode / (output tokens - 1). Derived only for a budget that names
these slices, and said in the report's notes and in `inspect`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from budgetdiff.formats.native.mapping import Mapping
from budgetdiff.formats.native.names import METRIC, SLICE
from budgetdiff.table import FloatArray, Run

CLIENT_SLICES = ("first_token", "decode")
SAID = (
    "first_token = TTFT, decode = end to end - TTFT per request; TPOT = decode / (output "
    "tokens - 1)"
)


def derivable(mapping: Mapping) -> bool:
    """The table has a TTFT and an end to end and no slice of its own (the TTFT column read
    as the slice `first_token`, for a budget that names it, is the TTFT)."""
    metrics = {u.target for u in mapping.all(METRIC)}
    own = [u for u in mapping.all(SLICE) if u.target != "first_token"]
    return not own and {"ttft", "total"} <= metrics


def derived_for(mapping: Mapping, wanted: Sequence[str]) -> bool:
    """Derive the client slices: the budget names one of them, and only slices they give."""
    asked = set(wanted)
    return derivable(mapping) and bool(asked & set(CLIENT_SLICES)) and asked <= set(CLIENT_SLICES)


def client_slices(ttft: FloatArray, total: FloatArray) -> dict[str, FloatArray]:
    """`first_token` and `decode` per request; a total under its TTFT (a row no request can
    have, which the `impossible` finding names) decodes in 0 ms, not in negative time."""
    with np.errstate(invalid="ignore"):
        decode = np.where(np.isnan(total - ttft), np.nan, np.maximum(total - ttft, 0.0))
    return {"first_token": ttft, "decode": decode}


def with_client_slices(run: Run) -> Run:
    """`run` with the slices its TTFT and end to end give, and the note that says so."""
    assert run.ttft is not None and run.total is not None  # `derivable` holds them
    note = f"{run.source}{f' [{run.scenario}]' if run.scenario else ''}: derived: {SAID}"
    said = run.meta.get("note")
    meta = {**run.meta, "note": f"{said} {note}" if isinstance(said, str) else note}
    return replace(run, slices=client_slices(run.ttft, run.total), meta=meta)
