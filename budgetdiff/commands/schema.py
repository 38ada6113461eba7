"""`budgetdiff schema`: the JSON Schema of the budget file, for editors and CI checks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from budgetdiff.budget import json_schema


@dataclass(frozen=True)
class NoOptions:
    """schema takes none."""


def run(o: NoOptions, env: Mapping[str, str], out: TextIO) -> int:
    out.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0
