"""The Crescent Race server.

Importing it first puts the hot path's compiled modules in place, if they were built
and ``CRESCENT_COMPILED`` is not ``off`` (see :mod:`server.compiled`).
"""

from server import compiled as _compiled

_compiled.install()
