"""Counts the words of its arguments, or greets when it has none.

    wasmtime run build/py-app.wasm the quick brown fox
"""

import sys
from collections import Counter

from componentize_py_types import Err
from wit_world import exports


class Run(exports.Run):
    def run(self) -> None:
        words = sys.argv[1:]
        if not words:
            print("Hello from Python! Pass some words to count them.")
            return
        if "--fail" in words:
            print("asked to fail", file=sys.stderr)
            raise Err(None)
        counts = Counter(word.lower() for word in words)
        for word, count in counts.most_common():
            print(f"{count:3} {word}")
