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
* :mod:`.abi` — flattening and element sizes (CanonicalABI.md
  §"Flattening", §"Element Size") for the core signatures of ``canon``
  definitions.
* :mod:`._core` — the import/export signature of an embedded core module.

Subtyping lives in :mod:`polyengine.types.subtype`; core modules themselves
are validated by the engine (:func:`polyengine.engine._validate.validate_core_module`).
"""
