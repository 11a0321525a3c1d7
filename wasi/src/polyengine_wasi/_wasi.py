"""``wasi()``: one imports mapping serving WASI 0.2 and 0.3.

The keys are track ids (embedder-api.md §"Version canonicalization"): a
provider registered under ``wasi:clocks/monotonic-clock@0.2`` serves every
0.2.x import of that interface, and ``…@0.3`` every 0.3.x one. Each value is
a provider namespace whose snake_case attributes are the interface's
functions and whose PascalCase attributes are its resource classes
(python-mapping.md §5).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

from ._bytes import process_stderr, process_stdout, sink_from, source_from
from ._cli import (
    Environment,
    environment_provider,
    exit_provider,
    stdio_p2,
    stdio_p3,
    terminal_providers,
)
from ._clocks import (
    monotonic_clock_p2,
    monotonic_clock_p3,
    system_clock_p3,
    timezone_p2,
    timezone_p3,
    wall_clock_p2,
    wall_clock_p3,
)
from ._filesystem import Preopen, preopens_provider, types_provider
from ._kernel import Pollable, poll
from ._net import network_provider
from ._p3_filesystem import preopens_provider_p3, types_provider_p3
from ._p3_sockets import sockets_providers_p3
from ._random import RandomState, insecure_provider, insecure_seed_provider, random_provider
from ._sockets import ip_name_lookup_provider, tcp_providers
from ._streams import InputStream, IoError, OutputStream
from ._udp import udp_providers

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
    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise TypeError(
            f"a preopen is (host_dir, guest_path) or (host_dir, guest_path, readonly), got {spec!r}"
        )
    readonly = bool(spec[2]) if len(spec) == 3 else False
    return Preopen(spec[0], spec[1], readonly)


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
    """
    environment = Environment(args, env, cwd)
    opened = [_preopen(p) for p in preopens]
    stdin_source = source_from(stdin)
    stdout_sink = sink_from(stdout, process_stdout)
    stderr_sink = sink_from(stderr, process_stderr)
    randomness = RandomState(seed)
    ttys = (
        _isatty(stdin, None),
        _isatty(stdout, sys.stdout),
        _isatty(stderr, sys.stderr),
    )

    imports: dict[str, object] = {}

    def add(interface: str, track: str, provider: object) -> None:
        imports[f"{interface}{track}"] = provider

    # --- 0.2 -------------------------------------------------------------
    add("wasi:io/error", P2, SimpleNamespace(Error=IoError))
    add("wasi:io/poll", P2, SimpleNamespace(Pollable=Pollable, poll=poll))
    add("wasi:io/streams", P2, SimpleNamespace(InputStream=InputStream, OutputStream=OutputStream))
    add("wasi:clocks/monotonic-clock", P2, monotonic_clock_p2())
    add("wasi:clocks/wall-clock", P2, wall_clock_p2())
    add("wasi:clocks/timezone", P2, timezone_p2(local_timezone))
    add("wasi:random/random", P2, random_provider())
    add("wasi:random/insecure", P2, insecure_provider(randomness))
    add("wasi:random/insecure-seed", P2, insecure_seed_provider(randomness))
    add("wasi:cli/environment", P2, environment_provider(environment))
    add("wasi:cli/exit", P2, exit_provider())
    std_in, std_out, std_err = stdio_p2(stdin_source, stdout_sink, stderr_sink)
    add("wasi:cli/stdin", P2, std_in)
    add("wasi:cli/stdout", P2, std_out)
    add("wasi:cli/stderr", P2, std_err)
    for name, provider in terminal_providers(*ttys).items():
        add(f"wasi:cli/{name}", P2, provider)
    add("wasi:filesystem/types", P2, types_provider())
    add("wasi:filesystem/preopens", P2, preopens_provider(opened))
    sockets = {
        **network_provider(network),
        **tcp_providers(network),
        **udp_providers(network),
        "ip-name-lookup": ip_name_lookup_provider(),
    }
    for name, provider in sockets.items():
        add(f"wasi:sockets/{name}", P2, provider)

    # --- 0.3 -------------------------------------------------------------
    add("wasi:clocks/types", P3, SimpleNamespace())
    add("wasi:clocks/monotonic-clock", P3, monotonic_clock_p3())
    add("wasi:clocks/system-clock", P3, system_clock_p3())
    add("wasi:clocks/wall-clock", P3, wall_clock_p3())
    add("wasi:clocks/timezone", P3, timezone_p3(local_timezone))
    add("wasi:random/random", P3, random_provider())
    add("wasi:random/insecure", P3, insecure_provider(randomness))
    add("wasi:random/insecure-seed", P3, insecure_seed_provider(randomness))
    add("wasi:cli/environment", P3, environment_provider(environment))
    add("wasi:cli/exit", P3, exit_provider())
    add("wasi:cli/types", P3, SimpleNamespace())
    std_in3, std_out3, std_err3 = stdio_p3(stdin_source, stdout_sink, stderr_sink)
    add("wasi:cli/stdin", P3, std_in3)
    add("wasi:cli/stdout", P3, std_out3)
    add("wasi:cli/stderr", P3, std_err3)
    for name, provider in terminal_providers(*ttys).items():
        add(f"wasi:cli/{name}", P3, provider)
    add("wasi:filesystem/types", P3, types_provider_p3())
    add("wasi:filesystem/preopens", P3, preopens_provider_p3(opened))
    for name, provider in sockets_providers_p3(network).items():
        add(f"wasi:sockets/{name}", P3, provider)

    for version in p3_prereleases:
        if not isinstance(version, str) or not version.startswith("0.3.") or "-" not in version:
            raise ValueError(f"p3_prereleases: {version!r} is not a 0.3 prerelease version")
        for key in [k for k in imports if k.endswith(P3)]:
            imports[f"{key[: -len(P3)]}@{version}"] = imports[key]
    return imports
