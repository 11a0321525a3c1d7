"""``wasi(interfaces=...)`` builds only the providers imported; the package loads lazily."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import polyengine_wasi
from polyengine_wasi import wasi


def test_interfaces_limit_the_providers_to_those_imported() -> None:
    out = bytearray()
    imports = wasi(
        stdout=out,
        interfaces=["wasi:cli/stdout@0.2.9", "wasi:io/streams@0.2.0", "my:app/log@1.0.0"],
    )
    assert set(imports) == {"wasi:cli/stdout@0.2", "wasi:io/streams@0.2"}
    imports["wasi:cli/stdout@0.2"].get_stdout().blocking_write_and_flush(b"hi")
    assert bytes(out) == b"hi"


def test_interfaces_by_track_id_and_prerelease() -> None:
    everything = wasi(p3_prereleases=["0.3.0-rc-2026-03-15"])
    assert set(wasi(interfaces=list(everything), p3_prereleases=["0.3.0-rc-2026-03-15"])) == set(
        everything
    )
    some = wasi(
        interfaces=["wasi:clocks/monotonic-clock@0.3.0-rc-2026-03-15", "wasi:random/random@0.3.1"],
        p3_prereleases=["0.3.0-rc-2026-03-15"],
    )
    # every 0.3 provider built is also registered under the prerelease version
    assert set(some) == {
        "wasi:clocks/monotonic-clock@0.3",
        "wasi:clocks/monotonic-clock@0.3.0-rc-2026-03-15",
        "wasi:random/random@0.3",
        "wasi:random/random@0.3.0-rc-2026-03-15",
    }
    assert wasi(interfaces=[]) == {}


def test_shared_state_is_shared_between_tracks() -> None:
    imports = wasi(
        seed=7,
        interfaces=["wasi:random/insecure-seed@0.2.0", "wasi:random/insecure-seed@0.3.0"],
    )
    p2 = imports["wasi:random/insecure-seed@0.2"].insecure_seed()
    p3 = imports["wasi:random/insecure-seed@0.3"].get_insecure_seed()
    assert p2 == p3  # one RandomState, as when every provider is built


def test_unknown_name_is_not_an_attribute() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        polyengine_wasi.no_such_name  # noqa: B018
    assert set(polyengine_wasi.__all__) <= set(dir(polyengine_wasi))


def test_stdio_providers_import_no_sockets_http_or_asyncio() -> None:
    code = (
        "import json, sys, polyengine_wasi\n"
        "polyengine_wasi.wasi(interfaces=['wasi:cli/stdout@0.2.0', 'wasi:io/streams@0.2.0'])\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.startswith(('polyengine_wasi', 'asyncio', 'socket')))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    modules = set(json.loads(proc.stdout))
    assert "asyncio" not in modules
    assert "socket" not in modules
    for name in ("_sockets", "_udp", "_net", "_http", "_filesystem", "_p3_sockets", "_clocks"):
        assert f"polyengine_wasi.{name}" not in modules, modules
