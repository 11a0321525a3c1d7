"""Stream and future elements holding ``own<R>`` crossing between the host
and a guest (CanonicalABI.md §``stream.read``/``stream.write`` with the copy
built-in's raw element codec, §``lift_own``/``lower_own``; embedder-api.md
§"Streams and futures", A13; python-mapping.md §2 for the value shapes).

The copy built-ins move resource reps, not host objects: a host producer's
elements are converted to reps before they are offered
(:class:`ElementLowering`), and the reps a guest wrote become host objects
when the host reads them (:func:`element_lifting`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from polyengine.abi.compile import snake
from polyengine.types import model as m

__all__ = ["ElementLowering", "Held", "element_lifting"]


#: a resource an element lowering registered or took: (its type, its rep)
Held = tuple[Any, int]


class ElementLowering:
    """How host values become elements of a ``stream<T>`` whose ``T`` holds ``own<R>`` (A13).

    A stream's elements are copied into the reader's memory with the raw
    codec of the copy built-in, which takes resource reps: each element is
    converted first, every ``own<R>`` inside it turned into a rep (a
    host-implemented object is registered; a guest-resource wrapper is
    taken, so it becomes unusable, as passing it as ``own`` does). What
    :meth:`lower` registered or took is returned with the element, so the
    resources of elements the reader never takes can be destroyed by
    :meth:`release`, exactly as if it had taken and dropped them: a host
    object's ``close()`` runs, a guest resource's destructor runs.

    Shapes: ``own<R>`` at the top or nested in tuples, records, lists,
    maps, options (plain and boxed), variants and results, in the Python shapes
    of python-mapping.md §2. A value of the wrong shape is left as it is
    (the copy's codec then refuses it, naming the problem). Not covered:
    a ``stream``/``future`` inside an element (its producer is not pumped),
    and ``borrow`` (never a stream element, CanonicalABI.md §"stream.read").
    """

    __slots__ = ("_convert", "_table")

    def __init__(self, convert: Callable[[Any, list[Held]], Any], table: Any) -> None:
        self._convert = convert
        self._table = table

    @classmethod
    def of(
        cls, elem: m.ValType | None, rt_of: Callable[[int], Any], table: Any
    ) -> ElementLowering | None:
        """The lowering for elements of type ``elem``; ``None`` when ``elem`` holds no ``own``."""
        if elem is None or table is None:
            return None

        def own_of(rt: Any) -> Convert:
            def own(v: Any, held: list[Held]) -> Any:
                rep = int(table.lower_own(rt, v))
                held.append((rt, rep))
                return rep

            return own

        convert = _converter(elem, own_of, rt_of, boxed=False)
        return None if convert is None else cls(convert, table)

    def lower(self, v: Any) -> tuple[Any, list[Held]]:
        """The raw element for ``v`` and the resources it holds (released again on failure)."""
        held: list[Held] = []
        try:
            return self._convert(v, held), held
        except BaseException:
            self.release(held)
            raise

    def release(self, held: list[Held]) -> None:
        """Destroy resources of an element the reader never took (A13)."""
        for rt, rep in held:
            if getattr(rt, "impl", None) is None:
                self._table.host_dtor(rep)
            else:
                self._table.wrap_guest(rt, rep, True).drop()


Convert = Callable[[Any, list[Held]], Any]


def _converter(
    t: m.ValType, own_of: Callable[[Any], Convert], rt_of: Callable[[int], Any], *, boxed: bool
) -> Convert | None:
    """The conversion of values of ``t`` applying ``own_of(rt)`` to each ``own<rt>`` inside;
    ``None`` when ``t`` holds no ``own`` (the identity)."""

    def sub(u: m.ValType | None, inner_boxed: bool = False) -> Convert | None:
        return None if u is None else _converter(u, own_of, rt_of, boxed=inner_boxed)

    if isinstance(t, m.Own):
        return own_of(rt_of(t.rt))
    if isinstance(t, m.Map):
        return sub(m.List(m.Tuple((t.k, t.v))))
    if isinstance(t, m.Tuple):
        parts = [sub(u) for u in t.ts]
        if not any(parts):
            return None

        def tup(v: Any, held: list[Held]) -> Any:
            if not isinstance(v, tuple | list):
                return v
            return tuple(x if c is None else c(x, held) for c, x in zip(parts, v, strict=False))

        return tup
    if isinstance(t, m.List):
        item = sub(t.t)
        if item is None:
            return None
        each = item

        def lst(v: Any, held: list[Held]) -> Any:
            if isinstance(v, str | bytes | bytearray) or not hasattr(v, "__iter__"):
                return v
            return [each(x, held) for x in v]

        return lst
    if isinstance(t, m.Record):
        fields = {snake(f.label): c for f in t.fields if (c := sub(f.t)) is not None}
        if not fields:
            return None

        def rec(v: Any, held: list[Held]) -> Any:
            if not isinstance(v, Mapping):
                return v
            out = dict(v)
            for k, c in fields.items():
                if out.get(k) is not None:
                    out[k] = c(out[k], held)
            return out

        return rec
    cases: dict[str, Convert]
    if isinstance(t, m.Option):
        payload = sub(t.t, inner_boxed=True)
        if payload is None:
            return None
        some = payload
        if not boxed:
            return lambda v, held: None if v is None else some(v, held)
        cases = {"some": some}
    elif isinstance(t, m.Result):
        cases = {k: c for k, u in (("ok", t.ok), ("err", t.error)) if (c := sub(u)) is not None}
    elif isinstance(t, m.Variant):
        cases = {c.label: cv for c in t.cases if (cv := sub(c.t)) is not None}
    else:
        return None
    if not cases:
        return None

    def var(v: Any, held: list[Held]) -> Any:
        if not isinstance(v, Mapping) or "value" not in v:
            return v
        c = cases.get(v.get("kind"))  # type: ignore[arg-type]
        return v if c is None else {**v, "value": c(v["value"], held)}

    return var


def element_lifting(
    elem: m.ValType | None, rt_of: Callable[[int], Any], table: Any
) -> Callable[[Any], Any] | None:
    """How an element (or future value) a guest wrote becomes a host value, when it holds
    ``own<R>``: the copy built-in's raw codec hands over resource reps, each of which
    becomes the host's object (a host-implemented resource's registered instance, or a
    new wrapper of a guest-implemented one). ``None`` when ``elem`` holds no ``own``."""
    if elem is None or table is None:
        return None

    def own_of(rt: Any) -> Convert:
        return lambda rep, held: table.lift_own(rt, rep)

    convert = _converter(elem, own_of, rt_of, boxed=False)
    if convert is None:
        return None
    lift = convert
    return lambda v: lift(v, [])
