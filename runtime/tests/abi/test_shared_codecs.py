"""Codecs of plain value types are shared between compilers (architecture.md §5:
instantiation prepares once what does not depend on the store).

A type that holds no handle, stream, future or error-context compiles the same
for every compiler of the same string encoding, pointer type and string form;
a type holding a handle is bound to its compiler's resource types.
"""

from __future__ import annotations

from polyengine.abi.compile import Compiler
from polyengine.abi.resources import ResourceType
from polyengine.types import model as m

PLAIN = m.Record(
    (m.Field("name", m.String()), m.Field("tags", m.List(m.Option(m.U32())))),
)


def test_a_plain_type_is_compiled_once_for_the_same_options() -> None:
    first, second = Compiler("utf8"), Compiler("utf8")
    assert first.codec(PLAIN) is second.codec(PLAIN)
    assert first.codec(m.String()) is second.codec(m.String())


def test_other_options_compile_their_own() -> None:
    base = Compiler("utf8").codec(PLAIN)
    assert Compiler("utf16").codec(PLAIN) is not base
    assert Compiler("utf8", "i64").codec(PLAIN) is not base
    assert Compiler("utf8", guest_strings=True).codec(PLAIN) is not base


def test_a_type_holding_a_handle_is_the_compilers_own() -> None:
    types = [ResourceType(None, None, "r")]
    t = m.Record((m.Field("r", m.Own(0)), m.Field("s", m.String())))
    first = Compiler("utf8", resource_type=types.__getitem__)
    second = Compiler("utf8", resource_type=types.__getitem__)
    assert first.codec(t) is not second.codec(t)
    # its plain parts are still shared
    assert first.codec(m.String()) is second.codec(m.String())
