"""A fixed-seed run of scripts/fuzz_binary.py: mutants only ever raise TranslationError."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "fuzz_binary.py"


def _load_fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_binary", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_binary", module)
    spec.loader.exec_module(module)
    return module


def test_fixed_seed_fuzz_run_has_no_crashes_or_hangs() -> None:
    fuzzer = _load_fuzzer()
    seeds = fuzzer.default_seeds()
    assert len(seeds) >= 5  # the built-ins plus the sample compiled with wasm-tools
    report = fuzzer.fuzz(seeds, seed=20261201, count=4000, time_limit=2.0)
    assert report.inputs == 4000
    assert [(f.kind, f.detail, f.mutation) for f in report.findings] == []
    # the mutants exercise both outcomes
    assert report.accepted > 50
    assert report.rejected > 2000


def test_fuzzer_is_deterministic() -> None:
    fuzzer = _load_fuzzer()
    seeds = fuzzer.default_seeds()[:3]
    rng1, rng2 = random.Random(99), random.Random(99)
    a = [fuzzer.mutate(rng1, seeds) for _ in range(50)]
    b = [fuzzer.mutate(rng2, seeds) for _ in range(50)]
    assert a == b


def test_fuzzer_reports_crashes() -> None:
    fuzzer = _load_fuzzer()  # a fresh module object: patching it affects no other test

    def broken(data: bytes) -> None:
        raise IndexError("boom")

    fuzzer.read_component = broken
    report = fuzzer.fuzz([b"\x00asm\x0d\x00\x01\x00"], seed=1, count=3)
    assert [f.kind for f in report.findings] == ["crash"] * 3
    assert report.findings[0].detail == "IndexError: boom"
