"""Sub-commands of the `benchmark` CLI, one module each, each with `register(subparsers)`."""
