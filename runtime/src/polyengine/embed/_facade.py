"""The exports facade (python-mapping.md §1, §4, §5, §7).

``instance.exports`` is a namespace: world-level functions by snake_case
attribute, interface exports by item access with their verbatim id (the
version resolves by the track rules), resource classes by PascalCase name on
the interface object. Exports are coroutine functions (the one calling
convention); a guest resource is a class whose constructor is synchronous,
whose methods are coroutine functions, with ``drop()``, ``with`` and a
``weakref.finalize`` backstop.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from polyengine import engine
from polyengine.abi.codegen import compile_source
from polyengine.abi.resources import ResourceType
from polyengine.embed._linkcheck import attach
from polyengine.embed._names import check_collisions, parse_func_name, pascal, snake
from polyengine.embed._versions import VersionedRegistry
from polyengine.instance import ComponentRuntime, ExportCall, export_call
from polyengine.translate import plan as pln
from polyengine.types.model import FuncType, Result
from polyengine_protocol import (
    RESOURCE_STATE,
    ComponentException,
    InvalidHandleError,
    Trap,
    define_realm_local,
)

if TYPE_CHECKING:  # the task model is imported only by a store that runs on it
    from polyengine.instance import AsyncExportCall

__all__ = ["Exports", "InterfaceExports", "build_exports"]


def unwrap_result(ft: FuncType) -> Callable[[Any], Any] | None:
    """For a ``result``-typed export: ok returns its value, err raises ComponentException."""
    if not isinstance(ft.result, Result):
        return None

    def unwrap(value: Any) -> Any:
        if value["kind"] == "ok":
            return value.get("value")
        raise ComponentException(value.get("value"))

    return unwrap


def make_export_function(call: ExportCall | AsyncExportCall, py_name: str) -> Callable[..., Any]:
    """A coroutine function calling ``call``; results follow the error model."""
    unwrap = unwrap_result(call.lift.type)
    if isinstance(call, ExportCall):
        return sync_export_function(call, py_name, unwrap)
    nparams = len(call.lift.type.params)
    label = call.name
    acall = call

    async def export(*args: Any) -> Any:
        if len(args) != nparams:
            raise TypeError(f"{label} takes {nparams} argument(s), got {len(args)}")
        try:
            value = await acall(args)
        except Trap as exc:
            if exc.code == "interrupt":
                await _settle_interrupt()
            raise
        return value if unwrap is None else unwrap(value)

    export.__name__ = export.__qualname__ = py_name
    return export


class _Missing:
    """The default of the generated parameters: an argument that was not passed."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _arity_error(label: str, nparams: int, skip: int, given: tuple[Any, ...]) -> TypeError:
    count = sum(1 for a in given if a is not _MISSING) - skip
    return TypeError(f"{label} takes {nparams - skip} argument(s), got {count}")


def sync_export_function(
    call: ExportCall,
    py_name: str,
    unwrap: Callable[[Any], Any] | None = None,
    *,
    method: bool = False,
    label: str | None = None,
) -> Callable[..., Any]:
    """The coroutine function of a synchronous-path export (python-mapping.md §4).

    It is generated source, ``async def f(a0=MISSING, a1=MISSING, /, *rest)``:
    one coroutine per call whose body is the export call itself (the
    statements of :meth:`ExportCall.inline`), so awaiting it costs one
    coroutine and no other Python frame. A wrong number of arguments is a
    ``TypeError`` naming ``label`` (the export's name by default), raised
    when the coroutine runs, as for every other argument error; keyword
    arguments are refused at the call. A ``method`` takes its receiver as a
    required first parameter (the ``self`` of the WIT method) and does not
    count it in that message.

    The call is compiled on the first call (the export's canonical options
    are resolved lazily, like :class:`ExportCall`'s): until then the
    function's code is a stub (one code object shared by every export of the
    same shape) that compiles the call, installs the compiled code on this
    same function object (so a reference taken earlier gets the fast path
    too) and makes the call. A function (not a method) also carries, as
    ``_polyengine_blocking``, the same call as a plain function, compiled the
    same way on its own first call, which :mod:`polyengine.sync` calls; and,
    when its store takes the compiled call path, as ``_polyengine_direct()``
    that call as one callable (the compiled call of a scalar export,
    ``engine.export_kernel``, or else the plain function), which the
    facade's compiled drive calls (``engine.blocking_driver``).
    """
    ft = call.lift.type
    n = len(ft.params)
    label = call.name if label is None else label
    skip = 1 if method else 0
    assert n >= skip, (label, n)
    fname = py_name if py_name.isidentifier() else "export"
    env: dict[str, Any] = {
        "__name__": __name__,
        "MISSING": _MISSING,
        **_SOURCE_ENV,
        "arity_error": functools.partial(_arity_error, label, n, skip),
    }
    filename = f"polyengine export {label}"
    body: list[str] = []
    typed: list[bool] = []

    def install(target: types.FunctionType, is_async: bool) -> None:
        """Compile the call into ``target`` (the coroutine function or the blocking form).

        ``env`` is read as ``target``'s globals, not held by this closure: ``env``
        holds ``first``, which holds this function, and a cycle through them
        would keep a closed instance from being freed by reference counting.
        """
        env = target.__globals__
        if not body:
            inline = call.inline()
            tup = _tuple(n)
            if unwrap is None:
                assert inline.names == [f"a{k}" for k in range(n)], inline.names
                env.update(inline.env)
                body.extend(inline.body)
                if inline.typed:
                    # A missing argument (MISSING) fails every type test, so the test of
                    # the head moves to the path of the values the tests refuse.
                    env["general"] = _checked(inline.env["general"], env["arity_error"])
                if inline.kernel is not None:
                    # The compiled call: the same general call, and the head's test of
                    # the count for the blocking form's direct call (``direct``).
                    env["kernel"] = inline.kernel(env["general"], _raising(env["arity_error"]))
                typed.append(inline.typed)
            else:
                env.update(run=call.__call__, unwrap=unwrap)
                body.append(f"return unwrap(run({tup}))")
                typed.append(False)
        src = _source(is_async, fname, n, skip, body, check_missing=not typed[0])
        scope: dict[str, Any] = {}
        exec(compile_source(src, filename), env, scope)
        target.__code__ = scope[fname].__code__

    def first(args: tuple[Any, ...], is_async: bool) -> Any:
        # the two functions weakly: their globals (``env``) hold this closure
        target = (weak_export if is_async else weak_blocking)()
        assert target is not None  # the stub running now is one of them
        install(target, is_async)
        value = call(args)
        return value if unwrap is None else unwrap(value)

    def direct() -> Callable[..., Any]:
        """The blocking form as one callable: the compiled call when there is one."""
        if not body:
            install(blocking, False)
        kernel: Callable[..., Any] | None = blocking.__globals__.get("kernel")
        return blocking if kernel is None else kernel

    env["first"] = first
    defaults = (_MISSING,) * (n - skip)

    def stub(is_async: bool) -> types.FunctionType:
        code = _stub_code(is_async, n, skip).replace(co_name=fname, co_qualname=fname)
        fn = types.FunctionType(code, env, fname, defaults or None)
        fn.__qualname__ = py_name
        return fn

    export = stub(True)
    with contextlib.suppress(ValueError):  # a name that is no identifier: keep the generated
        export.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(snake(p), inspect.Parameter.POSITIONAL_ONLY) for p, _ in ft.params]
        )
    # The same call as a plain function, for the blocking facade (polyengine.sync): a
    # synchronous-path export never suspends, so the facade may make the call itself
    # instead of driving a coroutine; the errors are the coroutine's, raised at the call.
    blocking = stub(False)
    weak_export, weak_blocking = weakref.ref(export), weakref.ref(blocking)
    if not method:
        export._polyengine_blocking = blocking  # type: ignore[attr-defined]
        if engine.compiled_path(call._rt.store):
            export._polyengine_direct = direct  # type: ignore[attr-defined]
    export.__name__ = blocking.__name__ = py_name
    return export


def _tuple(n: int) -> str:
    return "(" + "".join(f"a{k}, " for k in range(n)) + ")"


def _raising(arity_error: Callable[[tuple[Any, ...]], TypeError]) -> Callable[..., Any]:
    """``arity_error`` raising its error (the head's ``raise arity_error(...)``)."""

    def arity(given: tuple[Any, ...]) -> Any:
        raise arity_error(given)

    return arity


def _checked(general: Callable[[tuple[Any, ...]], Any], arity_error: Any) -> Any:
    """``general`` refusing a call with a missing argument first, as the export's head would."""

    def checked(args: tuple[Any, ...]) -> Any:
        for a in args:
            if a is _MISSING:
                raise arity_error(args)
        return general(args)

    return checked


async def _settle_interrupt() -> None:
    """Two turns of the loop after an interrupt trap (see ``_source``).

    A due timer runs in the turn after the one the task resumes in.
    """
    import asyncio

    await asyncio.sleep(0)
    await asyncio.sleep(0)


_SOURCE_ENV: dict[str, Any] = {"Trap": Trap, "settle_interrupt": _settle_interrupt}


def _source(
    is_async: bool, fname: str, n: int, skip: int, body: Sequence[str], *, check_missing: bool
) -> str:
    """``[async] def fname(a0=MISSING, ..., /, *rest):`` with the arity check, then ``body``.

    A method's first parameter is its receiver, ``self``: required, and
    bound to ``a0`` for the body. Without ``check_missing`` only extra
    arguments are refused here (the body refuses missing ones).
    """
    names = [f"a{k}" for k in range(n)]
    params = ["self"] * skip + [f"{a}=MISSING" for a in names[skip:]]
    params += (["/"] if names else []) + ["*rest"]
    optional = names[skip:] if check_missing else []
    head = ["a0 = self"] * skip + [
        f"if rest or {optional[-1]} is MISSING:" if optional else "if rest:",
        f"    raise arity_error({_tuple(n)} + rest)",
    ]
    kind = "async def" if is_async else "def"
    lines = [*head, *body]
    if is_async:
        # An interrupted guest (its task's asyncio timeout is due) lets the loop
        # run once, so the timeout cancels the task: the await raises what the
        # timeout expects (``CancelledError``, then ``TimeoutError``).
        lines = [
            "try:",
            *(f"    {ln}" for ln in lines),
            "except Trap as exc:",
            "    if exc.code == 'interrupt':",
            "        await settle_interrupt()",
            "    raise",
        ]
    return f"{kind} {fname}({', '.join(params)}):\n" + "".join(f"    {ln}\n" for ln in lines)


@functools.cache
def _stub_code(is_async: bool, n: int, skip: int) -> types.CodeType:
    """The code of an export function before its first call (shared by every export of a shape)."""
    body = [f"return first({_tuple(n)}, {is_async})"]
    src = _source(is_async, "export", n, skip, body, check_missing=True)
    scope: dict[str, Any] = {}
    exec(compile_source(src, "polyengine export stub"), {"MISSING": _MISSING, **_SOURCE_ENV}, scope)
    code: types.CodeType = scope["export"].__code__
    return code


class _Namespace:
    """Attribute access over a fixed dict of members."""

    def __init__(self, members: dict[str, Any], label: str) -> None:
        self.__dict__.update(members)
        self._label = label

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"{self._label} has no export {name!r}")

    def __dir__(self) -> list[str]:
        return [k for k in self.__dict__ if not k.startswith("_")]


class InterfaceExports(_Namespace):
    """The functions and resource classes of one exported interface."""


class Exports(_Namespace):
    """``instance.exports``: world-level exports by attribute, interfaces by id."""

    def __init__(self, members: dict[str, Any], interfaces: dict[str, InterfaceExports]) -> None:
        super().__init__(members, "the component")
        self._interfaces = interfaces
        self._registry = VersionedRegistry(interfaces.items())

    def __getitem__(self, name: str) -> InterfaceExports:
        found = self._registry.lookup(name)
        if found is None:
            raise KeyError(
                f"the component exports no interface {name!r}; "
                f"it exports {sorted(self._interfaces) or 'none'}"
            )
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._registry.lookup(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._interfaces)

    def interfaces(self) -> list[str]:
        return list(self._interfaces)


class GuestResource:
    """Base of the host-side classes of guest-implemented resources (python-mapping.md §5).

    Every wrapper carries the resource-wrapper brand (``polyengine.resourceState/1``,
    python-mapping.md §3), so ``polyengine_protocol.is_resource_wrapper`` holds for
    it whatever copy of the runtime minted it, and the realm-local pill (§8):
    pickling refuses it, copies are the wrapper itself.
    """

    __slots__ = ("__weakref__", "_finalizer", "_owned", "_rep")
    __polyengine_brand__: ClassVar[str] = RESOURCE_STATE
    _polyengine_rt: ResourceType
    #: the instance's engine store (not its runtime: a class lives in reference
    #: cycles, and would keep a closed instance from being freed)
    _polyengine_store: engine.EngineStore
    _polyengine_ctor: Callable[[tuple[Any, ...]], Any] | None = None

    _rep: int | None
    _owned: bool
    _finalizer: weakref.finalize[Any, Any] | None

    def __new__(cls, *args: Any) -> Any:
        ctor = cls._polyengine_ctor
        if ctor is None:
            raise TypeError(f"resource {cls.__name__} has no constructor export")
        return ctor(args)

    @classmethod
    def _polyengine_wrap(cls, rep: int, owned: bool) -> GuestResource:
        self = object.__new__(cls)
        self._rep = rep
        self._owned = owned
        if owned:
            self._finalizer = weakref.finalize(
                self, _drop_leaked, cls._polyengine_store, cls._polyengine_rt, rep
            )
        else:
            self._finalizer = None
        return self

    def _polyengine_take_rep(self, rt: ResourceType, take: bool) -> int:
        if rt is not type(self)._polyengine_rt:
            raise TypeError(f"expected a {rt.name} resource, got {type(self).__name__}")
        rep = self._rep
        if rep is None:
            raise InvalidHandleError(
                f"{type(self).__name__} handle was dropped or passed as own; it can't be used"
            )
        if take:
            if not self._owned:
                raise TypeError(f"{type(self).__name__} is borrowed; it cannot be passed as own")
            self._rep = None
            if self._finalizer is not None:
                self._finalizer.detach()
        return rep

    def _polyengine_invalidate(self) -> None:
        """A borrowed wrapper's call ended: later use raises InvalidHandleError."""
        if not self._owned:
            self._rep = None

    def drop(self) -> None:
        """Drop the handle, running the guest destructor (idempotent)."""
        rep = self._rep
        if rep is None:
            return
        self._rep = None
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._owned:
            _drop_rep(type(self)._polyengine_rt, rep)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()

    def __repr__(self) -> str:
        state = "dropped" if self._rep is None else f"rep={self._rep}"
        return f"<{type(self).__name__} {state}>"


define_realm_local(GuestResource)


def _drop_rep(rt: ResourceType, rep: int) -> None:
    if rt.dtor is not None:
        rt.dtor(rep)


def _drop_leaked(store: engine.EngineStore, rt: ResourceType, rep: int) -> None:
    """The collection backstop: nothing to drop once the store is closed (it took the
    resource with it), as at interpreter exit after ``close()``."""
    if not store.closed:
        _drop_rep(rt, rep)


def build_exports(rt: ComponentRuntime) -> Exports:
    """Build the facade over the plan's root exports."""
    classes: dict[int, type[GuestResource]] = {}
    types_ = rt.resource_types

    def rid(index: int) -> int:
        """The identity of resource ``index`` of this instance, for link checks."""
        return id(types_[index])

    def resource_class(index: int, name: str) -> type[GuestResource]:
        cls = classes.get(index)
        if cls is None:
            cls = type(pascal(name), (GuestResource,), {"__slots__": ()})
            cls._polyengine_rt = rt.resource_types[index]
            cls._polyengine_store = rt.store
            attach(cls, pln.TypeDesc(resource=index), rid)
            classes[index] = cls
        return cls

    by_rt: dict[int, type[GuestResource]] = {}

    def wrap_guest(rtype: ResourceType, rep: int, owned: bool) -> object:
        index = rt.resource_types.index(rtype)
        cls = by_rt.get(index) or resource_class(index, rt.plan.resources[index].name)
        return cls._polyengine_wrap(rep, owned)

    if rt.host_resources is not None:
        rt.host_resources.wrap_guest = wrap_guest

    def members_of(items: Sequence[pln.Export], label: str) -> dict[str, Any]:
        funcs: dict[str, Any] = {}
        resources: dict[str, type[GuestResource]] = {}
        for e in items:
            if isinstance(e.item, pln.ExportedType) and e.item.desc.resource is not None:
                resources[e.name] = resource_class(e.item.desc.resource, e.name)
        names = [e.name for e in items if isinstance(e.item, pln.Lift)]
        parsed = {n: parse_func_name(n) for n in names}
        check_collisions([p.name for p in parsed.values() if p.kind == "func"])
        for e in items:
            if not isinstance(e.item, pln.Lift):
                continue
            pn = parsed[e.name]
            call = export_call(rt, e.item, f"{label}{e.name}")
            if pn.kind == "func":
                function = make_export_function(call, snake(pn.name))
                attach(function, e.desc, rid)
                funcs[snake(pn.name)] = function
                continue
            cls = resources.get(pn.resource or "")
            if cls is None:
                continue
            _attach(cls, pn.kind, pn.name, call)
        for name, cls in resources.items():
            funcs[pascal(name)] = cls
        return funcs

    top: dict[str, Any] = {}
    interfaces: dict[str, InterfaceExports] = {}
    root_items = [e for e in rt.plan.exports if not isinstance(e.item, pln.ExportedInstance)]
    top.update(members_of(root_items, ""))
    for e in rt.plan.exports:
        if isinstance(e.item, pln.ExportedInstance):
            namespace = InterfaceExports(
                members_of(e.item.items, f"{e.name}#"), f"interface {e.name}"
            )
            attach(namespace, e.desc, rid)
            interfaces[e.name] = namespace
    exports = Exports(top, interfaces)
    attach(exports, pln.InstanceDesc(tuple((e.name, e.desc) for e in rt.plan.exports)), rid)
    return exports


def _attach(
    cls: type[GuestResource], kind: str, name: str, call: ExportCall | AsyncExportCall
) -> None:
    unwrap = unwrap_result(call.lift.type)

    def finish(value: Any) -> Any:
        return value if unwrap is None else unwrap(value)

    async def invoke(args: tuple[Any, ...]) -> Any:
        if not isinstance(call, ExportCall):
            return finish(await call(args))
        return finish(call(args))

    if kind == "constructor":

        def ctor(args: tuple[Any, ...]) -> Any:
            if not isinstance(call, ExportCall):
                return finish(call.call_sync(args))
            return finish(call(args))

        cls._polyengine_ctor = staticmethod(ctor)
        return
    py = snake(name)
    if isinstance(call, ExportCall):
        label = f"{cls.__name__}.{py}"
        fn = sync_export_function(call, py, unwrap, method=kind == "method", label=label)
        fn.__qualname__ = label
        setattr(cls, py, fn if kind == "method" else staticmethod(fn))
        return
    if kind == "method":

        async def method(self: GuestResource, *args: Any) -> Any:
            return await invoke((self, *args))

        method.__name__ = method.__qualname__ = py
        setattr(cls, py, method)
        return

    async def static(*args: Any) -> Any:
        return await invoke(args)

    static.__name__ = static.__qualname__ = py
    setattr(cls, py, staticmethod(static))
