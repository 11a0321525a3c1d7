"""``wasi()``: one imports mapping serving WASI 0.2 and 0.3.

The keys are track ids (embedder-api.md §"Version canonicalization"): a
provider registered under ``wasi:clocks/monotonic-clock@0.2`` serves every
0.2.x import of that interface, and ``…@0.3`` every 0.3.x one. Each value is
a provider namespace whose snake_case attributes are the interface's
functions and whose PascalCase attributes are its resource classes
(python-mapping.md §5).

``wasi(..., interfaces=names)`` builds only the providers of the interfaces
a component imports (``names`` as the component spells them, e.g.
``wasi:cli/stdout@0.2.9``), importing only their modules: a command that
writes to stdout does not load sockets, filesystems or HTTP.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._filesystem import Preopen

__all__ = ["wasi", "PreopenSpec"]

PreopenSpec = (
    tuple[str | os.PathLike[str], str] | tuple[str | os.PathLike[str], str, bool]
)

P2 = "@0.2"
P3 = "@0.3"


def _isatty(value: object, default: object) -> bool:
    target = default if value is None else value
    isatty = getattr(target, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


def _preopen(spec: PreopenSpec) -> Preopen:
    from ._filesystem import Preopen

    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise TypeError(
            f"a preopen is (host_dir, guest_path) or (host_dir, guest_path, readonly), got {spec!r}"
        )
    readonly = bool(spec[2]) if len(spec) == 3 else False
    return Preopen(spec[0], spec[1], readonly)


def _track(name: str) -> str | None:
    """The track id of an imported interface name (``wasi:cli/stdout@0.2.9`` ->
    ``wasi:cli/stdout@0.2``), or ``None`` for a name no track serves."""
    interface, at, version = name.partition("@")
    if not at:
        return None
    for track in (P2, P3):
        if version == track[1:] or version.startswith(track[1:] + "."):
            return interface + track
    return None


class _Parts:
    """The state the providers of one ``wasi()`` share, each part made on first use."""

    def __init__(
        self,
        *,
        args: Sequence[str],
        env: Mapping[str, str] | Sequence[tuple[str, str]],
        cwd: str | None,
        opened: list[Preopen],
        stdio: tuple[object, object, object],
        network: bool,
        seed: int | None,
        local_timezone: bool,
    ) -> None:
        self.args, self.env, self.cwd = args, env, cwd
        self.opened = opened
        self.stdio = stdio
        self.network = network
        self.seed = seed
        self.local_timezone = local_timezone
        self._made: dict[str, Any] = {}

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def environment(self) -> Any:
        from ._cli import Environment

        return self._once("environment", lambda: Environment(self.args, self.env, self.cwd))

    def randomness(self) -> Any:
        from ._random import RandomState

        return self._once("randomness", lambda: RandomState(self.seed))

    def streams(self) -> tuple[Any, Any, Any]:
        """The stdin source and the stdout and stderr sinks (shared by 0.2 and 0.3)."""

        def make() -> tuple[Any, Any, Any]:
            from ._bytes import process_stderr, process_stdout, sink_from, source_from

            stdin, stdout, stderr = self.stdio
            return (
                source_from(stdin),
                sink_from(stdout, process_stdout),
                sink_from(stderr, process_stderr),
            )

        made: tuple[Any, Any, Any] = self._once("streams", make)
        return made

    def stdio_p2(self) -> tuple[Any, Any, Any]:
        from ._cli import stdio_p2

        made: tuple[Any, Any, Any] = self._once("stdio_p2", lambda: stdio_p2(*self.streams()))
        return made

    def stdio_p3(self) -> tuple[Any, Any, Any]:
        from ._cli import stdio_p3

        made: tuple[Any, Any, Any] = self._once("stdio_p3", lambda: stdio_p3(*self.streams()))
        return made

    def terminals(self, track: str) -> dict[str, Any]:
        def make() -> dict[str, Any]:
            from ._cli import terminal_providers

            stdin, stdout, stderr = self.stdio
            ttys = (
                _isatty(stdin, None),
                _isatty(stdout, sys.stdout),
                _isatty(stderr, sys.stderr),
            )
            return terminal_providers(*ttys)

        made: dict[str, Any] = self._once(f"terminals{track}", make)
        return made

    def sockets_p2(self) -> dict[str, Any]:
        def make() -> dict[str, Any]:
            from ._net import network_provider
            from ._sockets import ip_name_lookup_provider, tcp_providers
            from ._udp import udp_providers

            return {
                **network_provider(self.network),
                **tcp_providers(self.network),
                **udp_providers(self.network),
                "ip-name-lookup": ip_name_lookup_provider(),
            }

        made: dict[str, Any] = self._once("sockets_p2", make)
        return made

    def sockets_p3(self) -> dict[str, Any]:
        def make() -> dict[str, Any]:
            from ._p3_sockets import sockets_providers_p3

            return sockets_providers_p3(self.network)

        made: dict[str, Any] = self._once("sockets_p3", make)
        return made


def _io_error() -> object:
    from ._streams import IoError

    return SimpleNamespace(Error=IoError)


def _io_poll() -> object:
    from ._kernel import Pollable, poll

    return SimpleNamespace(Pollable=Pollable, poll=poll)


def _io_streams() -> object:
    from ._streams import InputStream, OutputStream

    return SimpleNamespace(InputStream=InputStream, OutputStream=OutputStream)


def _clock(name: str) -> Callable[[_Parts], object]:
    def make(parts: _Parts) -> object:
        from . import _clocks

        factory = getattr(_clocks, name)
        if name.startswith("timezone"):
            return factory(parts.local_timezone)
        return factory()

    return make


def _random(name: str) -> Callable[[_Parts], object]:
    def make(parts: _Parts) -> object:
        from . import _random as module

        if name == "random_provider":
            return module.random_provider()
        factory = getattr(module, name)
        return factory(parts.randomness())

    return make


def _environment(parts: _Parts) -> object:
    from ._cli import environment_provider

    return environment_provider(parts.environment())


def _exit(_parts: _Parts) -> object:
    from ._cli import exit_provider

    return exit_provider()


def _filesystem(p3: bool, preopens: bool) -> Callable[[_Parts], object]:
    def make(parts: _Parts) -> object:
        if p3:
            from ._p3_filesystem import preopens_provider_p3, types_provider_p3

            return preopens_provider_p3(parts.opened) if preopens else types_provider_p3()
        from ._filesystem import preopens_provider, types_provider

        return preopens_provider(parts.opened) if preopens else types_provider()

    return make


def _stdio(track: str, index: int) -> Callable[[_Parts], object]:
    def make(parts: _Parts) -> object:
        return (parts.stdio_p2() if track == P2 else parts.stdio_p3())[index]

    return make


def _terminal(track: str, name: str) -> Callable[[_Parts], object]:
    return lambda parts: parts.terminals(track)[name]


def _socket(track: str, name: str) -> Callable[[_Parts], object]:
    return lambda parts: (parts.sockets_p2() if track == P2 else parts.sockets_p3())[name]


_TERMINALS = (
    "terminal-input",
    "terminal-output",
    "terminal-stdin",
    "terminal-stdout",
    "terminal-stderr",
)
_SOCKETS_P2 = (
    "network",
    "instance-network",
    "tcp",
    "tcp-create-socket",
    "udp",
    "udp-create-socket",
    "ip-name-lookup",
)
_SOCKETS_P3 = ("types", "ip-name-lookup")

#: Every provider by track id, in the order ``wasi()`` lists them, with its builder.
_BUILDERS: dict[str, Callable[[_Parts], object]] = {
    # --- 0.2 -------------------------------------------------------------
    "wasi:io/error@0.2": lambda _parts: _io_error(),
    "wasi:io/poll@0.2": lambda _parts: _io_poll(),
    "wasi:io/streams@0.2": lambda _parts: _io_streams(),
    "wasi:clocks/monotonic-clock@0.2": _clock("monotonic_clock_p2"),
    "wasi:clocks/wall-clock@0.2": _clock("wall_clock_p2"),
    "wasi:clocks/timezone@0.2": _clock("timezone_p2"),
    "wasi:random/random@0.2": _random("random_provider"),
    "wasi:random/insecure@0.2": _random("insecure_provider"),
    "wasi:random/insecure-seed@0.2": _random("insecure_seed_provider"),
    "wasi:cli/environment@0.2": _environment,
    "wasi:cli/exit@0.2": _exit,
    "wasi:cli/stdin@0.2": _stdio(P2, 0),
    "wasi:cli/stdout@0.2": _stdio(P2, 1),
    "wasi:cli/stderr@0.2": _stdio(P2, 2),
    **{f"wasi:cli/{name}@0.2": _terminal(P2, name) for name in _TERMINALS},
    "wasi:filesystem/types@0.2": _filesystem(False, False),
    "wasi:filesystem/preopens@0.2": _filesystem(False, True),
    **{f"wasi:sockets/{name}@0.2": _socket(P2, name) for name in _SOCKETS_P2},
    # --- 0.3 -------------------------------------------------------------
    "wasi:clocks/types@0.3": lambda _parts: SimpleNamespace(),
    "wasi:clocks/monotonic-clock@0.3": _clock("monotonic_clock_p3"),
    "wasi:clocks/system-clock@0.3": _clock("system_clock_p3"),
    "wasi:clocks/wall-clock@0.3": _clock("wall_clock_p3"),
    "wasi:clocks/timezone@0.3": _clock("timezone_p3"),
    "wasi:random/random@0.3": _random("random_provider"),
    "wasi:random/insecure@0.3": _random("insecure_provider"),
    "wasi:random/insecure-seed@0.3": _random("insecure_seed_provider"),
    "wasi:cli/environment@0.3": _environment,
    "wasi:cli/exit@0.3": _exit,
    "wasi:cli/types@0.3": lambda _parts: SimpleNamespace(),
    "wasi:cli/stdin@0.3": _stdio(P3, 0),
    "wasi:cli/stdout@0.3": _stdio(P3, 1),
    "wasi:cli/stderr@0.3": _stdio(P3, 2),
    **{f"wasi:cli/{name}@0.3": _terminal(P3, name) for name in _TERMINALS},
    "wasi:filesystem/types@0.3": _filesystem(True, False),
    "wasi:filesystem/preopens@0.3": _filesystem(True, True),
    **{f"wasi:sockets/{name}@0.3": _socket(P3, name) for name in _SOCKETS_P3},
}


#: The providers that hold no state and depend on no argument of :func:`wasi` (pure
#: functions over the process, and namespaces of resource classes): one of each can
#: serve every instance of an app (``wasi(shared=...)``).
STATELESS = frozenset(
    {
        "wasi:io/error@0.2",
        "wasi:io/poll@0.2",
        "wasi:io/streams@0.2",
        "wasi:clocks/monotonic-clock@0.2",
        "wasi:clocks/wall-clock@0.2",
        "wasi:random/random@0.2",
        "wasi:cli/exit@0.2",
        "wasi:filesystem/types@0.2",
        "wasi:clocks/types@0.3",
        "wasi:clocks/monotonic-clock@0.3",
        "wasi:clocks/system-clock@0.3",
        "wasi:clocks/wall-clock@0.3",
        "wasi:random/random@0.3",
        "wasi:cli/exit@0.3",
        "wasi:cli/types@0.3",
        "wasi:filesystem/types@0.3",
    }
)


def _wanted(interfaces: Iterable[str] | None, p3_prereleases: Sequence[str]) -> Sequence[str]:
    """The provider keys, in :data:`_BUILDERS` order, that serve ``interfaces``."""
    if interfaces is None:
        return tuple(_BUILDERS)
    return _wanted_of(tuple(interfaces), tuple(p3_prereleases))


@functools.lru_cache(maxsize=64)
def _wanted_of(interfaces: tuple[str, ...], p3_prereleases: tuple[str, ...]) -> tuple[str, ...]:
    names = set()
    for name in interfaces:
        names.add(name)
        track = _track(name)
        if track is not None:
            names.add(track)
        interface, _, version = name.partition("@")
        if version in p3_prereleases:
            names.add(interface + P3)
    return tuple(key for key in _BUILDERS if key in names)


def wasi(
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | Sequence[tuple[str, str]] = (),
    preopens: Sequence[PreopenSpec] = (),
    stdin: object = None,
    stdout: object = None,
    stderr: object = None,
    network: bool = False,
    cwd: str | None = None,
    seed: int | None = None,
    local_timezone: bool = False,
    p3_prereleases: Sequence[str] = (),
    interfaces: Iterable[str] | None = None,
    shared: dict[str, object] | None = None,
) -> dict[str, object]:
    """Build the WASI imports of one instance.

    ``args`` and ``env`` are what the guest sees; ``preopens`` are
    ``(host_dir, guest_path[, readonly])`` tuples, the only directories the
    guest can reach. ``stdin`` is ``bytes``, a binary file or an async
    iterable of ``bytes`` (default: empty); ``stdout`` / ``stderr`` are a
    ``bytearray`` to capture into or a binary file (default: the process's
    own streams). ``network`` grants sockets and name lookup. ``cwd`` is the
    guest's initial working directory; ``seed`` makes the insecure random
    generators deterministic; ``local_timezone`` shows the host's time zone
    to the (unstable) timezone interfaces, which otherwise report UTC.
    ``p3_prereleases`` (e.g. ``["0.3.0-rc-2026-03-15"]``) also registers the
    0.3 providers under those exact prerelease versions, which a track never
    serves (embedder-api.md §"Version canonicalization").
    ``interfaces`` (the interface names a component imports, versioned as
    it spells them, or track ids) limits the mapping to the providers of
    those interfaces; by default every provider is built.
    ``shared`` is a dict the caller keeps across the instances of one app: the
    providers that hold no state (:data:`STATELESS`: clocks, secure random,
    exit, the wasi:io and filesystem type namespaces) are made once into it
    and handed to each instance; every other provider is the instance's own.
    """
    for version in p3_prereleases:
        if not isinstance(version, str) or not version.startswith("0.3.") or "-" not in version:
            raise ValueError(f"p3_prereleases: {version!r} is not a 0.3 prerelease version")
    parts = _Parts(
        args=args,
        env=env,
        cwd=cwd,
        opened=[_preopen(p) for p in preopens],
        stdio=(stdin, stdout, stderr),
        network=network,
        seed=seed,
        local_timezone=local_timezone,
    )
    imports: dict[str, object] = {}
    for key in _wanted(interfaces, p3_prereleases):
        if shared is not None and key in STATELESS:
            provider = shared.get(key)
            if provider is None:
                provider = shared[key] = _BUILDERS[key](parts)
            imports[key] = provider
        else:
            imports[key] = _BUILDERS[key](parts)
    for version in p3_prereleases:
        for key in [k for k in imports if k.endswith(P3)]:
            imports[f"{key[: -len(P3)]}@{version}"] = imports[key]
    return imports
