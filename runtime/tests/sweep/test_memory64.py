"""Strings and lists across a 64-bit guest memory (CanonicalABI.md §"Canonical ABI Options").

With a ``memory64`` memory, pointers and lengths are ``i64`` and a string or
list is stored as two ``u64``; both directions (an export's lifted result, a
host import's lifted argument and lowered result) must round-trip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import polyengine

GUEST = """
(component
  (import "shout" (func $shout (param "s" string) (result (list u8))))
  (core module $libc
    (memory (export "mem") i64 1)
    (global $bump (mut i64) (i64.const 1024))
    (data (i64.const 16) "hello")
    (func (export "realloc") (param i64 i64 i64 i64) (result i64)
      (local $r i64)
      (local.set $r (global.get $bump))
      (global.set $bump (i64.add (global.get $bump) (local.get 3)))
      (local.get $r)))
  (core instance $libc (instantiate $libc))
  (alias core export $libc "mem" (core memory $mem))
  (alias core export $libc "realloc" (core func $realloc))
  (core func $lowered (canon lower (func $shout) (memory $mem) (realloc $realloc)))
  (core module $m
    (import "libc" "mem" (memory i64 1))
    (import "host" "shout" (func $shout (param i64 i64 i64)))
    (func (export "get") (result i64)
      (i64.store (i64.const 32) (i64.const 16))
      (i64.store (i64.const 40) (i64.const 5))
      (i64.const 32))
    (func (export "echo") (param i64 i64) (result i64)
      (i64.store (i64.const 48) (local.get 0))
      (i64.store (i64.const 56) (local.get 1))
      (i64.const 48))
    ;; passes "hello" to the host, returns the list the host gave back
    (func (export "relay") (result i64)
      (call $shout (i64.const 16) (i64.const 5) (i64.const 64))
      (i64.const 64)))
  (core instance $h (export "shout" (func $lowered)))
  (core instance $i (instantiate $m (with "host" (instance $h)) (with "libc" (instance $libc))))
  (func (export "get") (result string) (canon lift (core func $i "get") (memory $mem)))
  (func (export "echo") (param "s" string) (result string)
    (canon lift (core func $i "echo") (memory $mem) (realloc $realloc)))
  (func (export "relay") (result (list u8))
    (canon lift (core func $i "relay") (memory $mem) (realloc $realloc)))
)
"""


def test_strings_and_lists_round_trip(wat: Callable[[str], bytes]) -> None:
    seen: list[str] = []

    def shout(s: str) -> bytes:
        seen.append(s)
        return s.upper().encode()

    async def main() -> tuple[object, object, object]:
        instance = await polyengine.instantiate(wat(GUEST), {"shout": shout})
        with instance:
            ex = instance.exports
            return await ex.get(), await ex.echo("héllo wörld ☃"), await ex.relay()

    got, echoed, relayed = asyncio.run(main())
    assert got == "hello"
    assert echoed == "héllo wörld ☃"
    assert seen == ["hello"]
    assert bytes(relayed) == b"HELLO"  # type: ignore[arg-type]
