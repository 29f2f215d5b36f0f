"""The HTTP side: the only package that imports aiohttp.

``create_app(settings)`` builds the application: the WebSocket endpoint ``/ws``, the
browser client (``/``, ``/r/{code}``, the files of ``client/web/dist``), ``/healthz`` and
``/metrics``.
"""

from server.web.app import HUB, METRICS, STORE, create_app

__all__ = ["HUB", "METRICS", "STORE", "create_app"]
