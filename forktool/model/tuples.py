"""What forktool's records need of ``typing.NamedTuple`` beyond it (records on
``verify``'s path are NamedTuples: docs/architecture.md)."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T", bound=type[tuple[Any, ...]])


def last_field_aside(cls: T) -> T:
    """``cls`` (a NamedTuple) compared and hashed without its last field: a field that
    says where a value came from, not what it is (a dataclass field with
    ``compare=False``). Only records of the same class are equal."""

    def __eq__(self: tuple[Any, ...], other: object) -> bool:
        return isinstance(other, cls) and self[:-1] == other[:-1]

    def __ne__(self: tuple[Any, ...], other: object) -> bool:
        return not __eq__(self, other)

    def __hash__(self: tuple[Any, ...]) -> int:
        return hash(self[:-1])

    cls.__eq__ = __eq__  # type: ignore[method-assign]
    cls.__ne__ = __ne__  # type: ignore[assignment]
    cls.__hash__ = __hash__  # type: ignore[method-assign]
    return cls
