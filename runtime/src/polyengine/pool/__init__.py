"""``polyengine.pool``: one component's instances in worker processes.

A Python host runs one instance per event loop, on one core. A pool runs
instances of one component in worker processes, one per core by default,
each made with imports that a factory the caller names makes in the worker
(providers do not pickle; python-mapping.md §8). Calls route to a free
worker; arguments, results and errors cross as ``to_cloneable`` data::

    async with polyengine.pool.Pool(component, "myapp.hosts:imports", workers=4) as pool:
        total = await pool.exports.add(1, 2)
        await pool.exports["ns:pkg/iface@1"].f(...)

The blocking form is :class:`polyengine.sync.Pool`; across machines,
:mod:`polyengine.ray` (http-serve.md §7).
"""

from polyengine.pool._pool import Pool as Pool
from polyengine.pool._pool import PoolClosedError as PoolClosedError
from polyengine.pool._pool import PoolExports as PoolExports
from polyengine.pool._pool import PoolInterface as PoolInterface
from polyengine.pool._pool import WorkerDiedError as WorkerDiedError
from polyengine.pool._pool import WorkerInfo as WorkerInfo
from polyengine.pool._pool import WorkerStartError as WorkerStartError
from polyengine.pool.wire import ImportsSpec as ImportsSpec

__all__ = [
    "ImportsSpec",
    "Pool",
    "PoolClosedError",
    "PoolExports",
    "PoolInterface",
    "WorkerDiedError",
    "WorkerInfo",
    "WorkerStartError",
]
