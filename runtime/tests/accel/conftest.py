"""The compiled call path's tests reuse the canonical ABI tests' strategies."""

from __future__ import annotations

import sys
from pathlib import Path

_ABI = str(Path(__file__).parent.parent / "abi")
if _ABI not in sys.path:
    sys.path.insert(0, _ABI)
