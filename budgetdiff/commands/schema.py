"""`budgetdiff schema`: the JSON Schema of the budget file, for editors and CI checks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from budgetdiff.budget import json_schema

if TYPE_CHECKING:
    from budgetdiff.cli import Edge


@dataclass(frozen=True)
class NoOptions:
    """schema takes none."""


def run(o: NoOptions, edge: Edge) -> int:
    edge.out.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0
