"""Measure: base against head, request by request and row by row.

`pairing` (which requests are the same) -> `prepare` (per-request values; `end_to_end`: each
side's end to end taken the same way) -> `rows` (one row per SLO metric and slice, with its
interval) | `aggregate` (tool summaries, histograms);
`attribution` (who owns the tail), `whatif`, `rebudget`, `history` (the trend), `agent` (the
agent loop's steps); `results` holds the types every later stage reads. Imports `stats`,
`budget`, `formats` (types only) and the shared root modules, never a later stage.
"""
