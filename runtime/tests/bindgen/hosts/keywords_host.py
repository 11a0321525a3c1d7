"""Host code against the ``kw`` world: keyword names and unversioned ids."""

from __future__ import annotations

from keywords_bindings import Enum, Flags, Imports, Record, Variant, World, flags, instantiate


class Iface:
    def from_(self, type_: int, self_: str, class_: bool) -> Record:
        return {"class": type_, "from": self_, "match": class_, "type": 1, "self": -1}

    def match(self, case: Enum) -> Flags:
        return flags("async", "class") if case == "import" else flags()

    def lambda_(self, return_: Variant) -> None:
        if return_["kind"] == "some":
            print(return_["value"] + 1)


async def main(data: bytes) -> None:
    imports: Imports = {
        "demo:kw/interface": Iface(),
        "import_": lambda from_: from_,
        "resource_free": lambda: None,
    }
    world: World = await instantiate(data, imports)
    r: Record = await world.interface.from_(1, "s", True)
    f: Flags = await world.interface.match("none")
    await world.exports.export(3)
    print(r["class"], f["is"])
