"""The one orchestrator: a Request in, the Report every renderer reads (`orchestrator`).
Imports every stage before it; the edges (`commands`, `api`, `action`) import it.
"""
