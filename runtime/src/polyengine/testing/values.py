"""Wast JSON values to the Python value shapes of python-mapping.md §2, and comparison.

``json-from-wast`` writes component values as ``{"type": T, "value": V}``:
integers as decimal strings, floats as the decimal string of their bit
pattern (or ``"nan:canonical"`` / ``"nan:arithmetic"``), records as
``[[field, value], ...]``, variants as ``{"case": c, "payload": v}``, results
as ``{"Ok": v}`` / ``{"Err": v}``, flags as the list of set flags.

:func:`from_wast` builds the Python value an executor passes to, or expects
from, a component function; :func:`values_equal` compares an expected value
with what a call returned, knowing the cases where the JSON alone cannot fix
the shape (``list<u8>`` as ``bytes``, flags listing only the set ones, NaN).
"""

from __future__ import annotations

import math
import struct

_INT_RANGES = {
    "u8": (0, 2**8 - 1),
    "u16": (0, 2**16 - 1),
    "u32": (0, 2**32 - 1),
    "u64": (0, 2**64 - 1),
    "s8": (-(2**7), 2**7 - 1),
    "s16": (-(2**15), 2**15 - 1),
    "s32": (-(2**31), 2**31 - 1),
    "s64": (-(2**63), 2**63 - 1),
}


class FlagsValue(dict[str, bool]):
    """Flags decoded from wast JSON: only the set flags are known (all ``True``).

    :func:`values_equal` treats an absent flag as ``False`` on both sides.
    """


def _kebab_to_snake(name: str) -> str:
    return name.replace("-", "_")


def _float(kind: str, raw: object) -> float:
    if not isinstance(raw, str):
        raise ValueError(f"{kind} value must be a string, not {raw!r}")
    if raw.startswith("nan"):
        return math.nan
    bits = int(raw, 10)
    if kind == "f32":
        return float(struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0])
    return float(struct.unpack("<d", struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))[0])


def from_wast(value: object) -> object:
    """Decode one wast JSON value; raise ``ValueError`` naming what is malformed.

    A non-empty ``list`` whose elements are all ``u8`` becomes ``bytes``; an
    option whose payload is itself an option boxes the inner one
    (``{"kind": "some", "value": v}`` / ``{"kind": "none"}``).
    """
    if not isinstance(value, dict) or "type" not in value:
        raise ValueError(f"not a wast value: {value!r:.80}")
    kind = value["type"]
    raw = value.get("value")
    if kind in _INT_RANGES:
        if not isinstance(raw, str):
            raise ValueError(f"{kind} value must be a decimal string, not {raw!r}")
        number = int(raw, 10)
        low, high = _INT_RANGES[kind]
        if not low <= number <= high:
            raise ValueError(f"{kind} value {number} out of range")
        return number
    if kind in {"f32", "f64"}:
        return _float(kind, raw)
    if kind == "bool":
        if not isinstance(raw, bool):
            raise ValueError(f"bool value must be true or false, not {raw!r}")
        return raw
    if kind in {"char", "string", "enum"}:
        if not isinstance(raw, str):
            raise ValueError(f"{kind} value must be a string, not {raw!r}")
        if kind == "char" and len(raw) != 1:
            raise ValueError(f"char value must be one code point, not {raw!r}")
        return raw
    if kind in {"list", "tuple"}:
        if not isinstance(raw, list):
            raise ValueError(f"{kind} value must be a list, not {raw!r:.80}")
        items = [from_wast(item) for item in raw]
        if kind == "tuple":
            return tuple(items)
        if raw and all(isinstance(i, dict) and i.get("type") == "u8" for i in raw):
            return bytes(items)  # type: ignore[arg-type]
        return items
    if kind == "record":
        if not isinstance(raw, list):
            raise ValueError(f"record value must be a list of pairs, not {raw!r:.80}")
        fields: dict[str, object] = {}
        for pair in raw:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                raise ValueError(f"record field must be [name, value], not {pair!r:.80}")
            fields[_kebab_to_snake(pair[0])] = from_wast(pair[1])
        return fields
    if kind == "variant":
        if not isinstance(raw, dict) or not isinstance(raw.get("case"), str):
            raise ValueError(f"variant value must have a case, not {raw!r:.80}")
        case: dict[str, object] = {"kind": raw["case"]}
        if raw.get("payload") is not None:
            case["value"] = from_wast(raw["payload"])
        return case
    if kind == "option":
        if raw is None:
            return None
        inner = from_wast(raw)
        if isinstance(raw, dict) and raw.get("type") == "option":
            return {"kind": "none"} if inner is None else {"kind": "some", "value": inner}
        return inner
    if kind == "result":
        if not isinstance(raw, dict) or len(raw) != 1:
            raise ValueError(f"result value must be {{'Ok': v}} or {{'Err': e}}, not {raw!r:.80}")
        ((side, payload),) = raw.items()
        if side not in {"Ok", "Err"}:
            raise ValueError(f"result side must be Ok or Err, not {side!r}")
        result: dict[str, object] = {"kind": side.lower()}
        if payload is not None:
            result["value"] = from_wast(payload)
        return result
    if kind == "flags":
        if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
            raise ValueError(f"flags value must be a list of names, not {raw!r:.80}")
        return FlagsValue({_kebab_to_snake(f): True for f in raw})
    raise ValueError(f"unknown wast value type {kind!r}")


def values_equal(expected: object, actual: object) -> bool:
    """``True`` when ``actual`` (a call's result) matches ``expected`` (from :func:`from_wast`).

    NaN matches NaN; ``bytes`` matches a list of the same ints; flags absent
    on either side are ``False``; ``bool`` never matches an ``int``.
    """
    if isinstance(expected, FlagsValue):
        if not isinstance(actual, dict):
            return False
        names = set(expected) | set(actual)
        return all(bool(expected.get(n, False)) == bool(actual.get(n, False)) for n in names)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, float):
        if not isinstance(actual, (float, int)):
            return False
        if math.isnan(expected):
            return math.isnan(actual)
        return expected == actual
    if isinstance(expected, int):
        return isinstance(actual, int) and expected == actual
    if isinstance(expected, (bytes, list)) and isinstance(actual, (bytes, bytearray, list)):
        if len(expected) != len(actual):
            return False
        return all(values_equal(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, tuple):
        return (
            isinstance(actual, tuple)
            and len(expected) == len(actual)
            and all(values_equal(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(expected) != set(actual):
            return False
        return all(values_equal(expected[k], actual[k]) for k in expected)
    return type(expected) is type(actual) and expected == actual
