"""Reports of the history: the judge's decisions and the series, as text, Markdown, HTML and plots.

- :mod:`~benchmark.report.run_rows` -- the decisions of a run as report rows (``judged_rows``) and
  the series' histories with their change points and alerts (``Store.series``, ``analyse``);
- :mod:`~benchmark.report.words` -- decisions in words (``format_decision``), shared by `benchmark gate`,
  the pytest gate items and the Markdown report; :mod:`~benchmark.report.markdown` -- the PR report;
- :mod:`~benchmark.report.build` -- what `benchmark plot` and `benchmark report --format md` produce;
- :mod:`~benchmark.report.jobs` -- the one plot-job builder and the parallel renderer;
  :mod:`~benchmark.report.trend`, :mod:`~benchmark.report.plots` -- the matplotlib figures;
- :mod:`~benchmark.report.html` -- the dashboard, with :mod:`~benchmark.report.pages`,
  :mod:`~benchmark.report.htmlkit` and :mod:`~benchmark.report.svg`.

The statistics behind the decisions are described in docs/detection.md. Submodules are imported on
use: ``import benchmark.report`` (and :mod:`~benchmark.report.words`) loads neither numpy nor matplotlib.
"""
