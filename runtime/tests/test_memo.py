"""``polyengine.memo.IdentityMemo``: answers kept by the key's identity, bounded."""

from __future__ import annotations

import pytest

from polyengine.memo import IdentityMemo


def test_an_answer_is_worked_out_once_per_key_object() -> None:
    calls: list[tuple[int, ...]] = []

    def make(key: tuple[int, ...]) -> int:
        calls.append(key)
        return len(calls)

    memo: IdentityMemo[tuple[int, ...], int] = IdentityMemo(8)
    a, b = tuple([1, 2]), tuple([1, 2])  # equal, not identical
    assert a == b and a is not b
    assert memo.get(a, make) == 1
    assert memo.get(a, make) == 1
    assert memo.get(b, make) == 2  # by identity, not equality
    assert calls == [a, b]
    assert memo.peek(a) == 1 and memo.peek(b) == 2 and memo.peek((3,)) is None


def test_the_oldest_key_goes_first_past_the_limit() -> None:
    memo: IdentityMemo[object, str] = IdentityMemo(2)
    first, second, third = object(), object(), object()
    memo.put(first, "1")
    memo.put(second, "2")
    memo.put(second, "2b")  # replacing an answer lets nothing go
    assert memo.peek(first) == "1"
    memo.put(third, "3")
    assert memo.peek(first) is None
    assert (memo.peek(second), memo.peek(third)) == ("2b", "3")
    memo.clear()
    assert memo.peek(third) is None


def test_a_failing_make_keeps_nothing() -> None:
    memo: IdentityMemo[object, int] = IdentityMemo(2)
    key = object()

    def fail(_: object) -> int:
        raise RuntimeError("no answer")

    with pytest.raises(RuntimeError, match="no answer"):
        memo.get(key, fail)
    assert memo.peek(key) is None
    with pytest.raises(ValueError, match="at least one"):
        IdentityMemo(0)
