"""The subcommands that print words of their own rather than a Report: one module each, which
`budgetdiff.cli` imports only when its command runs (start-up stays the compare's own)."""
