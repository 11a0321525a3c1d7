"""A WASI 0.2 command: stdout, arguments, environment and a preopened directory.

Run it with a preopened directory mounted at ``/data`` that holds ``input.txt``;
the command prints what it sees and writes ``/data/output.txt``.
"""

import os
import sys

from wit_world import exports


class Run(exports.Run):
    def run(self) -> None:
        print("hello from py-sync-wasi")
        print("args:", " ".join(sys.argv[1:]))
        print("env GREETING:", os.environ.get("GREETING", "<unset>"))
        data_dir = os.environ.get("DATA_DIR", "/data")
        with open(os.path.join(data_dir, "input.txt"), encoding="utf-8") as f:
            text = f.read()
        print("read:", text.strip())
        with open(os.path.join(data_dir, "output.txt"), "w", encoding="utf-8") as f:
            f.write(text.upper())
        with open(os.path.join(data_dir, "output.txt"), encoding="utf-8") as f:
            print("wrote:", f.read().strip())
        sys.stdout.flush()
