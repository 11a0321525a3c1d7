"""Canonical definitions: lift, lower and the built-ins (CanonicalABI.md §"Canonical Definitions").

Each ``canon`` item is validated here (its options, its types, the core
signature of the function involved) and turned into a Plan entry: a
:class:`Lift` for ``canon lift``, a trampoline for the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from polyengine.binary import ast
from polyengine.binary.ast import Sort
from polyengine.translate._scope import Fail
from polyengine.translate._typescope import core_valtype
from polyengine.translate._values import CoreItem, FuncV, HostFunc, TypeV, Unavailable
from polyengine.translate.plan import Adapter, Builtin, CanonOptions, Lift, LowerImport
from polyengine.types.layout import (
    MAX_FLAT_ASYNC_PARAMS,
    MAX_FLAT_PARAMS,
    MAX_FLAT_RESULTS,
    PtrType,
    flatten_functype,
    flatten_types,
    needs_pointer,
)
from polyengine.types.model import FuncType, Future, Stream, ValType
from polyengine.types.subtype import CoreFuncT, CoreMemoryT, CoreTableT, ResourceT
from polyengine.validate.typedefs import TypeRuleError

if TYPE_CHECKING:
    from polyengine.translate._inline import Walk

_ENCODING_NAME = {
    ast.StringEncoding.UTF8: "utf8",
    ast.StringEncoding.UTF16: "utf16",
    ast.StringEncoding.LATIN1_UTF16: "latin1+utf16",
}
_ENCODING_TEXT = {"utf8": "utf8", "utf16": "utf16", "latin1+utf16": "latin1-utf16"}


@dataclass(slots=True)
class Opts:
    encoding: str | None = None
    memory: CoreItem | None = None
    realloc: CoreItem | None = None
    post_return: CoreItem | None = None
    is_async: bool = False
    callback: CoreItem | None = None

    @property
    def ptr(self) -> PtrType:
        return "i64" if self.memory is not None and getattr(self.memory.t, "is64", False) else "i32"


def parse_opts(w: Walk, opts: tuple[ast.CanonOpt, ...], allowed: frozenset[str]) -> Opts:
    """Read ``canonopt*``, rejecting duplicates, conflicts and options not allowed here."""
    s = w.scope
    o = Opts()
    for opt in opts:
        match opt:
            case ast.StringEncodingOpt(enc):
                name = _ENCODING_NAME[enc]
                if o.encoding is not None:
                    raise Fail(
                        f"canonical encoding option `{_ENCODING_TEXT[o.encoding]}` conflicts "
                        f"with option `{_ENCODING_TEXT[name]}`"
                    )
                o.encoding = name
            case ast.MemoryOpt(idx):
                if o.memory is not None:
                    raise Fail("canonical option `memory` is specified more than once")
                o.memory = s.get(Sort.CORE_MEMORY, idx)
            case ast.ReallocOpt(idx):
                if o.realloc is not None:
                    raise Fail("canonical option `realloc` is specified more than once")
                o.realloc = s.get(Sort.CORE_FUNC, idx)
            case ast.PostReturnOpt(idx):
                if o.post_return is not None:
                    raise Fail("canonical option `post-return` is specified more than once")
                o.post_return = s.get(Sort.CORE_FUNC, idx)
            case ast.AsyncOpt():
                if o.is_async:
                    raise Fail("canonical option `async` is specified more than once")
                o.is_async = True
            case ast.CallbackOpt(idx):
                if o.callback is not None:
                    raise Fail("canonical option `callback` is specified more than once")
                o.callback = s.get(Sort.CORE_FUNC, idx)
    present = {
        "string-encoding": o.encoding is not None,
        "memory": o.memory is not None,
        "realloc": o.realloc is not None,
        "post-return": o.post_return is not None,
        "async": o.is_async,
        "callback": o.callback is not None,
    }
    for name, there in present.items():
        if there and name not in allowed:
            raise Fail(f"canonical option `{name}` is not allowed here")
    if o.realloc is not None:
        if o.memory is None:
            raise Fail("canonical option `realloc` requires `memory` to also be specified")
        ptr = o.ptr
        if o.realloc.t != CoreFuncT((ptr, ptr, ptr, ptr), (ptr,)):
            raise Fail(
                "canonical option `realloc` uses a core function with an incorrect signature"
            )
    if o.callback is not None:
        if not o.is_async:
            raise Fail("cannot specify callback without async")
        if o.callback.t != CoreFuncT(("i32", "i32", "i32"), ("i32",)):
            raise Fail(
                "canonical option `callback` uses a core function with an incorrect signature"
            )
    if o.post_return is not None and o.is_async:
        raise Fail("cannot specify post-return function in async")
    return o


def to_options(w: Walk, o: Opts) -> CanonOptions:
    return CanonOptions(
        instance=w.instance,
        string_encoding=o.encoding or "utf8",
        memory=None if o.memory is None else o.memory.ref,
        realloc=None if o.realloc is None else o.realloc.ref,
        post_return=None if o.post_return is None else o.post_return.ref,
        is_async=o.is_async,
        callback=None if o.callback is None else o.callback.ref,
    )


def _require(o: Opts, memory: bool, realloc: bool) -> None:
    if memory and o.memory is None:
        raise Fail("canonical option `memory` is required")
    if realloc and o.realloc is None:
        raise Fail("canonical option `realloc` is required")


def _describe(ts: tuple[str, ...]) -> str:
    return "[" + ", ".join(t.capitalize() for t in ts) + "]"


def _core_sig(ft: FuncType, context: Literal["lift", "lower"], o: Opts) -> CoreFuncT:
    """The core signature ``canon lift``/``lower`` with options ``o`` must have (§"Flattening")."""
    core = flatten_functype(
        ft, context, is_async=o.is_async, callback=o.callback is not None, ptr_type=o.ptr
    )
    return CoreFuncT(core.params, core.results)


def _check_core(actual: CoreFuncT, expected: CoreFuncT) -> None:
    if actual.params != expected.params:
        raise Fail(
            f"lowered parameter types `{_describe(expected.params)}` do not match "
            f"parameter types `{_describe(actual.params)}`"
        )
    if actual.results != expected.results:
        raise Fail(
            f"lowered result types `{_describe(expected.results)}` do not match "
            f"result types `{_describe(actual.results)}`"
        )


_LIFT_OPTS = frozenset({"string-encoding", "memory", "realloc", "post-return", "async", "callback"})
_LOWER_OPTS = frozenset({"string-encoding", "memory", "realloc", "async"})


def _functype(w: Walk, index: int) -> FuncType:
    t = w.scope.get(Sort.TYPE, index)
    assert isinstance(t, TypeV)
    if not isinstance(t.t, FuncType):
        raise Fail(f"type index {index} is not a function type")
    return t.t


def lift(w: Walk, d: ast.CanonLift) -> FuncV:
    item = w.scope.get(Sort.CORE_FUNC, d.core_func)
    assert isinstance(item, CoreItem)
    ft = _functype(w, d.type_index)
    o = parse_opts(w, d.opts, _LIFT_OPTS)
    if o.is_async and not ft.is_async:
        raise Fail("the `async` canonical option requires an async function type")
    params, results = ft.param_types(), ft.result_types()
    ptr = o.ptr
    # CanonicalABI.md §"canon lift": lift(param), lower(result), and the flat limits
    max_results = MAX_FLAT_PARAMS if o.is_async else MAX_FLAT_RESULTS
    memory = (
        any(map(needs_pointer, params + results))
        or len(flatten_types(params, ptr)) > MAX_FLAT_PARAMS
        or len(flatten_types(results, ptr)) > max_results
    )
    realloc = any(map(needs_pointer, params)) or len(flatten_types(params, ptr)) > MAX_FLAT_PARAMS
    _require(o, memory, realloc)
    assert isinstance(item.t, CoreFuncT)
    expected = _core_sig(ft, "lift", o)
    _check_core(item.t, expected)
    if o.post_return is not None and o.post_return.t != CoreFuncT(expected.results, ()):
        raise Fail(
            "canonical option `post-return` uses a core function with an incorrect signature"
        )
    assert item.ref is not None
    return FuncV(ft, Lift(item.ref, ft, to_options(w, o)))


def lower(w: Walk, d: ast.CanonLower) -> CoreItem:
    fv = w.scope.get(Sort.FUNC, d.func)
    assert isinstance(fv, FuncV)
    ft = fv.t
    if any(isinstance(o, ast.PostReturnOpt) for o in d.opts):
        raise Fail("canonical option `post-return` cannot be specified for lowerings")
    if any(isinstance(o, ast.CallbackOpt) for o in d.opts):
        raise Fail("canonical option `callback` cannot be specified for lowerings")
    o = parse_opts(w, d.opts, _LOWER_OPTS)
    if o.is_async and not ft.is_async:
        raise Fail("the `async` canonical option requires an async function type")
    params, results = ft.param_types(), ft.result_types()
    ptr = o.ptr
    # CanonicalABI.md §"canon lower": lower(param), lift(result) and the flat
    # limits (an async lowering returns any result through memory). The
    # spec text also asks a memory of every async lowering; the official
    # suite does not, and neither do we.
    max_params = MAX_FLAT_ASYNC_PARAMS if o.is_async else MAX_FLAT_PARAMS
    memory = (
        any(map(needs_pointer, params + results))
        or len(flatten_types(params, ptr)) > max_params
        or (bool(results) if o.is_async else len(flatten_types(results, ptr)) > MAX_FLAT_RESULTS)
    )
    _require(o, memory, any(map(needs_pointer, results)))
    core = _core_sig(ft, "lower", o)
    options = to_options(w, o)
    src = fv.src
    if isinstance(src, HostFunc):
        ref = w.sink.add_trampoline(LowerImport(src.path, ft, options))
    elif isinstance(src, Lift):
        ref = w.sink.add_trampoline(Adapter(src, ft, options))
    else:
        assert isinstance(src, Unavailable)
        ref = w.sink.add_trampoline(Builtin("unavailable", w.instance))
    return CoreItem("func", core, ref)


# -- built-ins ---------------------------------------------------------------------------


def _resource(w: Walk, index: int, local: bool) -> int:
    t = w.scope.get(Sort.TYPE, index)
    assert isinstance(t, TypeV)
    if not isinstance(t.t, ResourceT):
        raise Fail(f"type index {index} is not a resource type")
    rid = t.t.rid
    if local:
        info = w.tr.arena.resources[rid]
        if info.imported or info.sink != w.sink.id or info.instance != w.instance:
            raise Fail("not a local resource")
    return rid


def _payload_type(w: Walk, index: int, cls: type[Stream] | type[Future]) -> Stream | Future:
    t = w.scope.get(Sort.TYPE, index)
    assert isinstance(t, TypeV)
    if not isinstance(t.t, cls):
        raise Fail(f"type index {index} is not a {cls.__name__.lower()} type")
    return t.t


def _sig(params: tuple[str, ...], results: tuple[str, ...]) -> CoreFuncT:
    return CoreFuncT(params, results)


_STREAM_FUTURE: dict[str, type[Stream] | type[Future]] = {
    "stream.new": Stream,
    "stream.read": Stream,
    "stream.write": Stream,
    "stream.cancel-read": Stream,
    "stream.cancel-write": Stream,
    "stream.drop-readable": Stream,
    "stream.drop-writable": Stream,
    "future.new": Future,
    "future.read": Future,
    "future.write": Future,
    "future.cancel-read": Future,
    "future.cancel-write": Future,
    "future.drop-readable": Future,
    "future.drop-writable": Future,
}

_SIMPLE: dict[str, CoreFuncT] = {
    "backpressure.inc": _sig((), ()),
    "backpressure.dec": _sig((), ()),
    "task.cancel": _sig((), ()),
    "subtask.drop": _sig(("i32",), ()),
    "error-context.drop": _sig(("i32",), ()),
    "waitable-set.new": _sig((), ("i32",)),
    "waitable-set.drop": _sig(("i32",), ()),
    "waitable.join": _sig(("i32", "i32"), ()),
    "thread.index": _sig((), ("i32",)),
    "thread.resume-later": _sig(("i32",), ()),
    "thread.suspend": _sig((), ("i32",)),
    "thread.yield": _sig((), ("i32",)),
    "thread.suspend-then-resume": _sig(("i32",), ("i32",)),
    "thread.yield-then-resume": _sig(("i32",), ("i32",)),
    "thread.suspend-then-promote": _sig(("i32",), ("i32",)),
    "thread.yield-then-promote": _sig(("i32",), ("i32",)),
}


def builtin(w: Walk, d: ast.Definition) -> CoreItem:
    """Validate a canon built-in and add its trampoline."""
    kind = getattr(d, "builtin", None)
    if not isinstance(kind, str):
        raise Fail(f"unexpected definition {type(d).__name__}")
    b, sig = _builtin(w, d, kind)
    return CoreItem("func", sig, w.sink.add_trampoline(b))


def _builtin(w: Walk, d: ast.Definition, kind: str) -> tuple[Builtin, CoreFuncT]:
    inst = w.instance
    cancellable = bool(getattr(d, "cancellable", False))
    if kind in _SIMPLE:
        return Builtin(kind, inst, cancellable=cancellable), _SIMPLE[kind]
    match d:
        case ast.CanonResourceNew(i):
            rid = _resource(w, i, local=True)
            return Builtin(kind, inst, resource=rid), _sig(("i32",), ("i32",))
        case ast.CanonResourceDrop(i):
            rid = _resource(w, i, local=False)
            return Builtin(kind, inst, resource=rid), _sig(("i32",), ())
        case ast.CanonResourceRep(i):
            rid = _resource(w, i, local=True)
            return Builtin(kind, inst, resource=rid), _sig(("i32",), ("i32",))
        case ast.CanonTaskReturn(result, opts):
            try:
                results: tuple[ValType, ...] = (
                    () if result is None else (w.tr.types.builder(w.scope).valtype(result),)
                )
            except TypeRuleError as exc:
                raise Fail(str(exc)) from None
            o = parse_opts(w, opts, frozenset({"string-encoding", "memory"}))
            ptr = o.ptr
            flat = flatten_types(results, ptr)
            big = len(flat) > MAX_FLAT_PARAMS
            _require(o, any(map(needs_pointer, results)) or big, False)
            params = (ptr,) if big else tuple(flat)
            return Builtin(kind, inst, results=results, options=to_options(w, o)), _sig(params, ())
        case ast.CanonContextGet(t, index) | ast.CanonContextSet(t, index):
            vt = core_valtype(t)
            if vt != "i32":
                raise Fail(f"{kind} only supports i32, not {vt}")
            if index >= 2:
                raise Fail(f"{kind} index {index} is out of bounds")
            sig = _sig((), ("i32",)) if kind == "context.get" else _sig(("i32",), ())
            return Builtin(kind, inst, context_type=vt, index=index), sig
        case ast.CanonSubtaskCancel(is_async):
            return Builtin(kind, inst, is_async=is_async), _sig(("i32",), ("i32",))
        case ast.CanonErrorContextNew(opts):
            o = parse_opts(w, opts, frozenset({"string-encoding", "memory"}))
            _require(o, True, False)
            return Builtin(kind, inst, options=to_options(w, o)), _sig((o.ptr, o.ptr), ("i32",))
        case ast.CanonErrorContextDebugMessage(opts):
            o = parse_opts(w, opts, frozenset({"string-encoding", "memory", "realloc"}))
            _require(o, True, True)
            return Builtin(kind, inst, options=to_options(w, o)), _sig(("i32", o.ptr), ())
        case ast.CanonWaitableSetWait(cancel, mem) | ast.CanonWaitableSetPoll(cancel, mem):
            m = w.scope.get(Sort.CORE_MEMORY, mem)
            assert isinstance(m, CoreItem)
            ptr = "i64" if isinstance(m.t, CoreMemoryT) and m.t.is64 else "i32"
            return Builtin(kind, inst, cancellable=cancel, memory=m.ref), _sig(
                ("i32", ptr), ("i32",)
            )
        case ast.CanonThreadNewIndirect(ti, table):
            ft = w.scope.get(Sort.CORE_TYPE, ti)
            if ft != CoreFuncT(("i32",), ()):
                raise Fail("thread.new-indirect requires a function type `(func (param i32))`")
            tb = w.scope.get(Sort.CORE_TABLE, table)
            assert isinstance(tb, CoreItem)
            idx = "i64" if isinstance(tb.t, CoreTableT) and tb.t.is64 else "i32"
            return (
                Builtin(kind, inst, table=tb.ref, core_type=(("i32",), ())),
                _sig((idx, "i32"), ("i32",)),
            )
    if kind in _STREAM_FUTURE:
        return _stream_future(w, d, kind)
    raise Fail(f"canonical built-in `{kind}` is not supported")


def _stream_future(w: Walk, d: ast.Definition, kind: str) -> tuple[Builtin, CoreFuncT]:
    index = getattr(d, "type_index", -1)
    t = _payload_type(w, index, _STREAM_FUTURE[kind])
    inst = w.instance
    op = kind.split(".", 1)[1]
    is_stream = kind.startswith("stream")
    if op == "new":
        return Builtin(kind, inst, type=t), _sig((), ("i64",))
    if op in ("read", "write"):
        o = parse_opts(
            w, getattr(d, "opts", ()), frozenset({"string-encoding", "memory", "realloc", "async"})
        )
        payload = t.t
        if payload is not None:
            _require(o, True, op == "read" and needs_pointer(payload))
        ptr = o.ptr
        sig = _sig(("i32", ptr, ptr), (ptr,)) if is_stream else _sig(("i32", ptr), ("i32",))
        return Builtin(kind, inst, type=t, options=to_options(w, o)), sig
    if op.startswith("cancel"):
        return Builtin(kind, inst, type=t, is_async=bool(getattr(d, "is_async", False))), _sig(
            ("i32",), ("i32",)
        )
    return Builtin(kind, inst, type=t), _sig(("i32",), ())
