"""Core exception tags pass between core instances (Explainer.md §"Instance definitions")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import polyengine

TAGS = """
(component
  (core module $Tag (tag (export "t") (param i32)))
  (core module $User
    (import "m" "t" (tag $t (param i32)))
    (func (export "f") (result i32)
      (block $h (result i32)
        (try_table (catch $t $h) (throw $t (i32.const 7)))
        (i32.const 0))))
  (core instance $tag (instantiate $Tag))
  (core instance $user (instantiate $User (with "m" (instance $tag))))
  (func (export "f") (result u32) (canon lift (core func $user "f"))))
"""


def test_tag_exported_by_one_instance_is_caught_in_another(wat: Callable[[str], bytes]) -> None:
    async def main() -> int:
        inst = await polyengine.instantiate(wat(TAGS), {})
        result: int = await inst.exports.f()
        return result

    assert asyncio.run(main()) == 7
