"""Replay `benchmark compare`'s sequential verdicts on recorded (or modelled) pair noise: many jobs
in seconds, to check its error rates where real jobs would take hours.

A job here is what `benchmark.compare.job.run_job` does with the statistics: every step adds one
pair (log B/A of two process values) to each open case, a case is looked at on the look schedule
(`benchmark.analysis.sequential`), decided cases stop, and the job ends at `--max-pairs` (the
number of steps its budget allows; a final look as in the real job). The noise of a pair comes
from recorded A/A jobs (`--from JOB.json ...`, written by `benchmark compare --json`: the paired log
differences of every case, each with its sign flipped beside it, resampled with replacement) or from a model (`--sd S`:
Student t with 4 degrees of freedom scaled to standard deviation S); `--case NAME` resamples only
that recorded case's differences, and `--centre` moves each case of each job by its median first
(to take the noise of a slowdown job's slowed case). Case 0 of each job gets `--slowdown` added (log(1 + slowdown));
the others are identical. `--t-only` replays the paired t interval alone (the statistic before the
signed-rank interval joined it), for an ablation on the same draws (same `--seed`).

    python eval/compare_replay.py --sd 0.03 --cases 2 --max-pairs 60 --jobs 2000
    python eval/compare_replay.py --sd 0.03 --cases 2 --max-pairs 60 --jobs 2000 --slowdown 0.05
    python eval/compare_replay.py --from job0.json --cases 2 --max-pairs 60 --jobs 500 --slowdown 0.05
    python eval/compare_replay.py --as-recorded --from job*.json

`--as-recorded` resamples nothing: it decides every case of each recorded job on its own pairs in
their recorded order, look by look, with the t interval alone and with the t and signed-rank
intervals, and prints each case's verdict and pairs used under both. A case the job decided early
holds only the pairs it had then, so the statistic that job ran has the advantage there.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from pathlib import Path

import numpy as np

from benchmark.analysis import sequential as seq
from benchmark.datamodel.verdict import Verdict, verdict_words


def recorded_differences(paths: list[str], only: str | None = None, centre: bool = False) -> np.ndarray:
    """The paired log differences of every case (or of case `only`) of the recorded jobs, each case
    of each job, each beside its negative: an A/A pair's two sides are exchangeable, so its log
    difference is symmetric about 0, and so is this pool (centring each job on its mean instead
    would leave a heavy-tailed job's pool off centre for a median-based statistic). With `centre`,
    each case of each job is first moved by its median: the noise of pairs whose B side was
    changed (a slowdown job's slowed case), without the change."""
    out = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        for case in doc["cases"]:
            if only is not None and case["case"] != only:
                continue
            a, b = case["values"]["A"], case["values"]["B"]
            d = [math.log(y / x) for x, y in zip(a, b, strict=False) if x and y]
            if len(d) >= 3:
                d = np.asarray(d) - (np.median(d) if centre else 0.0)
                out.extend(d)
                out.extend(-d)
    if not out:
        raise SystemExit("no case with 3 or more pairs in the recorded jobs")
    return np.asarray(out)


def one_job(
    draw, cases: int, shift: float, max_pairs: int, alpha: float, min_effect: float, robust: bool = True
) -> list[str]:
    """The verdicts of one replayed job (case 0 shifted by `shift` in log)."""
    d = [[] for _ in range(cases)]
    verdicts = [Verdict.INCONCLUSIVE] * cases
    open_ = set(range(cases))
    for n in range(1, max_pairs + 1):
        look = seq.look_at(n, final=n == max_pairs)  # the job's final look at its last step
        for i in list(open_):
            d[i].append(draw() + (shift if i == 0 else 0.0))
            if look is not None:
                dec = seq.decide(
                    np.ones(n), np.exp(d[i]), min_effect=min_effect, alpha=alpha, cases=cases, look=look,
                    robust=robust,
                )  # fmt: skip
                verdicts[i] = dec.verdict
                if dec.decided:
                    open_.discard(i)
        if not open_:
            break
    return verdicts


def as_recorded(paths: list[str], alpha: float) -> None:
    """Each recorded job's cases decided on their own pairs, as recorded, by both statistics."""
    totals = collections.Counter()
    for path in paths:
        doc = json.loads(Path(path).read_text())
        cases = [c for c in doc["cases"] if c.get("values")]
        measured = max(1, len(cases))
        for c in cases:
            a, b = c["values"]["A"], c["values"]["B"]
            pairs = [(x, y) for x, y in zip(a, b, strict=False) if x and y]
            effect = c.get("min_effect", 0.02)
            row = []
            for robust in (False, True):
                verdict, used = Verdict.INCONCLUSIVE, len(pairs)
                for n in range(seq.MIN_PAIRS, len(pairs) + 1):  # as the job looks, its final look last
                    look = seq.look_at(n, final=n == len(pairs))
                    if look is None:
                        continue
                    x, y = zip(*pairs[:n], strict=True)
                    dec = seq.decide(
                        x, y, min_effect=effect, alpha=alpha, cases=measured, look=look, robust=robust
                    )
                    verdict, used = dec.verdict, n
                    if dec.decided:
                        break
                word = verdict_words(verdict).ab
                row.append(f"{word} at {used}")
                totals[("robust" if robust else "t", word)] += 1
            print(
                f"{Path(path).name} {c['case']:<40} {len(pairs):4d} pairs; t: {row[0]}; t+signed-rank: {row[1]}"
            )
    for stat in ("t", "robust"):
        print(stat + ": " + ", ".join(f"{v} {n}" for (s_, v), n in sorted(totals.items()) if s_ == stat))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--from", dest="recorded", nargs="*", default=None, help="compare --json files to resample"
    )
    p.add_argument("--sd", type=float, default=0.03, help="modelled pair noise (sd of log B/A; default 0.03)")
    p.add_argument("--cases", type=int, default=2, help="cases per job (default 2)")
    p.add_argument("--max-pairs", type=int, default=60, help="pairs a job's budget allows (default 60)")
    p.add_argument("--jobs", type=int, default=1000, help="jobs to replay (default 1000)")
    p.add_argument("--slowdown", type=float, default=0.0, help="slowdown of case 0 in B (default 0)")
    p.add_argument("--alpha", type=float, default=0.01, help="the job's alpha (default 0.01)")
    p.add_argument("--min-effect", type=float, default=0.02, help="min effect (default 0.02)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--case", default=None, help="resample only this recorded case's differences")
    p.add_argument(
        "--centre",
        action="store_true",
        help="move each recorded case of each job by its median first (pairs of slowdown jobs)",
    )
    p.add_argument("--t-only", action="store_true", help="the paired t interval alone (an ablation)")
    p.add_argument(
        "--as-recorded",
        action="store_true",
        help="decide each recorded job's cases on their own pairs, both ways",
    )
    args = p.parse_args(argv)
    if args.as_recorded:
        if not args.recorded:
            p.error("--as-recorded needs --from JOB.json ...")
        as_recorded(args.recorded, args.alpha)
        return 0

    rng = np.random.default_rng(args.seed)
    if args.recorded:
        pool = recorded_differences(args.recorded, args.case, args.centre)
        source = f"{pool.size} recorded pair differences (sd {pool.std(ddof=1):.3f})"

        def draw() -> float:
            return float(pool[rng.integers(pool.size)])
    else:
        scale = args.sd / math.sqrt(4 / 2)  # t(4) has variance 2
        source = f"t(4) noise, sd {args.sd:g}"

        def draw() -> float:
            return float(rng.standard_t(4) * scale)

    shift = math.log1p(args.slowdown)
    counts = [collections.Counter() for _ in range(args.cases)]
    named_only = false_jobs = 0
    for _ in range(args.jobs):
        v = one_job(draw, args.cases, shift, args.max_pairs, args.alpha, args.min_effect, not args.t_only)
        for i, x in enumerate(v):
            counts[i][x] += 1
        others_false = any(x in (Verdict.REGRESSION, Verdict.IMPROVEMENT) for x in v[1:])
        case0_false = args.slowdown == 0 and v[0] in (Verdict.REGRESSION, Verdict.IMPROVEMENT)
        false_jobs += others_false or case0_false
        named_only += args.slowdown > 0 and v[0] == Verdict.REGRESSION and not others_false
    print(
        f"{args.jobs} replayed jobs: {args.cases} cases, case 0 slower by {args.slowdown:.1%}, "
        f"at most {args.max_pairs} pairs, alpha {args.alpha:g}, min effect {args.min_effect:.0%}; {source}; "
        f"{'t interval only' if args.t_only else 't and signed-rank intervals'}"
    )
    for i, c in enumerate(counts):
        print(f"  case {i}: " + ", ".join(f"{k} {n} ({n / args.jobs:.1%})" for k, n in sorted(c.items())))
    print(f"  jobs with a false slower/faster verdict: {false_jobs} ({false_jobs / args.jobs:.2%})")
    if args.slowdown:
        print(f"  jobs naming case 0 slower and no other: {named_only} ({named_only / args.jobs:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
