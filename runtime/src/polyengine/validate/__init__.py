"""polyengine.validate: the component-level validation rules.

The rules that need no index spaces live here and are applied by the
translator (:mod:`polyengine.translate`) as it walks a component:

* :mod:`.names` — extern names, kebab-case labels, interface names with
  versions, ``[constructor]``/``[method]``/``[static]`` annotations and
  strong uniqueness (Explainer.md §"Import and Export Definitions").
* :mod:`.typedefs` — value and function type definitions (Binary.md
  §"Type Definitions"): non-empty records/variants/tuples/enums/flags,
  ``own``/``borrow`` of resources only, no ``borrow`` in results or stream and
  future payloads, no ``stream<char>``, the maximum value size.
* :func:`read_module_signature` — the import/export signature of an
  embedded core module.

Flattening and element sizes (CanonicalABI.md §"Flattening", §"Element
Size") are :mod:`polyengine.types.layout`'s, subtyping is
:mod:`polyengine.types.subtype`'s; core modules themselves are validated by
the engine (:func:`polyengine.engine.validate_core_module`).
"""

from polyengine.validate._core import read_module_signature as read_module_signature

__all__ = ["read_module_signature"]
