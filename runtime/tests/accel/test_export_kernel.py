"""The compiled export call and the blocking facade's drive behave as the pure path.

Each case runs the same calls on two instances of one component, one made on
the compiled call path and one under ``pure_stores()``, through the exports
facade (the awaited coroutines and ``polyengine.sync``'s blocking calls) and
through ``ExportCall`` itself, and compares every outcome: the value and its
type, or the exception chain (types and messages), what the host imports
saw (arguments, the running loop, the context), and whether the instance
was poisoned. Without the compiled path both instances are pure and the
comparison still runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import pytest

import polyengine
from polyengine import engine
from polyengine.abi.resources import ComponentInstance
from polyengine.engine._callpath import pure_stores
from polyengine.errors import ThreadRuleError
from polyengine.sync import instantiate_sync
from polyengine_protocol import Trap

Wat = Callable[[str], bytes]

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="caller")

_COMPONENT = """(component
  (import "f" (func $f (param "x" u32) (result u32)))
  (core func $f (canon lower (func $f)))
  (core module $m
    (import "host" "f" (func $f (param i32) (result i32)))
    (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "add64") (param i64 i64) (result i64) (i64.add (local.get 0) (local.get 1)))
    (func (export "neg") (param i32) (result i32) (i32.sub (i32.const 0) (local.get 0)))
    (func (export "boom") (param i32) (result i32) unreachable)
    (func (export "nothing") (param i32))
    (func (export "callf") (param i32) (result i32) (call $f (local.get 0))))
  (core instance $i (instantiate $m (with "host" (instance (export "f" (func $f))))))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "add64") (param "a" s64) (param "b" u64) (result u64)
    (canon lift (core func $i "add64")))
  (func (export "neg") (param "a" s32) (result s32) (canon lift (core func $i "neg")))
  (func (export "boom") (param "a" u32) (result u32) (canon lift (core func $i "boom")))
  (func (export "nothing") (param "a" u32) (canon lift (core func $i "nothing")))
  (func (export "callf") (param "x" u32) (result u32) (canon lift (core func $i "callf")))
)"""


class _Raise:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _imports(behaviour: list[object], seen: list[tuple[Any, ...]]) -> dict[str, Any]:
    def f(x: int) -> object:
        seen.append((x, asyncio._get_running_loop() is not None, _VAR.get()))
        _VAR.set("changed by the import")
        value = behaviour[0]
        if isinstance(value, _Raise):
            raise value.exc
        return value

    return {"f": f}


def _outcome(run: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        value = run()
    except BaseException as exc:  # every outcome is compared
        chain: list[tuple[str, str]] = []
        cur: BaseException | None = exc
        while cur is not None:
            chain.append((type(cur).__name__, str(cur)))
            cur = cur.__cause__
        return ("raised", tuple(chain))
    return ("returned", repr(value), type(value).__name__)


def _paths(pure: bool) -> AbstractContextManager[None]:
    return pure_stores() if pure else nullcontext()


class _Side:
    """One instance behind the blocking facade and one awaited, on one call path."""

    def __init__(self, wasm: bytes, pure: bool, behaviour: object) -> None:
        self.pure = pure
        self.behaviour = [behaviour]
        self.seen: list[tuple[Any, ...]] = []
        self.wasm = wasm
        self._build()

    def _build(self) -> None:
        with _paths(self.pure):
            self.blocking = instantiate_sync(self.wasm, _imports(self.behaviour, self.seen))

            async def make() -> Any:
                return await polyengine.instantiate(self.wasm, _imports(self.behaviour, self.seen))

            self.awaited = asyncio.run(make())

    def close(self) -> None:
        self.blocking.close()
        self.awaited.close()

    def block(self, name: str, args: Sequence[object], kwargs: dict[str, object]) -> Any:
        return _outcome(lambda: getattr(self.blocking.exports, name)(*args, **kwargs))

    def wait(self, name: str, args: Sequence[object]) -> Any:
        fn = getattr(self.awaited.exports, name)

        async def call() -> Any:
            return await fn(*args)

        return _outcome(lambda: asyncio.run(call()))


class _Pair:
    def __init__(self, wat: Wat, behaviour: object = 7, component: str = _COMPONENT) -> None:
        wasm = wat(component)
        self.sides = [_Side(wasm, pure, behaviour) for pure in (False, True)]

    def close(self) -> None:
        for side in self.sides:
            side.close()

    def compare(
        self, name: str, args: Sequence[object], kwargs: dict[str, object] | None = None
    ) -> tuple[Any, ...]:
        results = []
        for side in self.sides:
            side.seen.clear()
            token = _VAR.set("caller")
            try:
                first = side.block(name, args, kwargs or {})
                after = side.block("add", (1, 2), {})  # poisoned or not
                context = _VAR.get()
            finally:
                _VAR.reset(token)
            awaited = side.wait(name, args) if not kwargs else None
            awaited_after = side.wait("add", (1, 2))
            results.append((first, after, context, awaited, awaited_after, list(side.seen)))
        assert results[0] == results[1]
        if "raised" in (results[0][1][0], results[0][4][0]):
            for side in self.sides:
                side.close()
                side._build()
        return results[0]


@contextmanager
def _pair(wat: Wat, behaviour: object = 7, component: str = _COMPONENT) -> Iterator[_Pair]:
    pair = _Pair(wat, behaviour, component)
    try:
        yield pair
    finally:
        pair.close()


ARGS: list[tuple[object, ...]] = [
    (1, 2), (2**32 - 1, 1), (0, 0), (-1, 2), (2**32, 0), (True, 1), (1, False), (1.0, 2),
    (1, "2"), (None, 1), (2**64, 1), (), (1,), (1, 2, 3),
]  # fmt: skip


@pytest.mark.parametrize("args", ARGS)
def test_add_alike_on_both_paths(wat: Wat, args: tuple[object, ...]) -> None:
    with _pair(wat) as pair:
        pair.compare("add", args)
        pair.compare("add64", args)
        pair.compare("neg", args[:1])


def test_keyword_arguments_alike_on_both_paths(wat: Wat) -> None:
    with _pair(wat) as pair:
        assert pair.compare("add", (1,), {"b": 2})[0][0] == "raised"
        assert pair.compare("add", (), {"a0": 1, "a1": 2})[0][0] == "raised"


def test_traps_poison_alike_on_both_paths(wat: Wat) -> None:
    with _pair(wat) as pair:
        outcome = pair.compare("boom", (1,))
        assert outcome[0][0] == "raised" and outcome[1][0] == "raised"  # poisoned
        assert pair.compare("nothing", (3,))[0] == ("returned", "None", "NoneType")


@pytest.mark.parametrize(
    "behaviour",
    [
        5, 2**32, -1, True, 1.5, None,
        _Raise(ValueError("unhappy")), _Raise(Trap("mine", code="mine")),
        _Raise(KeyboardInterrupt()),
    ],
)  # fmt: skip
def test_imports_see_the_same_loop_and_context_on_both_paths(wat: Wat, behaviour: object) -> None:
    with _pair(wat, behaviour) as pair:
        outcome = pair.compare("callf", (65535,))
        # the import ran with the private loop running, in a copy of the caller's context
        assert outcome[2] == "caller"
        assert outcome[5][0] == (65535, True, "caller")


def test_the_blocking_facade_refuses_a_running_loop_and_a_closed_loop(wat: Wat) -> None:
    wasm = wat(_COMPONENT)
    outcomes = []
    for pure in (False, True):
        with _paths(pure):
            inst = instantiate_sync(wasm, _imports([7], []))
        add = inst.exports.add

        async def inside(add: Callable[..., Any] = add) -> Any:
            return _outcome(lambda: add(1, 2))

        before = asyncio.run(inside())
        ok = _outcome(functools.partial(add, 1, 2))
        inst.close()
        outcomes.append((before, ok, _outcome(functools.partial(add, 1, 2))))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0][0] == "raised" and outcomes[0][1][0] == "returned"
    assert outcomes[0][2][0] == "raised"


def test_the_compiled_forms_are_used_when_the_path_is_active(wat: Wat) -> None:
    inst = instantiate_sync(wat(_COMPONENT), _imports([7], []))
    try:
        add = inst.exports.add
        assert add(1, 2) == 3
        compiled = engine.call_path().startswith("compiled")
        assert (type(add).__name__ == "Drive") == compiled
        coroutine_function = inst.instance.exports.add
        assert asyncio.run(coroutine_function(1, 2)) == 3  # compiles its code
        assert ("kernel" in coroutine_function.__code__.co_names) == compiled
    finally:
        inst.close()


def test_the_coroutines_call_the_kernel_as_a_builtin_method(wat: Wat) -> None:
    """The generated coroutine's ``kernel`` is ``Export.call``: the same call, positional only."""
    if not engine.call_path().startswith("compiled"):
        pytest.skip("the compiled call path is not active")
    from polyengine.engine import _accel  # type: ignore[attr-defined]

    inst = instantiate_sync(wat(_COMPONENT), _imports([7], []))
    try:
        add = inst.instance.exports.add
        assert asyncio.run(add(1, 2)) == 3  # compiles its code
        kernel = add.__globals__["kernel"]
        assert type(kernel).__name__ == "builtin_function_or_method"
        assert isinstance(kernel.__self__, _accel.Export)
        assert kernel(20, 22) == 42
        assert kernel(2**32 - 1, 1) == 0  # the slot's range: wraps as the pure path does
        with pytest.raises(TypeError, match="keyword"):
            kernel(a=1, b=2)
        with pytest.raises(TypeError, match="add takes 2 argument"):
            kernel(1)
        assert inst.exports.add(3, 4) == 7  # the blocking facade drives the same call
    finally:
        inst.close()


def test_the_compiled_forms_refuse_steps_that_are_not_callable() -> None:
    if not engine.call_path().startswith("compiled"):
        pytest.skip("the compiled call path is not active")
    from polyengine.engine import _accel  # type: ignore[attr-defined]

    ok = lambda *a: None  # noqa: E731
    with pytest.raises(TypeError):
        _accel.Export(ok, 2, False, object(), object(), "f", ok, None, ok, None, None, 0)
    with pytest.raises(ValueError):
        _accel.Export(ok, 1000, False, object(), object(), "f", ok, ok, ok, None, None, 0)
    with pytest.raises(TypeError):  # the instance dict must be a dict
        _accel.Export(ok, 2, False, object(), object(), "f", ok, ok, ok, None, [], 0)
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(TypeError):
            _accel.Drive(loop, ok, None, ok, ok, False)
    finally:
        loop.close()


@pytest.mark.parametrize("pure", [False, True])
def test_no_loop_runs_and_the_context_is_the_callers_after_a_call(wat: Wat, pure: bool) -> None:
    with _paths(pure):
        inst = instantiate_sync(wat(_COMPONENT), _imports([7], []))
    try:
        token = _VAR.set("outside")
        try:
            for name, args in [("add", (1, 2)), ("callf", (3,)), ("add", (-1, 2)), ("boom", (1,))]:
                _outcome(functools.partial(getattr(inst.exports, name), *args))
                assert asyncio._get_running_loop() is None
                assert _VAR.get() == "outside"
        finally:
            _VAR.reset(token)
    finally:
        inst.close()


def test_an_import_calling_a_blocking_export_is_refused_alike(wat: Wat) -> None:
    wasm = wat(_COMPONENT)
    outcomes = []
    for pure in (False, True):
        with _paths(pure):
            inner = instantiate_sync(wasm, _imports([7], []))
            calls: list[Any] = []

            def f(x: int, inner: Any = inner, calls: list[Any] = calls) -> int:
                calls.append(_outcome(functools.partial(inner.exports.add, x, 1)))
                return x

            outer = instantiate_sync(wasm, {"f": f})
        try:
            first = _outcome(functools.partial(outer.exports.callf, 5))
            outcomes.append((first, calls, _outcome(functools.partial(inner.exports.add, 5, 1))))
        finally:
            outer.close()
            inner.close()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][1][0][0] == "raised"  # the inner call saw the outer call's running loop
    assert outcomes[0][2] == ("returned", "6", "int")


def test_the_compiled_call_keeps_the_thread_rule(wat: Wat) -> None:
    """The compiled scalar call refuses another thread with ThreadRuleError, as the
    generated Python does, before the guest runs and without poisoning."""
    for pure in (False, True):
        with _paths(pure):
            inst = instantiate_sync(wat(_COMPONENT), _imports([7], []))
        try:
            got = _call_from_another_thread(inst.exports.add)
            assert isinstance(got, ThreadRuleError), (pure, got)
            assert inst.exports.add(1, 2) == 3  # not poisoned
        finally:
            inst.close()


def _call_from_another_thread(add: Callable[..., Any]) -> object:
    import threading

    got: list[object] = []

    def other() -> None:
        try:
            got.append(add(1, 2))
        except BaseException as exc:
            got.append(exc)

    t = threading.Thread(target=other)
    t.start()
    t.join(10)
    assert len(got) == 1
    return got[0]


_VALUES = """(component
  (core module $m
    (memory (export "mem") 1)
    (data (i32.const 100) "ok\\ff\\fe")
    (global $bump (mut i32) (i32.const 1024))
    (global $bad (mut i32) (i32.const 0))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (local $r i32)
      (if (global.get $bad) (then (return (global.get $bad))))
      (local.set $r (global.get $bump))
      (global.set $bump (i32.add (local.get $r) (local.get 3)))
      (local.get $r))
    (func (export "set-bad") (param i32) (global.set $bad (local.get 0)))
    (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "echo") (param i32 i32 i32 i32 i32) (result i32)
      (i32.store (i32.const 16) (local.get 0))
      (i32.store (i32.const 20) (local.get 1))
      (i32.store8 (i32.const 24) (local.get 2))
      (i32.store (i32.const 28) (local.get 3))
      (i32.store (i32.const 32) (local.get 4))
      (i32.const 16))
    (func (export "give") (param i32 i32) (result i32)
      (i32.store (i32.const 48) (local.get 0))
      (i32.store (i32.const 52) (local.get 1))
      (i32.const 48))
    (func (export "sink") (param i32 i32 i32))
    (func (export "len") (param i32 i32) (result i32) (local.get 1)))
  (core instance $i (instantiate $m))
  (type $point (record (field "x" s32) (field "y" s32) (field "label" (option string))))
  (export $point-t "point" (type $point))
  (type $e (enum "a" "b"))
  (export $e-t "e" (type $e))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "set-bad") (param "v" u32) (canon lift (core func $i "set-bad")))
  (func (export "echo-record") (param "p" $point-t) (result $point-t)
    (canon lift (core func $i "echo") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc"))))
  (func (export "give") (param "p" u32) (param "n" u32) (result string)
    (canon lift (core func $i "give") (memory (core memory $i "mem"))))
  (func (export "give-bytes") (param "p" u32) (param "n" u32) (result (list u8))
    (canon lift (core func $i "give") (memory (core memory $i "mem"))))
  (func (export "len-s8") (param "s" string) (result s8)
    (canon lift (core func $i "len") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc"))))
  (func (export "len-u16") (param "s" string) (result u16)
    (canon lift (core func $i "len") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc"))))
  (func (export "len-bool") (param "s" string) (result bool)
    (canon lift (core func $i "len") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc"))))
  (func (export "sink") (param "b" (list u8)) (param "e" $e-t)
    (canon lift (core func $i "sink") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc"))))
)"""

_POINTS: list[object] = [
    {"x": 1, "y": -2, "label": "a label"},
    {"x": -(2**31), "y": 2**31 - 1, "label": None},
    {"x": 1, "y": 2, "label": ""},
    {"x": 1, "y": 2, "label": "\u00e9\U0001f600"},
    {"x": 1, "y": 2},  # an optional field left out
    {"x": 1, "y": 2, "label": "a\ud800"},  # a lone surrogate
    {"x": 2**31, "y": 2, "label": None},
    {"x": True, "y": 2, "label": None},
    {"x": 1, "y": 2, "label": b"bytes"},
    {"x": 1, "y": 2, "label": None, "z": 0},
    {"y": 2, "label": None},
    [1, 2, None],
    None,
]


@pytest.mark.parametrize("point", _POINTS)
def test_record_values_alike_on_both_paths(wat: Wat, point: object) -> None:
    with _pair(wat, component=_VALUES) as pair:
        pair.compare("echo_record", (point,))
        pair.compare("echo_record", (point, 1))
        pair.compare("sink", (b"abc", "b"))
        pair.compare("sink", (b"abc", "c"))
        pair.compare("sink", (bytearray(b"abc"), "a"))


@pytest.mark.parametrize(
    "args", [(100, 2), (100, 4), (102, 2), (65530, 6), (65530, 7), (2**32 - 1, 2), (0, 0)]
)
def test_lifted_results_alike_on_both_paths(wat: Wat, args: tuple[int, int]) -> None:
    """Strings and bytes read from guest memory: the same values, or the same traps."""
    with _pair(wat, component=_VALUES) as pair:
        pair.compare("give", args)
        pair.compare("give_bytes", args)


@pytest.mark.parametrize("n", [0, 5, 127, 128, 200, 256, 70000])
def test_scalar_results_alike_on_both_paths(wat: Wat, n: int) -> None:
    """A bool or integer result of a lowered string: the core result converted alike."""
    with _pair(wat, component=_VALUES) as pair:
        for name in ("len_s8", "len_u16", "len_bool"):
            pair.compare(name, ("a" * n,))


@pytest.mark.parametrize("bad", [65535, 65536, 2**32 - 1])
def test_realloc_faults_alike_on_both_paths(wat: Wat, bad: int) -> None:
    with _pair(wat, component=_VALUES) as pair:
        pair.compare("set_bad", (bad,))
        outcome = pair.compare("echo_record", ({"x": 1, "y": 2, "label": "abc"},))
        assert outcome[0][0] == "raised"  # a realloc block out of bounds traps


def test_the_compiled_values_call_is_used_when_the_path_is_active(wat: Wat) -> None:
    inst = instantiate_sync(wat(_VALUES), {})
    try:
        point = {"x": 1, "y": -2, "label": "a label"}
        assert inst.exports.echo_record(point) == point
        coroutine_function = inst.instance.exports.echo_record
        assert asyncio.run(coroutine_function(point)) == point
        compiled = engine.call_path().startswith("compiled")
        assert ("kernel" in coroutine_function.__code__.co_names) == compiled
    finally:
        inst.close()


_SUM_PARAMS = " ".join(["i32"] * 16)
_SUM_BODY = "(local.get 0)" + "".join(f" (local.get {k}) (i32.add)" for k in range(1, 16))
_NESTED = f"""(component
  (import "f" (func $f (param "x" u32) (result u32)))
  (core func $f (canon lower (func $f)))
  (core module $m
    (import "host" "f" (func $f (param i32) (result i32)))
    (memory (export "mem") 1)
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (drop (call $f (i32.const 5)))
      (i32.const 1024))
    (func (export "len") (param i32 i32) (result i32) (local.get 1))
    (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
    (func (export "sum") (param {_SUM_PARAMS}) (result i32) {_SUM_BODY}))
  (core instance $i (instantiate $m (with "host" (instance (export "f" (func $f))))))
  (type $q (record (field "w" u8) (field "x" u8) (field "y" u8) (field "z" u8)))
  (export $q-t "q" (type $q))
  (type $r (record (field "a" $q-t) (field "b" $q-t) (field "c" $q-t) (field "d" $q-t)))
  (export $r-t "r" (type $r))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add")))
  (func (export "sum") (param "r" $r-t) (result u32) (canon lift (core func $i "sum")))
  (func (export "len") (param "s" string) (result u32)
    (canon lift (core func $i "len") (memory (core memory $i "mem"))
      (realloc (core func $i "realloc"))))
)"""


def _quad(base: int) -> dict[str, int]:
    return dict(zip("wxyz", range(base, base + 4), strict=True))


_ABC = {k: _quad(4 * n) for n, k in enumerate("abc")}


@pytest.mark.parametrize(
    ("value", "total"),
    [
        ({**_ABC, "d": _quad(12)}, sum(range(16))),  # 20 fields looked up: more than kept
        ({**_ABC, "d": {**_quad(12), "z": 256}}, None),
        ({**_ABC, "d": {**_quad(12), "z": "1"}}, None),
        ({**_ABC, "d": _quad(12), "e": 1}, None),
        (_ABC, None),
    ],
)
def test_nested_records_alike_on_both_paths(wat: Wat, value: object, total: int | None) -> None:
    """Records whose type test looks up more fields than the lower is handed along."""
    with _pair(wat, component=_NESTED) as pair:
        outcome = pair.compare("sum", (value,))
    if total is not None:
        assert outcome[0] == ("returned", repr(total), "int")
    else:
        assert outcome[0][0] == "raised"


def test_a_realloc_calling_out_traps_alike_on_both_paths(wat: Wat) -> None:
    """``may_leave`` is cleared around ``realloc`` (written through the instance's dict)."""
    with _pair(wat, component=_NESTED) as pair:
        outcome = pair.compare("len", ("abc",))
        assert outcome[0][0] == "raised"
        assert pair.sides[0].seen == pair.sides[1].seen == []  # the import never ran


@pytest.mark.parametrize("pure", [False, True])
def test_may_enter_written_between_calls_is_seen(wat: Wat, pure: bool) -> None:
    """A call after another has cleared ``may_enter`` (between two calls) is refused."""
    with _paths(pure):
        inst = instantiate_sync(wat(_NESTED), {"f": lambda x: x})
    try:
        add = inst.instance.exports.add
        ci = inst.instance._runtime.records[0].ci
        assert asyncio.run(add(1, 2)) == 3
        assert asyncio.run(add(1, 2)) == 3
        ci.may_enter = False
        with pytest.raises(Trap, match="cannot enter") as info:
            asyncio.run(add(1, 2))
        assert info.value.code == "cannot-enter"
        ci.may_enter = True
        assert asyncio.run(add(2, 2)) == 4
    finally:
        inst.close()


def _logged(base: type[ComponentInstance], flag: str, log: list[object]) -> type[Any]:
    """A subclass of ``base`` with a property before the ``flag`` slot, logging each access."""
    slot = vars(ComponentInstance)[flag]

    def get(self: ComponentInstance) -> object:
        log.append("get")
        return slot.__get__(self)

    def put(self: ComponentInstance, value: object) -> None:
        log.append(value)
        slot.__set__(self, value)

    return type("Logged", (base,), {flag: property(get, put)})


@pytest.mark.parametrize("pure", [False, True])
def test_may_enter_behind_a_property_is_used_once_the_class_changes(wat: Wat, pure: bool) -> None:
    """Calls that found ``may_enter``'s slot go through a property put before it later:
    by changing the instance's class, or by changing that class itself."""
    with _paths(pure):
        inst = instantiate_sync(wat(_NESTED), {"f": lambda x: x})
    try:
        ci = inst.instance._runtime.records[0].ci

        def add(a: int, b: int) -> Any:
            return inst.instance.exports.add(a, b)  # as first made, then as recompiled

        base = type(ci)
        assert asyncio.run(add(1, 2)) == 3
        assert asyncio.run(add(1, 2)) == 3  # the slot in use
        compiled = not pure and engine.call_path().startswith("compiled")
        assert ("kernel" in inst.instance.exports.add.__code__.co_names) == compiled
        log: list[object] = []
        ci.__class__ = _logged(base, "may_enter", log)
        assert asyncio.run(add(1, 2)) == 3
        assert log == ["get", False, True]
        ci.__class__ = base
        log.clear()
        assert asyncio.run(add(2, 2)) == 4
        assert log == []
        plain = type("Plain", (base,), {})
        ci.__class__ = plain
        assert asyncio.run(add(2, 2)) == 4  # the slot again, for this class
        plain.may_enter = vars(_logged(base, "may_enter", log))["may_enter"]  # type: ignore[attr-defined]
        assert asyncio.run(add(2, 3)) == 5
        assert log == ["get", False, True]
        assert ci.may_enter is True
    finally:
        inst.close()


@pytest.mark.parametrize("pure", [False, True])
def test_poisoned_behind_a_property_is_read_once_the_class_changes(wat: Wat, pure: bool) -> None:
    """``rec.poisoned`` read at its slot until the record's class puts a property before it."""
    with _paths(pure):
        inst = instantiate_sync(wat(_NESTED), {"f": lambda x: x})
    try:
        rec = inst.instance._runtime.records[0]
        base = type(rec)
        slot = vars(base)["poisoned"]
        log: list[object] = []
        trap = Trap("poisoned behind a property", code="unreachable")
        shown: list[BaseException | None] = [None]

        def get(self: object) -> object:
            log.append("get")
            return shown[0] if shown[0] is not None else slot.__get__(self)

        add = inst.instance.exports.add
        assert asyncio.run(add(1, 2)) == 3
        assert asyncio.run(add(1, 2)) == 3  # the slot in use
        rec.__class__ = type("Logged", (base,), {"__slots__": (), "poisoned": property(get)})
        assert asyncio.run(add(2, 2)) == 4
        assert inst.exports.add(2, 3) == 5
        assert log == ["get", "get"]
        shown[0] = trap
        with pytest.raises(Trap, match="poisoned behind a property"):
            asyncio.run(add(2, 2))
        with pytest.raises(Trap, match="poisoned behind a property"):
            inst.exports.add(2, 2)
        shown[0] = None
        rec.__class__ = base
        log.clear()
        assert asyncio.run(add(3, 3)) == 6
        assert log == []
    finally:
        inst.close()


def test_may_leave_behind_a_property_is_used_alike_on_both_paths(wat: Wat) -> None:
    """``realloc``'s clearing of ``may_leave`` goes through a property put before its slot."""
    logs = []
    for pure in (False, True):
        with _paths(pure):
            inst = instantiate_sync(wat(_VALUES), {})
        try:
            point = {"x": 1, "y": -2, "label": "a label"}
            for _ in range(2):  # the first call, then the slot in use
                assert asyncio.run(inst.instance.exports.echo_record(point)) == point
            ci = inst.instance._runtime.records[0].ci
            log: list[object] = []
            ci.__class__ = _logged(type(ci), "may_leave", log)
            assert asyncio.run(inst.instance.exports.echo_record(point)) == point
            assert inst.exports.echo_record(point) == point
            logs.append(log)
        finally:
            inst.close()
    assert logs[0] == logs[1]
    assert logs[0].count(False) == 2 and logs[0].count(True) == 2, logs[0]


_WIDE = [
    2**30 - 1, 2**30, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1,
    2**64, 2**100, -1, -(2**30), -(2**30) - 1, -(2**31), -(2**31) - 1, -(2**63), -(2**63) - 1,
    -(2**100),
]  # fmt: skip


@pytest.mark.parametrize("n", _WIDE)
def test_integers_of_several_digits_alike_on_both_paths(wat: Wat, n: int) -> None:
    """Arguments at and past each slot's range (ints of more than one 30-bit digit)."""
    with _pair(wat) as pair:
        pair.compare("add", (n, 0))
        pair.compare("add64", (n, 0))
        pair.compare("add64", (0, n))
        pair.compare("neg", (n,))


#: ints of one 30-bit digit, read inline by the compiled conversions (accel_compact)
_ONE_DIGIT = [0, 1, 7, 2**29, 2**30 - 2, -2, -7, -(2**29), -(2**30) + 1]


@pytest.mark.parametrize("n", _ONE_DIGIT)
def test_integers_of_one_digit_alike_on_both_paths(wat: Wat, n: int) -> None:
    """Arguments of one digit at both signs, in each slot format (read without a digit loop)."""
    with _pair(wat) as pair:
        pair.compare("add", (n, 0))
        pair.compare("add", (0, n))
        pair.compare("add64", (n, 0))
        pair.compare("add64", (0, n))
        pair.compare("neg", (n,))
    with _pair(wat, component=_VALUES) as pair:
        pair.compare("echo_record", ({"x": n, "y": -1, "label": None},))


@pytest.mark.parametrize("n", _WIDE)
def test_record_integers_of_several_digits_alike_on_both_paths(wat: Wat, n: int) -> None:
    """Record fields (``s32``, ``u8``) at and past their range, lowered in C or Python."""
    with _pair(wat, component=_VALUES) as pair:
        pair.compare("echo_record", ({"x": n, "y": -1, "label": None},))
        pair.compare("echo_record", ({"x": 0, "y": n, "label": "a"},))
    with _pair(wat, component=_NESTED) as pair:
        pair.compare("sum", ({**_ABC, "d": {**_quad(12), "z": n}},))
