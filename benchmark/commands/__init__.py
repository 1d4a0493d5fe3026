"""Sub-commands of the `benchmark` CLI, one module each, each with `register(subparsers)`.

What they share (`--db`, `--run`, the error guard, the read-only history) is in `_common`.
"""
