"""Naming the WebAssembly feature a refused core module needs (errors that teach).

wasmtime's validator refuses an instruction or type of a proposal that is
not enabled with a sentence naming the proposal; :func:`missing_feature`
picks that name out, so that the error a user sees says which feature the
module needs rather than only where it failed.
"""

from __future__ import annotations

import re

__all__ = ["explain", "missing_feature"]

_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"when ([\w-]+(?: [\w-]+)?) is disabled",
        r"requires? the ([\w-]+) proposal",
        r"without the ([\w-]+) feature",
        r"([\w-]+(?: [\w-]+)?) support is not enabled",
        r"([\w-]+) proposal (?:is )?not enabled",
        r"([\w-]+) must be enabled",
    )
)


def missing_feature(message: str) -> str | None:
    """The feature a validation ``message`` says is not enabled, or ``None``."""
    for pattern in _PATTERNS:
        match = pattern.search(message)
        if match is not None:
            return match.group(1)
    return None


def explain(message: str) -> str:
    """``message``, led by the feature it names when it is about a disabled one."""
    feature = missing_feature(message)
    if feature is None:
        return message
    return (
        f"the module needs the WebAssembly feature {feature!r}, which polyengine's engine "
        f"does not enable ({message})"
    )
