"""The address type of a canonical option's memory (CanonicalABI.md §"Canonical ABI Options").

A ``memory`` option may name a 64-bit memory (the memory64 proposal): its
pointers and lengths are ``i64``, and a string or list is stored as two
``u64`` (``ptr_type`` and ``ptr_size`` of the options). The address type is
read from the signature of the core module whose instance exports the
memory (a re-exported imported memory carries its type too), once per
module and export name.
"""

from __future__ import annotations

from polyengine.translate import plan as pln
from polyengine.types.layout import PtrType
from polyengine.types.subtype import CoreMemoryT
from polyengine.validate import read_module_signature

__all__ = ["memory_addrtype"]

#: (module sha-256, export name) -> address type
_KNOWN: dict[tuple[str, str], PtrType] = {}


def memory_addrtype(plan: pln.Plan, data: bytes, memory: pln.CoreDef | None) -> PtrType:
    """``"i64"`` when ``memory`` is a 64-bit memory, else ``"i32"``."""
    if not isinstance(memory, pln.CoreExport):
        return "i32"
    instance = plan.core_instances[memory.instance]
    if not isinstance(instance.module, pln.StaticModule):
        return "i32"
    module = plan.modules[instance.module.index]
    key = (module.sha256, memory.name)
    found = _KNOWN.get(key)
    if found is None:
        sig = read_module_signature(data, module.offset, module.offset + module.length)
        export = sig.export(memory.name)
        found = "i64" if isinstance(export, CoreMemoryT) and export.is64 else "i32"
        _KNOWN[key] = found
    return found
