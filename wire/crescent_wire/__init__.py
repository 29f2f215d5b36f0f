"""The Crescent Race wire protocol, shared by the server and every Python client.

- :mod:`crescent_wire.protocol`: typed messages both ways and the one msgpack codec
  (docs/protocol.md), gathered from the modules that define them by area
  (``session``, ``race``, ``practice``, ``daily``, ``tournaments``; ``limits``,
  ``message``, ``fields``, ``registry``, ``codec``).
- :mod:`crescent_wire.errors`: the error tree (``ServerError`` with its wire ``code``)
  and the WebSocket close codes.

It depends on msgpack alone, so installing a client does not pull in the server.
"""
