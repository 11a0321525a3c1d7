"""``python -m polyengine``: the command-line interface."""

import sys

from polyengine.cli import main

sys.exit(main())
