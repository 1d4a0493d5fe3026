"""The one verdict vocabulary: what the judge (`benchmark.gate.judge`), the A/B statistics
(`benchmark.analysis`) and `benchmark compare` decide for a result, and the one table of the words the
views show for it. Imports nothing of the harness, so the pure statistics can use it."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

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
