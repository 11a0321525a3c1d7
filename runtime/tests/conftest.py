"""Shared pytest configuration for the runtime tests (each test folder owns its fixtures)."""
