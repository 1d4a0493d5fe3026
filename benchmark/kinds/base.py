"""What a case kind is: :class:`Kind`, one object per kind, declared in its own module of
:mod:`benchmark.kinds`. It imports nothing of the harness but :mod:`benchmark.sandbox.nn_layers` (pure): the
config package, which reads the registry, lends the hooks what they need as arguments (`checks`,
`Sizes`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

# A step of a kind expanded over steps (the schema's `step:` values)
Step = Literal["train", "infer"]
# A problem of an expanded case: (field path as the file says it, "inputs.x.shape", reason)
Problem = tuple[str, str]


class Sizes(Protocol):
    """What `benchmark.config.expand` lends a kind's case check: the byte cap and how inputs are sized."""

    max_bytes: int

    def tensor_bytes(self, tensors: Mapping[str, Any]) -> int:
        """Peak bytes of generating `tensors` (name -> tensor config), by dtype."""
        ...

    def tensor_dtypes(self, tensors: Mapping[str, Any]) -> list[str]:
        """The dtype of each of `tensors`."""
        ...


def _no_names(spec: Any, checks: Any) -> tuple[tuple[Any, ...], str] | None:
    return None


def _no_problems(cfg: dict[str, Any], checks: Any, sizes: Sizes) -> list[Problem]:
    return []


def _no_build(spec: Any) -> float:
    return 0.0


@dataclass(frozen=True)
class Kind:
    """One case kind: everything the harness does differently for it, said once."""

    name: str
    description: str  # for the pytest marker: "benchmark cases of kind 'op'"
    # The config schema (benchmark.config.schema.CaseSpec): fields a case of this kind must set, and
    # the fields of the other kinds it must not.
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    # The runner module, by dotted path (imported only when a case runs: only benchmark.runners
    # imports the frameworks); it has `prepare(case) -> Prepared`.
    runner: str
    # Expansion (benchmark.config.expand). `variant`: what each case of a config entry is expanded
    # over besides its grid and dtypes, and what its id then says: "backward" (fwd/bwd) or "step"
    # (train/infer, `steps` by default).
    variant: str = "backward"
    steps: tuple[Step, ...] | None = None
    # The field naming the one callable of a case ("op", "layer"): its tensor-list inputs are
    # flattened and its index inputs checked against configs/index_inputs.yaml; None for none.
    call: str | None = None
    # Its output's size can depend on its input values (repeat_interleave, bincount): checked.
    value_sized_output: bool = False
    # The names the config may refuse before anything is expanded: (path, reason) or None.
    check_names: Callable[[Any, Any], tuple[tuple[Any, ...], str] | None] = _no_names
    # The checks of one expanded case (a dict) that the framework side answers (`checks`, a
    # benchmark.config.expand.Checks) or that need sizes: its signature binds, it fits max_bytes.
    check_case: Callable[[dict[str, Any], Any, Sizes], list[Problem]] = _no_problems
    # Cost (benchmark.config.cost): seconds to build one case once per process, beyond its inputs.
    build_seconds: Callable[[Any], float] = _no_build
    # Counting (benchmark.instructions): warm-up iterations before counting, chunks counted after
    # the probe for a step that fills a chunk alone, and whether that probe is the one sample.
    warmup_iterations: int = 50
    heavy_chunks: int = 2
    heavy_probe: bool = False
    counted_first: bool = False  # counted before the others (the longest)
    # What the suite offers it: accuracy against a `reference`, --bench-vs-torch, a torch twin
    # (--bench-framework torch), a control case while regressions are measured again.
    accuracy: bool = False
    vs_torch: bool = False
    torch_cases: bool = False
    control: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"kind name {self.name!r}: lower-case letters, digits and _ only")
        if self.variant not in ("backward", "step"):
            raise ValueError(f"kind {self.name!r}: variant is 'backward' or 'step', not {self.variant!r}")
        if (self.variant == "step") != (self.steps is not None):
            raise ValueError(f"kind {self.name!r}: `steps` goes with variant 'step' only")
        if set(self.required) & set(self.forbidden):
            raise ValueError(f"kind {self.name!r}: a field both required and forbidden")


def op_arguments(cfg: Mapping[str, Any]) -> dict[str, None]:
    """The input arguments of an expanded op or layer case's call (a tensor list is one argument)."""
    names = dict.fromkeys(cfg["inputs"])
    for name, parts in (cfg.get("lists") or {}).items():
        for part in parts:
            names.pop(part, None)
        names[name] = None
    return names
