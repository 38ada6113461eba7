"""`budgetdiff schema`: the JSON Schema of the budget file, for editors and CI checks."""

from __future__ import annotations

import json

from budgetdiff.budget.model import json_schema
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import NoOptions


def run(o: NoOptions, edge: Edge) -> int:
    edge.out.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0
