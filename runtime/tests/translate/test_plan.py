"""Translation of components into Plans: lifts, lowers, built-ins, resources, nesting."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest

from polyengine.errors import TranslationError
from polyengine.translate import translate_component
from polyengine.translate.plan import (
    Adapter,
    Builtin,
    CoreExport,
    ExportedInstance,
    FuncDesc,
    ImportedItem,
    ImportedModule,
    InstanceDesc,
    Lift,
    LowerImport,
    Plan,
    StaticModule,
    TrampolineRef,
    TypeDesc,
    plan_from_json,
    plan_to_json,
)
from polyengine.types.model import (
    U8,
    U32,
    Borrow,
    FuncType,
    Future,
    Own,
    Stream,
    String,
    Tuple,
)

Wat = Callable[[str], bytes]

BUILTINS_WAT = """(component
  (type $r (resource (rep i32)))
  (type $s (stream u8))
  (type $f (future string))
  (core module $mem (memory (export "m") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) unreachable))
  (core instance $mi (instantiate $mem))
  (alias core export $mi "m" (core memory $m))
  (alias core export $mi "realloc" (core func $realloc))
  (core func $rnew (canon resource.new $r))
  (core func $rdrop (canon resource.drop $r))
  (core func $rrep (canon resource.rep $r))
  (core func $bpi (canon backpressure.inc))
  (core func $bpd (canon backpressure.dec))
  (core func $tret (canon task.return (result string) (memory $m) string-encoding=utf16))
  (core func $tcancel (canon task.cancel))
  (core func $cget (canon context.get i32 0))
  (core func $cset (canon context.set i32 1))
  (core func $stc (canon subtask.cancel async))
  (core func $std (canon subtask.drop))
  (core func $sn (canon stream.new $s))
  (core func $sr (canon stream.read $s async (memory $m)))
  (core func $sw (canon stream.write $s (memory $m)))
  (core func $scr (canon stream.cancel-read $s async))
  (core func $scw (canon stream.cancel-write $s))
  (core func $sdr (canon stream.drop-readable $s))
  (core func $sdw (canon stream.drop-writable $s))
  (core func $fn (canon future.new $f))
  (core func $fr (canon future.read $f (memory $m) (realloc $realloc)))
  (core func $fw (canon future.write $f (memory $m)))
  (core func $fcr (canon future.cancel-read $f))
  (core func $fcw (canon future.cancel-write $f async))
  (core func $fdr (canon future.drop-readable $f))
  (core func $fdw (canon future.drop-writable $f))
  (core func $ecn (canon error-context.new (memory $m)))
  (core func $ecd (canon error-context.debug-message (memory $m) (realloc $realloc)))
  (core func $ecx (canon error-context.drop))
  (core func $wsn (canon waitable-set.new))
  (core func $wsw (canon waitable-set.wait (memory $m)))
  (core func $wsp (canon waitable-set.poll (memory $m)))
  (core func $wsd (canon waitable-set.drop))
  (core func $wj (canon waitable.join))
  (core func $ty (canon thread.yield))
  (core module $user
    (import "" "rnew" (func (param i32) (result i32)))
    (import "" "rdrop" (func (param i32)))
    (import "" "rrep" (func (param i32) (result i32)))
    (import "" "bpi" (func))
    (import "" "bpd" (func))
    (import "" "tret" (func (param i32 i32)))
    (import "" "tcancel" (func))
    (import "" "cget" (func (result i32)))
    (import "" "cset" (func (param i32)))
    (import "" "stc" (func (param i32) (result i32)))
    (import "" "std" (func (param i32)))
    (import "" "sn" (func (result i64)))
    (import "" "sr" (func (param i32 i32 i32) (result i32)))
    (import "" "sw" (func (param i32 i32 i32) (result i32)))
    (import "" "scr" (func (param i32) (result i32)))
    (import "" "scw" (func (param i32) (result i32)))
    (import "" "sdr" (func (param i32)))
    (import "" "sdw" (func (param i32)))
    (import "" "fn" (func (result i64)))
    (import "" "fr" (func (param i32 i32) (result i32)))
    (import "" "fw" (func (param i32 i32) (result i32)))
    (import "" "fcr" (func (param i32) (result i32)))
    (import "" "fcw" (func (param i32) (result i32)))
    (import "" "fdr" (func (param i32)))
    (import "" "fdw" (func (param i32)))
    (import "" "ecn" (func (param i32 i32) (result i32)))
    (import "" "ecd" (func (param i32 i32)))
    (import "" "ecx" (func (param i32)))
    (import "" "wsn" (func (result i32)))
    (import "" "wsw" (func (param i32 i32) (result i32)))
    (import "" "wsp" (func (param i32 i32) (result i32)))
    (import "" "wsd" (func (param i32)))
    (import "" "wj" (func (param i32 i32)))
    (import "" "ty" (func (result i32)))
  )
  (core instance $u (instantiate $user (with "" (instance
    (export "rnew" (func $rnew)) (export "rdrop" (func $rdrop)) (export "rrep" (func $rrep))
    (export "bpi" (func $bpi)) (export "bpd" (func $bpd)) (export "tret" (func $tret))
    (export "tcancel" (func $tcancel)) (export "cget" (func $cget)) (export "cset" (func $cset))
    (export "stc" (func $stc)) (export "std" (func $std)) (export "sn" (func $sn))
    (export "sr" (func $sr)) (export "sw" (func $sw)) (export "scr" (func $scr))
    (export "scw" (func $scw)) (export "sdr" (func $sdr)) (export "sdw" (func $sdw))
    (export "fn" (func $fn)) (export "fr" (func $fr)) (export "fw" (func $fw))
    (export "fcr" (func $fcr)) (export "fcw" (func $fcw)) (export "fdr" (func $fdr))
    (export "fdw" (func $fdw)) (export "ecn" (func $ecn)) (export "ecd" (func $ecd))
    (export "ecx" (func $ecx)) (export "wsn" (func $wsn)) (export "wsw" (func $wsw))
    (export "wsp" (func $wsp)) (export "wsd" (func $wsd)) (export "wj" (func $wj))
    (export "ty" (func $ty))
  ))))
)
"""

SIMPLE_WAT = """
(component
  (import "wasi:cli/environment@0.2.3" (instance $env
    (export "get" (func (param "k" string) (result string)))
  ))
  (core module $m
    (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) unreachable)
    (func (export "run") (param i32 i32) (result i32) unreachable)
    (func (export "post") (param i32))
  )
  (core instance $i (instantiate $m))
  (alias export $env "get" (func $get))
  (core func $g (canon lower (func $get)
    (memory (core memory $i "mem")) (realloc (core func $i "realloc")) string-encoding=utf16))
  (core module $n
    (import "host" "get" (func (param i32 i32 i32)))
    (import "main" "mem" (memory 1))
  )
  (core instance $j (instantiate $n
    (with "host" (instance (export "get" (func $g))))
    (with "main" (instance $i))
  ))
  (func $run (param "x" string) (result u32)
    (canon lift (core func $i "run") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc")) (post-return (core func $i "post"))))
  (export "run" (func $run))
  (export "get-again" (func $get))
)
"""


def test_core_modules_are_byte_ranges_with_hashes(wat2wasm: Wat) -> None:
    data = wat2wasm(SIMPLE_WAT)
    plan = translate_component(data)
    assert len(plan.modules) == 2
    for m in plan.modules:
        chunk = data[m.offset : m.offset + m.length]
        assert chunk[:4] == b"\0asm"
        assert hashlib.sha256(chunk).hexdigest() == m.sha256


def test_lowered_import_and_lifted_export(wat2wasm: Wat) -> None:
    plan = translate_component(wat2wasm(SIMPLE_WAT))
    (imp,) = plan.imports
    assert imp.name == "wasi:cli/environment@0.2.3"
    assert isinstance(imp.desc, InstanceDesc)
    ft = FuncType((("k", String()),), String())
    assert imp.desc.exports == (("get", FuncDesc(ft)),)

    (low,) = plan.trampolines
    assert isinstance(low, LowerImport)
    assert low.path == ("wasi:cli/environment@0.2.3", "get")
    assert low.type == ft
    assert low.options.string_encoding == "utf16"
    assert low.options.memory == CoreExport(0, "mem", "memory")
    assert low.options.realloc == CoreExport(0, "realloc", "func")

    # core instance 1 gets the trampoline and instance 0's memory, in import order
    assert [ci.module for ci in plan.core_instances] == [StaticModule(0), StaticModule(1)]
    args = plan.core_instances[1].args
    assert [(a.module, a.name, a.kind) for a in args] == [
        ("host", "get", "func"),
        ("main", "mem", "memory"),
    ]
    assert args[0].item == TrampolineRef(0)
    assert args[1].item == CoreExport(0, "mem", "memory")

    run, again = plan.exports
    assert run.name == "run"
    assert isinstance(run.item, Lift)
    assert run.item.func == CoreExport(0, "run", "func")
    assert run.item.type == FuncType((("x", String()),), U32())
    assert run.item.options.post_return == CoreExport(0, "post", "func")
    assert run.item.options.instance == 0
    assert again.item == ImportedItem(("wasi:cli/environment@0.2.3", "get"))


def test_every_builtin_kind_in_the_plan(wat2wasm: Wat) -> None:
    plan = translate_component(wat2wasm(BUILTINS_WAT))
    by_kind = {t.kind: t for t in plan.trampolines if isinstance(t, Builtin)}
    assert set(by_kind) == {
        "resource.new",
        "resource.drop",
        "resource.rep",
        "backpressure.inc",
        "backpressure.dec",
        "task.return",
        "task.cancel",
        "context.get",
        "context.set",
        "subtask.cancel",
        "subtask.drop",
        "stream.new",
        "stream.read",
        "stream.write",
        "stream.cancel-read",
        "stream.cancel-write",
        "stream.drop-readable",
        "stream.drop-writable",
        "future.new",
        "future.read",
        "future.write",
        "future.cancel-read",
        "future.cancel-write",
        "future.drop-readable",
        "future.drop-writable",
        "error-context.new",
        "error-context.debug-message",
        "error-context.drop",
        "waitable-set.new",
        "waitable-set.wait",
        "waitable-set.poll",
        "waitable-set.drop",
        "waitable.join",
        "thread.yield",
    }
    assert all(t.instance == 0 for t in by_kind.values())
    (res,) = plan.resources
    assert not res.imported and res.instance == 0 and res.rep == "i32"
    for k in ("resource.new", "resource.drop", "resource.rep"):
        assert by_kind[k].resource == 0
    for k, t in by_kind.items():
        if k.startswith("stream."):
            assert t.type == Stream(U8()), k
        if k.startswith("future."):
            assert t.type == Future(String()), k
    tr = by_kind["task.return"]
    assert tr.results == (String(),)
    assert tr.options is not None and tr.options.string_encoding == "utf16"
    assert tr.options.memory == CoreExport(0, "m", "memory")
    assert by_kind["context.get"].index == 0 and by_kind["context.set"].index == 1
    assert by_kind["context.get"].context_type == "i32"
    assert by_kind["subtask.cancel"].is_async
    assert by_kind["stream.cancel-read"].is_async
    assert not by_kind["stream.cancel-write"].is_async
    assert by_kind["future.cancel-write"].is_async
    sr = by_kind["stream.read"].options
    assert sr is not None and sr.is_async and sr.memory == CoreExport(0, "m", "memory")
    fr = by_kind["future.read"].options
    assert fr is not None and fr.realloc == CoreExport(0, "realloc", "func")
    assert by_kind["waitable-set.wait"].memory == CoreExport(0, "m", "memory")
    assert plan.uses_async()
    # every built-in is wired into the user module, in the module's import order
    user = plan.core_instances[1]
    assert all(isinstance(a.item, TrampolineRef) for a in user.args)
    kinds = [plan.trampolines[a.item.index] for a in user.args if isinstance(a.item, TrampolineRef)]
    assert [t.kind for t in kinds if isinstance(t, Builtin)][:3] == [
        "resource.new",
        "resource.drop",
        "resource.rep",
    ]


NESTED_WAT = """
(component
  (import "host:app/log@1.2.0" (instance $log
    (export "log" (func (param "msg" string)))
  ))
  (type $point (tuple u32 u32))
  (component $Inner
    (import "log" (instance $l (export "log" (func (param "msg" string)))))
    (type $pt2 (tuple u32 u32))
    (core module $m
      (import "env" "log" (func (param i32 i32)))
      (func (export "f") (param i32 i32))
    )
    (core module $shim (memory (export "mem") 1)
      (func (export "realloc") (param i32 i32 i32 i32) (result i32) unreachable))
    (core instance $mi (instantiate $shim))
    (alias export $l "log" (func $logf))
    (core func $lowered (canon lower (func $logf) (memory (core memory $mi "mem"))))
    (core instance $i (instantiate $m (with "env" (instance (export "log" (func $lowered))))))
    (func $f (param "p" $pt2) (canon lift (core func $i "f")))
    (export "f" (func $f))
  )
  (component $Outer
    (import "inner" (instance $in
      (export "f" (func (param "p" $point)))
    ))
    (alias outer 1 $point (type $pp))
    (type $gt (func (param "p" $pp)))
    (core module $n (import "x" "f" (func (param i32 i32))))
    (alias export $in "f" (func $g))
    (core func $low (canon lower (func $g)))
    (core instance (instantiate $n (with "x" (instance (export "f" (func $low))))))
    (export "g" (func $g) (func (type $gt)))
  )
  (instance $a (instantiate $Inner (with "log" (instance $log))))
  (instance $b (instantiate $Inner (with "log" (instance $log))))
  (instance $c (instantiate $Outer (with "inner" (instance $a))))
  (export "api" (instance $c))
  (alias export $b "f" (func $bf))
  (instance $bag (export "f" (func $bf)))
  (export "b" (instance $bag))
)
"""


def test_nested_components_are_inlined(wat2wasm: Wat) -> None:
    plan = translate_component(wat2wasm(NESTED_WAT))
    # root + two Inner instances + one Outer instance
    assert [ci.parent for ci in plan.component_instances] == [None, 0, 0, 0]
    # the modules are listed once each though Inner is instantiated twice
    assert len(plan.modules) == 3
    owners = [ci.component_instance for ci in plan.core_instances]
    assert owners == [1, 1, 2, 2, 3]
    lowers = [t for t in plan.trampolines if isinstance(t, LowerImport)]
    assert [t.path for t in lowers] == [("host:app/log@1.2.0", "log")] * 2
    assert [t.options.instance for t in lowers] == [1, 2]
    assert lowers[0].options.memory == CoreExport(0, "mem", "memory")
    assert lowers[1].options.memory == CoreExport(2, "mem", "memory")
    (adapter,) = [t for t in plan.trampolines if isinstance(t, Adapter)]
    assert adapter.options.instance == 3
    assert adapter.lift.options.instance == 1
    assert adapter.lift.func == CoreExport(1, "f", "func")
    point = Tuple((U32(), U32()))
    assert adapter.type == FuncType((("p", point),), None)
    api, b = plan.exports
    assert isinstance(api.item, ExportedInstance)
    (g,) = api.item.items
    assert isinstance(g.item, Lift) and g.item.func == CoreExport(1, "f", "func")
    assert isinstance(b.item, ExportedInstance)
    (bf,) = b.item.items
    assert isinstance(bf.item, Lift) and bf.item.func == CoreExport(3, "f", "func")


RESOURCES_WAT = """
(component
  (import "wasi:io/streams@0.2.0" (instance $io
    (export "output-stream" (type $os (sub resource)))
    (export "[method]output-stream.write"
      (func (param "self" (borrow $os)) (param "bytes" (list u8))))
  ))
  (alias export $io "output-stream" (type $os))
  (core module $m
    (func (export "dtor") (param i32))
    (func (export "make") (param i32) (result i32) unreachable)
  )
  (core instance $i (instantiate $m))
  (type $r (resource (rep i32) (dtor (core func $i "dtor"))))
  (core func $drop-os (canon resource.drop $os))
  (core func $new (canon resource.new $r))
  (export $r2 "counter" (type $r))
  (type $ctor (func (param "n" u32) (result (own $r2))))
  (func $make (type $ctor) (canon lift (core func $i "make")))
  (export "[constructor]counter" (func $make))
)
"""


def test_resources_table(wat2wasm: Wat) -> None:
    plan = translate_component(wat2wasm(RESOURCES_WAT))
    imported, defined = plan.resources
    assert imported.imported and imported.name == "output-stream"
    assert imported.import_path == ("wasi:io/streams@0.2.0", "output-stream")
    assert not defined.imported and defined.instance == 0 and defined.name == "counter"
    assert defined.dtor == CoreExport(0, "dtor", "func")
    drop, new = plan.trampolines
    assert isinstance(drop, Builtin) and drop.kind == "resource.drop" and drop.resource == 0
    assert isinstance(new, Builtin) and new.kind == "resource.new" and new.resource == 1
    (imp,) = plan.imports
    assert isinstance(imp.desc, InstanceDesc)
    assert imp.desc.exports[0] == ("output-stream", TypeDesc(resource=0))
    write = imp.desc.exports[1][1]
    assert isinstance(write, FuncDesc)
    assert write.type.params[0] == ("self", Borrow(0))
    counter, ctor = plan.exports
    assert counter.desc == TypeDesc(resource=1)
    assert isinstance(ctor.item, Lift) and ctor.item.type.result == Own(1)


@pytest.mark.parametrize("wat", [SIMPLE_WAT, NESTED_WAT, RESOURCES_WAT, BUILTINS_WAT])
def test_deterministic_json_round_trip(wat2wasm: Wat, wat: str) -> None:
    data = wat2wasm(wat)
    one = json.dumps(plan_to_json(translate_component(data)), sort_keys=True)
    two = json.dumps(plan_to_json(translate_component(data)), sort_keys=True)
    assert one == two
    plan = plan_from_json(json.loads(one))
    assert isinstance(plan, Plan)
    assert plan == translate_component(data)


def test_plan_from_json_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="unknown plan node"):
        plan_from_json({"$": "Nope"})
    with pytest.raises(ValueError, match="not a plan"):
        plan_from_json({"$": "StaticModule", "index": 1})


@pytest.mark.parametrize(
    "data",
    [b"", b"\0asm", b"\0asm\x0d\0\x01\0\x07\xff", b"not wasm at all", b"\0asm\x01\0\0\0"],
)
def test_malformed_input_is_a_translation_error(data: bytes) -> None:
    with pytest.raises(TranslationError):
        translate_component(data)


def test_invalid_core_module_is_reported(wat2wasm_unchecked: Wat) -> None:
    data = wat2wasm_unchecked("(component (core module (func (result i32))))")
    with pytest.raises(TranslationError, match="invalid core module"):
        translate_component(data)


def test_name_attributes_reach_the_plan(wat2wasm: Wat) -> None:
    plan = translate_component(
        wat2wasm(
            """(component
              (import "x" (implements "a:b/d@1.0.0") (instance))
              (instance $i)
              (export "y" (implements "a:b/e") (instance $i)))"""
        )
    )
    (imp,) = plan.imports
    assert imp.implements == "a:b/d@1.0.0" and imp.version_suffix is None
    (exp,) = plan.exports
    assert exp.implements == "a:b/e"


def test_type_size_bomb_is_refused_quickly(wat2wasm_unchecked: Wat) -> None:
    types = ["(type $t0 (tuple u8 u8))"]
    types += [f"(type $t{i} (tuple $t{i - 1} $t{i - 1}))" for i in range(1, 40)]
    data = wat2wasm_unchecked("(component " + " ".join(types) + ")")
    with pytest.raises(TranslationError, match="exceeds"):
        translate_component(data)


def test_instance_type_bomb_is_refused_quickly(wat2wasm_unchecked: Wat) -> None:
    types = ['(type $i0 (instance (export "f" (func))))']
    types += [
        f'(type $i{i} (instance (export "a" (instance (type $i{i - 1})))'
        f' (export "b" (instance (type $i{i - 1})))))'
        for i in range(1, 40)
    ]
    data = wat2wasm_unchecked("(component " + " ".join(types) + ")")
    with pytest.raises(TranslationError, match="type size"):
        translate_component(data)


def _nested_components(depth: int) -> bytes:
    """``depth`` components nested in one another, built byte by byte."""

    def leb(n: int) -> bytes:
        out = bytearray()
        while True:
            b = n & 0x7F
            n >>= 7
            out.append(b | (0x80 if n else 0))
            if not n:
                return bytes(out)

    comp = b"\0asm\x0d\0\x01\0"
    for _ in range(depth):
        comp = b"\0asm\x0d\0\x01\0" + b"\x04" + leb(len(comp)) + comp
    return comp


def test_nesting_is_inlined_or_refused_cleanly() -> None:
    plan = translate_component(_nested_components(20))
    assert plan.component_instances[0].parent is None
    with pytest.raises(TranslationError):
        translate_component(_nested_components(5000))


def test_type_nesting_depth_is_bounded(wat2wasm_unchecked: Wat) -> None:
    ok = ["(type $t0 string)"] + [f"(type $t{i} (list $t{i - 1}))" for i in range(1, 90)]
    translate_component(wat2wasm_unchecked("(component " + " ".join(ok) + ")"))
    deep = ["(type $t0 string)"] + [f"(type $t{i} (list $t{i - 1}))" for i in range(1, 120)]
    with pytest.raises(TranslationError, match="nesting is too deep"):
        translate_component(wat2wasm_unchecked("(component " + " ".join(deep) + ")"))


def test_imported_module_and_component(wat2wasm: Wat) -> None:
    plan = translate_component(
        wat2wasm(
            """(component
              (import "m" (core module $m (export "f" (func))))
              (core instance $i (instantiate $m))
              (import "c" (component $c (export "g" (func))))
              (instance $ci (instantiate $c))
              (alias export $ci "g" (func $g))
              (core func (canon lower (func $g)))
              (func (export "f") (canon lift (core func $i "f"))))"""
        )
    )
    (ci,) = plan.core_instances
    assert ci.module == ImportedModule(("m",))
    (tr,) = plan.trampolines
    assert isinstance(tr, Builtin) and tr.kind == "unavailable"
    (f,) = plan.exports
    assert isinstance(f.item, Lift) and f.item.func == CoreExport(0, "f", "func")
    assert [i.name for i in plan.imports] == ["m", "c"]


def test_lifted_trampoline_and_self_adapter(wat2wasm: Wat) -> None:
    plan = translate_component(
        wat2wasm(
            """(component
              (import "h" (func $h (param "x" u32)))
              (core func $low (canon lower (func $h)))
              (func $again (param "x" u32) (canon lift (core func $low)))
              (core func $self (canon lower (func $again)))
              (export "again" (func $again)))"""
        )
    )
    low, adapter = plan.trampolines
    assert isinstance(low, LowerImport) and low.path == ("h",)
    assert isinstance(adapter, Adapter)
    assert adapter.lift.func == TrampolineRef(0)
    assert adapter.options.instance == adapter.lift.options.instance == 0
