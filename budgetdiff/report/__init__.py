"""The report: `model` (Report and Scenario: the rows, findings and verdict of each scenario)
and `ids` (the one rule for a report's id). Imports `judge`, `measure` and the stages before.
"""
