"""The one verdict vocabulary of the judge (:mod:`benchmark.gate`), and where its evidence came from.

Both are str-valued enums: they compare equal to their values ("regression" == Verdict.REGRESSION),
print as their values and go into JSON as plain strings, so `benchmark gate --json`, the reports and
the pytest gate items read the same words.
"""

from __future__ import annotations

from enum import Enum


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
    ERROR = "error"  # the case errored or its stored samples are invalid: fails
    SKIPPED = "skipped"  # the case was skipped (e.g. no GPU): does not fail


FAILING = frozenset({Verdict.REGRESSION, Verdict.FAILED, Verdict.ERROR})


class Evidence(_StrEnum):
    """Where a decision's evidence came from."""

    HISTORY = "history"  # the online detector over the series' per-run values
    AB_PROCESSES = "ab_processes"  # an A/B with worker processes as the unit (Welch on log values)
    AB_HISTORY_NOISE = "ab_history_noise"  # an A/B of two run values against the between-run noise
    # of the series' history (a side had fewer than 2 process values)
    DETERMINISTIC = "deterministic"  # instruction counts: the level rule with a noise floor
    NONE = "none"  # nothing was tested (new series, no number, too little evidence)
