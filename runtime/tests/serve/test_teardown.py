"""A closed instance is freed by reference counting, and what the host still holds of it
fails cleanly.

A server makes and discards an instance per request (a 0.2 proxy): were its
objects left in reference cycles (runtime, host linker, task model, engine
callbacks), each would wait for the cyclic collector. Closing lets go of
the bindings that refer back to the instance, so dropping it frees it at
once; the tests run with the collector disabled to show it. Export
functions and resource handles the host keeps past ``close()`` refuse with
an error naming the closed store (embedder-api §"Instances": exports are
unusable afterwards), whether or not they were called before.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from asgi_client import asgi_call, scope_of
from test_shared_compilation import CELLS, _cell_class
from wat_guests import HELLO

import polyengine
import polyengine.asgi._pool as asgi_pool
from polyengine.asgi import App
from polyengine.translate import translate
from polyengine_protocol import suspending


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off (young garbage of earlier tests collected first)."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@pytest.fixture(scope="module")
def cells(wat: Callable[[str], bytes]) -> Any:
    return translate(wat(CELLS))


def _imports(marked: bool) -> dict[str, Any]:
    """The host class ``Cell`` (the same one takes its objects back)."""
    cell = _cell_class(10)
    if marked:
        # a suspending()-marked method: the component then runs on the task model
        cell.get = suspending(cell.get)  # type: ignore[method-assign]
    return {"Cell": cell}


@pytest.mark.parametrize(
    "marked", [pytest.param(False, id="sync"), pytest.param(True, id="task-model")]
)
def test_a_closed_instance_is_freed_without_the_cyclic_collector(
    cells: Any, marked: bool, no_collector: None
) -> None:
    refs: list[weakref.ref[Any]] = []

    async def main() -> None:
        imports = _imports(marked)
        inst = await polyengine.instantiate(cells, imports)
        runtime = inst._runtime
        assert (runtime.tasks is not None) is marked
        refs.extend(weakref.ref(o) for o in (runtime, runtime.store))
        if runtime.tasks is not None:
            refs.append(weakref.ref(runtime.tasks))
        del runtime
        assert await inst.exports.run(3) == 30
        cell = imports["Cell"](4)
        assert await inst.exports.keep(cell) is cell
        inst.close()

    asyncio.run(main())
    assert [r() for r in refs] == [None] * len(refs)


@pytest.mark.parametrize("marked", [False, True], ids=["sync", "task-model"])
def test_exports_held_past_close_refuse_it(cells: Any, marked: bool) -> None:
    async def main() -> None:
        imports = _imports(marked)
        inst = await polyengine.instantiate(cells, imports)
        run, keep = inst.exports.run, inst.exports.keep
        assert await run(2) == 20
        inst.close()
        inst.close()  # idempotent
        with pytest.raises(Exception, match="closed"):
            await run(2)  # called before
        with pytest.raises(Exception, match="closed"):
            await keep(imports["Cell"](1))  # never called: prepared after the close

    asyncio.run(main())


def _collecting_runtimes(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref[Any]]:
    """Weak references to the runtime of every instance the ASGI app's pool makes."""
    made: list[weakref.ref[Any]] = []
    instantiate = asgi_pool.instantiate

    async def recording(*args: Any, **kwargs: Any) -> Any:
        inst = await instantiate(*args, **kwargs)
        made.append(weakref.ref(inst._runtime))
        return inst

    monkeypatch.setattr(asgi_pool, "instantiate", recording)
    return made


def _serve_requests(component: bytes, count: int) -> None:
    app = App(component, log=lambda _: None)

    async def main() -> None:
        await app.startup()
        for _ in range(count):
            ex = await asgi_call(app, scope_of("GET", "/"))
            assert ex.status == 200
        await app.shutdown()

    asyncio.run(asyncio.wait_for(main(), 300))


def test_a_proxy_s_instances_are_freed_as_each_request_ends(
    wat: Callable[[str], bytes], monkeypatch: pytest.MonkeyPatch, no_collector: None
) -> None:
    made = _collecting_runtimes(monkeypatch)
    _serve_requests(wat(HELLO), 3)
    assert len(made) >= 3
    assert [r() for r in made] == [None] * len(made)


@pytest.mark.slow
@pytest.mark.toolchain
def test_the_componentize_py_proxy_s_instances_are_freed_as_each_request_ends(
    monkeypatch: pytest.MonkeyPatch, no_collector: None
) -> None:
    """The 0.2 proxy of componentize-py runs on the task model (marked imports)."""
    from live import builder

    component = bytes(builder().build_guest("py-http-proxy").read_bytes())
    made = _collecting_runtimes(monkeypatch)
    _serve_requests(component, 3)
    assert len(made) >= 3
    assert [r() for r in made] == [None] * len(made)
