"""Storage adapters behind :class:`server.core.ports.Storage`: Redis (``redis``, with its
fast paths in ``redis_pipelines`` over ``redis_fast``) and in-memory (``memory``: one
process, for fast tests)."""
