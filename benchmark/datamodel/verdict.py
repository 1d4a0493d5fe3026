"""The one verdict vocabulary: what the judge (`benchmark.gate.judge`), the A/B statistics
(`benchmark.analysis`) and `benchmark compare` decide for a result, and the one table of the words the
views show for it. Imports nothing of the harness, so the pure statistics can use it."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from benchmark.datamodel.metrics import get_metric

# Both enums are str-valued: they compare equal to their values ("regression" == Verdict.REGRESSION),
# print as their values and go into JSON as plain strings, so `benchmark gate --json`, the reports
# and the pytest gate items read the same words.


class _StrEnum(str, Enum):
    """A str enum that prints and formats as its value (enum.StrEnum needs Python 3.11)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Verdict(_StrEnum):
    """What the judge decided for one result of a run."""

    REGRESSION = "regression"  # worse beyond the case's min_effect, significant after FDR: fails
    IMPROVEMENT = "improvement"  # better beyond min_effect, significant after FDR
    PASS = "pass"  # no change beyond min_effect (or none the evidence can show)
    INCONCLUSIVE = "inconclusive"  # the evidence cannot tell (too few processes, not significant
    # after FDR, no honest noise estimate): does not fail, and says why
    NEW = "new"  # nothing to compare with yet (no baseline of this series): passes with a notice
    FAILED = "failed"  # the case failed (e.g. its accuracy check): fails
    WRONG = "wrong"  # a model's loss at step K left its tolerance around the series' earlier
    # value (benchmark.gate.numerics): the numerics changed, whatever the speed; fails
    ERROR = "error"  # the case errored or its stored samples are invalid: fails
    SKIPPED = "skipped"  # the case was skipped (e.g. no GPU): does not fail
    # a wall-time regression measured again at once (configs/gates.yaml `confirm`) that did not
    # reproduce beyond the minimum effect: recorded with every attempt's figures, does not fail
    NOT_REPRODUCED = "not reproduced"


FAILING = frozenset({Verdict.REGRESSION, Verdict.FAILED, Verdict.ERROR, Verdict.WRONG})


class VerdictWords(NamedTuple):
    """How the views word a verdict: `ab` where they say how B compares with A (the A/B chart,
    `benchmark compare`), `status` as a series' status (the dashboard's badges and table)."""

    ab: str
    status: str


# The one table of the words a view shows for a verdict (a verdict not listed: its own value).
VERDICT_WORDS = {
    Verdict.REGRESSION: VerdictWords("slower", "regression"),
    Verdict.IMPROVEMENT: VerdictWords("faster", "improvement"),
    Verdict.PASS: VerdictWords("same", "pass"),
    Verdict.FAILED: VerdictWords("failed", "error"),
}


def verdict_words(verdict: str) -> VerdictWords:
    """The words of `verdict` (a `Verdict`, or its value) from `VERDICT_WORDS`."""
    return VERDICT_WORDS.get(Verdict(verdict), VerdictWords(str(verdict), str(verdict)))


class Evidence(_StrEnum):
    """Where a decision's evidence came from."""

    HISTORY = "history"  # the online detector over the series' per-run values
    AB_PROCESSES = "ab_processes"  # an A/B with worker processes as the unit (Welch on log values)
    AB_HISTORY_NOISE = "ab_history_noise"  # an A/B of two run values against the between-run noise
    # of the series' history (a side had fewer than 2 process values)
    DETERMINISTIC = "deterministic"  # instruction counts: the level rule with a noise floor
    NONE = "none"  # nothing was tested (new series, no number, too little evidence)


@dataclass
class Decision:
    case_id: str
    name: str
    place: str
    mode: str
    metric: str
    verdict: Verdict
    effect: float = math.nan  # relative change of the metric, new/baseline - 1
    ci_low: float = math.nan  # interval of the effect
    ci_high: float = math.nan
    p_value: float = math.nan
    q_value: float = math.nan
    evidence: str = ""  # what the evidence says, in words
    evidence_kind: Evidence = Evidence.NONE  # where it came from
    baseline: str = ""
    reason: str = ""
    change_run_id: int | None = None
    config_hash: str = ""
    value: float | None = None  # the new run's value (median of its processes), in the metric's unit
    baseline_value: float | None = None  # the baseline's value (the level before the change)
    baseline_run_id: int | None = None  # the run compared with (the latest run of the baseline)
    unit: str = "s"
    processes: int = 0  # ok worker processes of the new run's result (0: measured in one process)
    min_effect: float = math.nan  # the case's minimum effect (configs/gates.yaml)
    confidence: float = math.nan  # of the effect's interval
    events: list[tuple[int | None, str]] = field(default_factory=list)
    """Environment changes in the judged history, oldest first: (the first run under the new
    environment, what changed: ``"driver 550.54 -> 560.28"``); candidate change points of the
    detector, and an alert placed at one is attributed to it (``reason``: "after ...")."""
    reverted_at_run: int | None = None
    """A recent alert of this series whose level came back (the run that came back), when the
    new run raised none; ``revert`` says which."""
    revert: str = ""
    # The new run's value adjusted by the reference probe, in the metric's unit, where the judge
    # used the adjustment (None: judged on the raw `value`); `probe` says what the probe did.
    adjusted_value: float | None = None
    probe: str = ""
    # Whether a regression of this metric at this place fails the gate (configs/gates.yaml
    # `blocking`, or a re-measurement that reproduced it: `confirmation`); a regression that does
    # not block is judged, shown and plotted, and says why it did not fail.
    blocking: bool = True
    # The re-measurements of a regression (`confirm`): per attempt, its value, effect and verdict.
    confirmation: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        if self.verdict == Verdict.REGRESSION and not self.blocking:
            return False
        return self.verdict in FAILING

    @property
    def series_metric(self) -> str:
        """The stored metric of the judged series: "time" (gated as time or throughput),
        "instructions", ... (`benchmark.datamodel.metrics.Metric.series`)."""
        return get_metric(self.metric).series

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.case_id, self.place, self.mode, self.series_metric)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "failing": self.failing}
