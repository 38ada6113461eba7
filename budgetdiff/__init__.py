"""budgetdiff: latency budgets for LLM serving, base vs head, as a PR comment and a merge gate."""

__version__ = "0.1.0"
