"""The unit table: milliseconds per unit, for every place a latency comes with a unit.

A budget slice's `unit:` and a native column's suffix (`_ms`, `_s`, `_us`) use `MS_PER`; the
benchmark tools that write a unit beside each value (AIPerf, genai-perf) spell more of them, in
`SPELLED_UNIT_TO_MS`; time stamps stored as integers use `PER_SECOND`.
"""

from __future__ import annotations

# Milliseconds per unit: a budget slice's `unit:`, a native column's suffix or bracket.
MS_PER = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0}
# As the tools spell units next to a value; the order is the one an error message lists.
SPELLED_UNIT_TO_MS = {
    "ns": 1e-6,
    "us": 1e-3,
    "ms": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "secs": 1000.0,
    "seconds": 1000.0,
}
# Arrow timestamp units per second, for time stamps a table stores as integers.
PER_SECOND = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
