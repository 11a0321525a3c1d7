"""polyengine.testing: conformance tooling.

``python -m polyengine.testing.wast PATH...`` runs ``wasm-tools json-from-wast``
output (see :mod:`polyengine.testing.wast`): it reads, validates and
translates every binary itself and delegates commands that need an instance
to an :class:`Executor`. The default executor skips them; ``--executor embed``
runs them on ``polyengine.instantiate``
(:class:`polyengine.testing.embed_executor.EmbedExecutor`). Expected failures
live in ``xfail.txt`` next to this file.
"""

from polyengine.testing._model import Command as Command
from polyengine.testing._model import CommandResult as CommandResult
from polyengine.testing._model import FileResult as FileResult
from polyengine.testing._model import LoadedModule as LoadedModule
from polyengine.testing._model import Outcome as Outcome
from polyengine.testing._model import Status as Status
from polyengine.testing._model import Totals as Totals
from polyengine.testing._runner import WastRunner as WastRunner
from polyengine.testing._runner import is_core_module as is_core_module
from polyengine.testing._xfail import XfailList as XfailList
from polyengine.testing.executor import Action as Action
from polyengine.testing.executor import Executor as Executor
from polyengine.testing.executor import NoExecution as NoExecution
from polyengine.testing.values import from_wast as from_wast
from polyengine.testing.values import values_equal as values_equal

__all__ = [
    "Action",
    "Command",
    "CommandResult",
    "Executor",
    "FileResult",
    "LoadedModule",
    "NoExecution",
    "Outcome",
    "Status",
    "Totals",
    "WastRunner",
    "XfailList",
    "from_wast",
    "is_core_module",
    "values_equal",
]
