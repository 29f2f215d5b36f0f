"""The base of every wire message: the map layout declared by the dataclass itself.

A message is a frozen dataclass with its wire type in ``TYPE``. On the wire it is one
msgpack map: ``"t"`` first, then every field in declaration order under its own name
(a trailing underscore dropped: ``as_`` is ``"as"``, a Python keyword), tuples as
arrays, and ``"id"`` last and only when set (a request's id, echoed by its reply). So
adding a field to a message is one line in its class, and its place in the map is its
place in the class.

msgpack maps keep their order, and the golden frames (tests/wire) pin it: where the
wire's order cannot be the class's (a dataclass field with a default must follow the
fields without one), the class lists its wire order in ``WIRE_ORDER``. A message whose
map is not its fields (an event's kind-specific fields flattened into the map) writes
its own ``to_wire``.

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
from typing import Any, ClassVar


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
