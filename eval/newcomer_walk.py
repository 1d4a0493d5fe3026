"""A newcomer's walk, as issue 45 asked for it: on a fresh clone, one suite run, a `benchmark
compare` job, a partial run (`-k`) and a second suite run, then the dashboard opened in Chromium.

It prints what a newcomer would check:
- whether any suite view (the dashboard's table, `benchmark history`) shows a compare run;
- which run the dashboard opens on, and what its header says;
- for the chosen cases (a model among them), the status and change every view gives, and the
  interval level each view states (the extractors of tests/test_views_agree.py, on this history).

    python eval/newcomer_walk.py --clone DIR [--cases 'abs-1000x1000 or ...'] [--quick]

DIR is made with `git clone` of this checkout; the suite runs with the current interpreter, with
DIR first on the import path. Nothing is asserted here: the figures go in the issue's note.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def sh(argv: list[str], cwd: Path, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    print(f"$ {' '.join(argv[:12])}{' ...' if len(argv) > 12 else ''}  -> exit {proc.returncode} "
          f"in {time.monotonic() - t0:.0f} s", flush=True)  # fmt: skip
    if check and proc.returncode not in (0, 1):
        sys.stdout.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"step failed: {argv}")
    return proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clone", type=Path, required=True, help="where to clone this checkout (replaced)")
    ap.add_argument("--partial", default="softmax", help="-k of the partial run (default softmax)")
    ap.add_argument("--compare", default="abs", help="-k of the compare job (default abs)")
    ap.add_argument("--quick", action="store_true", help="--bench-quick for the suite runs")
    ap.add_argument("--views-only", action="store_true", help="the clone's history exists: only read it")
    ap.add_argument("--cases", nargs="+", default=["abs", "matmul", "elementwise_mul", "reduce_sum", "lstm"],
                    help="case id substrings whose views are compared (default: four ops and a model)")  # fmt: skip
    args = ap.parse_args()

    if not args.views_only:
        if args.clone.exists():
            shutil.rmtree(args.clone)
        subprocess.run(["git", "clone", "-q", str(HERE), str(args.clone)], check=True)
    clone = args.clone
    db = clone / "walk.sqlite"
    env = {**os.environ, "PYTHONPATH": str(clone), "BENCHMARK_DB_URL": f"sqlite:///{db}", "MPLBACKEND": "Agg"}
    py = sys.executable
    quick = ["--bench-quick"] if args.quick else []
    suite = [py, "-m", "pytest", "benchmark/", "-q", "-p", "no:cacheprovider", *quick]

    if not args.views_only:
        sh([*suite], clone, env)  # run 1: the whole default suite
        sh([py, "-m", "benchmark.cli", "compare", "--a", py, "--b", py, "-k", args.compare, "--budget-min", "2",
            "--db", str(db)], clone, env)  # fmt: skip
        sh([*suite, "-k", args.partial], clone, env)  # a partial run
        second = sh([*suite], clone, env)  # run 2 of the suite
        warn = [line for line in second.stdout.splitlines() if line.startswith("warning")]
        print(f"second run: {len(warn)} warning line(s)")
        for line in warn:
            print("   ", line)

    runs = sh([py, "-m", "benchmark.cli", "runs", "--db", str(db)], clone, env).stdout
    print(runs)
    site = clone / "site"
    sh(
        [py, "-m", "benchmark.cli", "report", "--format", "html", "--out", str(site), "--db", str(db)],
        clone,
        env,
    )
    index = (site / "index.html").read_text()
    which = re.search(r'<p class="note which-run">(.*?)</p>', index)
    print("dashboard opens with:", which[1] if which else "(no note: the latest run is complete)")
    machines = sorted(set(re.findall(r"</td><td>(?:dynamic|static)</td><td>([^<]+)</td>", index)))
    print("machines in the suite table:", machines)
    print("Jobs section:", "yes" if 'id="jobs"' in index else "no")
    history = sh([py, "-m", "benchmark.cli", "history", args.compare, "--db", str(db)], clone, env).stdout
    print(
        "`benchmark history` lines naming a compare side:",
        sum("/compare-" in line for line in history.splitlines()),
    )

    # Chromium renders the page (what a newcomer sees): its text, and a screenshot.
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                              f"file://{site / 'index.html'}"], capture_output=True, text=True, timeout=120).stdout  # fmt: skip
        shown = re.search(r'<b id="shown-count">(\d+)</b> of (\d+) series shown', dom)
        meta = re.search(r'<div class="meta">([^<]+)', dom)
        print("Chromium:", shown[0] if shown else "no count", "|", meta[1] if meta else "")
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                        f"--screenshot={clone / 'dashboard.png'}", f"file://{site / 'index.html'}"],
                       capture_output=True, timeout=120)  # fmt: skip

    # Every view of the second suite run, for the chosen cases.
    run_id = json.loads(sh([py, "-m", "benchmark.cli", "gate", "--format", "json", "--db", str(db)], clone, env)
                        .stdout)["run"]  # fmt: skip
    sys.path.insert(0, str(clone / "tests"))
    sys.path.insert(0, str(clone))
    os.environ.update(env)
    import test_views_agree as views  # noqa: E402  (the project's own extractors)

    dash = clone / "dash"
    got = {
        "gate": views.gate_text(str(db), str(run_id)),
        "gate --format json": views.gate_json(str(db), str(run_id)),
        "Markdown": views.markdown(str(db), str(run_id)),
    }
    got["dashboard index"], got["dashboard series pages"] = views.dashboard(str(db), dash, str(run_id))
    reference = got["gate --format json"]
    chosen = {k for k in reference if any(c in k[0] for c in args.cases) and k[1] == "cpu"}
    picked = sorted(
        {next(k for k in sorted(chosen) if c in k[0]) for c in args.cases if any(c in k[0] for k in chosen)}
    )
    print(f"\nrun {run_id}: {len(reference)} decisions; compared: {len(picked)} cases")
    agree = 0
    for key in picked:
        row = {name: view.get(key) for name, view in got.items()}
        same = len({v for v in row.values()}) == 1
        agree += same
        print(f"{'AGREE' if same else 'DIFFER'} {key[0]} [{key[1]} {key[2]}]")
        for name, v in row.items():
            print(f"    {name:<24} {v}")
    everywhere = sum(all(view.get(k) == reference[k] for view in got.values()) for k in reference)
    print(
        f"{agree} of {len(picked)} chosen cases agree in every view; {everywhere} of {len(reference)} decisions overall"
    )
    levels = views.stated_levels(str(db), dash, str(run_id))
    print("levels stated:", sorted({tuple(v) for v in levels.values()}), "in", len(levels), "views/pages")

    # A partial run after the complete one: the dashboard must still open on the complete run.
    sh([*suite, "-k", args.partial], clone, env)
    site = clone / "site-after-partial"
    sh(
        [py, "-m", "benchmark.cli", "report", "--format", "html", "--out", str(site), "--db", str(db)],
        clone,
        env,
    )
    which = re.search(r'<p class="note which-run">(.*?)</p>', (site / "index.html").read_text())
    print("after a partial run, the dashboard opens with:", which[1] if which else "(no note)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
