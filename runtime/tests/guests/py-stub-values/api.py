"""The exported ``api`` interface's resource (componentize-py looks it up here)."""

from wit_world.exports import api


class Counter(api.Counter):
    def __init__(self, start: int) -> None:
        self.value = start

    def get(self) -> int:
        return self.value

    def increment_by(self, n: int) -> int:
        self.value = (self.value + n) & 0xFFFFFFFF
        return self.value

    @classmethod
    def merge(cls, a: "Counter", b: "Counter") -> "Counter":
        return cls((a.value + b.value) & 0xFFFFFFFF)
