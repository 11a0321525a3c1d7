"""Compilation and the module cache."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import wasmtime

from polyengine.engine import (
    CompileError,
    CoreModule,
    EngineConfig,
    compile_module,
    get_engine,
    module_cache_dir,
)


def _fresh_module() -> bytes:
    # A unique export name makes a module no earlier test compiled.
    return wasmtime.wat2wasm(f'(module (func (export "f-{uuid.uuid4().hex}")))')


def test_get_engine_is_process_wide() -> None:
    assert get_engine() is get_engine()
    assert get_engine(EngineConfig()) is get_engine()
    other = get_engine(EngineConfig(fiber_stack_size=4 * 1024 * 1024))
    assert other is not get_engine()
    assert other.config.fiber_stack_size == 4 * 1024 * 1024


def test_engine_config_rejects_fiber_smaller_than_wasm_stack() -> None:
    with pytest.raises(ValueError, match="fiber_stack_size"):
        EngineConfig(fiber_stack_size=64 * 1024, max_wasm_stack=512 * 1024)


def test_features_real_guests_need_compile() -> None:
    text = """(module
      (memory 1) (memory 1)
      (table 1 funcref) (table 1 externref)
      (global i32 (i32.add (i32.const 1) (i32.const 2)))
      (func $g (result i32 i64) i32.const 1 i64.const 2)
      (func (export "f") (param i32) (result i32)
        i32.const 0 i32.const 0 i32.const 0 memory.copy 1 0
        local.get 0 return_call $h)
      (func $h (param i32) (result i32) local.get 0)
    )"""
    module = compile_module(wasmtime.wat2wasm(text), "features")
    assert module.export_names == ("f",)


def test_in_process_cache_returns_same_module() -> None:
    data = _fresh_module()
    a = compile_module(data, "a")
    b = compile_module(memoryview(data), "b")
    assert a is b
    assert len(a.sha256) == 64


def test_disk_cache_written_and_reused(tmp_path: Path) -> None:
    engine = get_engine(EngineConfig(cache_dir=str(tmp_path / "c1")))
    data = _fresh_module()
    module = compile_module(data, engine=engine)
    cache_dir = module_cache_dir(engine)
    assert cache_dir is not None and cache_dir.parent == tmp_path / "c1"
    files = sorted(cache_dir.iterdir())
    # the serialized module (wasmtime's own layout, mapped on load) and its record
    assert [f.name for f in files] == [
        f"{module.sha256}-{engine.config.code_fingerprint()}{suffix}"
        for suffix in (".cwasm", ".meta")
    ]
    assert files[0].read_bytes()[:4] == b"\x7fELF"
    # A second engine with the same directory (a "new process") reads the entry.
    engine2 = get_engine(EngineConfig(cache_dir=str(tmp_path / "c1"), consume_fuel=True))
    assert engine2 is not engine
    # consume_fuel changes the code, so the entry is keyed apart.
    compile_module(data, engine=engine2)
    assert len(list(cache_dir.glob("*.cwasm"))) == 2


def test_corrupted_cache_entry_is_ignored_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _fresh_module()
    engine = get_engine(EngineConfig(cache_dir=str(tmp_path / "c2")))
    module = compile_module(data, engine=engine)
    cache_dir = module_cache_dir(engine)
    assert cache_dir is not None
    (entry,) = cache_dir.glob("*.cwasm")
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2] + b"garbage" * 10)
    # Another engine (another in-process cache) sharing the directory.
    engine2 = get_engine(EngineConfig(cache_dir=str(tmp_path / "c2"), max_wasm_stack=500_000))
    entry2 = cache_dir / f"{module.sha256}-{engine2.config.code_fingerprint()}.cwasm"
    entry2.write_bytes(b"not a cache entry")
    module2 = compile_module(data, engine=engine2)
    assert module2.export_names == module.export_names
    assert entry2.read_bytes()[:4] == b"\x7fELF"
    # In a new process the damaged entry of the first engine is a miss, and is rewritten.
    _as_new_process(monkeypatch)
    assert compile_module(data, engine=engine).export_names == module.export_names
    assert entry.read_bytes()[:4] == b"\x7fELF"


def _as_new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the compiled modules of this process, as a new process would not have them."""
    from polyengine.engine import _module

    monkeypatch.setattr(_module, "_memory_cache", {})


def test_entry_rewritten_with_the_same_size_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    data = _fresh_module()
    engine = get_engine(EngineConfig(cache_dir=str(tmp_path / "c4")))
    compile_module(data, engine=engine)
    cache_dir = module_cache_dir(engine)
    assert cache_dir is not None
    (entry,) = cache_dir.glob("*.cwasm")
    size = entry.stat().st_size
    entry.write_bytes(b"\0" * size)  # same size, later modification time: never given to wasmtime
    st = entry.stat()
    os.utime(entry, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    _as_new_process(monkeypatch)
    module = compile_module(data, engine=engine)
    assert module.export_names[0].startswith("f-")
    assert entry.read_bytes()[:4] == b"\x7fELF"  # rewritten


def test_cached_module_keeps_its_imports_and_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wat = f"""(module (import "m" "f" (func)) (import "m" "mem" (memory 1))
        (func (export "g-{uuid.uuid4().hex}")) (global (export "h") i32 (i32.const 0)))"""
    data = wasmtime.wat2wasm(wat)
    engine = get_engine(EngineConfig(cache_dir=str(tmp_path / "c5")))
    compiled = compile_module(data, engine=engine)
    _as_new_process(monkeypatch)
    loaded = compile_module(data, "again", engine=engine)
    assert loaded is not compiled and loaded.name == "again"
    for m in (compiled, loaded):
        assert [(d.module, d.name, d.kind) for d in m.imports] == [
            ("m", "f", "func"),
            ("m", "mem", "memory"),
        ]
        assert list(m.export_kinds.values()) == ["func", "global"]
        assert m.export_names == tuple(m.export_kinds)
    assert loaded.export_names == compiled.export_names


def test_known_sha256_skips_hashing_but_keys_the_same_entry(tmp_path: Path) -> None:
    import hashlib

    data = _fresh_module()
    engine = get_engine(EngineConfig(cache_dir=str(tmp_path / "c6")))
    a = compile_module(data, engine=engine, sha256=hashlib.sha256(data).hexdigest())
    assert compile_module(data, engine=engine) is a


def test_disk_cache_can_be_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYENGINE_CACHE_DIR", "off")
    assert module_cache_dir(get_engine()) is None
    engine = get_engine(EngineConfig(module_cache=False))
    assert module_cache_dir(engine) is None
    compile_module(_fresh_module(), engine=engine)


def test_compile_error_names_the_module() -> None:
    bad = wasmtime.wat2wasm("(module (func (result i32)))")[:-3] + b"\x00\x00\x00"
    with pytest.raises(CompileError, match="core module mymod") as info:
        compile_module(bad, "mymod")
    assert info.value.module == "mymod"
    with pytest.raises(CompileError, match="bad magic"):
        compile_module(b"hello world", "text")
    with pytest.raises(CompileError, match="sha256:"):
        compile_module(b"\0asm\x01\0\0\0\x7f")


def test_compile_rejects_non_bytes() -> None:
    with pytest.raises(TypeError, match="expects bytes"):
        compile_module("(module)")  # type: ignore[arg-type]


def test_module_imports_are_described(wat: Callable[..., CoreModule]) -> None:
    module = wat(
        """(module (import "a" "f" (func)) (import "a" "m" (memory 1))
           (import "b" "t" (table 1 funcref)) (import "b" "g" (global i32)))"""
    )
    assert [(i.module, i.name, i.kind) for i in module.imports] == [
        ("a", "f", "func"),
        ("a", "m", "memory"),
        ("b", "t", "table"),
        ("b", "g", "global"),
    ]


#: a core module with a continuation type: the stack-switching proposal, which the engine
#: (and the validator with its feature set) does not enable
_NEEDS_STACK_SWITCHING = "(module (type $ft (func)) (type $ct (cont $ft)))"


def test_compile_error_names_the_feature_the_module_needs() -> None:
    with pytest.raises(CompileError, match="needs the WebAssembly feature 'stack switching'"):
        compile_module(wasmtime.wat2wasm(_NEEDS_STACK_SWITCHING), "m")


def test_a_component_whose_module_needs_a_disabled_feature_names_it() -> None:
    import polyengine
    from polyengine.errors import TranslationError

    core = wasmtime.wat2wasm(_NEEDS_STACK_SWITCHING)
    # a component embedding that core module: the component header, one core module section
    header = b"\x00asm\x0d\x00\x01\x00"
    size = len(core)
    leb = bytearray()
    while True:
        byte, size = size & 0x7F, size >> 7
        leb.append(byte | (0x80 if size else 0))
        if not size:
            break
    component = header + b"\x01" + bytes(leb) + core
    with pytest.raises(TranslationError) as info:
        polyengine.translate(component)
    message = str(info.value)
    assert "needs the WebAssembly feature 'stack switching'" in message
    assert "core module" in message
