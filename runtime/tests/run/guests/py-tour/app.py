"""A tour of what a Python command does with WASI 0.2: files and directories under a
preopen, stdin, stderr, clocks, randomness and its exit status.

Run it with a preopened directory at ``/data`` holding ``one.txt``; ``EXIT_CODE``
in the environment sets the exit status.
"""

import os
import sys
import time

from wit_world import exports


class Run(exports.Run):
    def run(self) -> None:
        d = "/data"
        print("listdir:", sorted(os.listdir(d)))
        os.mkdir(d + "/sub")
        with open(d + "/sub/a.txt", "w", encoding="utf-8") as f:
            f.write("alpha\n" * 3)
        st = os.stat(d + "/sub/a.txt")
        print("size:", st.st_size, os.path.isfile(d + "/sub/a.txt"), os.path.isdir(d + "/sub"))
        os.rename(d + "/sub/a.txt", d + "/sub/b.txt")
        print("after rename:", sorted(os.listdir(d + "/sub")))
        with open(d + "/sub/b.txt", "a", encoding="utf-8") as f:
            f.write("appended\n")
        with open(d + "/sub/b.txt", encoding="utf-8") as f:
            print("content:", f.read().splitlines())
        with open(d + "/sub/b.txt", "rb") as f:
            f.seek(6)
            print("seek read:", f.read(5))
        os.unlink(d + "/sub/b.txt")
        os.rmdir(d + "/sub")
        print("exists after rmdir:", os.path.exists(d + "/sub"))
        try:
            with open(d + "/missing.txt", encoding="utf-8"):
                pass
        except FileNotFoundError as e:
            print("missing:", e.errno)
        try:
            with open("/etc/passwd", encoding="utf-8"):
                pass
        except OSError as e:
            print("outside the preopen:", type(e).__name__)
        for root, dirs, files in os.walk(d):
            print("walk:", root, sorted(dirs), sorted(files))
        print("clocks:", time.time() > 1.6e9, time.monotonic() >= 0)
        print("random bytes:", len(os.urandom(16)))
        print("stdin line:", repr(sys.stdin.readline()))
        print("stdin rest:", repr(sys.stdin.read()))
        print("to stderr", file=sys.stderr)
        sys.stdout.flush()
        code = int(os.environ.get("EXIT_CODE", "0"))
        if code:
            sys.exit(code)
