"""`parallel_map`: a list comprehension in worker processes, with a progress bar on a terminal.

Used for work that is independent per item and heavy enough to pay for a process (analysing series,
rendering plots). Only the standard library is imported at module level.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def default_workers() -> int:
    """The number of CPUs (at least 1)."""
    return os.cpu_count() or 1


def parallel_map(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    workers: int | None = None,
    progress: bool | None = None,
    description: str = "working",
    flatten: bool = False,
    min_parallel: int = 8,
) -> list[Any]:
    """`[fn(x) for x in items]`, in order, in `workers` processes (default: the CPU count) when there
    are at least `min_parallel` items, else in this process; `flatten` concatenates the returned
    lists. A rich progress bar goes to stderr when `progress` (default: when stderr is a terminal)."""
    workers = default_workers() if workers is None else max(1, workers)
    out: list[Any] = []
    with _Progress(len(items), description, progress) as advance:
        if workers == 1 or len(items) < min_parallel:
            for item in items:
                out.append(fn(item))
                advance()
        else:
            chunk = max(1, min(16, len(items) // (workers * 4)))
            with ProcessPoolExecutor(max_workers=workers) as pool:
                for value in pool.map(fn, items, chunksize=chunk):
                    out.append(value)
                    advance()
    return [p for sub in out for p in sub] if flatten else out


class _Progress:
    """A rich progress bar on stderr (only on a terminal, unless forced), or nothing."""

    def __init__(self, total: int, description: str, enabled: bool | None) -> None:
        self.total, self.description, self.enabled = total, description, enabled
        self.bar: Any = None

    def __enter__(self) -> Callable[[], None]:

        console = Console(stderr=True)
        enabled = console.is_terminal if self.enabled is None else self.enabled
        if not enabled or self.total < 2:
            return lambda: None
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.bar.start()
        task = self.bar.add_task(self.description, total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
