"""Generated functions show their source in tracebacks (abi/codegen.py)."""

from __future__ import annotations

import linecache
import traceback

import pytest

from polyengine.abi.codegen import compile_source, make_function


def test_a_traceback_through_a_generated_function_shows_its_lines() -> None:
    fn = make_function("probe", "x", ["y = x + 1", "return table[y]"], {"table": {}})
    with pytest.raises(KeyError) as info:
        fn(1)
    text = "".join(traceback.format_exception(info.value))
    assert "return table[y]" in text
    assert "polyengine.abi.probe" in text


def test_identical_sources_share_one_cache_entry() -> None:
    src = "def f():\n    return 1\n"
    a = compile_source(src, "polyengine.test")
    b = compile_source(src, "polyengine.test")
    assert a.co_filename == b.co_filename
    assert linecache.getline(a.co_filename, 2) == "    return 1\n"
    c = compile_source("def f():\n    return 2\n", "polyengine.test")
    assert c.co_filename != a.co_filename


def test_a_source_is_compiled_once_and_each_function_binds_its_own_globals() -> None:
    src = "def g():\n    return seen\n"
    first = compile_source(src, "polyengine.test")
    assert compile_source(src, "polyengine.test") is first
    fns = [make_function("g2", "", ["return seen"], {"seen": n}) for n in (1, 2)]
    assert [fn() for fn in fns] == [1, 2]
    assert fns[0].__code__ is fns[1].__code__


def test_lines_come_back_after_linecache_is_cleared() -> None:
    src = "def h():\n    return 3\n"
    code = compile_source(src, "polyengine.test")
    linecache.clearcache()
    assert compile_source(src, "polyengine.test") is code
    assert linecache.getline(code.co_filename, 2) == "    return 3\n"
