"""The shape of ``wasi()``: track keys, shared resource classes, the public names."""

from __future__ import annotations

import polyengine_wasi
from polyengine_wasi import InputStream, OutputStream, Pollable, wasi

P2 = [
    "wasi:cli/environment", "wasi:cli/exit", "wasi:cli/stdin", "wasi:cli/stdout",
    "wasi:cli/stderr", "wasi:cli/terminal-input", "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin", "wasi:cli/terminal-stdout", "wasi:cli/terminal-stderr",
    "wasi:clocks/monotonic-clock", "wasi:clocks/wall-clock", "wasi:random/random",
    "wasi:random/insecure", "wasi:random/insecure-seed", "wasi:io/error", "wasi:io/poll",
    "wasi:io/streams", "wasi:filesystem/types", "wasi:filesystem/preopens",
    "wasi:sockets/network", "wasi:sockets/instance-network", "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket", "wasi:sockets/udp", "wasi:sockets/udp-create-socket",
    "wasi:sockets/ip-name-lookup",
]
P3 = [
    "wasi:clocks/monotonic-clock", "wasi:clocks/system-clock", "wasi:cli/environment",
    "wasi:cli/exit", "wasi:cli/stdin", "wasi:cli/stdout", "wasi:cli/stderr",
    "wasi:random/random", "wasi:random/insecure", "wasi:random/insecure-seed",
]


def test_every_interface_is_served_on_its_track() -> None:
    imports = wasi()
    missing = [f"{i}@0.2" for i in P2 if f"{i}@0.2" not in imports]
    missing += [f"{i}@0.3" for i in P3 if f"{i}@0.3" not in imports]
    assert missing == []
    assert all(key.rsplit("@", 1)[1] in ("0.2", "0.3") for key in imports)  # track keys only


def test_resource_classes_are_shared_by_every_interface_that_uses_them(tmp_path: object) -> None:
    imports = wasi(stdin=b"x", preopens=[(str(tmp_path), "/")])
    streams = imports["wasi:io/streams@0.2"]
    assert type(imports["wasi:cli/stdin@0.2"].get_stdin()) is streams.InputStream
    assert type(imports["wasi:cli/stdout@0.2"].get_stdout()) is streams.OutputStream
    timer = imports["wasi:clocks/monotonic-clock@0.2"].subscribe_duration(0)
    assert type(timer) is imports["wasi:io/poll@0.2"].Pollable
    descriptor, _ = imports["wasi:filesystem/preopens@0.2"].get_directories()[0]
    assert type(descriptor) is imports["wasi:filesystem/types@0.2"].Descriptor
    assert streams.InputStream is InputStream and streams.OutputStream is OutputStream
    assert imports["wasi:io/poll@0.2"].Pollable is Pollable


def test_instances_are_independent() -> None:
    a, b = wasi(args=["a"]), wasi(args=["b"])
    assert a["wasi:cli/environment@0.2"].get_arguments() == ["a"]
    assert b["wasi:cli/environment@0.2"].get_arguments() == ["b"]


def test_public_names_resolve() -> None:
    for name in polyengine_wasi.__all__:
        assert getattr(polyengine_wasi, name) is not None, name
    assert sorted(polyengine_wasi.__all__) == sorted(set(polyengine_wasi.__all__))


def test_p3_prerelease_aliases_are_opt_in() -> None:
    imports = wasi(p3_prereleases=["0.3.0-rc-2026-03-15"])
    alias = "wasi:clocks/monotonic-clock@0.3.0-rc-2026-03-15"
    assert imports[alias] is imports["wasi:clocks/monotonic-clock@0.3"]
    assert "wasi:io/poll@0.3.0-rc-2026-03-15" not in imports
    assert alias not in wasi()


def test_p3_prerelease_refuses_non_prereleases() -> None:
    import pytest

    with pytest.raises(ValueError, match="prerelease"):
        wasi(p3_prereleases=["0.3.0"])
