"""Small generated functions for the compiled ABI's hottest shapes.

Records and tuples are built by one generated expression (a dict or tuple
display with every field's offset and loader inlined) instead of a loop
over a field table: CPython runs a display several times faster than a
comprehension with per-field tuple unpacking. Keys enter the generated
source only through ``repr``, and every other name is one we bind, so no
label text can change what the code does.

This is the one place generated source is compiled (:func:`compile_source`,
used by :func:`make_function` and by the facade's generated entry points):
each source is registered with :mod:`linecache` under a name derived from
its content, so tracebacks show the generated lines that ran, and identical
sources (the same shape compiled for many instances) share one entry.
"""

from __future__ import annotations

import hashlib
import linecache
import types
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["compile_source", "display", "make_function", "offset"]


def display(keys: Sequence[str] | None, exprs: Sequence[str]) -> str:
    """A dict display of ``keys`` to ``exprs``, or a tuple display when ``keys`` is None."""
    if keys is None:
        return "(" + "".join(e + ", " for e in exprs) + ")"
    return "{" + ", ".join(f"{k!r}: {e}" for k, e in zip(keys, exprs, strict=True)) + "}"


def offset(base: str, off: int) -> str:
    """``base + off`` as source, or just ``base`` for a zero offset."""
    return base if off == 0 else f"{base} + {off}"


def make_function(name: str, params: str, body: Sequence[str], env: Mapping[str, Any]) -> Any:
    """Define ``def name(params): body`` with the globals ``env`` and return it."""
    src = f"def {name}({params}):\n" + "".join(f"    {line}\n" for line in body)
    namespace = dict(env)
    exec(compile_source(src, f"polyengine.abi.{name}"), namespace)
    return namespace[name]


# Code objects by (label, source). Instances of one component generate the same
# sources, so the second instance and later ones only ``exec`` (binding their own
# globals) instead of compiling again. Bounded: cleared when it grows past the cap.
_CODE: dict[tuple[str, str], types.CodeType] = {}
_CODE_CAP = 8192


def _register(src: str, filename: str) -> None:
    linecache.cache[filename] = (len(src), None, src.splitlines(keepends=True), filename)


def compile_source(src: str, label: str) -> types.CodeType:
    """Compile generated module-level ``src``, its lines visible to tracebacks.

    The code's file name is ``<label:digest>`` (the digest of ``src``), and
    :mod:`linecache` holds ``src`` under it, so ``traceback`` and debuggers
    show the generated statements. A code object holds no globals, so one
    compiled source serves every instance that generates it.
    """
    key = (label, src)
    code = _CODE.get(key)
    if code is not None:
        if code.co_filename not in linecache.cache:  # linecache.clearcache() ran
            _register(src, code.co_filename)
        return code
    digest = hashlib.blake2b(src.encode(), digest_size=6).hexdigest()
    filename = f"<{label}:{digest}>"
    if filename not in linecache.cache:
        _register(src, filename)
    code = compile(src, filename, "exec")
    if len(_CODE) >= _CODE_CAP:
        _CODE.clear()
    _CODE[key] = code
    return code
