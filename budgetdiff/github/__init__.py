"""budgetdiff's GitHub edge. Re-exports only; each module has one job:

- `context`: the runner's environment, read once (`GitHubContext.from_environ`, by
  `cli.main`, which hands it to a command's GitHub steps)
- `publish`: a report to the step summary, the outputs, the sticky comment and annotations
- `fetch`: results from another run (the base branch's artifact, a workflow_run's artifact)
- `api`: the REST client; `event`: the event payload; `comment`: the sticky comment;
  `artifact`: find, download and extract artifacts; `actions`: the runner's file and stdout
  protocols; `history_store`: the history branch
"""

from __future__ import annotations

from budgetdiff.github.context import GitHubContext
from budgetdiff.github.fetch import BaseResults, fetch_base_artifact, fetch_results_artifact
from budgetdiff.github.publish import DEFAULT_AUTHOR, Publication, publish, validate_report_id

__all__ = [
    "DEFAULT_AUTHOR",
    "BaseResults",
    "GitHubContext",
    "Publication",
    "fetch_base_artifact",
    "fetch_results_artifact",
    "publish",
    "validate_report_id",
]
