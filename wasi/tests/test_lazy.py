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


def test_shared_hands_each_call_the_same_stateless_providers_and_its_own_state() -> None:
    """``wasi(shared=d)``: the stateless providers are made once into ``d``; the
    environment, the stdio and the insecure random state stay each call's own."""
    from polyengine_wasi._wasi import STATELESS

    names = [
        "wasi:clocks/monotonic-clock@0.2.3",
        "wasi:io/streams@0.2.3",
        "wasi:cli/environment@0.2.3",
        "wasi:cli/stdout@0.2.3",
        "wasi:random/insecure@0.2.3",
        "wasi:random/random@0.3.0",
    ]
    shared: dict[str, object] = {}
    one_out, two_out = bytearray(), bytearray()
    one = wasi(env=[("N", "1")], stdout=one_out, interfaces=tuple(names), shared=shared)
    two = wasi(env=[("N", "2")], stdout=two_out, interfaces=tuple(names), shared=shared)
    assert set(one) == set(two) == {
        "wasi:clocks/monotonic-clock@0.2",
        "wasi:io/streams@0.2",
        "wasi:cli/environment@0.2",
        "wasi:cli/stdout@0.2",
        "wasi:random/insecure@0.2",
        "wasi:random/random@0.3",
    }
    for key in one:
        assert (one[key] is two[key]) == (key in STATELESS), key
    assert set(shared) == {key for key in one if key in STATELESS}
    assert one["wasi:cli/environment@0.2"].get_environment() == [("N", "1")]
    assert two["wasi:cli/environment@0.2"].get_environment() == [("N", "2")]
    two["wasi:cli/stdout@0.2"].get_stdout().blocking_write_and_flush(b"two")
    assert (bytes(one_out), bytes(two_out)) == (b"", b"two")
    # without ``shared`` nothing is shared, stateless or not
    three = wasi(interfaces=tuple(names))
    assert all(three[key] is not one[key] for key in three)


def test_every_stateless_provider_depends_on_no_argument() -> None:
    """What :data:`STATELESS` names is built alike whatever ``wasi()`` is given."""
    from polyengine_wasi._wasi import STATELESS

    plain = wasi()
    other = wasi(
        args=["x"], env=[("A", "b")], stdout=bytearray(), seed=3, network=True, cwd="/",
        local_timezone=True,
    )
    assert set(plain) >= STATELESS
    for key in STATELESS:
        a, b = vars(plain[key]), vars(other[key])
        assert a.keys() == b.keys(), key
        for name in a:
            # the same classes, or functions with the same code closing over no
            # state (at most over the provider's other functions)
            fa, fb = a[name], b[name]
            fa, fb = getattr(fa, "__wrapped__", fa), getattr(fb, "__wrapped__", fb)  # (marks)
            if isinstance(fa, type):
                assert fa is fb, (key, name)
            else:
                assert fa.__code__ is fb.__code__, (key, name)
                cells = [cell.cell_contents for cell in fa.__closure__ or ()]
                assert all(callable(c) and hasattr(c, "__code__") for c in cells), (key, name)
