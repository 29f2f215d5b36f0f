"""Typed values ↔ plain records: one generic pair for the frozen dataclasses and named
tuples that cross the ports (a racer's progress, …). A record is the dict of the value's
fields, in their order, as the storage codec (:mod:`server.storage.records`) and the
wire pack it, so a value stores and sends the bytes its dict did.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Point:
...     x: int
...     y: int = 0
>>> record_of(Point(1, 2))
{'x': 1, 'y': 2}
>>> value_of(Point, {"x": 3})  # a field missing from an older record: its default
Point(x=3, y=0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")

_NAMES: dict[type, tuple[str, ...]] = {}  # dataclass -> its field names, in order


def field_names(cls: type) -> tuple[str, ...]:
    """The field names of dataclass or named tuple ``cls`` (looked up once: records are
    made per act)."""
    names = _NAMES.get(cls)
    if names is None:
        tuple_fields = getattr(cls, "_fields", None)  # a NamedTuple's
        names = _NAMES[cls] = (
            tuple(tuple_fields) if tuple_fields is not None else tuple(f.name for f in fields(cls))
        )
    return names


def record_of(value: Any) -> dict[str, Any]:
    """The dataclass or named tuple ``value`` as a record: ``{field: value}`` in field order
    (fields holding other values are the caller's: this pair is for flat values)."""
    return {name: getattr(value, name) for name in field_names(type(value))}


def value_of(cls: type[T], record: Mapping[str, Any]) -> T:
    """The ``cls`` value a record holds; keys that are not fields are ignored, fields the
    record lacks take their defaults (a record written before the field existed)."""
    return cls(**{name: record[name] for name in field_names(cls) if name in record})


__all__ = ["field_names", "record_of", "value_of"]
