"""Negative: a record with a misspelt field."""

from __future__ import annotations

from values_bindings import Point

p: Point = {"x": 1, "why": 2}  # expect-error
