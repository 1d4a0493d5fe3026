"""What the suite prints: the trials' progress (`Progress`), the summary table at the end
(`write_summary`), and the --bench-require-place verdict (`check_required_places`)."""

from __future__ import annotations

import fnmatch
import os
import platform
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchmark.analysis.summary import DIAGNOSTICS, diagnostic_kind
from benchmark.config.selection import csv
from benchmark.datamodel.metrics import CONFIDENCE, METRICS, TIME, get_metric
from benchmark.datamodel.result import Stats, imprecision, interval_half
from benchmark.execution import measure
from benchmark.execution.replies import TrialRecord
from benchmark.instructions.callgrind import spread
from benchmark.plugin.session import BenchSession


def header_line(bench: BenchSession) -> str:
    """The session header's line about the suite: how many cases were selected and how they run."""
    if bench.disabled:
        how = "each run once, untimed, nothing recorded (--benchmark-disable)"
    elif bench.processes:
        how = f"each measured in {bench.processes} worker process(es) unless its config says otherwise"
    else:
        how = "measured in this process (--bench-processes 0)"
    quick = ", quick settings" if bench.config.getoption("bench_quick") and not bench.disabled else ""
    return f"benchmark suite: {len(bench.cases)} case(s) selected, {how}{quick}"


def counts(values) -> str:
    """The distinct values, e.g. "2/3" (the process counts of the cases)."""
    distinct = sorted(set(values))
    return "/".join(str(v) for v in distinct)


PROGRESS_EVERY_S = 10.0  # off a TTY, a line at most this often within a round


class Progress:
    """Progress of the trials on the terminal: one line per round; with -v one line per trial; on
    a TTY the current trial on a line rewritten in place, off one (a CI log) a line every
    PROGRESS_EVERY_S seconds within a round."""

    def __init__(self, config: pytest.Config, total: int, rounds: int):
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self.verbose = config.getoption("verbose") > 0
        self.tty = bool(getattr(self.reporter, "isatty", False)) if self.reporter is not None else False
        self.total, self.rounds = total, rounds
        self.count = 0
        self.errors = 0
        self.round_started = self.last_line = time.monotonic()
        self.round_trials = 0

    def line(self, text: str, **markup) -> None:
        self.last_line = time.monotonic()
        if self.reporter is None:
            print(text, file=sys.stderr)
            return
        if self.tty:  # over the in-place line of the current trial
            self.reporter.rewrite(text, erase=True, **markup)
            self.reporter.write("\n")
            return
        self.reporter.ensure_newline()
        self.reporter.write_line(text, **markup)

    def start(self, trial) -> None:
        if self.tty and self.reporter is not None:
            self.reporter.rewrite(
                f"round {trial.round + 1}/{self.rounds}, trial {self.count + 1}/{self.total}: "
                f"{trial.case.id} ({trial.index + 1} of {trial.processes})",
                erase=True,
            )

    def done(self, trial, record: TrialRecord) -> None:
        self.count += 1
        self.round_trials += 1
        if not self.tty and not self.verbose and time.monotonic() - self.last_line >= PROGRESS_EVERY_S:
            self.line(f"benchmark: round {trial.round + 1}/{self.rounds}: {self.count}/{self.total} trials done, "
                      f"last {trial.case.id}")  # fmt: skip
        ok = record.status == "ok" and bool(record.samples)
        failed = not ok and not record.skipped
        if failed:
            self.errors += 1
        if self.verbose or failed:
            samples = sorted(record.samples)
            what = (
                measure.format_time(samples[len(samples) // 2])
                if ok
                else f"{record.status.upper()}: {record.message}"
            )
            self.line(
                f"  trial {self.count}/{self.total} {trial.case.id} [{trial.case.place} {trial.case.mode}] "
                f"process {trial.index + 1}/{trial.processes} pid {record.pid}: {what}",
                red=failed,
            )

    def round_done(self, r: int, trials: list) -> None:
        took = time.monotonic() - self.round_started
        errors = f", {self.errors} error(s) so far" if self.errors else ""
        self.line(
            f"benchmark: round {r + 1}/{self.rounds} done: {self.round_trials} trial(s) in {took:.1f} s{errors}"
        )
        self.round_started = time.monotonic()
        self.round_trials = 0


def check_required_places(session: pytest.Session, bench: BenchSession) -> None:
    """--bench-require-place: fail the session, in one line, when no case of a required place
    executed (measured, whatever its accuracy); a skipped or errored case does not count."""
    for want in csv(session.config.getoption("bench_require_place")) or []:
        on_place = [
            r
            for r in bench.results
            if r.place == want or fnmatch.fnmatch(r.place, want) or r.place.split(":")[0] == want
        ]
        if any(r.status in ("ok", "failed") and r.samples for r in on_place):
            continue
        why = next((f"{r.status}: {r.message}" for r in on_place if r.message), "none was selected")
        line = f"--bench-require-place {want}: 0 of {len(on_place)} case(s) on place {want} executed ({why})"
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write("\n")  # after the progress dots of the last item
            reporter.write_line(line, red=True)
        else:
            print(line, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_summary(tr, bench: BenchSession) -> None:
    """The summary table of the run's time results (collection order), a table per other metric
    (instruction counts; benchmark/datamodel/metrics.py gives each one's label and unit), the cases not run
    on this machine (a short section of their own, one line per reason), where the results went,
    and the problems of the session (one line each)."""
    if bench.disabled:
        tr.write_line(
            f"benchmark: --benchmark-disable: {bench.checked} case(s) ran once, untimed; nothing recorded"
        )
        return
    if not bench.results:
        _write_problems(tr, bench)
        return
    # In collection order (cases measured in worker processes are recorded as their last trial ends).
    order = {(c.case_id, c.place, c.mode): i for i, c in enumerate(bench.expected or [])}
    timed = [r for r in bench.results if (r.metric or TIME) == TIME]  # other metrics: their own section
    timed.sort(key=lambda r: order.get((r.case_id, r.place, r.mode), len(order)))
    skipped: dict[str, int] = {}
    for r in timed:
        if r.status == "skipped":
            skipped[r.message or ""] = skipped.get(r.message or "", 0) + 1
    shown = [r for r in timed if r.status != "skipped"]
    verbose = bench.config.getoption("verbose") > 0
    noisy = noisy_cases(shown)
    busy = busy_machine(len(noisy), len(shown))
    if shown:
        tr.section(f"benchmark summary ({METRICS[TIME].label})")
        tr.write_line(f"{'case':<{CASE_WIDTH}} {'place':<6} {'mode':<9} {'median':>10} {'IQR':>9} {'CI':>7} "
                      f"{'n':>5} {'P':>2} {'between':>7}")  # fmt: skip
    for r in shown:
        _write_time_row(tr, r, verbose, hide_noise=busy and not verbose)
    if shown:
        for line in TIME_COLUMNS if bench.processes else IN_PROCESS_COLUMNS:
            tr.write_line(line)
    if busy:
        for line in busy_lines(len(noisy), len(shown), _machine_state(), verbose):
            tr.write_line(line, yellow=True)
    for line in diagnostics_lines([r for r in bench.results if r.status != "skipped"]):
        tr.write_line(line)
    for name in dict.fromkeys(r.metric for r in bench.results if (r.metric or TIME) != TIME):
        _write_metric_table(
            tr, name, [r for r in bench.results if r.metric == name and r.status != "skipped"]
        )
    if skipped:
        tr.section("not run on this machine", sep="-")
        for reason, count in skipped.items():
            tr.write_line(f"skipped {count} case(s): {reason}")
    tr.write_line(f"results: {'none written' if bench.json_error else _shown_path(bench.json_path)}")
    if bench.store is not None and bench.run_id is not None:
        group = f", group {bench.run_group}" if bench.run_group else ""
        tr.write_line(f"history: run {bench.run_id}{group}, {bench.status} ({bench.store.display_url})")
    _write_problems(tr, bench)


def _shown_path(path) -> str:
    """A path as short as it reads: relative to the working directory when it lies under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _write_metric_table(tr, name: str, results: list) -> None:
    """The section of another metric's results: median (in its unit), relative spread
    ((max - min) / median of the samples) and number of samples."""
    if not results:
        return
    m = get_metric(name)
    tr.section(f"benchmark summary ({', '.join(p for p in (m.label, m.source) if p)})")
    tr.write_line(f"{'case':<{CASE_WIDTH}} {'place':<6} {'mode':<9} {m.unit:>14} {'spread':>8} {'n':>3}")
    for r in results:
        if r.status != "ok":
            tr.write_line(
                f"{_case_cell(tr, r.case_id)} {r.place:<6} {r.mode:<9} {r.status.upper()}: {r.message or ''}"
            )
            continue

        tr.write_line(
            f"{_case_cell(tr, r.case_id)} {r.place:<6} {r.mode:<9} {m.cell(r.stats.median or 0):>14} "
            f"{spread(r.samples):>8.3%} {len(r.samples):>3}"
        )


# The time table fits 120 columns: the case column is what the others leave; a longer case id gets
# a line of its own above its numbers.
LINE_WIDTH = 120
CASE_WIDTH = LINE_WIDTH - 63
TIME_COLUMNS = (
    "median: time per iteration, the median of the process values (each a worker process's median round)",
    f"IQR: spread of all rounds · CI: {CONFIDENCE:.0%} interval of the level from the process values, ± relative "
    "to the median",
    "n: rounds · P: worker processes · between: spread of the process values (standard deviation of their logs)",
)
IN_PROCESS_COLUMNS = (  # --bench-processes 0: one process, its rounds
    "median: time per iteration, the median of the rounds · IQR: their spread (interquartile range)",
    f"CI: {CONFIDENCE:.0%} interval of the median, ± relative to it · n: rounds",
)


def _case_cell(tr, case_id: str) -> str:
    """The case column of a row; a case id too long for it is written on a line of its own first."""
    if len(case_id) <= CASE_WIDTH:
        return f"{case_id:<{CASE_WIDTH}}"
    tr.write_line(case_id)
    return " " * CASE_WIDTH


def _write_time_row(tr, r, verbose: bool = False, hide_noise: bool = False) -> None:
    """One result of the time table, with the warnings that earn their line (diagnostics with -v;
    the noise warnings not when `hide_noise`: the busy machine's line says them), its error,
    throughput and torch comparison below it."""
    s = r.stats
    if r.status != "ok" and not r.samples:
        tr.write_line(
            f"{_case_cell(tr, r.case_id)} {r.place:<6} {r.mode:<9} {r.status.upper()}: {r.message or ''}"
        )
        return
    tr.write_line(
        f"{_case_cell(tr, r.case_id)} {r.place:<6} {r.mode:<9} {measure.format_time(s.median):>10} "
        f"{measure.format_time(s.iqr):>9} {_ci(s):>7} {s.rounds:>5} {_between(s)}"
    )
    for w in case_warnings(r):
        if hide_noise and _noise(w):
            continue
        if diagnostic_kind(w) is None:
            for line in textwrap.wrap(
                f"warning: {w}", LINE_WIDTH, initial_indent="    ", subsequent_indent="      "
            ):
                tr.write_line(line, yellow=True)
        elif verbose:
            for line in textwrap.wrap(
                f"note: {w}", LINE_WIDTH, initial_indent="    ", subsequent_indent="      "
            ):
                tr.write_line(line)
    if r.status != "ok":
        tr.write_line(f"    {r.status.upper()}: {r.message}", red=True)
    if r.throughput:
        tr.write_line(f"    throughput: {r.throughput:,.1f} {r.throughput_unit}")
    torch = r.torch or {}
    if torch.get("paddle_over_torch"):
        tr.write_line(
            f"    vs torch: {measure.format_time(torch['median'])} per iteration, "
            f"paddle/torch = {torch['paddle_over_torch']:.2f}x"
        )


def _ci(stats: Stats) -> str:
    """The CI column: the shown interval of the level as ± its larger side, relative to the median;
    an interval wider than the median itself (a few --bench-quick rounds, one outlier) says no more
    than that: ">±100%"."""
    half = interval_half(stats)
    if half is None:
        return "-"
    return f"±{half:.1%}" if half < 1 else ">±100%"


# The warnings that a machine busy with other work gives many cases at once: a value too spread,
# its interval too wide, too few rounds in the time allowed (by the prefix before their first ":").
NOISE = ("unstable", "imprecise", "only ")
# When at least this many cases, and at least this share of the table, have a noise warning, the
# suite says so in one line about the machine instead of one line per case.
BUSY_MIN_CASES = 3
BUSY_SHARE = 0.5


def case_warnings(r) -> list[str]:
    """A time result's warnings: those recorded with it, and whether the interval the table shows for
    it is too wide (`benchmark.datamodel.result.imprecision`: the same interval, the same rule)."""
    found = imprecision(r.stats)
    return [*r.warnings, found] if found else list(r.warnings)


def _noise(warning: str) -> bool:
    return warning.startswith(NOISE)


def noisy_cases(results) -> list:
    """The results of the time table with a noise warning."""
    return [r for r in results if any(_noise(w) for w in case_warnings(r))]


def busy_machine(noisy: int, total: int) -> bool:
    """Whether the noise warnings are the machine's rather than the cases': many cases at once."""
    return noisy >= BUSY_MIN_CASES and noisy >= BUSY_SHARE * total


def busy_lines(noisy: int, total: int, state: str, verbose: bool = False) -> list[str]:
    """The one warning about a busy machine (its cases' noise warnings: NOISE), in lines of at most
    LINE_WIDTH: one line where the machine's name is short."""
    text = f"warning: {state}: {noisy} of {total} cases unreliable, rerun when quiet ({'above' if verbose else '-v'}: why)"
    return textwrap.wrap(text, LINE_WIDTH, subsequent_indent="  ")


def _machine_state() -> str:
    """This machine, named once, and its load: ``machine host1 was busy (load average 3.1 on 2 CPUs)``."""
    try:
        load = f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    except OSError:  # no load average on this system
        load = ""
    return f"machine {platform.node() or 'this machine'} was busy{load}"


def diagnostics_lines(results) -> list[str]:
    """The cases with each diagnostic warning (bimodal, ...) counted, in lines of at most LINE_WIDTH."""
    cases: dict[str, set] = {}
    for r in results:
        for w in r.warnings:
            if (kind := diagnostic_kind(w)) is not None:
                cases.setdefault(kind, set()).add((r.case_id, r.place, r.mode, r.metric))
    if not cases:
        return []
    parts = [f"{len(c)} case(s) {DIAGNOSTICS[k]}" for k, c in cases.items()]
    text = f"notes: {'; '.join(parts)}. Not errors; per case with -v, and kept in the record."
    return textwrap.wrap(text, LINE_WIDTH, subsequent_indent="  ")


def _between(stats: Stats) -> str:
    """The summary table's P (ok worker processes) and between (their spread, `between_cv`)
    columns; blank for in-process measurement."""
    processes = stats.processes
    if not processes:
        return f"{'':>2} {'':>7}"
    cv = stats.between_cv
    spread = f"{cv:.1%}" if cv is not None and cv == cv else "-"
    return f"{processes:>2} {spread:>7}"


def _write_problems(tr, bench: BenchSession) -> None:
    for line in bench.problems:
        tr.write_line(line, red=True)
