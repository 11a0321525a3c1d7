"""Types of the compiled call path (``_accel.c``); see ``_accelerator.py``."""

from collections.abc import Callable, Sequence
from typing import Any

ABI: int
SIG_BITS: int
MAX_SLOTS: int

class Caller:
    def __new__(
        cls,
        cell: int,
        func: int,
        nslots: int,
        formats: str,
        rformats: str,
        mode: int,
        value_errors: int,
        slow: Callable[..., Any],
        fail: Callable[[int, int], Any],
        keep: object,
        /,
    ) -> Caller: ...
    def __call__(self, *args: Any) -> Any: ...

def init(
    abi: int,
    call_unchecked: int,
    trap_new: int,
    host_entries: dict[int, Any],
    pack_slow: Callable[[int, str, Any], None],
    state_type: type,
    host_depth: object,
    /,
) -> None: ...
def init_plain(plain_entry: Callable[[int], Any], /) -> None: ...
def register_signature(params: str, results: str, /) -> int: ...
def trampoline_address() -> int: ...
def init_async(
    template: int, size: int, poll: Callable[[int], bool], drop: Callable[[int], None], /
) -> None: ...
def async_addresses() -> tuple[int, int, int]: ...
def store_int_result(
    parts: tuple[Any, int], code: int, flat: Sequence[Any], at: int, value: object, /
) -> bool: ...
def define_imports(
    define: int,
    linker: int,
    ctx: int,
    names: tuple[tuple[bytes, int, bytes, int], ...],
    base: int,
    stride: int,
    /,
) -> tuple[int, int] | None: ...
def copy_hosts(hosts: tuple[tuple[int, int], ...], src: int, dst: int, size: int, /) -> None: ...
def new_host_funcs(
    func_new: int,
    ctx: int,
    items: tuple[tuple[int, int, int, int], ...],
    base: int,
    ready: bytearray,
    exts: int,
    stride: int,
    of_offset: int,
    /,
) -> None: ...
def fill_exports(
    get: int,
    ctx: int,
    exports: tuple[tuple[int, int, bytes], ...],
    instances: list[int],
    base: int,
    /,
) -> int: ...

class Lower:
    def __new__(
        cls,
        programs: tuple[Any, ...],
        fallback: Callable[..., Any],
        block_trap: Callable[..., Any],
        /,
    ) -> Lower: ...
    def __call__(self, cx: Any, values: Any, /) -> list[Any]: ...

class LiftSpilled:
    def __new__(
        cls, program: tuple[Any, ...], fallback: Callable[..., Any], size: int, align: int, /
    ) -> LiftSpilled: ...
    def __call__(self, cx: Any, results: Any, /) -> Any: ...

def init_values(guest_memory: type, memory_data: int, memory_data_size: int, /) -> None: ...
