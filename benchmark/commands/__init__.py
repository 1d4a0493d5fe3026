"""Sub-commands of the `benchmark` CLI, one module each, each with `register(subparsers)`."""

import argparse


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1, with a clear message otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value
