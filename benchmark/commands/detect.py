"""`benchmark detect SERIES.csv`: the history analysis on any series of per-run values.

The CSV has a header and a column ``value`` (one per run, oldest first); optional columns are ``run``
(a label), ``samples`` (that run's raw samples, separated by spaces) and ``env`` (a label of the run's
environment, e.g. ``driver 550.54``: where it differs from the previous run's, the environment
changed, and that run is a candidate change point). It prints the offline change points
(:func:`benchmark.analysis.segmentation.segment`) and the alerts the online gate would have raised had the
runs arrived one at a time (:func:`benchmark.analysis.online.simulate_online`), each alert with the
run where the level came back (``reverted_at``) and the environment change it is attributed to.
Exit status: 0 after a successful analysis (whatever it found), 2 when the CSV cannot be used.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchmark.commands._common import add_format, add_min_effect, default_min_effect, deprecated_alias, fail

if TYPE_CHECKING:  # numpy and the model load when a series is read, not at `benchmark --help`
    from benchmark.datamodel.series import Series


# --help's description: the module's docstring in plain words
DESCRIPTION = (
    "The CSV has a header and a column 'value' (one per run, oldest first); optional columns are 'run' "
    "(a label), 'samples' (that run's raw samples, separated by spaces) and 'env' (a label of the run's "
    "environment, e.g. 'driver 550.54': where it differs from the previous run's, the environment "
    "changed, and that run is a candidate change point). It prints the offline change points and the "
    "alerts the online gate would have raised had the runs arrived one at a time, each alert with the "
    "run where the level came back ('reverted_at') and the environment change it is attributed to. "
    "Exit status: 0 after a successful analysis (whatever it found), 2 when the CSV cannot be used."
)


class SeriesError(Exception):
    """The CSV cannot be analysed; the message names the file and, where it can, the line."""


def env_events(envs: Sequence[str]) -> dict[int, str]:
    """``{run index: "old -> new"}`` where the ``env`` column changes between consecutive runs."""
    return {
        i: f"{envs[i - 1] or '?'} -> {envs[i] or '?'}" for i in range(1, len(envs)) if envs[i] != envs[i - 1]
    }


def _number(text: str, where: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise SeriesError(f"{where}: {what} {text.strip()!r} is not a number") from None
    if not math.isfinite(x):
        raise SeriesError(f"{where}: {what} {text.strip()!r} is not a finite number")
    return x


def read_series(path: str) -> Series:
    """Read and check a series CSV (raises SeriesError with one readable line): a `Series` of its
    values, with the ``run`` labels, the raw samples (an empty array for a run without; none at
    all without any) and the environment changes of the ``env`` column as events."""
    try:
        fh = open(path, newline="", encoding="utf-8-sig")  # noqa: SIM115 -- closed below
    except OSError as e:
        raise SeriesError(f"{path}: cannot read: {e.strerror or e}") from None
    with fh:
        try:
            reader = csv.DictReader(fh)
            fields = [(f or "").strip().lower() for f in (reader.fieldnames or [])]
            if not fields:
                raise SeriesError(f"{path}: empty file (expected a header with a 'value' column)")
            if "value" not in fields:
                raise SeriesError(f"{path}: no 'value' column (columns: {', '.join(fields)})")
            reader.fieldnames = fields
            values: list[float] = []
            labels: list[str] = []
            samples: list[list[float] | None] = []
            envs: list[str] = []
            for row in reader:
                where = f"{path}:{reader.line_num}"
                raw = row.get("value")
                if raw is None or not raw.strip():
                    raise SeriesError(f"{where}: missing value")
                values.append(_number(raw, where, "value"))
                labels.append((row.get("run") or "").strip())
                envs.append((row.get("env") or "").strip())
                cell = (row.get("samples") or "").strip()
                samples.append([_number(x, where, "sample") for x in cell.split()] if cell else None)
        except csv.Error as e:
            raise SeriesError(f"{path}:{reader.line_num}: CSV error: {e}") from None
        except UnicodeDecodeError:
            raise SeriesError(f"{path}: not a UTF-8 text file") from None
    if not values:
        raise SeriesError(f"{path}: no runs (the file has a header but no rows)")
    import numpy as np

    from benchmark.datamodel.series import Series

    return Series(
        values=np.asarray(values, dtype=float),
        labels=labels if "run" in fields else [],
        samples=[np.asarray(x or [], dtype=float) for x in samples] if any(samples) else [],
        events=env_events(envs) if "env" in fields else {},
    )


def analyse(series: Series, *, min_effect: float, higher_is_better: bool):
    """Offline change points and online alerts of the series, the detector fed as the gate feeds it."""
    from benchmark.analysis.segmentation import segment
    from benchmark.gate.series import detector_feed, online_alerts

    feed = detector_feed(series)
    samples = [x.tolist() for x in feed.samples] or None
    cps = segment(
        feed.values,
        min_effect=min_effect,
        higher_is_better=higher_is_better,
        samples=samples,
        events=series.events,
    )
    alerts = online_alerts(
        feed.values,
        samples,
        feed.procs,
        min_effect=min_effect,
        higher_is_better=higher_is_better,
        events=series.events,
    )
    return cps, alerts


def _finite(x: float, digits: int = 6) -> float | None:
    """A JSON-safe number: NaN and infinities (e.g. a change from a level of 0) become null."""
    x = float(x)
    return round(x, digits) if math.isfinite(x) else None


def to_json(change_points, alerts, series: Series | None = None) -> dict:
    """The document `benchmark detect --json` prints (strict JSON: no NaN).

    Every alert has ``reverted_at``: null, or the index of the first run back at the old level;
    ``event``: null, or the environment change its change point is attributed to. With a ``run``
    column, ``run``/``change_run``/``reverted_at_run`` give the labels of those runs.
    """
    labels = (series.labels or None) if series is not None else None

    def run(i: int | None) -> str | None:
        return labels[i] if labels is not None and i is not None else None

    cps = []
    for c in change_points:
        row = {
            "index": c.index,
            "direction": c.direction,
            "magnitude": _finite(c.magnitude),
            "event": c.event,
        }
        if labels is not None:
            row["run"] = run(c.index)
        cps.append(row)
    out = []
    for a in alerts:
        row = {
            "index": a.index,
            "change_index": a.change_index,
            "direction": a.direction,
            "magnitude": _finite(a.magnitude),
            "kind": a.kind,
            "reverted_at": a.reverted_at,
            "event": a.event,
        }
        if labels is not None:
            row.update(run=run(a.index), change_run=run(a.change_index), reverted_at_run=run(a.reverted_at))
        out.append(row)
    return {"change_points": cps, "alerts": out}


def _label(series: Series, i: int) -> str:
    if series.labels and series.labels[i]:
        return f"{i} ({series.labels[i]})"
    return str(i)


def _print_table(path: str, series: Series, cps, alerts, args) -> None:
    better = "higher" if args.higher_is_better else "lower"
    print(
        f"{path}: {len(series)} runs, {better} is better, minimum effect {args.min_effect:.1%}"
        + (", raw samples given" if series.samples else "")
    )
    events = series.events
    if events:
        print()
        print("Environment changes (candidate change points):")
        _rows([("run", "change")] + [(_label(series, i), label) for i, label in events.items()])
    print()
    print("Change points (offline segmentation; run = first run of the new level):")
    if not cps:
        print("  none")
    else:
        rows = [("run", "direction", "change", "level before -> after", "p-value", "note")]
        for c in cps:
            rows.append(
                (
                    _label(series, c.index),
                    c.direction,
                    f"{c.magnitude:+.1%}",
                    f"{c.before:.4g} -> {c.after:.4g}",
                    f"{c.p_value:.1e}",
                    f"after {c.event}" if c.event else "",
                )
            )
        _rows(rows)
    print()
    print("Alerts (online gate, as if the runs had arrived one at a time):")
    if not alerts:
        print("  none")
    else:
        rows = [("raised at run", "change at run", "direction", "change", "window", "note")]
        for a in alerts:
            notes = []
            if a.kind == "drift":
                notes.append("slow drift")
            if a.event:
                notes.append(f"after {a.event}")
            if a.reverted_at is not None:
                notes.append(f"reverted: level came back at run {_label(series, a.reverted_at)}")
            note = "; ".join(notes)
            rows.append(
                (
                    _label(series, a.index),
                    _label(series, a.change_index),
                    a.direction,
                    f"{a.magnitude:+.1%}",
                    f"{a.runs} runs",
                    note,
                )
            )
        _rows(rows)


def _rows(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def _min_effect(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= x < 1:
        raise argparse.ArgumentTypeError("must be a relative change in [0, 1), e.g. 0.02 for 2%")
    return x


def cmd_detect(args) -> int:
    try:
        series = read_series(args.series)
    except SeriesError as e:
        return fail("detect", str(e))
    if args.min_effect is None:
        args.min_effect = default_min_effect()
    cps, alerts = analyse(series, min_effect=args.min_effect, higher_is_better=args.higher_is_better)
    if args.format == "json":
        print(json.dumps(to_json(cps, alerts, series), allow_nan=False))
    else:
        _print_table(args.series, series, cps, alerts, args)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "detect",
        help="find change points and online alerts in a series of per-run values (CSV)",
        description=DESCRIPTION,
    )
    p.add_argument(
        "series",
        metavar="SERIES.csv",
        help="CSV with a 'value' column; optional 'run', 'samples', 'env' (environment label per run)",
    )
    add_format(p, help="the format of the result on stdout: text tables (default) or one JSON object")
    deprecated_alias(p, "--json", "--format json", const="json")
    p.add_argument(
        "--higher-is-better",
        action="store_true",
        help="the metric is a throughput: a decrease is a regression",
    )
    add_min_effect(p, type=_min_effect)
    p.set_defaults(func=cmd_detect)
