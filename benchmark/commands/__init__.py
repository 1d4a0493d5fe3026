"""Sub-commands of the `benchmark` CLI, one module each, each with `register(subparsers)`.

Shared options, the error guard and the read-only store are in :mod:`benchmark.commands._common`.
"""

from benchmark.commands._common import positive_int

__all__ = ["positive_int"]
