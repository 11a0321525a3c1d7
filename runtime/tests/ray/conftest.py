"""Fixtures of the Ray tests: one local Ray instance (2 CPUs) on 127.0.0.1, with Serve.

Every test here carries the ``ray`` marker: the suite on Python 3.11 runs
them with the ``ray`` extra installed; CI's runs on other Pythons, which do
not install Ray, deselect them explicitly (``-m "not ray"``).
"""

from __future__ import annotations

import socket
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pool"))

from pool_guests import GUEST


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ray: needs the ray extra and starts a local Ray instance")


@pytest.fixture(scope="session")
def guest(wat: Callable[[str], bytes]) -> bytes:
    return wat(GUEST)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def ray_serve() -> Iterator[tuple[Any, int]]:
    """``(serve, port)``: Serve's HTTP proxy listens on 127.0.0.1:``port``.

    Module-scoped: Ray's processes stop before the rest of the suite runs.
    Ray's crash handler is kept out of this process: installed over the
    engine's signal handlers, it would turn the next guest trap of the
    suite (a signal the engine handles) into a crash of the test process.
    """
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setenv("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")  # read as Ray starts
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")  # Ray reports nowhere
        # A single-node Ray on the loopback address (what it does on macOS and
        # Windows): without it Ray takes the machine's outward address.
        patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        warnings.simplefilter("ignore", DeprecationWarning)  # raised while Ray imports
        import ray
        from ray import serve

        # Every Ray process listens, and every connection goes, on 127.0.0.1.
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",
        )
    port = _free_port()
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        yield serve, port
    finally:
        serve.shutdown()
        ray.shutdown()
