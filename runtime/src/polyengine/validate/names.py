"""Import/export names and labels (Explainer.md §"Import and Export Definitions").

Parses ``externname`` into plain names (with their ``[constructor]``,
``[method]``, ``[static]`` annotations) and interface names (namespace,
package, interface, optional version), checks kebab-case labels, and
computes the strongly-unique canonical form used to detect name conflicts
(Explainer.md §"Name Uniqueness").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = r"[a-z][0-9a-z]*"
_ACRONYM = r"[A-Z][0-9A-Z]*"
_LABEL_RE = re.compile(rf"(?:{_WORD}|{_ACRONYM})(?:-(?:[0-9a-z]+|[0-9A-Z]+))*")
_WORDS_RE = re.compile(r"[a-z][0-9a-z]*(?:-[0-9a-z]+)*")
_SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
_CANONVERSION_RE = re.compile(r"[1-9][0-9]*|0\.[1-9][0-9]*|0\.0\.[1-9][0-9]*|0\.0\.0")


class NameError_(ValueError):  # noqa: N801 - avoid shadowing the builtin
    """A name does not follow the grammar; the message says why."""


def is_label(s: str) -> bool:
    """True when ``s`` is a kebab-case ``label``."""
    return _LABEL_RE.fullmatch(s) is not None


def check_label(s: str, what: str) -> None:
    if s == "":
        raise NameError_(f"{what} cannot be empty")
    if not is_label(s):
        raise NameError_(f"{what} `{s}` is not in kebab case")


def is_semver(s: str) -> bool:
    return _SEMVER_RE.fullmatch(s) is not None


def is_canonversion(s: str) -> bool:
    """True for a canonical version: ``1``, ``0.2``, ``0.0.3``.

    Explainer.md §"Canonical Interface Name".
    """
    return _CANONVERSION_RE.fullmatch(s) is not None


def full_version(canon: str, suffix: str) -> str:
    """The version a canonical version and its ``versionsuffix`` spell together."""
    return canon + suffix


@dataclass(frozen=True, slots=True)
class ExternName:
    """A parsed ``externname``.

    ``kind`` is ``"plain"``, ``"constructor"``, ``"method"``, ``"static"`` or
    ``"interface"``. For annotated names ``resource`` is the resource label and
    ``label`` the function's own label (``label == resource`` for
    constructors). For interface names ``namespace``/``package``/``interface``
    and ``version`` are set.
    """

    text: str
    kind: str
    label: str = ""
    resource: str = ""
    namespace: str = ""
    package: str = ""
    interface: str = ""
    version: str | None = None

    @property
    def is_interface(self) -> bool:
        return self.kind == "interface"

    def strong_key(self) -> str:
        """The canonical form compared for strong uniqueness."""
        if self.kind == "interface":
            return self.text.lower()
        if self.kind == "constructor":
            return "[constructor]" + self.label.lower()
        if self.kind in ("method", "static"):
            if self.resource.lower() == self.label.lower():
                return self.label.lower()
            return f"{self.resource.lower()}.{self.label.lower()}"
        return self.label.lower()


_ANNOTATIONS = ("[constructor]", "[method]", "[static]")


def parse_extern_name(text: str) -> ExternName:
    """Parse an ``externname``; raise :class:`NameError_` with the reason if invalid."""
    if text == "":
        raise NameError_("`` is not a valid extern name: empty string")
    if ":" in text or "/" in text or "@" in text:
        return _parse_interface_name(text)
    for prefix in _ANNOTATIONS:
        if text.startswith(prefix):
            rest = text[len(prefix) :]
            kind = prefix[1:-1]
            if kind == "constructor":
                if not is_label(rest):
                    raise NameError_(f"`{rest}` is not in kebab case")
                return ExternName(text, kind, label=rest, resource=rest)
            resource, dot, label = rest.partition(".")
            if not dot:
                raise NameError_(f"failed to find `.` character in `{text}`")
            if not is_label(resource):
                raise NameError_(f"`{resource}` is not in kebab case")
            if not is_label(label):
                raise NameError_(f"`{label}` is not in kebab case")
            return ExternName(text, kind, label=label, resource=resource)
    if text.startswith("["):
        raise NameError_(f"`{text}` is not a valid extern name: unknown annotation")
    if not is_label(text):
        raise NameError_(f"`{text}` is not in kebab case")
    return ExternName(text, "plain", label=text)


def _parse_interface_name(text: str) -> ExternName:
    base, at, version = text.partition("@")
    if at and not (is_semver(version) or _CANONVERSION_RE.fullmatch(version)):
        raise NameError_(f"`{text}` is not a valid extern name: bad version `{version}`")
    ns, colon, rest = base.partition(":")
    if not colon:
        raise NameError_(f"`{text}` is not a valid extern name: expected `:` after namespace")
    if not _WORDS_RE.fullmatch(ns):
        raise NameError_(f"`{ns}` is not in kebab case (in `{text}`)")
    pkg, slash, iface = rest.partition("/")
    if not slash:
        raise NameError_(f"`{text}` is not a valid extern name: expected `/` after package name")
    if ":" in pkg:
        raise NameError_(f"`{text}` is not a valid extern name: nested namespaces")
    if not _WORDS_RE.fullmatch(pkg):
        raise NameError_(f"`{pkg}` is not in kebab case (in `{text}`)")
    if "/" in iface:
        raise NameError_(f"`{text}` is not a valid extern name: trailing characters")
    if not is_label(iface):
        raise NameError_(f"`{iface}` is not in kebab case (in `{text}`)")
    return ExternName(
        text,
        "interface",
        label=iface,
        namespace=ns,
        package=pkg,
        interface=iface,
        version=version if at else None,
    )


class NameSet:
    """Tracks names in one scope and rejects those that are not strongly-unique."""

    __slots__ = ("_seen", "_what")

    def __init__(self, what: str) -> None:
        self._seen: dict[str, str] = {}
        self._what = what

    def add(self, name: ExternName) -> None:
        key = name.strong_key()
        prev = self._seen.get(key)
        if prev is not None:
            raise NameError_(
                f"{self._what} name `{name.text}` conflicts with previous name `{prev}`"
            )
        # `[method]a.b` and `[static]a.b` collide with each other; a plain `a`
        # collides with `[method]a.a` (handled by strong_key).
        self._seen[key] = name.text

    def __contains__(self, text: str) -> bool:
        return text in self._seen.values()


def check_unique_labels(labels: list[str], what: str) -> None:
    """Check kebab case and strong uniqueness of record/variant/flags/enum/param labels."""
    seen: dict[str, str] = {}
    for label in labels:
        check_label(label, what)
        prev = seen.get(label.lower())
        if prev is not None:
            raise NameError_(f"{what} `{label}` conflicts with previous {what} `{prev}`")
        seen[label.lower()] = label
