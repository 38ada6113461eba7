"""The native reader: a user's own table, in the order it crosses the stages.

`names` (the vocabulary of column names) -> `tables` (the raw table) -> `sniff` (is it a table)
-> `load` (bytes to columns) -> `mapping` (names to roles) -> `columns` (values and units) ->
`times` (start times and spans) -> `checks` (units, doubts) -> `build` (the Runs). Each module
imports only the stages before it (tests/unit/test_layout.py holds it).
"""
