"""Shared pytest configuration for the runtime tests (kept minimal: each test folder owns its fixtures)."""
