"""Caps a config must respect, checked before anything is expanded or allocated, and the limits a
worker process runs under, which no config can raise (standard library only, so the CLI can show
them in its help without loading the config machinery). `docs/sandbox.md` tells why each is what
it is."""

from __future__ import annotations

from collections.abc import Mapping

# Worker processes that measure each case (the suite's --bench-processes, `benchmark compare`'s
# --processes), and with --bench-quick: the fewest that still show a between-process spread.
DEFAULT_PROCESSES = 3
QUICK_PROCESSES = 2

# Expanded cases of one config entry (grid x dtypes x places x modes ...); overridable per call.
DEFAULT_MAX_CASES = 1000
# Default ceiling on the bytes a single case may allocate for its inputs (and their gradients),
# checked before anything is allocated. Overridable with `max_bytes` / --bench-max-bytes.
DEFAULT_MAX_BYTES = 8 * 1024**3

# Caps on a config file, checked while it is read, before anything is constructed or expanded.
# Parsing is pure Python (every key keeps its line): 256 KiB of grid numbers takes about 1.2 s.
MAX_FILE_BYTES = 256 * 1024  # size of one config file
MAX_LIST_ITEMS = (
    20_000  # items of one YAML list (above MAX_VALUES: a value over that says so, naming its field)
)
MAX_YAML_NODES = 100_000  # scalars, lists and mappings in one file
# Expanded cases of one file (the sum over its entries), computed before any entry is expanded.
MAX_FILE_CASES = 10_000

# Ceilings on a case's `measure` overrides (field -> (ceiling, unit)): a config can shorten a
# case's budget or lengthen it up to these, never more.
MEASURE_CEILINGS: Mapping[str, tuple[float, str]] = {
    "warmup_time": (30.0, "s"),
    "max_time": (120.0, "s"),
    "round_time": (0.1, "s"),
    "min_rounds": (1000, "rounds"),
    "max_rounds": (100_000, "rounds"),
    "processes": (16, "processes"),
}

# A worker's host memory (RLIMIT_DATA: its heap and private mappings) and, on CUDA places, the
# memory each GPU may give it (FLAGS_gpu_memory_limit_mb): the case's inputs (--bench-max-bytes),
# as much again for outputs and intermediates, and this much for the framework itself (paddle's
# CPU build holds about 0.25 GiB of data after import).
WORKER_FRAMEWORK_BYTES = 2 * 1024**3


def worker_memory_limit(max_bytes: int) -> int:
    """The memory limit of a worker process for cases capped at `max_bytes` of inputs."""
    return 2 * max_bytes + WORKER_FRAMEWORK_BYTES


# The wall-clock limit of one trial: a fixed allowance (the case's preparation, a first slow
# iteration, a loaded machine) plus a multiple of the time its measure settings allow.
TRIAL_BASE_S = 300.0
TRIAL_BUDGET_FACTOR = 4.0


def trial_budget_s(settings: Mapping[str, float | int | None]) -> float:
    """Seconds a trial's measure settings allow: warmup, then timed rounds (at most `max_time`,
    or `min_rounds` rounds of `round_time` when more)."""
    warmup = float(settings.get("warmup_time") or 0.0)
    timed = float(settings.get("max_time") or 0.0)
    rounds = float(settings.get("min_rounds") or 0) * float(settings.get("round_time") or 0.0)
    return warmup + max(timed, rounds)


def trial_timeout_s(settings: Mapping[str, float | int | None]) -> float:
    """The wall-clock limit of one trial with these settings (`TRIAL_BASE_S` +
    `TRIAL_BUDGET_FACTOR` x `trial_budget_s`)."""
    return TRIAL_BASE_S + TRIAL_BUDGET_FACTOR * trial_budget_s(settings)
