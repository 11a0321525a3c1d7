"""Host imports: resolving providers and building their trampolines (python-mapping.md §3 to §5).

For every lowered root import the plan names, :class:`HostLinker` finds the
Python callable in the imports mapping (version canonicalization, snake_case
members, PascalCase resource classes), and builds the core function body
that lifts the guest's arguments, calls the host, and lowers the result.

Function results of type ``result<T, E>`` follow the error model: the host
returns ``T`` for ok and raises a branded ``ComponentException`` for err; any
other exception traps the calling instance, naming the import (a ``Trap`` the
host raised keeps its code: ``host import <name> trapped: <message>``).

Host-implemented resources are bound to the class the imports mapping gives
at the resource's position (python-mapping.md §5); a value lowered into an
``own``/``borrow`` of one must be an instance of that class, and a value
lowered into one of a guest-implemented resource must be a wrapper of that
very resource type, else a ``LowerTypeError`` names the value's path.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from polyengine.abi.bulk import NAN
from polyengine.abi.codegen import make_function
from polyengine.abi.errors import LowerTypeError, describe
from polyengine.abi.functions import scalar_lifting, scalar_lowering
from polyengine.abi.resources import CallLenders, ComponentInstance, ResourceType
from polyengine.abi.trap import host_import_trap
from polyengine.embed._names import FuncName, parse_func_name, pascal, snake
from polyengine.embed._providers import Imports, MissingImportError, get_member
from polyengine.engine import CoreFunc
from polyengine.errors import LinkError
from polyengine.instance import CoreVal, HostLower, ImportSite
from polyengine.memo import IdentityMemo
from polyengine.translate import plan as pln
from polyengine.types.layout import MAX_FLAT_PARAMS
from polyengine.types.model import FuncType
from polyengine_protocol import (
    BRAND_ATTRIBUTE,
    Trap,
    is_abortable,
    is_defer_cancel,
    is_resource_wrapper,
    is_suspending,
    is_wasi_exit,
)

__all__ = ["HostLinker", "HostResourceTable", "LinkTemplate", "describe_import"]


def describe_import(path: Sequence[str]) -> str:
    """``wasi:cli/stdout@0.2.0#get-stdout`` for an interface member, the bare name otherwise."""
    if len(path) == 1:
        return path[0]
    return f"{path[0]}#{'/'.join(path[1:])}"


#: a lowered import path's parsed name, description and Python names: its member's
#: snake_case name and its resource's PascalCase class name (all depend on the path alone)
_PATHS: dict[tuple[str, ...], tuple[FuncName, str, str, str]] = {}
_PATHS_LIMIT = 20_000


def _parsed_path(path: tuple[str, ...]) -> tuple[FuncName, str, str, str]:
    """``parse_func_name`` of the path's last name, ``describe_import`` of the path, and
    the member's and the resource class's Python names (``""``: no resource), worked
    out once per path (every instance of a component resolves the same ones)."""
    found = _PATHS.get(path)
    if found is None:
        if len(_PATHS) >= _PATHS_LIMIT:
            _PATHS.clear()
        parsed = parse_func_name(path[-1])
        cls = "" if parsed.resource is None else pascal(parsed.resource)
        found = _PATHS[path] = (parsed, describe_import(path), snake(parsed.name), cls)
    return found


class HostResourceTable:
    """The host side of resource handles (embedder-api §"Resources", the two-by-four table).

    Host-implemented resources: the runtime owns the object↔rep mapping; a
    guest dropping its last ``own`` calls ``close()`` when the class has one.
    Guest-implemented resources reach the host as wrapper objects made by the
    facade (``wrap_guest``), which remember their rep.
    """

    def __init__(self) -> None:
        self._objects: dict[int, object] = {}
        self._reps: dict[int, int] = {}
        self._next = 1
        #: builds the host wrapper of a guest-implemented resource: (rt, rep, owned) -> object
        self.wrap_guest: Callable[[ResourceType, int, bool], object] | None = None
        #: borrowed guest-resource wrappers handed to the host call in progress
        self._borrowed: list[object] | None = None
        #: host-implemented resource type -> (its host class if the mapping gives one, import)
        self._classes: dict[ResourceType, tuple[type | None, str]] = {}
        #: the resource type each registered host object was first passed as
        self._types: dict[int, ResourceType] = {}
        #: reps of host objects registered only because they were lent (``borrow``),
        #: with the number of export calls holding them
        self._lends: dict[int, int] = {}
        #: the lends of the export call whose arguments are being lowered
        self._lending: list[int] | None = None

    def begin_call(self) -> list[object] | None:
        """Start collecting the borrowed wrappers a host import receives."""
        outer = self._borrowed
        self._borrowed = []
        return outer

    def end_call(self, outer: list[object] | None) -> None:
        """The host import returned: its borrowed wrappers become unusable."""
        done = self._borrowed or []
        self._borrowed = outer
        for wrapper in done:
            invalidate = getattr(wrapper, "_polyengine_invalidate", None)
            if invalidate is not None:
                invalidate()

    def begin_lending(self) -> list[int] | None:
        """Start collecting the host objects an export call's arguments lend (``borrow``)."""
        outer = self._lending
        self._lending = []
        return outer

    def end_lending(self, outer: list[int] | None) -> list[int]:
        """The arguments are lowered: the lends to release when the call ends."""
        lent = self._lending or []
        self._lending = outer
        return lent

    def release_lent(self, lent: list[int]) -> None:
        """The export call ended: forget the objects it alone held as borrows.

        A borrow never outlives the call it was passed to (CanonicalABI.md
        §"Borrowed handles"), so an object registered only to be lent is
        forgotten once no call holds it; one the guest owns meanwhile stays.
        """
        lends = self._lends
        for rep in lent:
            count = lends.get(rep)
            if count is None:
                continue  # owned by the guest since: it stays registered
            if count > 1:
                lends[rep] = count - 1
                continue
            del lends[rep]
            if rep in self._objects:
                self._forget(rep)

    # host-implemented --------------------------------------------------------------

    def _register(self, value: object, rt: ResourceType) -> int:
        rep = self._reps.get(id(value))
        if rep is None:
            rep = self._next
            self._next += 1
            self._objects[rep] = value
            self._reps[id(value)] = rep
            self._types[rep] = rt
        return rep

    def _forget(self, rep: int) -> object:
        value = self._objects.pop(rep)
        del self._reps[id(value)]
        self._types.pop(rep, None)
        return value

    def _where(self, rt: ResourceType) -> str:
        """The import that names host resource ``rt`` (its bare name when unbound)."""
        found = self._classes.get(rt)
        return found[1] if found is not None else rt.name or str(rt)

    def host_dtor(self, rep: int) -> None:
        """The guest dropped its last ``own`` of a host object: dispose of it.

        A failing ``close()`` traps like a failing host import, named as the
        resource's drop (``wasi:io/streams@0.2.0#[resource-drop]output-stream``).
        """
        value = self._objects.get(rep)
        if value is None:
            return
        rt = self._types.get(rep)
        self._forget(rep)
        close = getattr(value, "close", None)
        if not callable(close):
            return
        try:
            close()
        except Exception as exc:
            if is_wasi_exit(exc):
                raise
            where = "?" if rt is None else self._where(rt)
            iface, sep, resource = where.rpartition("#")
            raise host_import_trap(f"{iface}{sep}[resource-drop]{resource}", exc) from exc

    def bind_class(self, rt: ResourceType, cls: type | None, where: str) -> None:
        """Record the host class of host-implemented resource ``rt`` (imported at ``where``).

        With a class, a value lowered into ``own``/``borrow`` of ``rt`` must
        be an instance of it; with none (the mapping gives no class), any
        object but ``None`` and a guest-resource wrapper is accepted.
        """
        assert rt.impl is None
        self._classes[rt] = (cls, where)

    def _check_host(self, rt: ResourceType, value: object, kind: str) -> None:
        """Refuse a value that cannot be an instance of host resource ``rt``."""
        cls, where = self._classes.get(rt) or (None, self._where(rt))
        if cls is not None:
            if isinstance(value, cls):
                return
            raise LowerTypeError(
                f"expected an instance of {cls.__name__} for {kind}<{where}> "
                f"(the host class of that resource), got {describe(value)}"
            )
        if value is None or is_resource_wrapper(value) or hasattr(type(value), _TAKE_REP):
            what = "None" if value is None else f"a {type(value).__name__} guest-resource wrapper"
            raise LowerTypeError(
                f"expected a host object for {kind}<{where}> (a host-implemented resource), "
                f"got {what}"
            )

    # HostResources protocol -----------------------------------------------------------

    def lift_own(self, rt: ResourceType, rep: int) -> object:
        if rt.impl is None:
            return self._forget(rep)
        assert self.wrap_guest is not None
        return self.wrap_guest(rt, rep, True)

    def lift_borrow(self, rt: ResourceType, rep: int) -> object:
        if rt.impl is None:
            return self._objects[rep]
        assert self.wrap_guest is not None
        wrapper = self.wrap_guest(rt, rep, False)
        if self._borrowed is not None:
            self._borrowed.append(wrapper)
        return wrapper

    def lower_own(self, rt: ResourceType, value: object) -> int:
        """The rep of ``value`` passed as ``own<rt>``; ``LowerTypeError`` when it is not one."""
        if rt.impl is None:
            self._check_host(rt, value, "own")
            rep = self._register(value, rt)
            self._lends.pop(rep, None)  # the guest owns it now: no call's lend releases it
            return rep
        return _guest_rep(value, rt, take=True)

    def lower_borrow(self, rt: ResourceType, value: object) -> int:
        """The rep of ``value`` passed as ``borrow<rt>``; ``LowerTypeError`` when it is not one."""
        if rt.impl is None:
            self._check_host(rt, value, "borrow")
            rep = self._reps.get(id(value))
            if rep is None or rep in self._lends:
                # lent for this call only: released when it ends (release_lent)
                rep = self._register(value, rt)
                if self._lending is not None:
                    self._lends[rep] = self._lends.get(rep, 0) + 1
                    self._lending.append(rep)
            return rep
        return _guest_rep(value, rt, take=False)


#: the method by which a guest-resource wrapper of this runtime yields its rep
_TAKE_REP = "_polyengine_take_rep"


def _guest_expected(rt: ResourceType, kind: str) -> str:
    """``a Counter resource object for own<counter>`` (the facade's class name, when known)."""
    if rt.name:
        return f"a {pascal(rt.name)} resource object for {kind}<{rt.name}>"
    return f"a resource object for {kind}<{rt}>"


def _guest_rep(value: object, rt: ResourceType, *, take: bool) -> int:
    """The rep behind guest-resource wrapper ``value`` of type ``rt`` (``take``: passed as own)."""
    kind = "own" if take else "borrow"
    take_rep = getattr(value, _TAKE_REP, None)
    if take_rep is None:
        raise LowerTypeError(f"expected {_guest_expected(rt, kind)}, got {describe(value)}")
    if getattr(type(value), "_polyengine_rt", rt) is not rt:
        raise LowerTypeError(
            f"expected {_guest_expected(rt, kind)}, got a {type(value).__name__} wrapper "
            "of another resource type or component instance"
        )
    try:
        rep: int = take_rep(rt, take)
    except TypeError as exc:
        # a borrowed wrapper passed as own, say: the same refusal, with its value path
        raise LowerTypeError(str(exc)) from exc
    return rep


class HostLinker:
    """Resolves root imports against the embedder's mapping and builds trampolines."""

    def __init__(self, imports: Imports, *, suspend: bool) -> None:
        self.imports = imports
        self.suspend = suspend
        self.resources = HostResourceTable()
        self._callables: dict[tuple[str, ...], Callable[..., Any]] = {}
        #: the provider of each interface resolved so far (its members resolve alike)
        self._providers: dict[str, object] = {}
        #: whether the import at a path is marked ``suspending()``, by path
        self._suspending: dict[tuple[str, ...], bool] = {}
        #: the resource class of each (interface, class name) looked up so far
        self._classes: dict[tuple[str, str], object] = {}
        #: what carries the marks of each resource method resolved so far: the class
        #: attribute (A2: the class is the authority), as resolution found it
        self._carriers: dict[tuple[str, ...], object] = {}
        #: how each interface member resolved in the common way was found, to be found
        #: again by a later linking (:class:`LinkTemplate`): ``(provider attribute, what
        #: it held, the class attribute carrying the marks or _ABSENT, the method name)``
        self._found: dict[tuple[str, ...], tuple[str, object, object, str]] = {}

    # resolution ------------------------------------------------------------------

    def provider_for(self, iface: str, member: str) -> object:
        found = self._providers.get(iface, _ABSENT)
        if found is _ABSENT:
            found = self._providers[iface] = self.imports.require_interface(iface, member)
        return found

    def resolve(self, path: tuple[str, ...]) -> Callable[..., Any]:
        """The Python callable for lowered import ``path``; raises naming what is missing.

        A world-level function is the top-level snake_case key; a member of a
        world-level resource (``[constructor]r``, ``[method]r.m``,
        ``[static]r.s``) dispatches on the class at the top-level PascalCase
        key (python-mapping.md §5); an interface member is looked up on the
        interface's provider.
        """
        found = self._callables.get(path)
        if found is not None:
            return found
        name = path[-1]
        parsed, where, member, cls_name = _parsed_path(path)
        provider: object
        fn: object
        kind = parsed.kind
        if len(path) == 2 and kind in ("func", "method"):
            # the common cases, a function or a resource method of an interface:
            # what _member does, inline, each class looked up once per interface
            provider = self._providers.get(path[0], _ABSENT)
            if provider is _ABSENT:
                provider = self.provider_for(path[0], name)
            if kind == "func":
                fn = get_member(provider, member)
                if fn is None:
                    raise MissingImportError(
                        f"missing import {where}: the provider has no member {member!r}"
                    )
                self._found[path] = (member, fn, _ABSENT, member)
            else:
                key = (path[0], cls_name)
                cls = self._classes.get(key, _ABSENT)
                if cls is _ABSENT:
                    cls = self._classes[key] = get_member(provider, cls_name)
                if cls is None:
                    raise MissingImportError(
                        f"missing import {where}: the provider has no resource class {cls_name!r}"
                    )
                attr = _class_attribute(cls, member, _ABSENT)
                if attr is _ABSENT:  # (a member that is not callable still binds: _member)
                    raise MissingImportError(
                        f"missing import {where}: {cls_name} has no method {member!r}"
                    )
                fn = _method_caller(cls, member)
                self._carriers[path] = attr
                self._found[path] = (cls_name, cls, attr, member)
        elif len(path) == 1:
            if parsed.kind == "func":
                fn = self.imports.top_level(snake(parsed.name))
                if fn is None:
                    raise MissingImportError(
                        f"missing import: the component imports function {name!r} "
                        f"(provide it as imports[{snake(parsed.name)!r}])"
                    )
            else:
                assert parsed.resource is not None
                cls = self.world_resource_class(parsed.resource, name)
                provider = {pascal(parsed.resource): cls}
                fn = self._member(provider, parsed.kind, parsed.resource, parsed.name, where)
        else:
            provider = self.provider_for(path[0], name)
            fn = self._member(provider, parsed.kind, parsed.resource, parsed.name, where)
        if not callable(fn):
            raise LinkError(f"import {where} is provided by a non-callable {type(fn).__name__}")
        self._callables[path] = fn
        return fn

    def template(self) -> LinkTemplate:
        """What this linking resolved, for later linkings of the same component
        (:meth:`adopt`)."""
        by_iface: dict[str, list[_Entry]] = {}
        for path, (attr, held, carrier, member) in self._found.items():
            by_iface.setdefault(path[0], []).append(
                (path, attr, held, carrier, member, self._callables[path])
            )
        return LinkTemplate({iface: tuple(entries) for iface, entries in by_iface.items()})

    def resolve_all(self, paths: Sequence[tuple[str, ...]]) -> None:
        """:meth:`resolve` each of ``paths`` not resolved (or taken over) yet."""
        callables = self._callables
        for path in paths:
            if path not in callables:
                self.resolve(path)

    def adopt(self, template: LinkTemplate) -> LinkTemplate:
        """Take over what ``template`` found for each member whose provider here
        holds the very same object under the same attribute (a bound method: of the
        same object); anything else resolves as usual. What is taken is what
        :meth:`resolve` would find again. Returns the part of ``template`` taken
        (:meth:`template` then holds only what this linking resolved itself)."""
        imports = self.imports
        providers, callables, carriers, suspending = (
            self._providers,
            self._callables,
            self._carriers,
            self._suspending,
        )
        taken: dict[str, tuple[_Entry, ...]] = {}
        count = 0
        for iface, entries in template.groups.items():
            provider = imports.provider(iface)
            if provider is None:
                continue  # resolution names what is missing
            providers[iface] = provider
            get = provider.get if isinstance(provider, Mapping) else None
            kept: list[_Entry] = []
            for entry in entries:
                path, attr, held, carrier, member, fn = entry
                got = get(attr) if get is not None else getattr(provider, attr, None)
                if got is not held and not (type(got) is types.MethodType and got == held):
                    continue
                if carrier is not _ABSENT:
                    own = got.__dict__ if isinstance(got, type) else None  # (no MRO walk)
                    if (
                        own is None or own.get(member, _ABSENT) is not carrier
                    ) and _class_attribute(got, member, _ABSENT) is not carrier:
                        continue
                    carriers[path] = carrier
                    self._classes[(iface, attr)] = got
                callables[path] = fn
                kept.append(entry)
                mark = fn if carrier is _ABSENT else carrier  # (what is_marked reads)
                suspending[path] = (
                    type(mark) not in _PLAIN_CALLABLES
                    or getattr(mark, BRAND_ATTRIBUTE, None) is not None
                ) and is_suspending(mark)
            if kept:
                taken[iface] = entries if len(kept) == len(entries) else tuple(kept)
                count += len(kept)
        return template if count == template.size else LinkTemplate(taken)

    def taken_by_tasks(self, lowered: Sequence[tuple[int, pln.LowerImport]]) -> frozenset[int]:
        """The trampoline indices of the ``lowered`` imports :meth:`task_trampoline`
        makes a trampoline of its own for (:meth:`lowers_on_tasks` of each): the
        async ones (worked out once per list) and the ``suspending()``-marked ones."""
        always, others = _ASYNC_LOWERED.get(lowered, _split_async)
        suspending, is_marked = self._suspending, self.is_marked
        marked = {
            i for i, path in others if (suspending[path] if path in suspending else is_marked(path))
        }
        return always.union(marked) if marked else always

    def world_resource_class(self, resource: str, needed_by: str) -> object:
        """The class of world-level resource ``resource``: the top-level PascalCase key.

        Raises :class:`MissingImportError` naming that key, and pointing out a
        class given under another spelling of the name.
        """
        key = pascal(resource)
        cls = self.imports.top_level(key)
        if cls is not None:
            return cls
        hint = ""
        for other in dict.fromkeys((resource, snake(resource))):
            if self.imports.top_level(other) is not None:
                hint = f"; imports[{other!r}] is given, but a resource class goes under {key!r}"
                break
        raise MissingImportError(
            f"missing import: the component imports resource {resource!r} "
            f"(needed for {needed_by}); provide its class as imports[{key!r}]{hint}"
        )

    def resource_class(self, import_path: tuple[str, ...]) -> type | None:
        """The host class the imports mapping gives for the resource at ``import_path``.

        ``None`` when the mapping gives none, or gives a callable that is not
        a class (a factory serves as a constructor but cannot type-check).
        """
        if not import_path:
            return None
        key = pascal(import_path[-1])
        if len(import_path) == 1:
            cls = self.imports.top_level(key)
        else:
            iface = import_path[0]
            # as resolution found it (an interface id: a plain-named instance's
            # provider serves its functions, never its resource classes here)
            cls = self._classes.get((iface, key), _ABSENT) if ":" in iface else _ABSENT
            if cls is _ABSENT:
                provider = self._providers.get(iface, _ABSENT) if ":" in iface else _ABSENT
                if provider is _ABSENT:
                    found = self.imports.interface(iface)
                    provider = None if found is None else found[1]
                cls = None if provider is None else get_member(provider, key)
        return cls if isinstance(cls, type) else None

    def bind_resource(self, rtype: ResourceType, res: pln.ResourceType) -> None:
        """Bind a host-implemented resource type to its host class, if the imports give one.

        Lowering a value into an ``own``/``borrow`` of such a type then
        checks that it is an instance of that class (the runtime calls this
        for each imported resource type as it creates it).
        """
        if res.import_path is None:
            return
        cls = self.resource_class(res.import_path)
        self.resources.bind_class(rtype, cls, describe_import(res.import_path))

    def _member(
        self, provider: object, kind: str, resource: str | None, name: str, where: str
    ) -> Any:
        if kind == "func":
            fn = get_member(provider, snake(name))
            if fn is None:
                raise MissingImportError(
                    f"missing import {where}: the provider has no member {snake(name)!r}"
                )
            return fn
        assert resource is not None
        cls = get_member(provider, pascal(resource))
        if cls is None:
            raise MissingImportError(
                f"missing import {where}: the provider has no resource class {pascal(resource)!r}"
            )
        if kind == "constructor":
            return cls
        if kind == "static":
            fn = getattr(cls, snake(name), None)
            if fn is None:
                raise MissingImportError(
                    f"missing import {where}: {pascal(resource)} has no static {snake(name)!r}"
                )
            return fn
        method = snake(name)
        # A member that exists but is not callable (a property, say) still binds:
        # the seed's platform-class pattern makes that a per-call trap, so a guest
        # that never calls the member is unaffected.
        if _class_attribute(cls, method, _ABSENT) is _ABSENT:
            raise MissingImportError(
                f"missing import {where}: {pascal(resource)} has no method {method!r}"
            )
        return _method_caller(cls, method)

    # trampolines ---------------------------------------------------------------------

    def is_marked(self, path: tuple[str, ...]) -> bool:
        """Whether the import at ``path`` is marked ``suspending()`` (worked out once)."""
        found = self._suspending.get(path)
        if found is None:
            fn = self.resolve(path)
            carrier = self._carriers.get(path, _ABSENT)
            if carrier is _ABSENT:
                found = _is_marked_suspending(fn)
            else:
                found = _carries(carrier, is_suspending)
            self._suspending[path] = found
        return found

    def lowers_on_tasks(self, tr: pln.LowerImport) -> bool:
        """Whether :meth:`task_trampoline` makes a trampoline of its own for ``tr``."""
        marked = self._suspending.get(tr.path)  # (worked out by now, most often)
        if marked is not None:
            return marked or tr.type.is_async or tr.options.is_async
        return tr.type.is_async or tr.options.is_async or self.is_marked(tr.path)

    def task_trampoline(self, site: ImportSite, tr: pln.LowerImport) -> CoreFunc | None:
        """The task-model trampoline of ``tr``, or ``None`` when the plain one serves.

        An ``async func`` import, an async ``canon lower`` and a
        ``suspending()``-marked import may park their caller; an unmarked
        sync import is called in place (an awaitable it returns traps).
        """
        marked = self.is_marked(tr.path)
        if not (marked or tr.type.is_async or tr.options.is_async):
            return None
        fn = self.resolve(tr.path)
        assert site.tasks is not None
        return site.tasks.lower_import(
            tr,
            HostLower(site, tr, fn, where=describe_import(tr.path), marked=marked),
            defer_cancel=_marked(fn, is_defer_cancel),
            abortable=_marked(fn, is_abortable),
        )

    def trampoline(
        self, site: ImportSite, tr: pln.LowerImport
    ) -> Callable[[Sequence[CoreVal]], list[CoreVal]]:
        """The core function body of lowered import ``tr`` (sync ``canon lower``).

        The in-place variant of :class:`HostLower`: the host call completes
        before the body returns. An import whose parameters and result are
        all ``bool``, integers or floats (no ``result`` to wrap) gets a
        generated body that converts them inline; it needs no options, no
        lifting context, no lending scope and no borrowed-wrapper
        bookkeeping, as no memory or handle is involved. A result its inline
        check does not accept takes the general path, which settles,
        converts or rejects it.
        """
        fn = self.resolve(tr.path)
        steps = HostLower(
            site, tr, fn, where=describe_import(tr.path), marked=_is_marked_suspending(fn)
        )
        where = steps.where
        runtime_resources = self.resources
        ci = site.instance
        lower_results, in_place = steps.lower_results, steps.in_place

        def body(flat: Sequence[CoreVal]) -> list[CoreVal]:
            if not ci.may_leave:
                raise Trap(f"cannot call import {where}: may not leave", code="may-not-leave")
            return in_place(flat, runtime_resources)

        if steps.wrap is not None or steps.source or tr.options.is_async:
            return body

        def finish(value: Any, flat: Sequence[CoreVal]) -> list[CoreVal]:
            """The general path's end, for a result the inline check did not accept."""
            value = steps.finish(value)
            lenders = CallLenders()
            if not hasattr(steps, "lowered"):
                steps.prepare()
            out = lower_results(lenders, [value], flat)
            lenders.deliver_resolve()
            return out

        return _scalar_host_call(tr.type, fn, site.instance, where, finish) or body


_ABSENT = object()

_Lowered = Sequence[tuple[int, pln.LowerImport]]
#: per list of lowered imports (one per plan): the trampoline indices of the async
#: ones, and the index and path of each other one
_ASYNC_LOWERED: IdentityMemo[
    _Lowered, tuple[frozenset[int], tuple[tuple[int, tuple[str, ...]], ...]]
] = IdentityMemo(64)


def _split_async(
    lowered: _Lowered,
) -> tuple[frozenset[int], tuple[tuple[int, tuple[str, ...]], ...]]:
    always = frozenset(i for i, tr in lowered if tr.type.is_async or tr.options.is_async)
    return always, tuple((i, tr.path) for i, tr in lowered if i not in always)


#: one templated member: its path, the provider attribute it was found under, what
#: that held, the class attribute carrying its marks (``_ABSENT``: a function), the
#: method's name and the callable resolution made of it
_Entry = tuple[tuple[str, ...], str, object, object, str, Callable[..., Any]]


class LinkTemplate:
    """What resolving one component's lowered imports found (python-mapping.md §4),
    by interface: for each member, the provider attribute it was found under and
    the object that attribute held (held here, so its identity stays its own).
    wasmtime's ``InstancePre`` resolves a module's imports once and instantiates
    it many times; a later :class:`HostLinker` of the same component takes over
    each member whose provider holds the very same object under that attribute
    (:meth:`HostLinker.adopt`): a shared provider, or a provider of its own whose
    resource classes are shared. Immutable once made."""

    __slots__ = ("groups", "size")

    def __init__(self, groups: dict[str, tuple[_Entry, ...]]) -> None:
        #: the members resolved in the common way, by interface
        self.groups = groups
        #: how many members there are
        self.size = sum(len(entries) for entries in groups.values())


def _method_caller(cls: object, method: str) -> Callable[..., Any]:
    """The import callable of resource method ``method`` of host class ``cls``."""

    def call_method(self_: object, *args: Any) -> Any:
        bound = getattr(self_, method, None)
        if not callable(bound):
            raise TypeError(f"the instance has no method {method!r}")
        return bound(*args)

    call_method.__polyengine_method_of__ = (cls, method)  # type: ignore[attr-defined]
    return call_method


def _is_marked_suspending(fn: Callable[..., Any]) -> bool:
    return _marked(fn, is_suspending)


def _marked(fn: Callable[..., Any], test: Callable[[object], bool]) -> bool:
    """Whether ``fn`` carries a mark; for a resource method, the class is the authority."""
    carrier: object = fn
    method_of = getattr(fn, "__polyengine_method_of__", None)
    if method_of is not None:
        cls, name = method_of
        carrier = _class_attribute(cls, name)
    return _carries(carrier, test)


def _carries(carrier: object, test: Callable[[object], bool]) -> bool:
    """Whether the callable (or class attribute) ``carrier`` carries the mark ``test`` reads."""
    if type(carrier) in _PLAIN_CALLABLES and getattr(carrier, BRAND_ATTRIBUTE, None) is None:
        return False  # the common case, without ``marks_of``'s general walk
    return test(carrier)


#: callables whose marks are exactly their brand attribute (a bound method reads
#: its function's): one that has none carries no mark
_PLAIN_CALLABLES = frozenset({types.FunctionType, types.MethodType})


def _class_attribute(cls: object, name: str, default: object = None) -> object:
    """``name`` as the class (or a base) defines it, descriptors not run
    (``staticmethod`` stays itself): ``inspect.getattr_static`` for a class, without
    its metaclass checks (this runs for every import of every instantiation)."""
    if not isinstance(cls, type):
        return inspect.getattr_static(cls, name, default)
    for klass in cls.__mro__:
        found = klass.__dict__.get(name, _ABSENT)
        if found is not _ABSENT:
            return found
    return default


def _scalar_host_call(
    ft: FuncType,
    fn: Callable[..., Any],
    ci: ComponentInstance,
    where: str,
    finish: Callable[[Any, Sequence[CoreVal]], list[CoreVal]],
) -> Callable[[Sequence[CoreVal]], list[CoreVal]] | None:
    """The generated trampoline body of a scalar-only import, or ``None`` for other types.

    The core arguments arrive exactly as the engine unpacks them (unsigned
    ints of their width, floats), so they lift by the inline expressions of
    :func:`scalar_lifting`; the result lowers inline when its check holds,
    else through ``finish``.
    """
    ptypes, rtypes = ft.param_types(), ft.result_types()
    if len(ptypes) > MAX_FLAT_PARAMS:
        return None
    liftings = [scalar_lifting(t, f"flat[{k}]", k, exact=True) for k, t in enumerate(ptypes)]
    lowering = scalar_lowering(rtypes[0], "value") if rtypes else ("value is None", "")
    if None in liftings or lowering is None:
        return None
    guard, out = lowering
    body = [
        "if not ci.may_leave:",
        "    raise Trap(may_not_leave, code='may-not-leave')",
        "try:",
        f"    value = fn({', '.join(filter(None, liftings))})",
        "except Exception as exc:",
        "    if is_wasi_exit(exc):",
        "        raise",
        "    raise host_import_trap(where, exc) from exc",
        f"if {guard}:",
        f"    return [{out}]",
        "return finish(value, flat)",
    ]
    env = {
        "NAN": NAN,
        "ci": ci,
        "fn": fn,
        "where": where,
        "finish": finish,
        "may_not_leave": f"cannot call import {where}: may not leave",
        "Trap": Trap,
        "is_wasi_exit": is_wasi_exit,
        "host_import_trap": host_import_trap,
    }
    call: Callable[[Sequence[CoreVal]], list[CoreVal]] = make_function(
        "host_call", "flat", body, env
    )
    return call
