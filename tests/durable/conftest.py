"""The durable tests use the session's real Postgres and the ``any_database`` fixture from
tests/conftest.py (one pgserver for every suite that needs Postgres)."""
