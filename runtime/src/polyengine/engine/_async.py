"""The suspension seam: calls on wasmtime fibers that park and resume.

architecture.md §4.  libwasmtime's async C API runs a call started with
:func:`start` on a fiber.  When the guest calls an async host function (see
``_hostasync.py``) whose result is not ready, the fiber parks and
:meth:`ParkableCall.poll` returns ``False``; when the host's awaitable
settles, its done-callback polls the call again (or hands it to the
scheduler's waker), which resumes the fiber where it stopped.  Nothing polls
in a loop.

Guarantees (each one turns a process abort of the C API into a Python
error):

- every async host callback sets its continuation before doing anything else,
  and every ctypes callback returns a value of its declared type, whatever
  the Python code inside raised;
- a finished call future is deleted at once and never polled again; a wake
  that arrives during a poll of the same call is deferred, and a call is
  never started, polled or cancelled from inside a guest call of its store
  (nor from another thread);
- closing or collecting the store deletes its live call futures first, and
  closing from inside one of its calls is refused;
- Python never stays live on a fiber across a park: an async host function
  only starts the host's work and returns; a synchronous call made by a host
  function on a fiber runs in place, and while it does an async host
  function that would park traps instead (``cannot_block_sync_task``);
- the Python recursion limit is clamped while a fiber runs, so host code
  raises ``RecursionError`` (a trap) before it can overflow the fiber.

A store becomes "async-required" once it has an async host function; from
then on an entry into the guest from the top (``call_raw``, ``instantiate``)
runs on a call future of its own and traps rather than park.  A store
without one keeps the plain synchronous path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._core import CoreFunc
from ._errors import EngineError
from ._fiber import _FutureCall, _poll_future
from ._store import EngineStore, _StoreState
from ._values import CoreValue

__all__ = ["CallCancelled", "ParkableCall", "start", "wait"]


class CallCancelled(EngineError):
    """The parkable call was cancelled before it finished."""


class ParkableCall:
    """A call running on a wasmtime fiber that may park (see :func:`start`).

    ``poll()`` resumes it once; ``done()`` tells whether it finished;
    ``result()`` returns its flat results or raises what it raised;
    ``cancel()`` abandons it (the fiber unwinds, pending host awaitables are
    cancelled).  By default a settled host awaitable polls the call from its
    done-callback; ``set_waker(fn)`` hands that decision to a scheduler
    (``fn(call)`` is called instead, and the scheduler calls ``poll()``).
    Nothing else keeps a parked call alive: dropping the last reference to
    one cancels it.
    """

    __slots__ = (
        "__weakref__",
        "_callbacks",
        "_exc",
        "_fc",
        "_polling",
        "_result",
        "_rewake",
        "_state",
        "_waker",
        "func",
        "store",
    )

    func: CoreFunc
    store: EngineStore
    _state: _StoreState
    _fc: _FutureCall | None  # None once finished (future deleted)
    _result: list[CoreValue] | None
    _exc: BaseException | None  # trap, host exception or cancellation
    _callbacks: list[Callable[[ParkableCall], object]]
    _waker: Callable[[ParkableCall], object] | None
    _polling: bool  # inside poll(): a wake is deferred, not re-entered
    _rewake: bool  # a wake arrived during poll(): poll once more

    def __init__(self) -> None:
        raise TypeError("use start() to begin a ParkableCall")

    def done(self) -> bool:
        return self._fc is None

    def poll(self) -> bool:
        """Resume the call until it parks again or finishes; return ``done()``.

        Raises ``KeyboardInterrupt``/``SystemExit`` at once if a host function
        raised one; other outcomes are kept for :meth:`result`.
        """
        fc = self._fc
        if fc is None:
            return True
        state = self._state
        if not state.ctx or fc.token not in state.futures:
            why = "the call was dropped" if state.ctx else "the store was closed"
            self._finish_cancelled(why)
            return True
        if self._polling:
            self._rewake = True
            return False
        state.check_outside("poll a parked call")
        self._polling = True
        try:
            while True:
                self._rewake = False
                ready = _poll_future(state, fc.fut, self)
                if ready or not self._rewake:
                    break
        finally:
            self._polling = False
        if not ready:
            return False
        fc.release(state)
        self._fc = None
        try:
            self._result = fc.outcome(state)
        except BaseException as exc:
            self._exc = exc
        if self._callbacks:
            self._run_callbacks()
        failure = self._exc
        if isinstance(failure, (KeyboardInterrupt, SystemExit)):
            raise failure
        return True

    def result(self) -> list[CoreValue]:
        """The flat results; raises the trap (or cancellation) if there was one."""
        if self._fc is not None:
            raise EngineError("the call has not finished (it is parked)")
        if self._exc is not None:
            raise self._exc
        assert self._result is not None
        return self._result

    def cancel(self) -> bool:
        """Abandon a call that has not finished; ``False`` if it already had."""
        fc = self._fc
        if fc is None:
            return False
        if self._polling:
            raise EngineError("cannot cancel a call from inside a guest call of its store")
        self._state.check_outside("cancel a call")
        fc.release(self._state)
        self._finish_cancelled("the call was cancelled")
        return True

    def set_waker(self, waker: Callable[[ParkableCall], object] | None) -> None:
        self._waker = waker

    def add_done_callback(self, fn: Callable[[ParkableCall], object]) -> None:
        """Call ``fn(call)`` when the call finishes (at once if it has)."""
        if self._fc is None:
            fn(self)
        else:
            self._callbacks.append(fn)

    def _finish_cancelled(self, why: str) -> None:
        self._fc = None
        self._exc = CallCancelled(why)
        self._run_callbacks()

    def _run_callbacks(self) -> None:
        """Run every done-callback; the first exception one raised is re-raised after."""
        callbacks, self._callbacks = self._callbacks, []
        failure: BaseException | None = None
        for cb in callbacks:
            try:
                cb(self)
            except BaseException as exc:
                if failure is None:
                    failure = exc
        if failure is not None:
            raise failure

    def _wake(self) -> None:
        if self._fc is None:
            return
        if self._polling:
            self._rewake = True
            return
        waker = self._waker
        if waker is not None:
            waker(self)
            return
        state = self._state
        if state.depth or state.host_depth:
            # Settled from inside a guest call of this store (a callback run at
            # once by a non-asyncio future): poll from the loop instead.
            import asyncio

            asyncio.get_running_loop().call_soon(self._wake)
            return
        self.poll()

    def __del__(self) -> None:
        fc = getattr(self, "_fc", None)
        if fc is not None:
            self._fc = None
            if self._state.ctx:
                fc.release(self._state)

    def __repr__(self) -> str:
        return f"<ParkableCall {'done' if self._fc is None else 'parked'} {self.func!r}>"


def start(func: CoreFunc, args: Sequence[CoreValue]) -> ParkableCall:
    """Begin a call of ``func`` on a fiber and run it until it parks or finishes."""
    store = func.store
    if not store.suspend:
        raise EngineError("this store was created with suspend=False")
    state = func._state
    if not state.ctx:
        state.raise_closed()
    state.check_outside("start a parkable call")
    call = object.__new__(ParkableCall)
    call.func = func
    call.store = store
    call._state = state
    call._callbacks = []
    call._waker = None
    call._polling = False
    call._rewake = False
    call._result = None
    call._exc = None
    call._fc = _FutureCall(func, args)
    call.poll()
    return call


async def wait(call: ParkableCall) -> list[CoreValue]:
    """Await the end of ``call`` on the running asyncio loop; cancel it if abandoned."""
    import asyncio

    if not call.done():
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[None] = loop.create_future()

        def finished(_c: ParkableCall) -> None:
            if not settled.done():
                settled.set_result(None)

        call.add_done_callback(finished)
        try:
            await settled
        except asyncio.CancelledError:
            call.cancel()
            raise
    return call.result()
