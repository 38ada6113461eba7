"""`budgetdiff demo`: compare on the example pair and budget bundled in the package."""

from __future__ import annotations

import sys
from dataclasses import replace
from importlib.resources import as_file, files

from budgetdiff.commands import compare
from budgetdiff.commands.edge import Edge
from budgetdiff.commands.options import RunOptions


def run(o: RunOptions, edge: Edge) -> int:
    demo = files("budgetdiff") / "demo"
    # the words around the report go where they cannot spoil JSON or markdown output
    words = edge.out if o.output == "table" else sys.stderr
    with (
        as_file(demo / "base.csv") as base,
        as_file(demo / "head.csv") as head,
        as_file(demo / "budget.yml") as budget,
    ):
        print(
            "budgetdiff demo: a chat service's benchmark before (base) and after (head)\n"
            "a batching change, checked against a budget of p95 TTFT 1.2 s and p95 end to\n"
            "end 6 s.\n",
            file=words,
        )
        pair = replace(o, base=(str(base),), head=(str(head),), budget=str(budget))
        code = compare.run(pair, edge)
    print(
        f"\nThe demo's verdict would make `compare` exit {code} (0 pass or warn, 1 fail);\n"
        "the demo itself exits 0. Start your own: `budgetdiff init` writes a commented\n"
        "budget.yml, a workflow and an example base/head pair for `budgetdiff compare`.",
        file=words,
    )
    return 0
