"""polyengine.embed: the embedder API's facade, import resolution and host handles.

Its public face here is the name mapping of python-mapping.md §1 (WIT names to
Python identifiers), shared with the bindings generator and the CLI.
"""

from polyengine.embed._names import (
    FuncName,
    check_collisions,
    field_key,
    parse_func_name,
    pascal,
    snake,
)

__all__ = ["FuncName", "check_collisions", "field_key", "parse_func_name", "pascal", "snake"]
