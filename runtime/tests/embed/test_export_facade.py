"""The export functions of the facade and the guest resource wrappers (python-mapping.md §4, §5).

A synchronous-path export is a generated coroutine function whose body is
the export call itself; these tests pin what that must keep: a real
coroutine function (tasks, gather, wait_for), lazy (nothing runs before the
coroutine does), argument errors raised when it runs, the compiled code
installed on the same function object, and the error model. Guest resource
wrappers carry the resource-wrapper brand and the realm-local pill.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import pickle
from collections.abc import Callable
from typing import Any

import pytest

import polyengine
from polyengine_protocol import (
    RESOURCE_STATE,
    ComponentException,
    InvalidHandleError,
    Trap,
    brands_of,
    is_realm_local,
    is_resource_wrapper,
    is_stream,
    to_cloneable,
)

from .components import BASIC, GUEST_RESOURCE, RESULTS

Wat = Callable[[str], bytes]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def basic_imports(logs: list[str]) -> dict[str, Any]:
    def fail() -> None:
        raise ValueError("host is unhappy")

    return {"log": logs.append, "fail": fail}


# -- the export functions ------------------------------------------------------------------


def test_exports_are_coroutine_functions_with_the_wit_signature(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        add = inst.exports.add
        assert inspect.iscoroutinefunction(add)
        assert asyncio.iscoroutinefunction(add)
        assert add.__name__ == add.__qualname__ == "add"
        assert str(inspect.signature(add)) == "(a, b, /)"
        assert str(inspect.signature(inst.exports.greet)) == "(name, /)"
        coro = add(1, 2)
        assert inspect.iscoroutine(coro)
        assert await coro == 3

    run(main())


def test_a_call_runs_nothing_until_awaited(wat: Wat) -> None:
    logs: list[str] = []

    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports(logs))
        pending = inst.exports.greet("first")
        assert logs == []
        pending.close()  # never awaited: closing it runs nothing and warns nothing
        assert logs == []
        assert await inst.exports.greet("second") == "second"
        assert logs == ["second"]

    run(main())


def test_tasks_gather_and_wait_for_accept_export_calls(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        add = inst.exports.add
        assert await asyncio.create_task(add(20, 22)) == 42
        assert await asyncio.ensure_future(add(1, 1)) == 2
        assert await asyncio.gather(add(1, 2), add(3, 4), inst.exports.greet("x")) == [3, 7, "x"]
        assert await asyncio.wait_for(add(5, 6), 5) == 11
        results = await asyncio.gather(add(1), add(2, 2), return_exceptions=True)
        assert isinstance(results[0], TypeError) and results[1] == 4

    run(main())


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("add", (1,), "add takes 2 argument(s), got 1"),
        ("add", (), "add takes 2 argument(s), got 0"),
        ("add", (1, 2, 3), "add takes 2 argument(s), got 3"),
        ("greet", ("a", "b"), "greet takes 1 argument(s), got 2"),
        ("boom", (1,), "boom takes 0 argument(s), got 1"),
    ],
)
def test_a_wrong_argument_count_raises_when_the_call_runs(
    wat: Wat, name: str, args: tuple[Any, ...], message: str
) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        fn = getattr(inst.exports, name)
        for _ in range(2):  # the stub's check, then the compiled code's
            pending = fn(*args)  # calling does not raise ...
            with pytest.raises(TypeError) as ei:
                await pending  # ... running it does
            assert str(ei.value) == message
        assert await inst.exports.add(2, 3) == 5  # a refused call leaves the instance usable

    run(main())


def test_keyword_arguments_are_refused_at_the_call(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        with pytest.raises(TypeError, match="keyword"):
            inst.exports.add(a=1, b=2)
        with pytest.raises(TypeError, match="keyword"):
            inst.exports.add(1, b=2)

    run(main())


def test_the_compiled_code_is_installed_on_the_same_function(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        add = inst.exports.add  # a reference taken before the first call
        stub = add.__code__
        assert await add(1, 2) == 3
        assert add is inst.exports.add
        assert add.__code__ is not stub
        assert add.__code__.co_name == "add"
        compiled = add.__code__
        assert await add(4, 5) == 9
        assert add.__code__ is compiled  # compiled once

    run(main())


def test_the_compiled_call_touches_only_the_engine_call_path(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        add = inst.exports.add
        assert await add(1, 2) == 3
        names = set(add.__code__.co_names)
        # the engine's specialised core call (or, on the compiled call path, the
        # engine's compiled export call around it), and none of its internals
        assert names & {"core", "kernel"}
        assert not names & {"untyped", "call_args", "state", "trap", "fail", "async_required"}

    run(main())


def test_arguments_the_inline_checks_refuse_take_the_general_path(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        add = inst.exports.add
        assert await add(1, 2) == 3
        with pytest.raises(OverflowError):
            await add(-1, 2)
        with pytest.raises(OverflowError):
            await add(2**32, 0)
        with pytest.raises(TypeError):
            await add(True, 2)  # bool is refused for an integer
        with pytest.raises(TypeError):
            await add(1.0, 2)
        assert await add(2**32 - 1, 1) == 0  # u32 wraps in the guest's i32.add
        assert await add(40, 2) == 42

    run(main())


def test_traps_and_host_failures_poison_through_the_compiled_path(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(BASIC), basic_imports([]))
        assert await inst.exports.add(1, 2) == 3  # compiled
        with pytest.raises(Trap, match="host import fail raised ValueError") as ei:
            await inst.exports.boom()
        assert isinstance(ei.value.__cause__, ValueError)
        with pytest.raises(Trap, match="poisoned") as poisoned:
            await inst.exports.add(1, 2)
        assert poisoned.value.code == "instance-poisoned"
        with pytest.raises(Trap, match="poisoned"):
            await inst.exports.add(-1, 2)  # refused values meet the entry test too
        with pytest.raises(TypeError, match="add takes 2 argument"):
            await inst.exports.add(1)  # the argument count comes first, as before the trap

    run(main())


def test_result_typed_exports_return_ok_and_raise_err(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(RESULTS), {"check": lambda x: x * 2})
        div = inst.exports.div
        for _ in range(2):  # the stub, then the compiled code
            assert await div(9, 3) == 3
            with pytest.raises(ComponentException) as ei:
                await div(1, 0)
            assert ei.value.payload == "zero"
        with pytest.raises(TypeError, match="div takes 2 argument"):
            await div(1)

    run(main())


def test_exports_of_separate_instances_are_independent(wat: Wat) -> None:
    async def main() -> None:
        wasm = wat(BASIC)
        one = await polyengine.instantiate(wasm, basic_imports([]))
        two = await polyengine.instantiate(wasm, basic_imports([]))
        assert one.exports.add is not two.exports.add
        assert await one.exports.add(1, 2) == 3
        with pytest.raises(Trap):
            await one.exports.boom()
        assert await two.exports.add(3, 4) == 7  # the other instance is not poisoned

    run(main())


# -- guest resource wrappers ---------------------------------------------------------------


def test_guest_resource_wrappers_carry_the_resource_wrapper_brand(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        counter = inst.exports.Counter
        c = counter(7)
        assert is_resource_wrapper(c)
        assert RESOURCE_STATE in brands_of(c)
        assert not is_stream(c)
        assert not is_resource_wrapper(counter)  # the class is not a wrapper
        assert await c.get() == 7
        c.drop()
        assert is_resource_wrapper(c)  # a dropped wrapper is still one
        with pytest.raises(InvalidHandleError):
            await c.get()
        borrowed_class = type(c)
        assert getattr(borrowed_class, "__polyengine_brand__", None) == RESOURCE_STATE

    run(main())


def test_guest_resource_wrappers_keep_the_realm_local_pill(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        with inst.exports.Counter(3) as c:
            assert is_realm_local(c)
            with pytest.raises(TypeError, match="realm-local"):
                pickle.dumps(c)
            with pytest.raises(TypeError, match="realm-local"):
                pickle.dumps({"held": [c]})
            assert copy.copy(c) is c
            assert copy.deepcopy(c) is c
            with pytest.raises(InvalidHandleError, match="resource wrapper"):
                to_cloneable({"c": c})
            swapped = to_cloneable({"c": [c]}, replace=lambda v, path: {"was": path})
            assert swapped == {"c": [{"was": "c[0]"}]}
            assert await c.get() == 3

    run(main())


def test_guest_resource_methods_are_generated_coroutine_functions(wat: Wat) -> None:
    async def main() -> None:
        inst = await polyengine.instantiate(wat(GUEST_RESOURCE), {})
        counter = inst.exports.Counter
        get = counter.get
        assert inspect.iscoroutinefunction(get)
        assert get.__name__ == "get" and get.__qualname__ == "Counter.get"
        assert str(inspect.signature(get)) == "(self, /)"
        c = counter(5)
        pending = c.get()
        assert inspect.iscoroutine(pending)
        assert await pending == 5
        assert await asyncio.create_task(c.get()) == 5
        for _ in range(2):  # the stub's check, then the compiled code's
            wrong = c.get(1)  # calling does not raise ...
            with pytest.raises(TypeError) as ei:
                await wrong  # ... running it does, not counting the receiver
            assert str(ei.value) == "Counter.get takes 0 argument(s), got 1"
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'self'"):
            counter.get()
        assert await counter.get(c) == 5  # the function called with an explicit receiver
        assert await inst.exports.consume(c) == 5
        with pytest.raises(InvalidHandleError):
            await c.get()  # passed as own: the wrapper is spent

    run(main())


# -- the blocking facade over the generated exports ----------------------------------------


def test_the_blocking_facade_calls_sync_path_exports_directly(wat: Wat) -> None:
    from polyengine.sync import instantiate_sync

    with instantiate_sync(wat(RESULTS), {"check": lambda x: x * 2}) as inst:
        export = inst.instance.exports.div
        blocking = export._polyengine_blocking
        assert not inspect.iscoroutinefunction(blocking)
        stubs = (export.__code__, blocking.__code__)
        div = inst.exports.div
        with pytest.raises(TypeError, match=r"^div takes 2 argument\(s\), got 1$"):
            div(1)  # the stub's check
        assert div(9, 3) == 3
        # the first call compiled the blocking form; the coroutine compiles on its first call
        assert blocking.__code__ is not stubs[1] and export.__code__ is stubs[0]
        assert asyncio.run(export(8, 2)) == 4
        assert export.__code__ is not stubs[0]
        with pytest.raises(ComponentException) as ei:
            div(1, 0)
        assert ei.value.payload == "zero"
        with pytest.raises(TypeError, match=r"^div takes 2 argument\(s\), got 3$"):
            div(1, 2, 3)
        assert inst.exports.via_check(4) == 8
        assert asyncio._get_running_loop() is None


def test_task_model_exports_have_no_blocking_form(wat: Wat) -> None:
    from polyengine_protocol import suspending

    from . import async_components as ac

    async def sleep(x: int) -> int:
        return x

    async def main() -> None:
        inst = await polyengine.instantiate(wat(ac.SUSPENDING), {"sleep": suspending(sleep)})
        nap = inst.exports.nap
        assert inspect.iscoroutinefunction(nap)
        assert getattr(nap, "_polyengine_blocking", None) is None
        assert await nap(5) == 6

    run(main())
