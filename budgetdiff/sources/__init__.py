"""Where the data comes from besides a file's own reader: `files` (bytes from the work tree or a
git commit, size-capped), `prometheus` with `prometheus_api` (a live Prometheus), `sql` (the
requests of a DuckDB or ClickHouse table). Imports `formats` (to read what a source returns)
and the shared root modules.
"""
