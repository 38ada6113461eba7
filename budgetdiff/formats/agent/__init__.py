"""The agent loop's readers: `tasks` (the Tasks a Run carries), `steps` (one row per step) and
`traces` (OTLP/JSON GenAI agent spans).
"""
