"""Reports of the history: matplotlib plots, Markdown for pull requests, a static HTML dashboard.

- :mod:`benchmark.report.compare_runs` -- the decisions: ``compare_run(store, run_id, baseline=None)``
  (A/B of every result of a run against its baseline, FDR-controlled, plus the online history
  detector) and ``load_series`` / ``analyse`` (change points, alerts, status of each series);
- :mod:`benchmark.report.plots` -- trend plot, A/B chart, NVML telemetry timeline; ``save`` and a
  parallel ``render_all``;
- :mod:`benchmark.report.markdown` -- ``render(run, rows, ...)``: text for a PR comment or CI summary;
- :mod:`benchmark.report.html` -- ``build_dashboard(store, out_dir, ...)``: the self-contained site.

The CLI is :mod:`benchmark.commands.report` (``benchmark plot``, ``benchmark report``). Submodules are
imported on use, so ``import benchmark.report`` does not load matplotlib.
"""

from benchmark.report.compare_runs import Row, SeriesAnalysis, SeriesData, compare_run, counts, gate_passed

__all__ = ["Row", "SeriesAnalysis", "SeriesData", "compare_run", "counts", "gate_passed"]
