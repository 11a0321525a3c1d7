"""Host code against the ``collide`` world: two interfaces named ``types`` define ``error-code``."""

from __future__ import annotations

from collide_bindings import ErrorCode, Imports, TypesErrorCode, World, instantiate

from polyengine_protocol import ComponentException


class NetConn:
    def close(self) -> None:
        code: ErrorCode = "reset"
        raise ComponentException(code)


class DiskConn:
    def sync(self) -> None:
        code: TypesErrorCode = {"kind": "io", "value": "disk full"}
        raise ComponentException(code)


class Net:
    Conn = NetConn


class Disk:
    Conn = DiskConn


class Host:
    def dial(self, port: int, /) -> int:
        if port == 0:
            refused: ErrorCode = "refused"
            raise ComponentException(refused)
        return port


async def main(data: bytes) -> None:
    imports: Imports = {
        "golden:net/types": Net(),
        "golden:disk/types": Disk(),
        "golden:collide/host": Host(),
    }
    world: World = await instantiate(data, imports)
    print(world.types.Conn)
