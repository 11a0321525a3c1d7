"""``polyengine.ray``: components on Ray Serve, across machines (http-serve.md §7).

Needs the ``ray`` extra (``pip install 'polyengine[ray]'``). A Ray Serve
replica is a long-lived process holding warm instances, which is what a
component host wants; Serve adds routing, autoscaling and an HTTP proxy.

* :func:`http_deployment`: a wasi:http 0.2 proxy or 0.3 service as a Serve
  deployment, ``serve.ingress`` around :class:`polyengine.asgi.App`, one
  CPU per replica, ``max_ongoing_requests`` set to the replica's instance
  pool capacity (0.2: ``instances``, one request each; 0.3: ``instances``
  times ``concurrent_reuse``);
* :func:`exports_deployment`: one instance per replica for export calls.
  Its handle method ``call(interface, name, args)`` takes ``to_cloneable``
  arguments and returns ``{"kind": "ok" | "err", "value": data}``, the
  value or error envelope as ``to_cloneable`` data (python-mapping.md §8);
  :class:`ExportsClient` wraps a handle with the pool's face
  (``await client.exports.add(1, 2)``). Resources and streams stay inside
  the replica: a result holding one is refused there, naming the path.

The imports factory is named as for :class:`polyengine.pool.Pool` and
imported in each replica, so its module must be importable there (or its
file readable, for a ``"path/to/file.py:function"`` name).

A driver that also runs instances itself must start Ray with the
environment variable ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER=1`` (set before
``ray`` is imported): Ray's crash handler, installed over the engine's
signal handlers, would turn the driver's next guest trap into a crash of
the process. Replicas are not affected: their engine installs its handlers
after Ray's.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from polyengine.limits import Limits
from polyengine.pool.wire import (
    FactoryRef,
    ImportsSpec,
    decode_error,
    encode_args,
    factory_ref,
    load_factory,
)

__all__ = ["ExportsClient", "INSTALL_HINT", "exports_deployment", "http_deployment"]

INSTALL_HINT = "polyengine.ray needs the ray extra: pip install 'polyengine[ray]'"


def _serve() -> Any:
    try:
        return importlib.import_module("ray.serve")
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc


def _component_bytes(component: bytes | str | Path | Any) -> bytes:
    from polyengine.translate import Artifacts

    if isinstance(component, Artifacts):
        return component.component_bytes
    if isinstance(component, bytes | bytearray | memoryview):
        return bytes(component)
    if isinstance(component, str | Path):
        return Path(component).read_bytes()
    raise TypeError(
        f"component must be bytes, a path or Artifacts, not {type(component).__qualname__}"
    )


def _http_track(data: bytes) -> str:
    """``"p2"`` or ``"p3"``: which wasi:http handler the component exports."""
    from polyengine import translate
    from polyengine.asgi import P2_HANDLER, P3_HANDLER

    names = [e.name for e in translate(data).plan.exports]
    if any(n.startswith(P2_HANDLER) for n in names):
        return "p2"
    if any(n.startswith(P3_HANDLER) for n in names):
        return "p3"
    raise TypeError(
        "the component exports no wasi:http/incoming-handler@0.2.x (a 0.2 proxy) or "
        f"wasi:http/handler@0.3.x (a 0.3 service); it exports {names or 'nothing'}"
    )


def http_deployment(
    component: bytes | str | Path | Any,
    imports: ImportsSpec = None,
    *,
    name: str = "polyengine-http",
    instances: int = 2,
    reuse: int | None = None,
    concurrent_reuse: int | None = None,
    idle_timeout: float = 1.0,
    request_timeout: float | None = None,
    headers: Sequence[tuple[str, str]] = (),
    limits: Limits | None = None,
    **deployment_options: Any,
) -> Any:
    """A Ray Serve deployment serving a wasi:http component; ``.bind()`` it and run it.

    Each replica runs :class:`polyengine.asgi.App` behind ``serve.ingress``
    with ``instances`` instances made ahead of requests; ``imports`` names
    the factory of each instance's imports (default: all of
    ``polyengine_wasi`` with outgoing HTTP denied). The other keywords are
    ``App``'s; ``deployment_options`` go to ``serve.deployment``
    (``num_replicas``, ``autoscaling_config``, ...), which gets one CPU per
    replica and ``max_ongoing_requests`` = the replica's capacity unless
    given.
    """
    serve = _serve()
    if isinstance(instances, bool) or not isinstance(instances, int) or instances < 1:
        raise ValueError(f"instances must be a positive int, not {instances!r}")
    data = _component_bytes(component)
    track = _http_track(data)
    per_instance = 1 if track == "p2" else (concurrent_reuse or 16)
    capacity = instances * per_instance
    ref = factory_ref(imports)
    app_options: dict[str, Any] = {
        "reuse": reuse,
        "concurrent_reuse": concurrent_reuse,
        "idle_timeout": idle_timeout,
        "prewarm": instances,
        "request_timeout": request_timeout,
        "headers": list(headers),
        "limits": limits,
        "max_concurrent_requests": capacity,
    }
    options: dict[str, Any] = {
        "name": name,
        "ray_actor_options": {"num_cpus": 1},
        "max_ongoing_requests": capacity,
    }
    options.update(deployment_options)

    @serve.ingress()
    class PolyengineHttp:
        """A replica: the component behind the ASGI bridge (built at replica start)."""

        def __serve_build_asgi_app__(self) -> Any:
            from polyengine.asgi import App, default_imports

            factory = load_factory(ref) if ref is not None else default_imports()
            return App(data, factory, **app_options)

    return serve.deployment(**options)(PolyengineHttp)


class _Replica:
    """The state of an export-call replica: its :class:`~polyengine.pool.host.InstanceHost`."""

    def __init__(
        self, data: bytes, ref: FactoryRef | None, limits: Limits | None, suspend: bool | None
    ) -> None:
        self._data = data
        self._ref = ref
        self._limits = limits
        self._suspend = suspend
        self._host: Any = None
        self._catalog: dict[str, object] | None = None
        self._starting: Any = None

    async def host(self) -> Any:
        import asyncio

        if self._host is None:
            if self._starting is None:
                self._starting = asyncio.ensure_future(self._start())
            await asyncio.shield(self._starting)
        return self._host

    async def _start(self) -> None:
        from polyengine import translate
        from polyengine.pool.host import InstanceHost

        try:
            factory = load_factory(self._ref) if self._ref is not None else None
            host = InstanceHost(
                translate(self._data), factory, limits=self._limits, suspend=self._suspend
            )
            self._catalog = await host.start()
            self._host = host
        finally:
            self._starting = None

    async def call(self, interface: str | None, name: str, args: object) -> dict[str, object]:
        from polyengine.pool.wire import encode_error

        try:
            host = await self.host()
        except Exception as exc:
            return {"kind": "err", "value": encode_error(exc)}
        ok, data = await host.call(interface, name, args)
        return {"kind": "ok" if ok else "err", "value": data}

    async def catalog(self) -> dict[str, object]:
        await self.host()
        assert self._catalog is not None
        return self._catalog


def exports_deployment(
    component: bytes | str | Path | Any,
    imports: ImportsSpec = None,
    *,
    name: str = "polyengine-exports",
    concurrency: int = 1,
    limits: Limits | None = None,
    suspend: bool | None = None,
    **deployment_options: Any,
) -> Any:
    """A Ray Serve deployment holding one instance per replica for export calls.

    Handle methods: ``call(interface, name, args)`` with ``args`` the
    ``to_cloneable`` list of arguments (``interface`` ``None`` for a
    world-level export), returning ``{"kind": "ok" | "err", "value": data}``;
    ``catalog()``, what the component exports. ``concurrency`` is
    ``max_ongoing_requests`` (more than 1 helps async exports only); one CPU
    per replica.
    """
    serve = _serve()
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, not {concurrency!r}")
    if limits is not None and not isinstance(limits, Limits):
        raise TypeError(f"limits must be a polyengine.Limits, not {type(limits).__name__}")
    data = _component_bytes(component)
    from polyengine import translate

    translate(data)  # a malformed component fails here, not in every replica
    ref = factory_ref(imports)
    options: dict[str, Any] = {
        "name": name,
        "ray_actor_options": {"num_cpus": 1},
        "max_ongoing_requests": concurrency,
    }
    options.update(deployment_options)

    class PolyengineExports:
        """A replica: one instance, remade after a trap; calls in and out as cloneable data."""

        def __init__(self) -> None:
            self._replica = _Replica(data, ref, limits, suspend)

        async def call(
            self, interface: str | None, name: str, args: object
        ) -> dict[str, object]:
            return await self._replica.call(interface, name, args)

        async def catalog(self) -> dict[str, object]:
            return await self._replica.catalog()

    return serve.deployment(**options)(PolyengineExports)


class _ClientMembers:
    def __init__(self, client: ExportsClient, interface: str | None) -> None:
        self._client = client
        self._interface = interface

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        client, interface = self._client, self._interface

        async def call(*args: object) -> Any:
            return await client.call(interface, name, *args)

        call.__name__ = name
        return call


class _ClientExports(_ClientMembers):
    def __getitem__(self, interface: str) -> _ClientMembers:
        if not isinstance(interface, str):
            raise TypeError(f"an interface id is a str, not {type(interface).__qualname__}")
        return _ClientMembers(self._client, interface)


class ExportsClient:
    """Export calls through a handle of :func:`exports_deployment`, with the pool's face.

    ``await client.exports.add(1, 2)``; ``await client.exports["ns:pkg/i@1.0.0"].f(x)``.
    Arguments are refused at the sender when they hold a realm-local value
    (naming the argument and the path); errors come back as this process's
    exceptions, payloads and cause chains kept.
    """

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.exports = _ClientExports(self, None)

    async def call(self, interface: str | None, name: str, *args: object) -> Any:
        from polyengine_protocol import from_cloneable

        label = name if interface is None else f"{interface}#{name}"
        data = encode_args(label, args)
        reply = await self._handle.call.remote(interface, name, data)
        if reply["kind"] == "ok":
            return from_cloneable(reply["value"])
        raise decode_error(reply["value"], "a Ray Serve replica")
