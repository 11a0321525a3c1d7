"""The public namespace of polyengine.engine."""

from __future__ import annotations

import inspect

from polyengine import engine


def test_every_public_name_is_exported_once_and_documented() -> None:
    names = engine.__all__
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(n for n in vars(engine) if not n.startswith("_"))
    for name in names:
        obj = getattr(engine, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__.startswith("polyengine.engine._"), name
            assert obj.__doc__, f"{name} has no docstring"


def test_public_signatures_do_not_mention_wasmtime() -> None:
    for name in engine.__all__:
        obj = getattr(engine, name)
        if inspect.isfunction(obj):
            assert "wasmtime" not in str(inspect.signature(obj)), name
