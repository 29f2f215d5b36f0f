"""The server core: rooms, games and sessions between the web layer and the pure lobby.

Knows neither aiohttp nor redis: sockets come in through :class:`ports.Connection`,
storage and the bus through :class:`ports.Storage`. See docs/server.md for the layout.
"""
