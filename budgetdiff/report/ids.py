"""The one rule for a report's id, which names its PR comment, its annotations and its JSON
file: `--id`, the API's `id=` and the Action's `id` input all take it."""

from __future__ import annotations

import re

REPORT_ID_RULE = "1-64 letters, digits, '.', '_' or '-'"
_REPORT_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def is_report_id(value: str) -> bool:
    return _REPORT_ID.fullmatch(value) is not None
