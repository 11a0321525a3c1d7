"""Runtime-side named errors (python-mapping.md §3).

Embedder misuse is a ``TypeError``/``ValueError`` subclass; malformed or invalid
component binaries are :class:`TranslationError`, which always names the byte
offset and the section where the problem was found.
"""

from __future__ import annotations


class TranslationError(ValueError):
    """A component binary is malformed or invalid.

    ``offset`` is the byte offset into the component binary (``None`` only for
    errors that have no position, such as an empty input), ``section`` names
    the section being read (``"import"``, ``"canon"``, …) or ``None``.
    """

    def __init__(self, message: str, offset: int | None = None, section: str | None = None):
        where = []
        if section is not None:
            where.append(f"in {section} section")
        if offset is not None:
            where.append(f"at offset {offset:#x}")
        full = f"{message} ({', '.join(where)})" if where else message
        super().__init__(full)
        self.reason = message
        self.offset = offset
        self.section = section

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.reason, self.offset, self.section))


class LinkError(TypeError):
    """An import could not be satisfied, or was satisfied with the wrong shape."""


class NameCollisionError(ValueError):
    """Two WIT names fold to one Python name in a facade (python-mapping.md §1)."""


class ThreadRuleError(RuntimeError):
    """An instance was used from a thread other than the one that created it.

    The thread rule (architecture.md §4): a store, and every instance in it,
    is used from one thread only, the one that instantiated it (its event
    loop's thread). The call is refused before anything happens; the
    instance stays usable from its own thread.
    """
