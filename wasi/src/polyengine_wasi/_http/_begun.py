"""Awaitables started at once: the host's reads of a guest's response, begun early.

A host read of a guest's stream or future posts its buffer when the read
coroutine first runs. Run as a task, that first step waits for the event
loop, and a guest that writes meanwhile parks until the host reads (an
activation of the guest more). :class:`Begun` takes that first step at
once, as an eagerly started task would: the read is posted before the
caller returns, and awaiting the ``Begun`` waits for the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator
from typing import Any

__all__ = ["Begun"]


class Begun:
    """An awaitable already run up to its first suspension.

    Awaited (once), it finishes the awaitable and gives its value or raises
    its exception. Never awaited, :meth:`cancel` stops it as a cancelled task
    is stopped (``CancelledError`` thrown in where it waits). :meth:`done`
    tells whether it finished by itself meanwhile, :meth:`result` how.
    """

    __slots__ = ("_error", "_it", "_next", "_value")

    def __init__(self, aw: Awaitable[Any]) -> None:
        self._it: Any = None
        self._next: Any = None
        self._value: Any = None
        self._error: BaseException | None = None
        try:
            it = aw.__await__()
            self._next = it.send(None)
        except StopIteration as stop:
            self._value = stop.value
        except Exception as exc:  # raised where it is awaited, as the awaitable would
            self._error = exc
        else:
            self._it = it
            self._run_done()

    def _run_done(self) -> None:
        """Step on past the asyncio futures that are done already (nothing to wait for)."""
        it, pending = self._it, self._next
        while isinstance(pending, asyncio.Future) and pending.done():
            try:
                pending = it.send(None)
            except StopIteration as stop:
                self._it = self._next = None
                self._value = stop.value
                return
            except Exception as exc:
                self._it = self._next = None
                self._error = exc
                return
        self._next = pending

    def done(self) -> bool:
        """Whether it finished (with a value or an exception) without waiting more."""
        if self._it is not None:
            self._run_done()
        return self._it is None

    def result(self) -> Any:
        """Its value once :meth:`done` (or raise its exception)."""
        if self._error is not None:
            raise self._error
        return self._value

    def __await__(self) -> Generator[Any, None, Any]:
        if self._it is not None:
            self._run_done()
        it, pending = self._it, self._next
        self._it = self._next = None
        if it is None:
            if self._error is not None:
                raise self._error
            return self._value
        while True:
            try:
                sent = yield pending
            except BaseException as exc:  # thrown in by the awaiting task: passed on
                try:
                    pending = it.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    pending = it.send(sent)
                except StopIteration as stop:
                    return stop.value

    def cancel(self) -> None:
        """Stop it where it waits, if it waits and was never awaited (a no-op otherwise)."""
        it, self._it, self._next = self._it, None, None
        if it is None:
            return
        try:
            it.throw(asyncio.CancelledError())
        except BaseException as exc:  # its end: cancelled, or finished or failed meanwhile
            if not isinstance(exc, asyncio.CancelledError | StopIteration | Exception):
                raise
            return
        it.close()  # it went on waiting: it is not awaited again
