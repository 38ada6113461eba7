"""`budgetdiff schema`: the JSON Schema of the budget file, for editors and CI checks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

from budgetdiff.budget import json_schema

if TYPE_CHECKING:
    from budgetdiff.cli import NoOptions


def run(o: NoOptions, env: Mapping[str, str], out: TextIO) -> int:
    out.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0
