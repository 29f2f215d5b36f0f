"""The HTTP side: the only package that imports aiohttp.

``create_app(settings, parts)`` builds the application over the ports ``parts`` builds
(:func:`server.compose.build_parts`): the WebSocket endpoint ``/ws``, the browser client
(``/``, ``/r/{code}``, ``/g/{game}``, the files of ``client/web/dist``), ``/healthz``
and ``/metrics``.
"""

from server.web.app import HUB, METRICS, PARTS, PartsFactory, create_app

__all__ = ["HUB", "METRICS", "PARTS", "PartsFactory", "create_app"]
