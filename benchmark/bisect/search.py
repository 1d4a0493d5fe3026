"""The pure bisection of `benchmark bisect`: no paddle, no subprocess.

Given `n` ordered builds (0 = the good end, n-1 = the bad end) and `measure(i)` returning the
metric of build i (higher is worse: instructions or seconds per iteration) or None when the build
cannot be made or measured (skipped, as `git bisect skip`), `search` finds the first build whose
value is worse than the baseline's (the first measurable build) by at least `threshold` (a relative
effect: 0.01 = 1 %).

- The ends are confirmed first: when the last measurable build is not worse than the first, the
  result says so and nothing else is measured.
- Then binary search on the interval (last good, first bad); a skipped midpoint is replaced by the
  untried build nearest to it inside the interval. When every build inside is skipped, the step
  is somewhere in the interval and the result says which builds could not be told apart.
- No build is measured twice (the values are memoised), so with no skip at most
  2 + ceil(log2(n - 1)) builds are measured.
- Every value measured is kept, and every change of at least `threshold` between two
  neighbouring measured builds is reported (slower or faster), so a range with several steps is
  reported as measured, not flattened into one culprit.
- KeyboardInterrupt inside `measure` stops the search: the result keeps what was measured, with
  the interval left.

`search_cases` runs one search per case over shared builds: `measure_all(i)` measures every case
on build i once, and each case narrows its own interval.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

STEP, NO_STEP, UNRESOLVED, INTERRUPTED, NO_ENDS = "step", "no-step", "unresolved", "interrupted", "no-ends"
STATUSES = (STEP, NO_STEP, UNRESOLVED, INTERRUPTED, NO_ENDS)


@dataclasses.dataclass(frozen=True)
class Change:
    """A change of at least the threshold between two neighbouring measured builds."""

    before: int
    after: int
    value_before: float
    value_after: float

    @property
    def ratio(self) -> float:
        return self.value_after / self.value_before

    @property
    def direction(self) -> str:
        return "slower" if self.value_after > self.value_before else "faster"

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "value_before": self.value_before,
            "value_after": self.value_after,
            "ratio": self.ratio,
            "direction": self.direction,
        }


@dataclasses.dataclass
class SearchResult:
    """What one search measured and found (indices are positions in the ordered builds)."""

    n: int
    threshold: float
    values: dict[int, float] = dataclasses.field(default_factory=dict)  # measured builds
    skipped: list[int] = dataclasses.field(default_factory=list)  # builds tried and skipped
    order: list[int] = dataclasses.field(default_factory=list)  # every build tried, in order
    status: str = NO_STEP
    good: int | None = None  # the last build known good (the baseline or later)
    bad: int | None = None  # the first build known bad
    message: str = ""

    @property
    def baseline(self) -> float | None:
        measured = sorted(self.values)
        return self.values[measured[0]] if measured else None

    @property
    def measured(self) -> int:
        return len(self.values)

    @property
    def effect(self) -> float | None:
        """bad/good - 1 of the step found (None: no step)."""
        if self.good is None or self.bad is None or self.status not in (STEP, UNRESOLVED, INTERRUPTED):
            return None
        return self.values[self.bad] / self.values[self.good] - 1

    def changes(self) -> list[Change]:
        """Every change of at least the threshold between neighbouring measured builds."""
        idx = sorted(self.values)
        out = []
        for a, b in zip(idx, idx[1:], strict=False):
            va, vb = self.values[a], self.values[b]
            if va > 0 and abs(vb / va - 1) >= self.threshold:
                out.append(Change(a, b, va, vb))
        return out

    def left(self) -> list[int]:
        """The builds strictly between the last good and the first bad not yet told apart."""
        if self.good is None or self.bad is None:
            return []
        return [i for i in range(self.good + 1, self.bad) if i not in self.values and i not in self.skipped]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "builds": self.n,
            "threshold": self.threshold,
            "last_good": self.good,
            "first_bad": self.bad,
            "effect": self.effect,
            "values": {str(i): v for i, v in sorted(self.values.items())},
            "skipped": sorted(self.skipped),
            "order": list(self.order),
            "changes": [c.to_dict() for c in self.changes()],
            "message": self.message,
        }


class _Memo:
    """measure() memoised: a build is measured once, a skipped build is not tried again."""

    def __init__(self, measure: Callable[[int], float | None], result: SearchResult):
        self.measure, self.result = measure, result

    def __call__(self, i: int) -> float | None:
        r = self.result
        if i in r.values:
            return r.values[i]
        if i in r.skipped:
            return None
        r.order.append(i)
        v = self.measure(i)
        if v is None:
            r.skipped.append(i)
        else:
            r.values[i] = float(v)
        return None if v is None else float(v)


def _nearest_untried(lo: int, hi: int, mid: int, tried: Callable[[int], bool]) -> int | None:
    """The untried build in (lo, hi) nearest to mid (ties: the lower one), or None."""
    for d in range(0, hi - lo):
        for i in (mid - d, mid + d):
            if lo < i < hi and not tried(i):
                return i
    return None


def search(n: int, measure: Callable[[int], float | None], threshold: float) -> SearchResult:
    """Bisect `n` ordered builds with `measure` (see the module docstring)."""
    if n < 2:
        raise ValueError(f"a bisection needs at least two builds, got {n}")
    if threshold <= 0:
        raise ValueError(f"the threshold must be a positive relative effect, got {threshold}")
    result = SearchResult(n=n, threshold=threshold)
    m = _Memo(measure, result)
    try:
        _search(n, m, threshold, result)
    except KeyboardInterrupt:
        result.status = INTERRUPTED
        result.message = _interrupted_message(result)
    return result


def _search(n: int, m: _Memo, threshold: float, r: SearchResult) -> None:
    good = next((i for i in range(n) if m(i) is not None), None)
    if good is None or good == n - 1:
        r.status, r.message = NO_ENDS, "no two builds of the range could be measured"
        return
    bad = next((i for i in range(n - 1, good, -1) if m(i) is not None), None)
    if bad is None:
        r.status, r.message = NO_ENDS, "only one build of the range could be measured"
        return
    base = r.values[good]

    def worse(i: int) -> bool:
        return r.values[i] >= base * (1 + threshold)

    r.good, r.bad = good, bad
    if not worse(bad):
        r.status = NO_STEP
        r.good = r.bad = None
        r.message = (
            f"build {bad} is not worse than build {good} by {threshold:.0%} or more "
            f"({r.values[bad] / base - 1:+.2%}): nothing to bisect"
        )
        return
    while r.bad - r.good > 1:
        mid = _nearest_untried(r.good, r.bad, (r.good + r.bad) // 2, lambda i: i in r.skipped)
        if mid is None:
            r.status = UNRESOLVED
            r.message = (
                f"the step is between build {r.good} and build {r.bad}; "
                f"the builds in between were skipped ({', '.join(map(str, range(r.good + 1, r.bad)))})"
            )
            return
        if m(mid) is None:
            continue
        if worse(mid):
            r.bad = mid
        else:
            r.good = mid
    r.status = STEP
    r.message = f"first bad build {r.bad} ({r.values[r.bad] / r.values[r.good] - 1:+.2%} from build {r.good})"


def _interrupted_message(r: SearchResult) -> str:
    if r.good is None or r.bad is None:
        return "interrupted before the two ends were measured"
    return (
        f"interrupted: the step is between build {r.good} and build {r.bad} ({len(r.left())} build(s) left)"
    )


def search_cases(
    n: int,
    measure_all: Callable[[int], Mapping[str, float | None] | None],
    thresholds: Mapping[str, float],
) -> tuple[dict[str, SearchResult], list[int]]:
    """One search per case over shared builds: `measure_all(i)` measures every case on build i
    (None: the build could not be made, so every case skips it); each build is measured once.
    Returns the results by case and the builds in the order they were measured. KeyboardInterrupt
    stops every search (the case being searched and those not reached are `interrupted`)."""
    seen: dict[int, Mapping[str, float | None] | None] = {}
    order: list[int] = []
    interrupted = False

    def on_build(i: int) -> Mapping[str, float | None] | None:
        if i not in seen:
            order.append(i)
            seen[i] = measure_all(i)
        return seen[i]

    results: dict[str, SearchResult] = {}
    for case, threshold in thresholds.items():
        if interrupted:
            results[case] = SearchResult(n=n, threshold=threshold, status=INTERRUPTED, message="interrupted")
            continue

        def measure(i: int, case: str = case) -> float | None:
            values = on_build(i)
            return None if values is None else values.get(case)

        results[case] = search(n, measure, threshold)
        interrupted = results[case].status == INTERRUPTED
    return results, order


def shared_values(results: Mapping[str, SearchResult]) -> Sequence[int]:
    """The builds measured by any case, in index order."""
    return sorted({i for r in results.values() for i in r.values})
