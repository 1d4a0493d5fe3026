"""The plot of a bisection: each case's count across the builds, relative to its first build, with
the threshold and the step (last good to first bad) marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from benchmark.bisect.search import STEP, UNRESOLVED, SearchResult
from benchmark.report.plots import new_figure, plain_text, save


def bisect_plot(results: Mapping[str, SearchResult], builds: Sequence[str]):
    """A matplotlib Figure: one line per case (the builds it measured), in percent of its baseline."""
    fig = new_figure((max(9.0, 0.7 * len(builds) + 6.0), 4.2))
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.08, right=0.64, bottom=0.22, top=0.9)
    for case_id, r in results.items():
        base = r.baseline
        if not base:
            continue
        xs = sorted(r.values)
        (line,) = ax.plot(xs, [100 * (r.values[i] / base - 1) for i in xs], marker="o", lw=1.2, label=case_id)
        if r.status in (STEP, UNRESOLVED) and r.good is not None and r.bad is not None:
            ax.axvspan(r.good, r.bad, color=line.get_color(), alpha=0.12, lw=0)
            ax.annotate("step", (r.bad, 100 * (r.values[r.bad] / base - 1)), textcoords="offset points",
                        xytext=(4, 6), fontsize=8, color=line.get_color())  # fmt: skip
        ax.axhline(100 * r.threshold, color="#999999", lw=0.8, ls="--")
    ax.axhline(0, color="#333333", lw=0.8)
    ax.set_xticks(range(len(builds)), [str(b)[-24:] for b in builds], rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(builds) - 0.5)
    ax.set_ylabel("instructions per iteration vs the first build (%)")
    ax.set_title(
        "bisection: each case across the builds (dashed: its threshold; shaded: its step)", fontsize=10
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def write_plot(results: Mapping[str, SearchResult], builds: Sequence[str], path: str) -> list[Path]:
    """Write the plot to `path` (its suffix picks png, svg or pdf; none: png)."""
    target = Path(path)
    fmt = target.suffix.lower().lstrip(".")
    with plain_text():
        fig = bisect_plot(results, builds)
        return save(fig, target.with_suffix(""), formats=(fmt if fmt in ("png", "svg", "pdf") else "png",))
