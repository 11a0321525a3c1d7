"""Fixtures of the serve tests: compiled test guests and an in-process ASGI client."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from wat_guests import GUESTS


@pytest.fixture(scope="session")
def guest(wat: Callable[[str], bytes]) -> Callable[[str], bytes]:
    """``guest("echo")``: the binary of a test guest of ``wat_guests``."""

    def build(name: str) -> bytes:
        return wat(GUESTS[name])

    return build
