"""What `benchmark compare` shows while it runs: on a terminal, one compact table of every case's
running estimate (rich), redrawn after each step; off a terminal (a CI log), a line for each of the
first steps, then at most every LINE_EVERY_S seconds, saying how many cases are still open."""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from benchmark.compare.job import Job, step_line
from benchmark.compare.render import interval_level
from benchmark.datamodel.verdict import verdict_words
from benchmark.units import MISSING, format_ratio_change

LINE_EVERY_S = 15.0
FIRST_LINES = 2  # steps that always get their line (the job has started, and how fast it goes)


def estimates_table(job: Job) -> Table:
    """Each case's verdict so far, B/A change, interval and pairs; open cases first."""
    table = Table(
        title=f"step {job.steps}, {job.elapsed_s:.0f} s of {job.budget_s:.0f} s",
        caption=f"B against A; {interval_level(job)}",
        title_justify="left",
        caption_justify="left",
        box=None,
        pad_edge=False,
    )
    for name, justify in (("case", "left"), ("so far", "left"), ("B/A", "right"), ("interval", "right"),
                          ("pairs", "right")):  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in sorted(job.states, key=lambda s: (not s.open, s.case.id)):
        d = s.decision
        ok = d is not None and math.isfinite(d.ci_low)
        interval = (
            f"[{format_ratio_change(d.ci_low)}, {format_ratio_change(d.ci_high)}]"
            if ok and d is not None
            else MISSING
        )
        table.add_row(
            f"{s.case.id}",
            verdict_words(s.verdict).ab,
            format_ratio_change(d.ratio) if d is not None else MISSING,
            interval,
            str(len(s.pairs)),
        )
    return table


class Progress:
    """The compare's progress: `line` for a message, `step` after each step (run_job's on_step)."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty() and not quiet
        self.live: Live | None = None
        self.last_line = 0.0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def line(self, text: str) -> None:
        """A message (stderr), printed above the live table on a terminal."""
        if self.quiet:
            return
        if self.live is not None:
            self.live.console.print(text, highlight=False, markup=False)
        else:
            print(text, file=self.stream, flush=True)

    def step(self, job: Job, final: bool = False) -> None:
        """After a step (or, `final`, after the job's final decisions: the table only)."""
        if self.quiet or (final and self.live is None):
            return
        if self.tty:
            if self.live is None:
                self.live = Live(console=Console(file=self.stream), auto_refresh=False, transient=False)
                self.live.start()
            self.live.update(estimates_table(job), refresh=True)
        elif (
            job.steps <= FIRST_LINES
            or time.monotonic() - self.last_line >= LINE_EVERY_S
            or not any(s.open for s in job.states)
        ):
            self.last_line = time.monotonic()
            print(step_line(job), file=self.stream, flush=True)
