from budgetdiff.cli import entry

entry()
