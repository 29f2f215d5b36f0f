"""The base of every wire message: the map layout declared by the dataclass itself.

A message is a frozen dataclass with its wire type in ``TYPE``. On the wire it is one
msgpack map: ``"t"`` first, then every field in declaration order under its own name
(a trailing underscore dropped: ``as_`` is ``"as"``, a Python keyword), tuples as
arrays, and ``"id"`` last and only when set (a request's id, echoed by its reply). So
adding a field to a message is one line in its class (and, for a request, one in its
strict decoder, which states the field's bounds), and its place in the map is its
place in the class.

msgpack maps keep their order, and the golden frames (tests/wire) pin it: where the
wire's order cannot be the class's (a dataclass field with a default must follow the
fields without one), the class lists its wire order in ``WIRE_ORDER``. A message whose
map is not its fields (an event's kind-specific fields flattened into the map) writes
its own ``to_wire`` and ``from_wire``.

Replies are read back the same way, leniently (``from_wire``, for clients): a field
the frame lacks takes its declared ``absent`` value (``field(metadata=absent(...))``),
else its dataclass default; an array becomes a tuple; a ``FLAG`` field is taken for
its truth; unknown keys are ignored.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, slots=True)
... class Shout(WireMessage):
...     TYPE = "shout"
...     as_: str
...     words: tuple[str, ...] = ()
...     id: int | None = None
>>> Shout(as_="racer", words=("hi",)).to_wire()
{'t': 'shout', 'as': 'racer', 'words': ['hi']}
>>> Shout(as_="racer", id=3).to_wire()
{'t': 'shout', 'as': 'racer', 'words': [], 'id': 3}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Self

_ABSENT = "crescent_wire.absent"
_FLAG = "crescent_wire.flag"


def absent(value: Any) -> dict[str, Any]:
    """Field metadata: what ``from_wire`` takes when a reply lacks the field (a type,
    such as ``dict`` or ``tuple``, is called for a fresh empty one)."""
    return {_ABSENT: value}


# Field metadata for a flag: absent is false, any value is taken for its truth.
FLAG: dict[str, Any] = {_ABSENT: False, _FLAG: True}


class WireMessage:
    __slots__ = ()
    TYPE: ClassVar[str]
    # The fields in wire order where it differs from the class's (see the module doc);
    # ``id`` is left out: it is always last.
    WIRE_ORDER: ClassVar[tuple[str, ...]] = ()

    def to_wire(self) -> dict[str, Any]:
        """This message as the map ``encode`` packs."""
        cls = type(self)
        fields, has_id = _LAYOUTS.get(cls) or _layout(cls)
        wire: dict[str, Any] = {"t": self.TYPE}
        for attr, key in fields:
            value = getattr(self, attr)
            wire[key] = list(value) if type(value) is tuple else value
        if has_id:
            msg_id = getattr(self, "id")  # noqa: B009 (not every message has an id)
            if msg_id is not None:  # a request without an id, or a push: no "id" at all
                wire["id"] = msg_id
        return wire

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> Self:
        """The reply in ``obj`` (a decoded map), leniently (see the module doc); a
        field without a default that the frame lacks is a ``KeyError``."""
        values = []
        for key, when_absent, flag in _READERS.get(cls) or _readers(cls):
            if key in obj:
                value = obj[key]
                if flag:
                    value = bool(value)
                elif type(value) is list:
                    value = tuple(value)
            elif when_absent is None:
                raise KeyError(key)
            else:
                value = when_absent()
            values.append(value)
        return cls(*values)  # positionally: the fields' order is __init__'s


_Layout = tuple[tuple[tuple[str, str], ...], bool]
_LAYOUTS: dict[type, _Layout] = {}


def _layout(cls: type) -> _Layout:
    """The (attribute, wire key) pairs in wire order and whether there is an ``id``,
    worked out once per class."""
    names = [f.name for f in dataclasses.fields(cls)]
    has_id = "id" in names
    if has_id:
        names.remove("id")
    order: tuple[str, ...] = getattr(cls, "WIRE_ORDER", ())
    if order:
        if sorted(order) != sorted(names):
            raise TypeError(f"{cls.__name__}.WIRE_ORDER must list each field but id once")
        names = list(order)
    layout = _LAYOUTS[cls] = (tuple((name, name.rstrip("_")) for name in names), has_id)
    return layout


_Reader = tuple[str, Callable[[], Any] | None, bool]
_READERS: dict[type, tuple[_Reader, ...]] = {}


def _readers(cls: type) -> tuple[_Reader, ...]:
    """For each field in order: its wire key, what to take when absent (None: required)
    and whether it is a flag; worked out once per class."""
    readers = []
    for f in dataclasses.fields(cls):
        when_absent: Callable[[], Any] | None = None
        if _ABSENT in f.metadata:
            value = f.metadata[_ABSENT]
            when_absent = value if isinstance(value, type) else _constant(value)
        elif f.default is not dataclasses.MISSING:
            when_absent = _constant(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            when_absent = f.default_factory
        readers.append((f.name.rstrip("_"), when_absent, _FLAG in f.metadata))
    result = _READERS[cls] = tuple(readers)
    return result


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value
