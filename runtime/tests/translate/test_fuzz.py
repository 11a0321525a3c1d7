"""Fixed-seed runs of scripts/fuzz_translate.py: mutants only ever raise TranslationError."""

from __future__ import annotations

import importlib.util
import random
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from polyengine.errors import TranslationError

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "fuzz_translate.py"


def _load_fuzzer() -> ModuleType:
    """A fresh module object each time: patching it affects no other test."""
    spec = importlib.util.spec_from_file_location("fuzz_translate", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_translate"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def text_seeds(wasm_tools: str) -> list[bytes]:
    seeds: list[bytes] = _load_fuzzer().text_seeds()
    assert len(seeds) == 5
    return seeds


def test_seeds_translate(text_seeds: list[bytes]) -> None:
    from polyengine.translate import translate_component

    for data in text_seeds:
        plan = translate_component(data)
        assert plan.core_instances


def test_fixed_seed_fuzz_run_has_no_crashes_or_hangs(text_seeds: list[bytes]) -> None:
    fuzzer = _load_fuzzer()
    report = fuzzer.fuzz(text_seeds, seed=20261201, count=4000, time_limit=10.0)
    assert report.inputs == 4000
    assert [(f.kind, f.detail, f.mutation) for f in report.findings] == []
    # the mutants exercise both outcomes
    assert report.accepted > 100
    assert report.rejected > 2000


def test_cached_guests_fuzz_run(text_seeds: list[bytes]) -> None:
    fuzzer = _load_fuzzer()
    guests = fuzzer.guest_seeds(max_size=2 << 20)[:3]
    if not guests:
        pytest.skip("no real guest of at most 2 MiB in the guest build cache")
    report = fuzzer.fuzz(guests + text_seeds[:1], seed=7, count=60, time_limit=20.0)
    assert report.inputs == 60
    assert [(f.kind, f.detail, f.mutation) for f in report.findings] == []


def test_fuzzer_is_deterministic(text_seeds: list[bytes]) -> None:
    fuzzer = _load_fuzzer()
    seeds = [fuzzer.make_seed(s) for s in text_seeds]
    rng1, rng2 = random.Random(99), random.Random(99)
    a = [fuzzer.mutate(rng1, seeds) for _ in range(200)]
    b = [fuzzer.mutate(rng2, seeds) for _ in range(200)]
    assert a == b
    assert len({data for data, _ in a}) > 150


def test_seed_hot_ranges_skip_core_modules(text_seeds: list[bytes]) -> None:
    fuzzer = _load_fuzzer()
    from polyengine.binary import ast, read_component

    data = text_seeds[0]
    seed = fuzzer.make_seed(data)
    modules = [d for d in read_component(data).definitions if isinstance(d, ast.CoreModule)]
    assert modules
    for start, end in seed.hot:
        for m in modules:
            assert end <= m.offset or start >= m.offset + m.length


def test_run_one_classifies_outcomes(
    text_seeds: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    fuzzer = _load_fuzzer()
    assert fuzzer.run_one(text_seeds[0]) == ("accepted", "")
    outcome, detail = fuzzer.run_one(b"\x00asm\x01\x00\x00\x00")
    assert outcome == "rejected" and "core module" in detail

    import polyengine.translate as translate_package

    def wrapped(data: bytes) -> None:
        try:
            raise KeyError("boom")
        except KeyError as exc:
            raise TranslationError("invalid component (internal error KeyError)") from exc

    monkeypatch.setattr(sys.modules["polyengine.translate"], "translate_component", wrapped)
    assert translate_package is not None
    outcome, detail = fuzzer.run_one(text_seeds[0])
    assert outcome == "crash" and "internal error" in detail

    def raw(data: bytes) -> None:
        raise IndexError("bad index")

    monkeypatch.setattr(sys.modules["polyengine.translate"], "translate_component", raw)
    outcome, detail = fuzzer.run_one(text_seeds[0])
    assert outcome == "crash" and detail.startswith("IndexError: bad index")


def test_fuzzer_reports_crashes_and_hangs_in_process(text_seeds: list[bytes]) -> None:
    fuzzer = _load_fuzzer()
    calls = iter(range(100))

    def flaky(data: bytes) -> tuple[str, str]:
        n = next(calls)
        if n == 1:
            time.sleep(5)
        if n == 2:
            return "crash", "IndexError: boom"
        return "rejected", "fine"

    setattr(fuzzer, "run_one", flaky)  # noqa: B010
    report = fuzzer.fuzz(text_seeds, seed=1, count=4, time_limit=0.3, isolate=False)
    assert [f.kind for f in report.findings] == ["hang", "crash"]
    assert report.rejected == 2


def test_worker_replies_and_a_hung_worker_is_killed(text_seeds: list[bytes]) -> None:
    fuzzer = _load_fuzzer()
    worker = fuzzer._Worker()
    try:
        reply = worker.run(text_seeds[0], 60.0)
        assert reply is not None and reply["outcome"] == "accepted"
        reply = worker.run(b"\x00asm", 60.0)
        assert reply is not None and reply["outcome"] == "rejected"
    finally:
        worker.close()
    sleeper = fuzzer._Worker([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = time.perf_counter()
        assert sleeper.run(text_seeds[0], 0.5) is None
        assert time.perf_counter() - started < 10
        assert not sleeper.alive()
    finally:
        sleeper.close()
