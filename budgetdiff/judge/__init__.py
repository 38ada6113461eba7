"""Judge: findings and the verdict, the only stage that decides what fails.

`findings` (the rules and the verdict), `agent` (the agent section's findings), `doubts` (the rows
a reader's doubt reaches). Imports `measure` and the stages before it.
"""
