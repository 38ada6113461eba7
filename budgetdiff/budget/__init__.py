"""The budget: `model` (pydantic models, every problem at once), `file` (YAML with the line of
every key, edits, atomic write) and `problems` (a ValidationError in the budget's own words).
Imports only the shared root modules.
"""
