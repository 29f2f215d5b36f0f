"""Doctests of the compiled modules run against their pure-Python source only.

With the compiled modules in place (server/compiled.py), ``server.game.engine`` is the
mypyc build, which keeps no docstrings: pytest's doctest collection would find the
built file instead of the source it was asked to read, and stop. Those doctests run in
the ``CRESCENT_COMPILED=off`` pass of scripts/test instead.
"""

from __future__ import annotations

from server import compiled

collect_ignore = (
    [str(compiled.source_path(m).relative_to(compiled.ROOT)) for m in compiled.MODULES]
    if compiled.active()
    else []
)
